/**
 * graphile-worker 0.18 (Node >= 22) inside bench/peers/host.ts, typed
 * structurally and imported by name from bench/peers/node_modules.
 */
import { dropSchema, pgClient } from '../lib/pg.js';
import { PG_URL, uniqueId, withTimeout } from '../lib/util.js';
import { CONCURRENCY } from '../systems/types.js';
import type { PeerAdapter, PeerVariant } from './protocol.js';

interface Runner {
  stop(): Promise<void>;
}
interface WorkerUtils {
  addJob(identifier: string, payload: unknown): Promise<unknown>;
  addJobs(specs: { identifier: string; payload: unknown }[]): Promise<unknown>;
  release(): unknown;
}
interface Graphile {
  Logger: new (factory: () => () => void) => unknown;
  run(o: Record<string, unknown>): Promise<Runner>;
  runMigrations(o: Record<string, unknown>): Promise<void>;
  makeWorkerUtils(o: Record<string, unknown>): Promise<WorkerUtils>;
}

/** Fallback poll (graphile's default 2000 ms); new jobs arrive through LISTEN/NOTIFY in both variants. */
const POLL_INTERVAL_MS = 2000;

export async function graphile18(variant: PeerVariant, version: string): Promise<PeerAdapter> {
  const spec = 'graphile-worker';
  const g = (await import(spec)) as Graphile;
  const fast = variant === 'fast';
  const schema = uniqueId('bench_graphile');
  const common = { connectionString: PG_URL, schema, logger: new g.Logger(() => () => {}) };
  await withTimeout('graphile-worker migrations', 30_000, g.runMigrations(common));
  const utils = await g.makeWorkerUtils({ ...common, maxPoolSize: 4 });
  const client = await pgClient();
  await client.query(
    `CREATE TABLE "${schema}".bench_orders (id bigserial PRIMARY KEY, amount int NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`,
  );
  const enqueued = new Map<string, number>();
  const runners: Runner[] = [];
  const bump = (name: string, k: number): void => {
    enqueued.set(name, (enqueued.get(name) ?? 0) + k);
  };
  // graphile-worker's performance docs: localQueue of about concurrency + 1 and batched completions / failures.
  const preset = fast
    ? { worker: { localQueue: { size: CONCURRENCY + 1 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } }
    : undefined;
  const startWorker = async (
    name: string,
    onJob: (p: unknown) => void,
  ): Promise<{ completed(): Promise<number>; stop(): Promise<void> }> => {
    const runner = await withTimeout(
      'graphile-worker run',
      30_000,
      g.run({
        ...common,
        concurrency: CONCURRENCY,
        maxPoolSize: CONCURRENCY + 2,
        pollInterval: POLL_INTERVAL_MS,
        noHandleSignals: true,
        taskList: { [name]: async (p: unknown) => onJob(p) },
        ...(preset ? { preset } : {}),
      }),
    );
    runners.push(runner);
    return {
      async completed() {
        const r = await client.query(`SELECT count(*)::int AS n FROM "${schema}".jobs WHERE task_identifier = $1`, [
          name,
        ]);
        return (enqueued.get(name) ?? 0) - (r.rows[0] as { n: number }).n;
      },
      async stop() {
        await withTimeout('graphile-worker stop', 20_000, runner.stop()).catch(() => undefined);
      },
    };
  };
  return {
    version,
    settings: {
      schema: 'fresh schema, dropped afterwards',
      concurrency: CONCURRENCY,
      maxPoolSize: CONCURRENCY + 2,
      pollInterval: POLL_INTERVAL_MS,
      wake: 'LISTEN/NOTIFY (built in)',
      preset: preset ?? 'none (defaults: no local queue, one completion statement per job)',
      batchEnqueue: 'workerUtils.addJobs(array)',
    },
    notes: [
      fast
        ? 'fast settings: localQueue size concurrency + 1, completeJobBatchDelay 0, failJobBatchDelay 0 (graphile-worker performance docs)'
        : "defaults: concurrency 10 (the workload's), no localQueue, no batched completion",
      'completed jobs are deleted, as graphile-worker does',
    ],
    outboxHow: 'pg client: BEGIN; INSERT bench_orders; SELECT <schema>.add_job(name, payload); COMMIT',
    async prepareQueue(name) {
      return name;
    },
    async enqueue(name, p) {
      await utils.addJob(name, p);
      bump(name, 1);
    },
    async enqueueMany(name, ps) {
      await utils.addJobs(ps.map((payload) => ({ identifier: name, payload })));
      bump(name, ps.length);
    },
    startWorker,
    async produce(p, beforeCommit) {
      await client.query('BEGIN');
      try {
        await client.query(`INSERT INTO "${schema}".bench_orders (amount) VALUES ($1)`, [1]);
        await client.query(`SELECT "${schema}".add_job($1, $2::json)`, ['outbox', JSON.stringify(p)]);
        beforeCommit();
        await client.query('COMMIT');
        bump('outbox', 1);
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      }
    },
    async close() {
      for (const r of runners) await withTimeout('graphile-worker stop', 20_000, r.stop()).catch(() => undefined);
      await Promise.resolve(utils.release()).catch(() => undefined);
      await client.end().catch(() => undefined);
      await dropSchema(schema);
    },
  };
}
