/**
 * What a workflow step's journal write costs as one row of the steps table (`appendSteps`, migration 34),
 * beside the three writes it took before (not a benchmark of anything else; PostgreSQL only): a once-only
 * guard (an inbox row, two index entries), the run stream's head (an update) and the entry (a stream
 * event, one index entry), here as that former statement by hand. Both write the entries of 10 runs per
 * statement, as the workflows' append lane does with 10 runs stepping, each statement its own commit
 * (fsync on), through the store's own connection, alternating which goes first.
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
if (!sql?.appendSteps) throw new Error('the store carries no one-statement step append');
const appendSteps = sql.appendSteps.bind(sql);
const q = `"${schema}"`;
const former = `WITH t AS MATERIALIZED (SELECT floor(extract(epoch from clock_timestamp()) * 1000)::bigint AS ms),
  u AS MATERIALIZED (SELECT * FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS u(guard, stream, entry, i)),
  g AS (INSERT INTO ${q}.inbox (inbox, message_id, state, attempts, received_at, done_at)
        SELECT $1::text, u.guard, 'done', 1, t.ms, t.ms FROM u, t ORDER BY u.guard
        ON CONFLICT (inbox, message_id) DO NOTHING RETURNING message_id),
  w AS MATERIALIZED (SELECT u.* FROM u JOIN g ON g.message_id = u.guard),
  h AS (INSERT INTO ${q}.stream_heads AS h (stream, last_offset) SELECT w.stream, 1 FROM w ORDER BY w.stream
        ON CONFLICT (stream) DO UPDATE SET last_offset = h.last_offset + 1 RETURNING h.stream, h.last_offset),
  e AS (INSERT INTO ${q}.stream_events (stream, seq, key, payload, created_at)
        SELECT h.stream, h.last_offset, NULL, w.entry::json, t.ms FROM h JOIN w ON w.stream = h.stream, t RETURNING seq)
  SELECT count(*) FROM e`;
const entry = { k: 'done', at: 3, name: 's3', v: 12345, ms: 1 };
const today: number[] = [];
const threeWrites: number[] = [];
for (let i = 0; i < N; i++) {
  const runs = Array.from({ length: RUNS }, (_, r) => `run-${r}-0123456789abcdef`);
  for (const which of i % 2 === 0 ? ['today', 'former'] : ['former', 'today']) {
    const t = performance.now();
    if (which === 'today')
      await appendSteps(
        runs.map((run) => ({ ns: 'ns', run, position: i, key: String(i), stream: `ns:run:${run}`, payload: entry })),
      );
    else
      await sql.query(
        former,
        [
          'ns:journal',
          runs.map((run) => `${run}#${i}`),
          runs.map((run) => `ns:run:${run}`),
          runs.map(() => JSON.stringify(entry)),
        ],
        true,
      );
    (which === 'today' ? today : threeWrites).push(performance.now() - t);
  }
}
const med = (x: number[]): number => [...x].sort((a, b) => a - b)[Math.floor(x.length / 2)]!;
const sizes = await sql.query(
  `SELECT c.relname, pg_total_relation_size(c.oid)::bigint AS bytes FROM pg_class c
   JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname = $1 AND c.relname IN ('inbox', 'stream_heads', 'stream_events', 'workflow_steps')`,
  [schema],
  false,
);
console.log(
  `${N} statements of ${RUNS} entries each, median per statement: one row per step ${med(today).toFixed(3)} ms, ` +
    `the former three writes ${med(threeWrites).toFixed(3)} ms (${(med(today) / med(threeWrites)).toFixed(2)}x)`,
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
