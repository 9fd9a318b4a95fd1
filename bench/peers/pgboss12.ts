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
  insert(name: string, jobs: { data: object; group?: { id: string } }[]): Promise<unknown>;
  flow(jobs: PgBossFlowJob[]): Promise<Record<string, string>>;
  work(name: string, o: Record<string, unknown>, fn: (jobs: PgBossJob[]) => Promise<void>): Promise<string>;
  offWork(name: string): Promise<void>;
}
/** pg-boss 12's `FlowJob`: `dependsOn` lists the `ref`s of jobs in the same call that must complete first. */
interface PgBossFlowJob {
  ref: string;
  name: string;
  data?: object;
  dependsOn?: string[];
}
type PgBossCtor = new (o: Record<string, unknown>) => PgBoss;

/** How long a B10 handler holds its job in the child (the workload's 1 ms), so the group slot is held while it runs. */
const KEYED_HOLD_MS = 1;

/** pg-boss's fetch size in the fast settings (its "batch fetch"); defaults fetch one job per poll. */
const FAST_BATCH = 100;
/** The minimum base poll pg-boss accepts (fast settings); its default is 2 s. */
const FAST_POLL_S = 0.5;

export async function pgBoss12(variant: PeerVariant, version: string): Promise<PeerAdapter> {
  const spec = 'pg-boss';
  const { PgBoss } = (await import(spec)) as { PgBoss: PgBossCtor };
  const fast = variant === 'fast';
  const schema = uniqueId('bench_pgboss');
  const boss = new PgBoss({
    connectionString: PG_URL,
    schema,
    max: 12,
    schedule: false,
    supervise: false,
    ...(fast ? { useListenNotify: true } : {}),
  });
  boss.on('error', (err) => process.stderr.write(`pg-boss error: ${err.message}\n`));
  await withTimeout('pg-boss start', 30_000, boss.start());
  const orders = await pgClient();
  await orders.query(
    `CREATE TABLE "${schema}".bench_orders (id bigserial PRIMARY KEY, amount int NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`,
  );
  const created = new Set<string>();
  /** Queues whose jobs carry a B10 group: their worker runs with `groupConcurrency: 1`. */
  const keyedQueues = new Set<string>();
  /**
   * pg-boss 12 unblocks flow dependents in its background resolver (the Navigator), armed only when
   * `supervise` is on (its default) and ticking every `flowIntervalSeconds` (default 5). The bench's
   * main instance keeps supervise off as before, so the first flow starts a second instance on the
   * same schema at pg-boss's defaults to do that resolving.
   */
  let resolver: PgBoss | null = null;
  const queueOpts = fast ? { notify: true } : {};
  const workOpts = fast
    ? {
        localConcurrency: CONCURRENCY,
        batchSize: FAST_BATCH,
        pollingIntervalSeconds: FAST_POLL_S,
        burstWhenBatchFull: true,
      }
    : { localConcurrency: CONCURRENCY };
  const prepare = async (name: string): Promise<string> => {
    if (!created.has(name)) {
      await boss.createQueue(name, queueOpts);
      created.add(name);
    }
    return name;
  };
  const shared = [
    "B9: flow() with the parent depending on its 100 children; dependents are unblocked by pg-boss's background resolver every flowIntervalSeconds (default 5 s), not at the children's completion",
    'B10: group: { id } on each job and groupConcurrency: 1 on the worker; the handler holds each job 1 ms in the peer process, where the group slot is',
  ];
  return {
    version,
    settings: {
      schema: 'fresh schema, dropped afterwards',
      work: workOpts,
      queue: { policy: 'standard (createQueue default)', ...queueOpts },
      constructor: { max: 12, schedule: false, supervise: false, ...(fast ? { useListenNotify: true } : {}) },
      batchEnqueue: 'boss.insert(name, array)',
      flow: 'B9: boss.flow([100 children, parent dependsOn every child ref]); a second instance on the schema at defaults (supervise on, flowIntervalSeconds 5) resolves dependencies',
      keyed: 'B10: boss.insert with group: { id: key }; work with groupConcurrency: 1 (global, database-tracked)',
    },
    notes: (fast
      ? [
          'fast settings: LISTEN/NOTIFY wake (useListenNotify + queue notify), batch fetch of 100 with burstWhenBatchFull, 0.5 s base poll',
          'completed jobs stay in the job table with state completed, as pg-boss does',
        ]
      : [
          "defaults: one job per fetch, 2 s poll, no NOTIFY (pg-boss 12 leaves useListenNotify off); localConcurrency 10 is the workload's concurrency",
          'completed jobs stay in the job table with state completed, as pg-boss does',
        ]
    ).concat(shared),
    outboxHow: 'pg client: BEGIN; INSERT bench_orders; boss.send(name, data, { db: client }); COMMIT',
    prepareQueue: prepare,
    async enqueue(name, p) {
      await boss.send(name, p as object);
    },
    async enqueueMany(name, ps) {
      await boss.insert(
        name,
        ps.map((data) => ({ data: data as object })),
      );
    },
    async startWorker(name, onJob) {
      await prepare(name);
      const keyed = keyedQueues.has(name);
      // B10's per-key count kept here, where the group slot is held (the bench's own count sees relayed start events).
      const running = new Map<string, number>();
      let maxPerKey = 0;
      await boss.work(name, keyed ? { ...workOpts, groupConcurrency: 1 } : workOpts, async (jobs) => {
        for (const j of jobs) onJob(j.data);
        if (!keyed) return;
        const keys = jobs.map((j) => String((j.data as { key?: unknown }).key));
        for (const k of keys) {
          const n = (running.get(k) ?? 0) + 1;
          running.set(k, n);
          maxPerKey = Math.max(maxPerKey, n);
        }
        await new Promise((r) => setTimeout(r, KEYED_HOLD_MS));
        for (const k of keys) running.set(k, running.get(k)! - 1);
      });
      return {
        async completed() {
          const r = await orders.query(
            `SELECT count(*)::int AS n FROM "${schema}".job WHERE name = $1 AND state = 'completed'`,
            [name],
          );
          return (r.rows[0] as { n: number }).n;
        },
        async stop() {
          await boss.offWork(name);
          if (keyed)
            process.stderr.write(
              `pg-boss ${name}: most jobs of one group key running at once in the peer process: ${maxPerKey}\n`,
            );
        },
      };
    },
    async enqueueFlow(parentQueue, childQueue, parent, children) {
      if (!resolver) {
        resolver = new PgBoss({ connectionString: PG_URL, schema, schedule: false });
        resolver.on('error', (err) => process.stderr.write(`pg-boss resolver error: ${err.message}\n`));
        await withTimeout('pg-boss resolver start', 30_000, resolver.start());
      }
      const jobs: PgBossFlowJob[] = Array.from({ length: children }, (_, i) => ({
        ref: `c${i}`,
        name: childQueue,
        data: { child: i },
      }));
      jobs.push({ ref: 'parent', name: parentQueue, data: parent as object, dependsOn: jobs.map((j) => j.ref) });
      await boss.flow(jobs);
    },
    async enqueueConcurrencyKeyed(name, key, ps) {
      keyedQueues.add(name);
      await boss.insert(
        name,
        ps.map((data) => ({ data: data as object, group: { id: key } })),
      );
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
      if (resolver)
        await withTimeout('pg-boss resolver stop', 20_000, resolver.stop({ graceful: false, wait: true })).catch(
          () => undefined,
        );
      await withTimeout('pg-boss stop', 20_000, boss.stop({ graceful: false, wait: true })).catch(() => undefined);
      await orders.end().catch(() => undefined);
      await dropSchema(schema);
    },
  };
}
