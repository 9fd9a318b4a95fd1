/**
 * Single SQLite enqueues, interleaved in one process: another checkout's library (A), this one (B),
 * plainjob's `add` (P), and the engine's enqueue transaction by hand on a better-sqlite3 connection,
 * with its counter and wake (H4: 4 WAL pages per commit) and without them (H3: the insert trigger
 * dropped, no wake sequence; 3 pages, as plainjob), and H4 without its wake statement (HC: the counter
 * and the wake share their page, so still 4 pages). Each round runs every variant for a chunk of
 * sequential enqueues, in alternating order, each on its own fresh file; the figures are the
 * medians over rounds of the per-round ratios, so the disk's drift falls on every variant alike.
 *
 *   npx tsx bench/ab-enq.ts --a <checkout> [--chunk 100] [--rounds 20] [--warmup 1]
 *
 * It also prints each variant's user CPU per enqueue (`process.cpuUsage`, the whole process).
 *
 * The synchronous setting is the bench's (bench/lib/sqlite-settings.ts), FULL by default.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { better, defineQueue } from 'plainjob';
import { alkstoreSqliteSynchronous } from './lib/sqlite-settings.js';
import * as mine from '../lib/index.js';
import { INSERT_JOB } from '../lib/engines/sqlite/queue.sql.js';
import { BUMP_WAKE_SEQ } from '../lib/engines/sqlite/counts.sql.js';

function arg(name: string, dflt?: string): string {
  const i = process.argv.indexOf(name);
  const v = i >= 0 ? process.argv[i + 1] : dflt;
  if (v === undefined) throw new Error(`missing ${name}`);
  return v;
}

const base = (await import(join(resolve(arg('--a')), 'lib/index.ts'))) as typeof mine;
const CHUNK = Number(arg('--chunk', '100'));
const ROUNDS = Number(arg('--rounds', '20'));
const WARMUP = Number(arg('--warmup', '1'));
const sync = alkstoreSqliteSynchronous().value;
const dir = mkdtempSync(join(tmpdir(), 'alkstore-ab-enq-'));

const sA = await base.openStore({ url: `sqlite://${join(dir, 'a.db')}` });
const sB = await mine.openStore({ url: `sqlite://${join(dir, 'b.db')}` });
const qa = sA.queue('q');
const qb = sB.queue('q');
const pdb = new Database(join(dir, 'p.db'));
const silent = { error() {}, warn() {}, info() {}, debug() {} };
const pq = defineQueue({ connection: better(pdb), logger: silent, maintenanceInterval: 3_600_000 });
pdb.pragma(`synchronous = ${sync}`);

/** The engine's enqueue transaction by hand on a file the library made; `counted` false: 3 pages, `woken` false: no wake. */
async function byHand(
  file: string,
  counted: boolean,
  woken = counted,
): Promise<{ enqueue: (i: number) => void; close: () => void }> {
  const st = await mine.openStore({ url: `sqlite://${join(dir, file)}` });
  await st.queue('q').enqueue({ warm: 1 });
  await st.close();
  const h = new Database(join(dir, file));
  h.pragma('journal_mode = WAL');
  h.pragma(`synchronous = ${sync}`);
  if (!counted) h.exec('DROP TRIGGER __alkstore_jobs_count_insert');
  const begin = h.prepare('BEGIN IMMEDIATE');
  const ins = h.prepare(INSERT_JOB);
  const bump = h.prepare(BUMP_WAKE_SEQ);
  const commit = h.prepare('COMMIT');
  return {
    enqueue(i) {
      begin.run();
      const now = Date.now();
      ins.run(
        'q',
        JSON.stringify({ i, s: 'x' }),
        0,
        3,
        30_000,
        1_000,
        null,
        now,
        now,
        null,
        null,
        null,
        null,
        0,
        null,
        null,
      );
      if (woken) bump.get('q');
      commit.run();
    },
    close: () => h.close(),
  };
}
const h4 = await byHand('h4.db', true);
const h3 = await byHand('h3.db', false);
const hc = await byHand('hc.db', true, false);

const variants: Record<string, () => Promise<void>> = {
  A: async () => {
    for (let i = 0; i < CHUNK; i++) await qa.enqueue({ i, s: 'x' });
  },
  B: async () => {
    for (let i = 0; i < CHUNK; i++) await qb.enqueue({ i, s: 'x' });
  },
  P: async () => {
    for (let i = 0; i < CHUNK; i++) pq.add('q', { i, s: 'x' });
  },
  H4: async () => {
    for (let i = 0; i < CHUNK; i++) h4.enqueue(i);
  },
  H3: async () => {
    for (let i = 0; i < CHUNK; i++) h3.enqueue(i);
  },
  HC: async () => {
    for (let i = 0; i < CHUNK; i++) hc.enqueue(i);
  },
};
const names = Object.keys(variants);
const rates = new Map<string, number[]>(names.map((k) => [k, []]));
// Warm-up: `--warmup` chunks of every variant before the rounds (the library's code is still being
// optimized by V8 during its first thousands of calls).
for (let w = 0; w < WARMUP; w++) for (const k of names) await variants[k]!();
const cpu = new Map<string, number>();
for (let r = 0; r < ROUNDS; r++) {
  for (const k of r % 2 ? names : [...names].reverse()) {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    await variants[k]!();
    cpu.set(k, (cpu.get(k) ?? 0) + process.cpuUsage(c0).user);
    rates.get(k)!.push((CHUNK * 1000) / (performance.now() - t0));
  }
}
const median = (xs: number[]): number => {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.floor(s.length / 2)]!;
};
const ratio = (a: string, b: string): string => median(rates.get(a)!.map((v, i) => v / rates.get(b)![i]!)).toFixed(3);
console.log(
  `enqueues/s: ${names.map((k) => `${k} ${median(rates.get(k)!).toFixed(0)}`).join(', ')} (synchronous ${sync}, ${ROUNDS} × ${CHUNK})`,
);
console.log(
  `B/A ${ratio('B', 'A')}  A/P ${ratio('A', 'P')}  B/P ${ratio('B', 'P')}  H4/P ${ratio('H4', 'P')}  H3/P ${ratio('H3', 'P')}  B/H4 ${ratio('B', 'H4')}  HC/H4 ${ratio('HC', 'H4')}`,
);
console.log(
  `user CPU µs per enqueue: ${names.map((k) => `${k} ${((cpu.get(k) ?? 0) / ROUNDS / CHUNK).toFixed(1)}`).join(', ')}`,
);
await sA.close();
await sB.close();
pdb.close();
h4.close();
h3.close();
hc.close();
rmSync(dir, { recursive: true, force: true });
// plainjob's queue keeps a timer of its own.
process.exit(0);
