import { connect } from 'node:net';
import { Queue, Worker } from 'bullmq';
import { REDIS_HOST, REDIS_PORT, uniqueId, withTimeout, Counter } from '../lib/util.js';
import { CONCURRENCY, type Handler, type RunningWorker, type SystemFactory, type SystemInstance } from './types.js';

const connection = { host: REDIS_HOST, port: REDIS_PORT, maxRetriesPerRequest: null };
const JOB_OPTS = { removeOnComplete: true, removeOnFail: true };

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

export const bullmqSystem: SystemFactory = {
  name: 'bullmq',
  pkg: 'bullmq',
  lacks: ['B4', 'B5', 'B6', 'B7'],
  async available() {
    return (await redisAnswers()) ? null : `Redis does not answer on ${REDIS_HOST}:${REDIS_PORT}`;
  },
  async create(): Promise<SystemInstance> {
    // A fresh key prefix per instance; every queue is obliterated at close.
    const prefix = uniqueId('alkbench');
    const queues = new Map<string, Queue>();
    const workers: Worker[] = [];
    const q = (name: string): Queue => {
      let queue = queues.get(name);
      if (!queue) {
        queue = new Queue(name, { connection, prefix });
        queues.set(name, queue);
      }
      return queue;
    };

    const startWorkers = async (name: string, handler: Handler): Promise<RunningWorker> => {
      const done = new Counter();
      const w = new Worker(name, async (job) => handler(job.data), { connection, prefix, concurrency: CONCURRENCY });
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
      settings: {
        redis: `${REDIS_HOST}:${REDIS_PORT} (server defaults)`,
        prefix: 'fresh key prefix, queues obliterated afterwards',
        concurrency: CONCURRENCY,
        jobOpts: JOB_OPTS,
        wake: 'blocking BZPOPMIN on the marker key (built in)',
        batchEnqueue: 'queue.addBulk(array)',
      },
      notes: ['Redis, not a SQL database: no transactional outbox with a business row, so no B5', 'completed jobs removed (removeOnComplete: true)'],
      async prepareQueue(name) {
        await withTimeout('bullmq queue ready', 10_000, q(name).waitUntilReady());
        return name;
      },
      async enqueue(name, p) {
        await q(name).add(name, p, JOB_OPTS);
      },
      async enqueueMany(name, ps) {
        await q(name).addBulk(ps.map((data) => ({ name, data, opts: JOB_OPTS })));
      },
      startWorker: startWorkers,
      async close() {
        for (const w of workers) await withTimeout('bullmq worker close', 10_000, w.close()).catch(() => undefined);
        for (const queue of queues.values()) {
          await withTimeout('bullmq obliterate', 10_000, queue.obliterate({ force: true })).catch(() => undefined);
          await queue.close().catch(() => undefined);
        }
      },
    };
  },
};
