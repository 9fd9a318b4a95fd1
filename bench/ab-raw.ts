/**
 * The B1 gap of issue 16 measured interleaved: alkstore's single enqueue
 * against the physical reference (one INSERT per commit into a one-index
 * table, as bench/references.ts does) in ONE process, chunks alternating
 * (alk, raw, raw, alk, …), so the disk's fsync speed, which drifts by 2× over
 * minutes on a shared machine, is the same for both sides. `npm run bench`
 * measures the two minutes apart; this is the ratio without that drift.
 *
 * PostgreSQL also runs the reference with a `pg_notify` in the INSERT's
 * statement (what the commit of a waking enqueue carries), to show how much
 * of the gap is the notification.
 *
 *   npx tsx bench/ab-raw.ts <dir> [chunks=40] [chunkSize=50]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { loadOpen, PG_URL, type Open } from './lib/ab-checkout.js';
import { alkstoreSqliteSynchronous } from './lib/sqlite-settings.js';

const [dir, chunksArg, sizeArg] = process.argv.slice(2);
if (!dir) throw new Error('usage: ab-raw.ts <dir> [chunks] [chunkSize]');
const CHUNKS = Number(chunksArg ?? 40);
const SIZE = Number(sizeArg ?? 50);

interface Side {
  name: string;
  op: (i: number) => Promise<unknown> | unknown;
  ms: number;
}

const body = (i: number): string => JSON.stringify({ i, kind: 'bench' });

async function alternate(sides: Side[]): Promise<void> {
  for (const s of sides) for (let i = 0; i < 20; i++) await s.op(i);
  for (let c = 0; c < CHUNKS; c++) {
    for (const s of c % 2 === 0 ? sides : [...sides].reverse()) {
      const t0 = performance.now();
      for (let i = 0; i < SIZE; i++) await s.op(i);
      s.ms += performance.now() - t0;
    }
  }
}

function report(engine: string, sides: Side[]): string[] {
  const raw = sides.find((s) => s.name === 'raw')!;
  const per = (s: Side): number => (CHUNKS * SIZE * 1000) / s.ms;
  return sides.map((s) => `${engine} ${s.name.padEnd(14)} ${Math.round(per(s))}/s  / raw ${(per(s) / per(raw)).toFixed(3)}`);
}

async function sqlite(open: Open): Promise<string[]> {
  const tmp = mkdtempSync(join(tmpdir(), 'alk-abraw-'));
  const store = await open({ url: `sqlite:${join(tmp, 'store.db')}` });
  const db = new Database(join(tmp, 'ref.db'));
  try {
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${alkstoreSqliteSynchronous().value}`);
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT, payload TEXT NOT NULL, created_at INTEGER NOT NULL)');
    const ins = db.prepare('INSERT INTO t (payload, created_at) VALUES (?, ?)');
    const q = store.queue('b1');
    const sides: Side[] = [
      { name: 'alk enqueue', op: (i) => q.enqueue({ i, kind: 'bench' }), ms: 0 },
      { name: 'raw', op: (i) => ins.run(body(i), Date.now()), ms: 0 },
    ];
    await alternate(sides);
    return report('sqlite', sides);
  } finally {
    db.close();
    await store.close();
    rmSync(tmp, { recursive: true, force: true });
  }
}

async function postgres(open: Open): Promise<string[]> {
  const schema = `abraw_${Date.now().toString(36)}`;
  const store = await open({ url: PG_URL, schema });
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    await c.query(`CREATE TABLE "${schema}".t (id bigserial PRIMARY KEY, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`);
    const q = store.queue('b1');
    const sides: Side[] = [
      { name: 'alk enqueue', op: (i) => q.enqueue({ i, kind: 'bench' }), ms: 0 },
      { name: 'raw', op: (i) => c.query({ name: 'abraw_ins', text: `INSERT INTO "${schema}".t (payload) VALUES ($1)`, values: [body(i)] }), ms: 0 },
      {
        name: 'raw + notify',
        op: (i) =>
          c.query({
            name: 'abraw_ins_notify',
            text: `WITH i AS (INSERT INTO "${schema}".t (payload) VALUES ($1) RETURNING id) SELECT i.id, pg_notify('abraw_${schema}', 'x') FROM i`,
            values: [body(i)],
          }),
        ms: 0,
      },
    ];
    await alternate(sides);
    return report('postgres', sides);
  } finally {
    await store.close();
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await c.end();
  }
}

const open = await loadOpen(dir);
const lines = [`checkout ${resolve(dir)}; ${CHUNKS} chunks x ${SIZE} ops per side, alternating`];
lines.push(...(await sqlite(open)));
lines.push(...(await postgres(open)));
process.stdout.write(`${lines.join('\n')}\n`);
