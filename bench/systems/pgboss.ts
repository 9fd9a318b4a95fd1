import PgBoss from 'pg-boss';
import { dropSchema, pgAvailable, pgClient } from '../lib/pg.js';
import { PG_URL, uniqueId, withTimeout } from '../lib/util.js';
import { CONCURRENCY, type Handler, type RunningWorker, type SystemFactory, type SystemInstance } from './types.js';

/** pg-boss 10 polls (no LISTEN); 0.5 s is the minimum it accepts. */
const POLLING_INTERVAL_SECONDS = 0.5;
/** Jobs fetched per worker per poll. Each of the ten workers sleeps the rest of its polling interval after a batch. */
const BATCH_SIZE = 100;

export const pgBossSystem: SystemFactory = {
  name: 'pg-boss',
  pkg: 'pg-boss',
  lacks: ['B4', 'B6', 'B7'],
  available: pgAvailable,
  async create(): Promise<SystemInstance> {
    const schema = uniqueId('bench_pgboss');
    const boss = new PgBoss({ connectionString: PG_URL, schema, max: 12, schedule: false, supervise: false });
    boss.on('error', (err: Error) => process.stderr.write(`pg-boss error: ${err.message}\n`));
    await withTimeout('pg-boss start', 30_000, boss.start());
    const orders = await pgClient();
    await orders.query(`CREATE TABLE "${schema}".bench_orders (id bigserial PRIMARY KEY, amount int NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`);
    const created = new Set<string>();

    const prepare = async (name: string): Promise<string> => {
      if (!created.has(name)) {
        await boss.createQueue(name);
        created.add(name);
      }
      return name;
    };

    const startWorkers = async (name: string, handler: Handler): Promise<RunningWorker> => {
      // pg-boss 10 has no teamSize/localConcurrency: concurrency 10 = ten work() workers, each fetching batchSize jobs per poll.
      for (let k = 0; k < CONCURRENCY; k++) {
        await boss.work(name, { batchSize: BATCH_SIZE, pollingIntervalSeconds: POLLING_INTERVAL_SECONDS }, async (jobs: PgBoss.Job<unknown>[]) => {
          await Promise.all(jobs.map((j) => handler(j.data)));
        });
      }
      return {
        async completed() {
          // pg-boss completes after the handler resolves without awaiting it; count what the database says.
          const r = await orders.query(`SELECT count(*)::int AS n FROM "${schema}".job WHERE name = $1 AND state = 'completed'`, [name]);
          return (r.rows[0] as { n: number }).n;
        },
        async stop() {
          await boss.offWork(name);
        },
      };
    };

    return {
      settings: {
        schema: 'fresh schema, dropped afterwards',
        workers: `${CONCURRENCY} boss.work() workers`,
        batchSize: BATCH_SIZE,
        pollingIntervalSeconds: POLLING_INTERVAL_SECONDS,
        poolMax: 12,
        schedule: false,
        supervise: false,
        queuePolicy: 'standard (createQueue default)',
        batchEnqueue: 'boss.insert(array)',
      },
      notes: [
        'pg-boss 10 has no LISTEN wake: a worker polls every pollingIntervalSeconds (minimum 0.5) and, after a non-empty batch, sleeps the rest of the interval',
        'completed jobs stay in the job table with state completed (archived later), as pg-boss does',
        'B5: business row and boss.send(..., { db }) share one pg client transaction (documented `db` option)',
      ],
      prepareQueue: prepare,
      async enqueue(name, p) {
        await boss.send(name, p as object);
      },
      async enqueueMany(name, ps) {
        await boss.insert(ps.map((data) => ({ name, data: data as object })));
      },
      startWorker: startWorkers,
      outbox: {
        how: 'pg client: BEGIN; INSERT bench_orders; boss.send(name, data, { db: client }); COMMIT',
        async startDispatcher(handler) {
          await prepare('outbox');
          return startWorkers('outbox', handler);
        },
        async produce(p, beforeCommit) {
          const db = { executeSql: (text: string, values: unknown[]) => orders.query(text, values) };
          await orders.query('BEGIN');
          try {
            await orders.query(`INSERT INTO "${schema}".bench_orders (amount) VALUES ($1)`, [1]);
            await boss.send('outbox', p as object, { db });
            beforeCommit?.();
            await orders.query('COMMIT');
          } catch (err) {
            await orders.query('ROLLBACK').catch(() => undefined);
            throw err;
          }
        },
      },
      async close() {
        await withTimeout('pg-boss stop', 20_000, boss.stop({ graceful: false, wait: true })).catch(() => undefined);
        await orders.end().catch(() => undefined);
        await dropSchema(schema);
      },
    };
  },
};
