import { Logger, makeWorkerUtils, run, runMigrations, type Runner, type WorkerUtils } from 'graphile-worker';
import { dropSchema, pgAvailable, pgClient } from '../lib/pg.js';
import { PG_URL, uniqueId, withTimeout } from '../lib/util.js';
import { CONCURRENCY, type Handler, type RunningWorker, type SystemFactory, type SystemInstance } from './types.js';

/** Fallback poll only (for future-dated jobs); new jobs arrive through LISTEN/NOTIFY. */
const POLL_INTERVAL_MS = 2000;
/** graphile-worker's performance docs: localQueue "concurrentJobs + 1" and batched completions. */
const LOCAL_QUEUE_SIZE = CONCURRENCY + 1;
const COMPLETE_JOB_BATCH_DELAY_MS = 0;

const silentLogger = new Logger(() => () => {});

export const graphileSystem: SystemFactory = {
  name: 'graphile-worker',
  pkg: 'graphile-worker',
  lacks: ['B4', 'B6', 'B7'],
  available: pgAvailable,
  async create(): Promise<SystemInstance> {
    const schema = uniqueId('bench_graphile');
    const common = { connectionString: PG_URL, schema, logger: silentLogger };
    await withTimeout('graphile-worker migrations', 30_000, runMigrations(common));
    const utils: WorkerUtils = await makeWorkerUtils({ ...common, maxPoolSize: 4 });
    const client = await pgClient();
    await client.query(`CREATE TABLE "${schema}".bench_orders (id bigserial PRIMARY KEY, amount int NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`);
    const enqueued = new Map<string, number>();
    const runners: Runner[] = [];
    const bump = (name: string, k: number): void => {
      enqueued.set(name, (enqueued.get(name) ?? 0) + k);
    };

    const startWorkers = async (name: string, handler: Handler): Promise<RunningWorker> => {
      const runner = await withTimeout(
        'graphile-worker run',
        30_000,
        run({
          ...common,
          concurrency: CONCURRENCY,
          maxPoolSize: CONCURRENCY + 2,
          pollInterval: POLL_INTERVAL_MS,
          noHandleSignals: true,
          taskList: { [name]: async (p: unknown) => handler(p) },
          preset: { worker: { localQueue: { size: LOCAL_QUEUE_SIZE }, completeJobBatchDelay: COMPLETE_JOB_BATCH_DELAY_MS } },
        }),
      );
      runners.push(runner);
      return {
        async completed() {
          // Completions are batched and written after `job:complete`; a completed job is a deleted row.
          const r = await client.query(`SELECT count(*)::int AS n FROM "${schema}".jobs WHERE task_identifier = $1`, [name]);
          return (enqueued.get(name) ?? 0) - (r.rows[0] as { n: number }).n;
        },
        async stop() {
          await withTimeout('graphile-worker stop', 20_000, runner.stop()).catch(() => undefined);
        },
      };
    };

    return {
      settings: {
        schema: 'fresh schema, dropped afterwards',
        concurrency: CONCURRENCY,
        maxPoolSize: CONCURRENCY + 2,
        pollInterval: POLL_INTERVAL_MS,
        wake: 'LISTEN/NOTIFY (built in)',
        localQueue: { size: LOCAL_QUEUE_SIZE },
        completeJobBatchDelay: COMPLETE_JOB_BATCH_DELAY_MS,
        preparedStatements: true,
        batchEnqueue: 'workerUtils.addJobs(array)',
      },
      notes: [
        'completed jobs are deleted, as graphile-worker does',
        'B5: business row and SELECT graphile_worker.add_job(...) share one pg client transaction (documented SQL API)',
      ],
      async prepareQueue(name) {
        return name;
      },
      async enqueue(name, p) {
        await utils.addJob(name, p as object);
        bump(name, 1);
      },
      async enqueueMany(name, ps) {
        await utils.addJobs(ps.map((payload) => ({ identifier: name, payload })));
        bump(name, ps.length);
      },
      startWorker: startWorkers,
      outbox: {
        how: 'pg client: BEGIN; INSERT bench_orders; SELECT <schema>.add_job(name, payload); COMMIT',
        startDispatcher: (handler) => startWorkers('outbox', handler),
        async produce(p, beforeCommit) {
          await client.query('BEGIN');
          try {
            await client.query(`INSERT INTO "${schema}".bench_orders (amount) VALUES ($1)`, [1]);
            await client.query(`SELECT "${schema}".add_job($1, $2::json)`, ['outbox', JSON.stringify(p)]);
            beforeCommit?.();
            await client.query('COMMIT');
            bump('outbox', 1);
          } catch (err) {
            await client.query('ROLLBACK').catch(() => undefined);
            throw err;
          }
        },
      },
      async close() {
        for (const r of runners) await withTimeout('graphile-worker stop', 20_000, r.stop()).catch(() => undefined);
        await Promise.resolve(utils.release()).catch(() => undefined);
        await client.end().catch(() => undefined);
        await dropSchema(schema);
      },
    };
  },
};
