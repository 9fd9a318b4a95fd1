/**
 * A/B comparison of two checkouts of alkstore on the same workloads, interleaved
 * in one run (A B B A A B B A …) so the machine's drift hits both sides alike.
 *
 *   npx -y tsx bench/ab.ts --a <dir> --b <dir> [--rounds R] -- <bench/run.ts args>
 *
 * Each side runs its own `bench/run.ts` with the given args plus `--runs 1`;
 * the medians over rounds of every alkstore metric are printed with B/A,
 * the scale workloads' metrics (B8, B3x, …: `--workloads B8 --engines postgres`)
 * among them as `scale <metric>`. B8 runs every relay variant unless
 * `B8_VARIANTS` names some (e.g. `B8_VARIANTS=1` for one relay at default settings).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

interface Report {
  systems: Record<string, { summary: Record<string, { median: number }> }>;
  scale?: { metrics: Record<string, unknown> } | null;
}

function arg(name: string, dflt?: string): string {
  const i = process.argv.indexOf(name);
  const v = i >= 0 ? process.argv[i + 1] : dflt;
  if (v === undefined) throw new Error(`missing ${name}`);
  return v;
}

const dirs = { A: resolve(arg('--a')), B: resolve(arg('--b')) };
const rounds = Number(arg('--rounds', '4'));
const sep = process.argv.indexOf('--');
const benchArgs = sep >= 0 ? process.argv.slice(sep + 1) : [];
const tmp = mkdtempSync(join(tmpdir(), 'alkstore-ab-'));
const values: Record<'A' | 'B', Map<string, number[]>> = { A: new Map(), B: new Map() };

function runSide(side: 'A' | 'B', round: number): void {
  const out = join(tmp, `${side}-${round}.json`);
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'bench/run.ts', ...benchArgs, '--runs', '1', '--out', out],
    { cwd: dirs[side], env, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  if (r.status !== 0) throw new Error(`${side} round ${round} failed with ${r.status}`);
  const rep = JSON.parse(readFileSync(out, 'utf8')) as Report;
  const add = (key: string, v: number): void => {
    const list = values[side].get(key) ?? [];
    list.push(v);
    values[side].set(key, list);
  };
  for (const [sys, res] of Object.entries(rep.systems)) {
    // The physical references of the same run too (ref-postgres, ref-sqlite), and B3 as a ratio to the bare NOTIFY of its round.
    if (!sys.startsWith('alkstore') && !sys.startsWith('ref-')) continue;
    for (const [metric, s] of Object.entries(res.summary)) add(`${sys} ${metric}`, s.median);
    const wake = res.summary['B3.wake_p50_ms']?.median;
    const bare = rep.systems[`ref-${sys.split('-').pop()}`]?.summary['REF.notify_p50_ms']?.median;
    if (wake !== undefined && bare !== undefined && bare > 0) add(`${sys} B3.wake_p50 / REF.notify_p50`, wake / bare);
    const enq = res.summary['B1.enqueue_per_s']?.median;
    const raw = rep.systems[`ref-${sys.split('-').pop()}`]?.summary['REF.insert_1client_per_s']?.median;
    if (enq !== undefined && raw !== undefined && raw > 0)
      add(`${sys} B1.enqueue_per_s / REF.insert_1client_per_s`, enq / raw);
    // The SQLite peer of the same round, when it ran (`--systems alkstore-sqlite,plainjob`).
    for (const m of ['B1.enqueue_per_s', 'B1b.enqueue_per_s']) {
      const mine = res.summary[m]?.median;
      const peer = rep.systems.plainjob?.summary[m]?.median;
      if (sys.endsWith('sqlite') && mine !== undefined && peer !== undefined && peer > 0)
        add(`${sys} ${m} / plainjob`, mine / peer);
    }
  }
  for (const [metric, v] of Object.entries(rep.scale?.metrics ?? {}))
    if (typeof v === 'number' && Number.isFinite(v)) add(`scale ${metric}`, v);
  process.stderr.write(`ab: round ${round} ${side} done\n`);
}

for (let round = 1; round <= rounds; round++) {
  const order: ('A' | 'B')[] = round % 2 === 1 ? ['A', 'B'] : ['B', 'A'];
  for (const side of order) runSide(side, round);
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((x, y) => x - y);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const fmt = (v: number): string => (Math.abs(v) >= 100 ? Math.round(v).toString() : v.toFixed(2));
const lines = [`A = ${dirs.A}`, `B = ${dirs.B}`, `rounds = ${rounds}, args: ${benchArgs.join(' ')}`, ''];
lines.push(['metric', 'A median [min-max]', 'B median [min-max]', 'B/A'].join(' | '));
for (const key of [...values.A.keys()].sort()) {
  const a = values.A.get(key)!;
  const b = values.B.get(key);
  if (!b) continue;
  const range = (xs: number[]): string => `${fmt(median(xs))} [${fmt(Math.min(...xs))}-${fmt(Math.max(...xs))}]`;
  lines.push([key, range(a), range(b), (median(b) / median(a)).toFixed(3)].join(' | '));
}
process.stdout.write(`${lines.join('\n')}\n`);
