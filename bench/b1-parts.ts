/**
 * Where the time of one single enqueue (B1) goes, against the physical
 * reference (one INSERT per commit into a one-index table), on both engines.
 * Every variant runs in ONE process, chunks alternating (forward, backward,
 * …), so fsync drift hits them alike; each line is the mean time per
 * operation and its ratio to the reference.
 *
 * PostgreSQL variants run the engine's own prepared `q_enqueue` statement on
 * a plain client, then the same statement without its counter delta, without
 * its `pg_notify`, and without both, then the library call (pool, validation,
 * wake bookkeeping). SQLite variants run the engine's write transaction by
 * hand (BEGIN IMMEDIATE, clock read, job INSERT, wake row, COMMIT), then
 * without the counter trigger, without the wake row, then the library call.
 *
 *   npx -y tsx bench/b1-parts.ts [chunks=6] [chunkSize=1500] [--sqlite-normal]
 *
 * Chunks are long on purpose: with 50-op chunks, the first enqueues after a
 * burst of synchronous by-hand transactions on another connection run 3x
 * slower at fixed positions of the chunk (measured per position), which
 * charged the library 10-30% that a steady producer never pays.
 *
 * `--sqlite-normal` runs the SQLite side with synchronous=NORMAL (no fsync
 * in COMMIT): what is left is CPU, which shows the statement and library
 * costs the fsync otherwise hides.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { openStore } from '../lib/index.js';
import { openSqliteStore } from '../lib/engines/sqlite/index.js';
import { INSERT_JOB } from '../lib/engines/sqlite/queue.sql.js';
import { INSERT_NOTIFY_SQL } from '../lib/engines/sqlite/notify/notify.sql.js';
import { NOW_SQL } from '../lib/engines/sqlite/connection.js';
import { queueSql } from '../lib/engines/postgres/queue.sql.js';
import { SchemaSql } from '../lib/engines/postgres/schema-sql.js';
import { PG_URL } from './lib/ab-checkout.js';
import { interleave, REF_SQLITE_TABLE, refPgTable, type Variant } from './lib/interleave.js';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const SQLITE_NORMAL = process.argv.includes('--sqlite-normal');
const CHUNKS = Number(args[0] ?? 6);
const SIZE = Number(args[1] ?? 1500);

type Op = (i: number) => unknown;
const body = (i: number): string => JSON.stringify({ i, kind: 'bench' });

async function alternate(variants: Variant[]): Promise<string[]> {
  const ms = await interleave(variants, CHUNKS, SIZE);
  const raw = ms.get('raw')!;
  return variants.map(
    ([n]) =>
      `  ${n.padEnd(34)} ${((ms.get(n)! / (CHUNKS * SIZE)) * 1000).toFixed(0).padStart(5)} µs/op   raw / this ${(raw / ms.get(n)!).toFixed(3)}`,
  );
}

async function postgres(): Promise<string[]> {
  const schema = `b1parts_${Date.now().toString(36)}`;
  const store = await openStore({ url: PG_URL, schema });
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    await c.query(refPgTable(schema));
    const q = store.queue('b1');
    const full = queueSql(new SchemaSql(schema)).enqueue.text;
    // The wake parameter stays referenced when the notify goes, so the parameter list is unchanged.
    const noCount = full.replace(/, cnt AS \(INSERT INTO .*? FROM ins, t\)/, '');
    const dropNotify = (t: string): string =>
      t.replace(/, \(SELECT pg_notify\([^)]*\)\) AS n/, '').replace('SELECT ins.id', 'SELECT $11::text AS w, ins.id');
    if (noCount === full || dropNotify(full) === full)
      throw new Error('q_enqueue no longer has the shape this tool edits; update bench/b1-parts.ts');
    const values = (i: number): unknown[] => [
      'b1',
      body(i),
      0,
      3,
      30_000,
      1000,
      null,
      null,
      null,
      null,
      'c:b1parts',
      null,
    ];
    const stmt =
      (name: string, text: string): Op =>
      (i) =>
        c.query({ name, text, values: values(i) });
    return [
      'postgres (one client; the library uses its pool)',
      ...(await alternate([
        [
          'raw',
          (i) => c.query({ name: 'raw', text: `INSERT INTO "${schema}".t (payload) VALUES ($1)`, values: [body(i)] }),
        ],
        ['q_enqueue statement', stmt('full', full)],
        ['  without counter delta', stmt('nocount', noCount)],
        ['  without pg_notify', stmt('nonotify', dropNotify(full))],
        ['  without either', stmt('neither', dropNotify(noCount))],
        ['library queue.enqueue', (i) => q.enqueue({ i, kind: 'bench' })],
      ])),
    ];
  } finally {
    await store.close();
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await c.end();
  }
}

async function sqlite(): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'alk-b1parts-'));
  const sync = SQLITE_NORMAL ? 'normal' : 'full';
  const dbs: Database.Database[] = [];
  const store = await openSqliteStore({ path: join(dir, 'lib.db'), synchronous: sync });
  try {
    // Two more files with the engine's schema, used by hand: one as is, one without the counter trigger.
    const seed = await openSqliteStore({ path: join(dir, 'seed.db'), synchronous: sync });
    await seed.close();
    copyFileSync(join(dir, 'seed.db'), join(dir, 'hand.db'));
    copyFileSync(join(dir, 'seed.db'), join(dir, 'notrig.db'));
    const open = (f: string): Database.Database => {
      const db = new Database(join(dir, f));
      db.pragma('journal_mode = WAL');
      db.pragma(`synchronous = ${sync.toUpperCase()}`);
      dbs.push(db);
      return db;
    };
    const raw = open('raw.db');
    raw.exec(REF_SQLITE_TABLE);
    const rawIns = raw.prepare('INSERT INTO t (payload, created_at) VALUES (?, ?)');
    const noTrig = open('notrig.db');
    noTrig.exec('DROP TRIGGER __alkstore_jobs_count_insert');
    const byHand = (db: Database.Database, wakeRow: boolean): Op => {
      const begin = db.prepare('BEGIN IMMEDIATE');
      const commit = db.prepare('COMMIT');
      const now = db.prepare(NOW_SQL).pluck();
      const ins = db.prepare(INSERT_JOB);
      const wake = db.prepare(INSERT_NOTIFY_SQL);
      return (i) => {
        begin.run();
        const t = now.get() as number;
        ins.run('b1', body(i), 0, 3, 30_000, 1000, null, t, t, null, null, null, null, 0, null, null);
        if (wakeRow) wake.run('q:b1', t);
        commit.run();
      };
    };
    const hand = open('hand.db');
    const q = store.queue('b1');
    return [
      `sqlite (WAL, synchronous=${sync.toUpperCase()})`,
      ...(await alternate([
        ['raw', (i) => rawIns.run(body(i), Date.now())],
        ['enqueue transaction by hand', byHand(hand, true)],
        ['  without counter trigger', byHand(noTrig, true)],
        ['  without wake row', byHand(hand, false)],
        ['library queue.enqueue', (i) => q.enqueue({ i, kind: 'bench' })],
      ])),
    ];
  } finally {
    for (const db of dbs) db.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const lines = [`${CHUNKS} chunks x ${SIZE} ops per variant, alternating`];
lines.push(...(await sqlite()));
lines.push(...(await postgres()));
process.stdout.write(`${lines.join('\n')}\n`);
