import { connect } from 'node:net';
import { createPostgresBackend, FlowProducer, Queue, withBackend, Worker } from 'bullmq';
import { dropSchema, pgAvailable } from '../lib/pg.js';
import { Counter, PG_URL, REDIS_HOST, REDIS_PORT, uniqueId, withTimeout } from '../lib/util.js';
import { CONCURRENCY, type Handler, type RunningWorker, type SystemFactory, type SystemInstance } from './types.js';

const redisConnection = { host: REDIS_HOST, port: REDIS_PORT, maxRetriesPerRequest: null };
const JOB_OPTS = { removeOnComplete: true, removeOnFail: true };
/**
 * BullMQ's documented lever for throughput is the worker's `concurrency`
 * ("Concurrency" guide: raise it for jobs that wait on I/O). The fast variant
 * runs one worker at this concurrency; the default variant at the workload's 10.
 */
const FAST_CONCURRENCY = 100;

function redisAnswers(): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: REDIS_HOST, port: REDIS_PORT });
    const done = (ok: boolean): void => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(1000, () => done(false));
    s.on('error', () => done(false));
    s.on('connect', () => s.write('PING\r\n'));
    s.on('data', (d) => done(d.toString().startsWith('+PONG')));
  });
}

/** The queue and worker of one backend, behind the few calls the bench makes. */
interface Backend {
  queue(name: string): Queue;
  /** BullMQ's FlowProducer on the same backend (B9). */
  flowProducer(): FlowProducer;
  worker(name: string, handler: Handler, concurrency: number): Worker;
  close(): Promise<void>;
  settings: Record<string, unknown>;
}

function redisBackend(): Backend {
  // A fresh key prefix per instance; every queue is obliterated at close.
  const prefix = uniqueId('alkbench');
  return {
    queue: (name) => new Queue(name, { connection: redisConnection, prefix }),
    flowProducer: () => new FlowProducer({ connection: redisConnection, prefix }),
    worker: (name, handler, concurrency) =>
      new Worker(name, async (job) => handler(job.data), { connection: redisConnection, prefix, concurrency }),
    async close() {},
    settings: {
      redis: `${REDIS_HOST}:${REDIS_PORT} (server defaults)`,
      prefix: 'fresh key prefix, queues obliterated afterwards',
      wake: 'blocking BZPOPMIN on the marker key (built in)',
    },
  };
}

function postgresBackend(): Backend {
  // A fresh schema per instance (BullMQ's connection-level namespace), dropped at close.
  const schema = uniqueId('bench_bullmq');
  const connection = { connectionString: PG_URL, schema, migrate: true };
  const pgClasses = withBackend(createPostgresBackend);
  return {
    queue: (name) => new pgClasses.Queue(name, { connection }) as unknown as Queue,
    flowProducer: () => new pgClasses.FlowProducer({ connection }) as unknown as FlowProducer,
    worker: (name, handler, concurrency) =>
      new pgClasses.Worker(name, async (job) => handler(job.data), { connection, concurrency }) as unknown as Worker,
    async close() {
      await dropSchema(schema);
    },
    settings: {
      postgres: 'createPostgresBackend({ connectionString, schema }) (pool defaults), migrate: true',
      schema: 'fresh schema, dropped afterwards',
      wake: 'LISTEN on a dedicated client (built in)',
    },
  };
}

function bullmqFactory(name: string, backend: 'redis' | 'postgres', concurrency: number): SystemFactory {
  return {
    name,
    pkg: 'bullmq',
    lacks: ['B4', 'B5', 'B6', 'B7', 'B10'],
    async available() {
      if (backend === 'postgres') return pgAvailable();
      return (await redisAnswers()) ? null : `Redis does not answer on ${REDIS_HOST}:${REDIS_PORT}`;
    },
    async create(): Promise<SystemInstance> {
      const b = backend === 'redis' ? redisBackend() : postgresBackend();
      const queues = new Map<string, Queue>();
      const workers: Worker[] = [];
      let flowProducer: FlowProducer | undefined;
      const q = (qn: string): Queue => {
        let queue = queues.get(qn);
        if (!queue) {
          queue = b.queue(qn);
          queues.set(qn, queue);
        }
        return queue;
      };

      const startWorkers = async (qn: string, handler: Handler): Promise<RunningWorker> => {
        const done = new Counter();
        const w = b.worker(qn, handler, concurrency);
        w.on('completed', () => done.add());
        w.on('error', (err) => process.stderr.write(`bullmq worker error: ${err.message}\n`));
        workers.push(w);
        await withTimeout('bullmq worker ready', 10_000, w.waitUntilReady());
        return {
          async completed() {
            return done.value;
          },
          async stop() {
            await withTimeout('bullmq worker close', 10_000, w.close()).catch(() => undefined);
          },
        };
      };

      return {
        settings: { backend, ...b.settings, concurrency, jobOpts: JOB_OPTS, batchEnqueue: 'queue.addBulk(array)' },
        notes: [
          backend === 'redis'
            ? 'Redis, not a SQL database: no transactional outbox with a business row, so no B5'
            : 'PostgreSQL backend: the Queue owns its pool; no documented way to add a job inside a caller transaction, so no B5',
          'completed jobs removed (removeOnComplete: true)',
          ...(concurrency !== CONCURRENCY
            ? [`fast settings: one worker at concurrency ${concurrency} (the workload's default is ${CONCURRENCY})`]
            : []),
        ],
        async prepareQueue(qn) {
          await withTimeout('bullmq queue ready', 30_000, q(qn).waitUntilReady());
          return qn;
        },
        async enqueue(qn, p) {
          await q(qn).add(qn, p, JOB_OPTS);
        },
        async enqueueMany(qn, ps) {
          await q(qn).addBulk(ps.map((data) => ({ name: qn, data, opts: JOB_OPTS })));
        },
        startWorker: startWorkers,
        flows: {
          async enqueueFlow(pq, cq, parent, children) {
            flowProducer ??= b.flowProducer();
            await flowProducer.add({
              name: pq,
              queueName: pq,
              data: parent,
              opts: JOB_OPTS,
              children: Array.from({ length: children }, (_, i) => ({
                name: cq,
                queueName: cq,
                data: { child: i },
                opts: JOB_OPTS,
              })),
            });
          },
        },
        async close() {
          await flowProducer?.close().catch(() => undefined);
          for (const w of workers) await withTimeout('bullmq worker close', 10_000, w.close()).catch(() => undefined);
          for (const queue of queues.values()) {
            if (backend === 'redis')
              await withTimeout('bullmq obliterate', 10_000, queue.obliterate({ force: true })).catch(() => undefined);
            await queue.close().catch(() => undefined);
          }
          await b.close();
        },
      };
    },
  };
}

/** BullMQ on Redis, worker concurrency 10 (the workload's), every other option at its default. */
export const bullmqSystem = bullmqFactory('bullmq', 'redis', CONCURRENCY);
/** BullMQ on Redis at its documented fast setting: a high worker concurrency. */
export const bullmqFastSystem = bullmqFactory('bullmq-fast', 'redis', FAST_CONCURRENCY);
/** BullMQ 6 on its PostgreSQL backend (`createPostgresBackend`), concurrency 10. */
export const bullmqPgSystem = bullmqFactory('bullmq-pg', 'postgres', CONCURRENCY);
/** BullMQ 6 on PostgreSQL at its documented fast setting: a high worker concurrency. */
export const bullmqPgFastSystem = bullmqFactory('bullmq-pg-fast', 'postgres', FAST_CONCURRENCY);
