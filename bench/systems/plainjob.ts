import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { better, defineQueue, defineWorker, type Worker as PlainWorker } from 'plainjob';
import { alkstoreSqliteSynchronous } from '../lib/sqlite-settings.js';
import { Counter } from '../lib/util.js';
import { CONCURRENCY, type Handler, type RunningWorker, type SystemFactory, type SystemInstance } from './types.js';

/** plainjob polls; its documented knob is `pollIntervall`. 10 ms: fast wakes without ten 1 ms busy loops on a 2-core box. */
const POLL_MS = 10;

const silent = { error: (): void => {}, warn: (): void => {}, info: (): void => {}, debug: (): void => {} };

export const plainjobSystem: SystemFactory = {
  name: 'plainjob',
  pkg: 'plainjob',
  lacks: ['B4', 'B6', 'B7', 'B10'],
  async available() {
    return null;
  },
  async create(): Promise<SystemInstance> {
    const dir = mkdtempSync(join(tmpdir(), 'alkbench-plainjob-'));
    const path = join(dir, 'plainjob.db');
    const db = new Database(path);
    const sync = alkstoreSqliteSynchronous();
    const queue = defineQueue({ connection: better(db), logger: silent, maintenanceInterval: 3_600_000 });
    // defineQueue sets WAL + synchronous=1 itself; re-apply alkstore's value afterwards so both run the same durability.
    db.pragma(`synchronous = ${sync.value}`);
    db.exec(
      'CREATE TABLE IF NOT EXISTS bench_orders (id INTEGER PRIMARY KEY AUTOINCREMENT, amount INTEGER NOT NULL, created_at INTEGER NOT NULL)',
    );
    const insertOrder = db.prepare('INSERT INTO bench_orders (amount, created_at) VALUES (?, ?)');
    const workers: PlainWorker[] = [];

    const startWorkers = async (type: string, handler: Handler): Promise<RunningWorker> => {
      const done = new Counter();
      const mine: PlainWorker[] = [];
      const loops: Promise<void>[] = [];
      // plainjob workers run one job at a time; concurrency 10 = ten workers on the same queue and connection.
      for (let k = 0; k < CONCURRENCY; k++) {
        const w = defineWorker(type, async (job) => handler(job.data), {
          queue,
          pollIntervall: POLL_MS,
          logger: silent,
          onCompleted: () => done.add(),
        });
        mine.push(w);
        workers.push(w);
        loops.push(w.start().catch(() => undefined));
      }
      return {
        async completed() {
          return done.value;
        },
        async stop() {
          await Promise.all(mine.map((w) => w.stop()));
          await Promise.race([Promise.all(loops), new Promise((r) => setTimeout(r, 2000))]);
        },
      };
    };

    return {
      settings: {
        file: 'fresh file in a temp dir',
        journal_mode: 'WAL',
        synchronous: `${sync.value} (matched to alkstore: ${sync.source})`,
        busy_timeout: 5000,
        workers: `${CONCURRENCY} defineWorker loops on one connection (one job each at a time)`,
        pollIntervall: POLL_MS,
        batchEnqueue: 'queue.addMany (one transaction)',
      },
      notes: [
        'plainjob has no wake signal: idle workers poll every pollIntervall ms',
        'completed jobs are marked done (kept), as plainjob does',
        'B5: business row and queue.add share one better-sqlite3 transaction (db.transaction), plainjob worker delivers',
      ],
      async prepareQueue(name) {
        return name;
      },
      async enqueue(type, p) {
        queue.add(type, p);
      },
      async enqueueMany(type, ps) {
        queue.addMany(type, [...ps]);
      },
      startWorker: startWorkers,
      outbox: {
        how: 'better-sqlite3 db.transaction(() => { INSERT bench_orders; queue.add(...) }) on the connection plainjob uses',
        startDispatcher: (handler) => startWorkers('outbox', handler),
        async produce(p, beforeCommit) {
          // better-sqlite3 transactions are synchronous: the commit happens when the function returns.
          beforeCommit?.();
          db.transaction(() => {
            insertOrder.run(1, Date.now());
            queue.add('outbox', p);
          })();
        },
      },
      async close() {
        await Promise.all(workers.map((w) => w.stop().catch(() => undefined)));
        queue.close();
        try {
          db.close();
        } catch {
          // queue.close may already have closed the connection
        }
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};
