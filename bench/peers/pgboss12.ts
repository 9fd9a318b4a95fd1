/**
 * pg-boss 12 (Node >= 22) inside bench/peers/host.ts. Typed structurally: the
 * bench's own node_modules has no pg-boss, so the package is imported by name
 * at run time from bench/peers/node_modules.
 */
import { dropSchema, pgClient } from '../lib/pg.js';
import { PG_URL, uniqueId, withTimeout } from '../lib/util.js';
import { CONCURRENCY } from '../systems/types.js';
import type { PeerAdapter, PeerVariant } from './protocol.js';

interface PgBossJob {
  data: unknown;
}
interface PgBoss {
  on(ev: 'error', fn: (err: Error) => void): void;
  start(): Promise<unknown>;
  stop(o: { graceful: boolean; wait: boolean }): Promise<void>;
  createQueue(name: string, o?: Record<string, unknown>): Promise<void>;
  send(name: string, data: object, o?: Record<string, unknown>): Promise<string | null>;
  insert(name: string, jobs: { data: object }[]): Promise<unknown>;
  work(name: string, o: Record<string, unknown>, fn: (jobs: PgBossJob[]) => Promise<void>): Promise<string>;
  offWork(name: string): Promise<void>;
}
type PgBossCtor = new (o: Record<string, unknown>) => PgBoss;

/** pg-boss's fetch size in the fast settings (its "batch fetch"); defaults fetch one job per poll. */
const FAST_BATCH = 100;
/** The minimum base poll pg-boss accepts (fast settings); its default is 2 s. */
const FAST_POLL_S = 0.5;

export async function pgBoss12(variant: PeerVariant, version: string): Promise<PeerAdapter> {
  const spec = 'pg-boss';
  const { PgBoss } = (await import(spec)) as { PgBoss: PgBossCtor };
  const fast = variant === 'fast';
  const schema = uniqueId('bench_pgboss');
  const boss = new PgBoss({ connectionString: PG_URL, schema, max: 12, schedule: false, supervise: false, ...(fast ? { useListenNotify: true } : {}) });
  boss.on('error', (err) => process.stderr.write(`pg-boss error: ${err.message}\n`));
  await withTimeout('pg-boss start', 30_000, boss.start());
  const orders = await pgClient();
  await orders.query(`CREATE TABLE "${schema}".bench_orders (id bigserial PRIMARY KEY, amount int NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`);
  const created = new Set<string>();
  const queueOpts = fast ? { notify: true } : {};
  const workOpts = fast
    ? { localConcurrency: CONCURRENCY, batchSize: FAST_BATCH, pollingIntervalSeconds: FAST_POLL_S, burstWhenBatchFull: true }
    : { localConcurrency: CONCURRENCY };
  const prepare = async (name: string): Promise<string> => {
    if (!created.has(name)) {
      await boss.createQueue(name, queueOpts);
      created.add(name);
    }
    return name;
  };
  return {
    version,
    settings: {
      schema: 'fresh schema, dropped afterwards',
      work: workOpts,
      queue: { policy: 'standard (createQueue default)', ...queueOpts },
      constructor: { max: 12, schedule: false, supervise: false, ...(fast ? { useListenNotify: true } : {}) },
      batchEnqueue: 'boss.insert(name, array)',
    },
    notes: fast
      ? ['fast settings: LISTEN/NOTIFY wake (useListenNotify + queue notify), batch fetch of 100 with burstWhenBatchFull, 0.5 s base poll', 'completed jobs stay in the job table with state completed, as pg-boss does']
      : ['defaults: one job per fetch, 2 s poll, no NOTIFY (pg-boss 12 leaves useListenNotify off); localConcurrency 10 is the workload\'s concurrency', 'completed jobs stay in the job table with state completed, as pg-boss does'],
    outboxHow: 'pg client: BEGIN; INSERT bench_orders; boss.send(name, data, { db: client }); COMMIT',
    prepareQueue: prepare,
    async enqueue(name, p) {
      await boss.send(name, p as object);
    },
    async enqueueMany(name, ps) {
      await boss.insert(name, ps.map((data) => ({ data: data as object })));
    },
    async startWorker(name, onJob) {
      await prepare(name);
      await boss.work(name, workOpts, async (jobs) => {
        for (const j of jobs) onJob(j.data);
      });
      return {
        async completed() {
          const r = await orders.query(`SELECT count(*)::int AS n FROM "${schema}".job WHERE name = $1 AND state = 'completed'`, [name]);
          return (r.rows[0] as { n: number }).n;
        },
        async stop() {
          await boss.offWork(name);
        },
      };
    },
    async produce(p, beforeCommit) {
      await prepare('outbox');
      const db = { executeSql: (text: string, values: unknown[]) => orders.query(text, values) };
      await orders.query('BEGIN');
      try {
        await orders.query(`INSERT INTO "${schema}".bench_orders (amount) VALUES ($1)`, [1]);
        await boss.send('outbox', p as object, { db });
        beforeCommit();
        await orders.query('COMMIT');
      } catch (err) {
        await orders.query('ROLLBACK').catch(() => undefined);
        throw err;
      }
    },
    async close() {
      await withTimeout('pg-boss stop', 20_000, boss.stop({ graceful: false, wait: true })).catch(() => undefined);
      await orders.end().catch(() => undefined);
      await dropSchema(schema);
    },
  };
}
