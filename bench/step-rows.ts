/**
 * What a workflow step's journal write would cost as one row per step, beside today's append (not a
 * benchmark of anything shipped; PostgreSQL only). Today a step's entry is three writes in one
 * statement: its once-only guard (an inbox row, two index entries), the run stream's head (an
 * update) and the entry (a stream event, one index entry). The alternative is one row in a table
 * keyed by (namespace, run, position, epoch), whose primary key is the guard. Both write the entries
 * of 10 runs per statement, as the workflows' append lane does with 10 runs stepping, each statement
 * its own commit (fsync on), through the store's own connection, alternating which goes first.
 *
 *   npx tsx bench/step-rows.ts [statements=1500]
 */
import { openPostgresStore } from '../lib/engines/postgres/index.js';
import { workflowSqlOf } from '../lib/workflows/sql-seam.js';

const URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const N = Number(process.argv[2] ?? 1500);
const RUNS = 10;
const schema = `steprows_${process.pid}`;
const store = await openPostgresStore({ connectionString: URL, schema, poolSize: 2 });
const sql = workflowSqlOf(store as object);
if (!sql?.appendJournal) throw new Error('the store carries no one-statement journal append');
const appendJournal = sql.appendJournal.bind(sql);
await sql.query(
  `CREATE TABLE ${sql.prefix}steps (ns text, run text, pos int, epoch int, entry json, created_at bigint,
     PRIMARY KEY (ns, run, pos, epoch))`,
  [],
  true,
);
const entry = { k: 'done', at: 3, name: 's3', v: 12345, ms: 1 };
const today: number[] = [];
const oneRow: number[] = [];
for (let i = 0; i < N; i++) {
  const runs = Array.from({ length: RUNS }, (_, r) => `run-${r}-0123456789abcdef`);
  const writes = runs.map((run) => ({ guard: `${run}#${i}`, stream: `ns:run:${run}`, payload: entry }));
  for (const which of i % 2 === 0 ? ['today', 'one'] : ['one', 'today']) {
    const t = performance.now();
    if (which === 'today') await appendJournal('ns:journal', writes);
    else
      await sql.query(
        `INSERT INTO ${sql.prefix}steps (ns, run, pos, epoch, entry, created_at)
         SELECT 'ns', u.run, $2::int, 0, u.entry::json, $3::bigint FROM unnest($1::text[], $4::text[]) AS u(run, entry)
         ON CONFLICT DO NOTHING RETURNING pos`,
        [runs, i, Date.now(), runs.map(() => JSON.stringify(entry))],
        true,
      );
    (which === 'today' ? today : oneRow).push(performance.now() - t);
  }
}
const med = (x: number[]): number => [...x].sort((a, b) => a - b)[Math.floor(x.length / 2)]!;
const sizes = await sql.query(
  `SELECT c.relname, pg_total_relation_size(c.oid)::bigint AS bytes FROM pg_class c
   JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname = $1 AND c.relname IN ('inbox', 'stream_heads', 'stream_events', 'steps')`,
  [schema],
  false,
);
console.log(
  `${N} statements of ${RUNS} entries each, median per statement: today ${med(today).toFixed(3)} ms, ` +
    `one row per step ${med(oneRow).toFixed(3)} ms (${(med(oneRow) / med(today)).toFixed(2)}x)`,
);
console.log(
  `table and index sizes: ${sizes.map((r) => `${String(r.relname)} ${(Number(r.bytes) / 1e6).toFixed(1)} MB`).join(', ')}`,
);
await store.close();
const pg = (await import('pg')).default;
const admin = new pg.Client({ connectionString: URL });
await admin.connect();
await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
await admin.end();
