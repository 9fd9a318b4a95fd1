import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { openStore } from '../../lib/index.js';
import type { Job, Queue, Store, TxOpen } from '../../lib/contract/types.js';
import { dropSchema, pgAvailable, pgClient } from '../lib/pg.js';
import { alkstoreSqliteSynchronous } from '../lib/sqlite-settings.js';
import { Counter, PG_URL, uniqueId, withTimeout } from '../lib/util.js';
import * as promClient from 'prom-client';
import { createPrometheusMetrics, jobMetricsObserver } from '../../lib/metrics/index.js';
import { QueueWorker } from '../../lib/worker/queue-worker.js';
import { startDispatcher, DISPATCHER_SETTINGS } from './alkstore-dispatcher.js';
import {
  CONCURRENCY,
  type Handler,
  type RunningWorker,
  type StreamPath,
  type SystemFactory,
  type SystemInstance,
} from './types.js';
import { openTypeOrm } from '../../lib/adapters/typeorm.js';

/**
 * B2/B3 worker: `host` (default) runs the Nest module's own `QueueWorker`
 * (claimBatch of its free slots plus prefetch, acks coalesced into `ackBatch`
 * calls), what a `@QueueHandler` runs; `batch` is the plain loop below, kept
 * for comparison: BENCH_ALK_WORKER=batch. With its default (adaptive)
 * prefetch the host grows its claims while the backlog lasts, so one claim
 * commit feeds hundreds of jobs instead of 10.
 */
const WORKER_MODE = process.env.BENCH_ALK_WORKER === 'batch' ? 'batch' : 'host';
/**
 * `prefetch` of the host worker: unset, the library default (adaptive); BENCH_ALK_PREFETCH=N fixes it
 * (e.g. 10, what earlier runs set to match graphile-worker's `localQueue.size` of concurrency + 1).
 */
const HOST_PREFETCH = process.env.BENCH_ALK_PREFETCH === undefined ? undefined : Number(process.env.BENCH_ALK_PREFETCH);
const PREFETCH_TEXT = HOST_PREFETCH === undefined ? 'default (adaptive)' : String(HOST_PREFETCH);

/** Upper bound of one idle wait of the worker loop; a wake (enqueue commit) cuts it short. */
const IDLE_POLL_MS = 1000;
const OUTBOX = 'bench';

/**
 * The worker loop a Nest `@QueueHandler` host would run: claimBatch(10),
 * run the ten handlers concurrently, ackBatch the ones that succeeded, repeat;
 * when the queue is empty, wait on `queue.listen()` (the receiver is opened
 * before the first claim, so a commit between an empty claim and the wait is
 * not lost).
 */
function runWorkerLoop(queue: Queue, handler: Handler, done: Counter, signal: AbortSignal): Promise<void> {
  const wakes = queue.listen();
  const loop = async (): Promise<void> => {
    try {
      while (!signal.aborted) {
        const jobs = await queue.claimBatch(CONCURRENCY, 'bench-worker');
        if (jobs.length === 0) {
          const idle = AbortSignal.any([signal, AbortSignal.timeout(IDLE_POLL_MS)]);
          await wakes.recv(idle);
          continue;
        }
        const ok: Job[] = [];
        await Promise.all(
          jobs.map(async (job) => {
            try {
              await handler(job.payload);
              ok.push(job);
            } catch (err) {
              await job.retry(err);
            }
          }),
        );
        if (ok.length > 0) done.add(await queue.ackBatch(ok));
      }
    } finally {
      wakes.close();
    }
  };
  return loop();
}

function streamPath(store: Store): StreamPath {
  return {
    publish: (stream, p) => store.stream(stream).publish(p),
    async replay(stream, page) {
      const s = store.stream(stream);
      let offset = 0;
      let n = 0;
      // Bounded: at most 10 000 pages.
      for (let k = 0; k < 10_000; k++) {
        const events = await s.readSince(offset, page);
        if (events.length === 0) break;
        n += events.length;
        offset = events[events.length - 1]!.offset;
      }
      return n;
    },
    async subscribe(stream, onEvent) {
      const s = store.stream(stream);
      const consumer = uniqueId('live');
      // Subscribe from the current tail: save the consumer at the last offset so nothing is replayed.
      // Paged at the store's read cap (10 000): one larger read is refused before any I/O.
      let last = 0;
      for (let k = 0; k < 10_000; k++) {
        const page = await s.readSince(last, 10_000);
        if (page.length === 0) break;
        last = page[page.length - 1]!.offset;
      }
      if (last > 0) await s.saveOffset(consumer, last);
      const rx = s.subscribe(consumer);
      const ac = new AbortController();
      const loop = (async () => {
        for (let k = 0; k < 10_000_000 && !ac.signal.aborted; k++) {
          const ev = await rx.next(ac.signal);
          if (ev === null) break;
          onEvent(ev.payload);
        }
      })();
      return {
        async stop() {
          ac.abort();
          rx.close();
          await withTimeout('stream subscriber stop', 5000, loop).catch(() => undefined);
        },
      };
    },
  };
}

interface Target {
  url: string;
  settings: Record<string, unknown>;
  /** TypeORM DataSource on the same database, for the B5 business row. */
  dataSource(): DataSource;
  ordersTable: string;
  cleanup(): Promise<void>;
}

/** B5's producer: one business row plus one outbox message in one caller-owned transaction. */
interface Producer {
  produce(p: unknown, beforeCommit?: () => void): Promise<void>;
  close(): Promise<void>;
}

/**
 * How B5 opens the caller-owned transaction on PostgreSQL: `pg` (default; a
 * pg client transaction, the same path the PostgreSQL peers use) or
 * `typeorm` (a TypeORM QueryRunner, the Nest path).
 */
const PG_B5_TX = process.env.BENCH_ALK_PG_TX === 'typeorm' ? 'typeorm' : 'pg';

function b5How(engine: 'sqlite' | 'postgres'): string {
  if (engine === 'postgres' && PG_B5_TX === 'pg') {
    return 'pg client: BEGIN; INSERT bench_orders; store.joinTransaction(open of { queryRunner: { isTransactionActive, query: client.query } }, (tx) => tx.outboxEnqueue()); COMMIT (set BENCH_ALK_PG_TX=typeorm for the TypeORM QueryRunner path)';
  }
  if (engine === 'sqlite')
    return 'TypeORM: store.joinTransaction(openTypeOrm(dataSource), (tx, em) => { INSERT bench_orders; tx.outboxEnqueue() })';
  return 'TypeORM queryRunner: startTransaction(); INSERT bench_orders; store.joinTransaction(openTypeOrm(queryRunner.manager), (tx) => tx.outboxEnqueue()); commitTransaction()';
}

async function pgProducer(store: Store, t: Target, onCommitted: () => void): Promise<Producer> {
  const c = await pgClient();
  await c.query(
    `CREATE TABLE IF NOT EXISTS ${t.ordersTable} (id bigserial PRIMARY KEY, amount integer NOT NULL, created_at bigint NOT NULL)`,
  );
  let active = false;
  // The documented seam takes "anything shaped like" a QueryRunner; a pg client result is understood by the engine.
  const runner = {
    get isTransactionActive() {
      return active;
    },
    query: (sql: string, params?: unknown[]) => c.query(sql, params),
  };
  // The caller's open transaction, handed over as it is: the same statements as the peers' by-hand path.
  const open: TxOpen<typeof c> = (body) => body({ queryRunner: runner, handle: c });
  return {
    async produce(p, beforeCommit) {
      await c.query('BEGIN');
      active = true;
      try {
        await c.query(`INSERT INTO ${t.ordersTable} (amount, created_at) VALUES ($1, $2)`, [1, Date.now()]);
        await store.joinTransaction(open, (tx) => tx.outboxEnqueue(OUTBOX, p));
        beforeCommit?.();
        await c.query('COMMIT');
        active = false;
        onCommitted();
      } catch (err) {
        active = false;
        await c.query('ROLLBACK').catch(() => undefined);
        throw err;
      }
    },
    async close() {
      await c.end().catch(() => undefined);
    },
  };
}

async function typeormProducer(
  engine: 'sqlite' | 'postgres',
  store: Store,
  t: Target,
  onCommitted: () => void,
): Promise<Producer> {
  const ds = t.dataSource();
  await withTimeout('TypeORM initialize', 20_000, ds.initialize());
  await ds.query(
    `CREATE TABLE IF NOT EXISTS ${t.ordersTable} (id ${engine === 'postgres' ? 'bigserial' : 'INTEGER'} PRIMARY KEY ${engine === 'sqlite' ? 'AUTOINCREMENT' : ''}, amount integer NOT NULL, created_at bigint NOT NULL)`,
  );
  if (engine === 'sqlite') {
    // SQLite joins only a transaction it runs one at a time through its write path: joinTransaction.
    return {
      async produce(p, beforeCommit) {
        await store.joinTransaction(openTypeOrm(ds), async (tx, em) => {
          await em.query(`INSERT INTO ${t.ordersTable} (amount, created_at) VALUES (?, ?)`, [1, Date.now()]);
          await tx.outboxEnqueue(OUTBOX, p);
          beforeCommit?.();
        });
        onCommitted();
      },
      async close() {
        if (ds.isInitialized) await ds.destroy().catch(() => undefined);
      },
    };
  }
  return {
    async produce(p, beforeCommit) {
      const qr = ds.createQueryRunner();
      try {
        await qr.startTransaction();
        await qr.query(
          `INSERT INTO ${t.ordersTable} (amount, created_at) VALUES (${engine === 'postgres' ? '$1, $2' : '?, ?'})`,
          [1, Date.now()],
        );
        await store.joinTransaction(openTypeOrm(qr.manager), (tx) => tx.outboxEnqueue(OUTBOX, p));
        beforeCommit?.();
        await qr.commitTransaction();
        onCommitted();
      } catch (err) {
        if (qr.isTransactionActive) await qr.rollbackTransaction().catch(() => undefined);
        throw err;
      } finally {
        await qr.release();
      }
    },
    async close() {
      if (ds.isInitialized) await ds.destroy().catch(() => undefined);
    },
  };
}

/**
 * `metrics`: the same system with worker metrics on (a prom-client registry fed through the worker seam,
 * queue depth sampled every 10 s), to show what metrics cost on B2/B3 next to the plain system.
 */
function makeFactory(engine: 'sqlite' | 'postgres', variant: 'plain' | 'metrics' = 'plain'): SystemFactory {
  return {
    name: variant === 'metrics' ? `alkstore-${engine}-metrics` : `alkstore-${engine}`,
    pkg: 'alkstore',
    async available() {
      if (engine === 'postgres') {
        const why = await pgAvailable();
        if (why) return why;
      }
      // The engine reports itself unusable by throwing at open (e.g. "not implemented yet").
      const t = await target(engine);
      try {
        const s = await withTimeout(
          `open alkstore-${engine}`,
          30_000,
          openStore({ url: t.url, ...(engine === 'postgres' ? { schema: t.settings.schema as string } : {}) }),
        );
        await s.close();
        return null;
      } catch (err) {
        return `alkstore ${engine} engine not usable: ${(err as Error).message}`;
      } finally {
        await t.cleanup();
      }
    },
    async create(): Promise<SystemInstance> {
      const t = await target(engine);
      const store = await withTimeout(
        `open alkstore-${engine}`,
        30_000,
        openStore({ url: t.url, ...(engine === 'postgres' ? { schema: t.settings.schema as string } : {}) }),
      );
      const queues = new Map<string, Queue>();
      const q = (name: string): Queue => {
        let queue = queues.get(name);
        if (!queue) {
          queue = store.queue(name);
          queues.set(name, queue);
        }
        return queue;
      };
      const stops: (() => Promise<void>)[] = [];
      let producer: Producer | null = null;
      let produced = 0;
      const onCommitted = (): void => {
        produced += 1;
      };

      const enqueued = new Map<string, number>();
      const lastUnique = new Map<string, number>();
      const bump = (name: string, k: number): void => {
        enqueued.set(name, (enqueued.get(name) ?? 0) + k);
      };
      const metrics =
        variant === 'metrics' ? await createPrometheusMetrics({ registry: new promClient.Registry() }) : null;
      const startHostWorker = (name: string, handler: Handler): RunningWorker => {
        const w = new QueueWorker({
          observers: metrics ? [jobMetricsObserver(metrics, name)] : [],
          queue: q(name),
          handler: async (job) => handler(job.payload),
          name: `bench:${name}`,
          concurrency: CONCURRENCY,
          ...(HOST_PREFETCH === undefined ? {} : { prefetch: HOST_PREFETCH }),
          idlePollIntervalMs: IDLE_POLL_MS,
          drainTimeoutMs: 2000,
          workerId: 'bench-host-worker',
          logger: {
            log: () => undefined,
            warn: (m) => process.stderr.write(`${m}\n`),
            error: (m) => process.stderr.write(`${m}\n`),
          },
        });
        w.start();
        const stop = (): Promise<void> => withTimeout('QueueWorker stop', 10_000, w.stop()).catch(() => undefined);
        stops.push(stop);
        return {
          async completed() {
            // The host writes its own (batched) acks; acked rows are deleted.
            const st = await q(name).stats();
            return (enqueued.get(name) ?? 0) - st.pending - st.processing - st.dead;
          },
          stop,
        };
      };

      const startWorker = async (name: string, handler: Handler): Promise<RunningWorker> => {
        if (WORKER_MODE === 'host') return startHostWorker(name, handler);
        const done = new Counter();
        const ac = new AbortController();
        const loop = runWorkerLoop(q(name), handler, done, ac.signal).catch((err: unknown) => {
          if (!ac.signal.aborted) process.stderr.write(`alkstore worker loop failed: ${(err as Error).message}\n`);
        });
        const stop = async (): Promise<void> => {
          ac.abort();
          await withTimeout('alkstore worker stop', 10_000, loop).catch(() => undefined);
        };
        stops.push(stop);
        return { completed: async () => done.value, stop };
      };

      return {
        settings: {
          ...t.settings,
          worker:
            WORKER_MODE === 'host'
              ? `lib/nest QueueWorker (the @QueueHandler host): concurrency ${CONCURRENCY}, prefetch ${PREFETCH_TEXT}, claimBatch(free slots + prefetch), acks of jobs finishing together coalesced into one ackBatch, idlePollIntervalMs ${IDLE_POLL_MS}`
              : `claimBatch(${CONCURRENCY}) -> ${CONCURRENCY} handlers concurrently -> ackBatch; idle: queue.listen() wake, ${IDLE_POLL_MS} ms poll fallback`,
          batchEnqueue: 'queue.enqueueMany (one transaction)',
          metrics:
            variant === 'metrics'
              ? 'prom-client JobMetrics on the QueueWorker (nestjs-alkstore/observability), depth sampled every 10 s'
              : 'none',
          dispatcher: DISPATCHER_SETTINGS,
        },
        notes: [
          WORKER_MODE === 'host'
            ? `B2/B3 worker: the Nest QueueWorker itself, prefetch ${PREFETCH_TEXT} (BENCH_ALK_WORKER=batch runs the bench's own claimBatch/ackBatch loop instead)`
            : 'B2/B3 worker: bench loop claimBatch(10)/ackBatch (BENCH_ALK_WORKER=batch; the default runs the Nest QueueWorker)',
          'B5: OutboxDispatcher delivers; the business row and the message share one caller-owned transaction (see B5 transaction)',
          'acked jobs are deleted (SPEC)',
        ],
        async prepareQueue(name) {
          q(name);
          return name;
        },
        async enqueue(name, p) {
          await q(name).enqueue(p);
          bump(name, 1);
        },
        async enqueueMany(name, ps) {
          await q(name).enqueueMany(ps);
          bump(name, ps.length);
        },
        startWorker,
        streams: streamPath(store),
        flows: {
          async enqueueFlow(pq, cq, parent, children) {
            await q(pq).enqueueFlow({
              payload: parent,
              children: Array.from({ length: children }, (_, i) => ({ queue: cq, payload: { child: i } })),
            });
            bump(pq, 1);
            bump(cq, children);
          },
        },
        keyed: {
          async enqueueUnique(name, key, p) {
            const id = await q(name).enqueue(p, { uniqueKey: key });
            // Only a new job counts toward completions.
            if (id !== lastUnique.get(name)) bump(name, 1);
            lastUnique.set(name, id);
          },
          async enqueueOrdered(name, key, ps) {
            await q(name).enqueueMany(ps, { orderingKey: key });
            bump(name, ps.length);
          },
          async enqueueConcurrencyKeyed(name, key, ps) {
            // No setLimits: a concurrency key without a concurrencyLimit is a mutex per key.
            await q(name).enqueueMany(ps, { concurrencyKey: key });
            bump(name, ps.length);
          },
        },
        outbox: {
          how: b5How(engine),
          async startDispatcher(handler) {
            const w = await startDispatcher(store, OUTBOX, handler, () => produced);
            stops.push(w.stop);
            return w;
          },
          async produce(p, beforeCommit) {
            producer ??= await (engine === 'postgres' && PG_B5_TX === 'pg'
              ? pgProducer(store, t, onCommitted)
              : typeormProducer(engine, store, t, onCommitted));
            await producer.produce(p, beforeCommit);
          },
        },
        async close() {
          for (const stop of stops) await stop();
          await producer?.close();
          await withTimeout('alkstore close', 20_000, store.close()).catch(() => undefined);
          await t.cleanup();
        },
      };
    },
  };
}

async function target(engine: 'sqlite' | 'postgres'): Promise<Target> {
  if (engine === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'alkbench-sqlite-'));
    const path = join(dir, 'store.db');
    const sync = alkstoreSqliteSynchronous();
    return {
      url: `sqlite:${path}`,
      settings: {
        url: 'sqlite:<fresh temp file>',
        journal_mode: 'WAL',
        synchronous: `${sync.value} (engine default, ${sync.source})`,
      },
      ordersTable: 'bench_orders',
      dataSource: () =>
        new DataSource({
          type: 'better-sqlite3',
          database: path,
          enableWAL: true,
          // Same durability as the store's own connection.
          prepareDatabase: (db: { pragma(s: string): unknown }) => {
            db.pragma(`synchronous = ${sync.value}`);
          },
        }),
      async cleanup() {
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const schema = uniqueId('bench_alk');
  return {
    url: PG_URL,
    settings: {
      url: PG_URL,
      schema,
      note: 'fresh schema, dropped afterwards',
      poolSize: '10 (default)',
      wake: 'LISTEN/NOTIFY (engine)',
    },
    ordersTable: `"${schema}".bench_orders`,
    dataSource: () => new DataSource({ type: 'postgres', url: PG_URL, extra: { max: 2 } }),
    async cleanup() {
      await dropSchema(schema);
    },
  };
}

export const alkstoreSqliteSystem = makeFactory('sqlite');
export const alkstorePostgresSystem = makeFactory('postgres');
export const alkstoreSqliteMetricsSystem = makeFactory('sqlite', 'metrics');
export const alkstorePostgresMetricsSystem = makeFactory('postgres', 'metrics');
