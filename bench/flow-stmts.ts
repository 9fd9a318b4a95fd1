/**
 * Where a SQLite drain's time goes in the database, per job: FLOWCOST's drain (the library's queue
 * worker, concurrency 10, default prefetch, a no-op handler) of N pre-enqueued jobs on a queue with
 * no limit, with a per-key concurrency limit of 1 and a per-key rate limit over 1,000 keys, with
 * `globalConcurrency` 100, and with ordering keys over 1,000 keys, counting every
 * statement the store's connections run and the time spent in it (better-sqlite3 `run`/`get`/`all`).
 *
 *   npx tsx bench/flow-stmts.ts [N] [variants]   (default 5000, every variant: none, key-concurrency,
 *     key-rate, global-concurrency, ordering-keys; a comma-separated list narrows it)
 *
 * Statements per job and µs per job, largest first. The timing wraps each call, so totals are a
 * little above an unwrapped run; compare variants of one run, not runs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteConn } from '../lib/engines/sqlite/connection.js';
import type { SqliteStatement } from '../lib/engines/sqlite/binding.js';
import { openStore } from '../lib/index.js';
import type { Queue } from '../lib/contract/types.js';
import { QueueWorker } from '../lib/worker/queue-worker.js';

const N = Number(process.argv[2] ?? 5000);
const prof = new Map<string, { n: number; ms: number }>();
const wrapped = new WeakMap<SqliteStatement, SqliteStatement>();

function wrap(sql: string, s: SqliteStatement): SqliteStatement {
  let w = wrapped.get(s);
  if (w) return w;
  w = new Proxy(s, {
    get(target, p) {
      const v = Reflect.get(target, p) as unknown;
      if (typeof v !== 'function') return v;
      if (p !== 'run' && p !== 'get' && p !== 'all') return (v as (...a: unknown[]) => unknown).bind(target);
      return (...args: unknown[]) => {
        const t0 = performance.now();
        try {
          return (v as (...a: unknown[]) => unknown).apply(target, args);
        } finally {
          const e = prof.get(sql) ?? { n: 0, ms: 0 };
          e.n++;
          e.ms += performance.now() - t0;
          prof.set(sql, e);
        }
      };
    },
  });
  wrapped.set(s, w);
  return w;
}
for (const m of ['stmt', 'pluck'] as const) {
  const orig = SqliteConn.prototype[m];
  SqliteConn.prototype[m] = function (this: SqliteConn, sql: string) {
    return wrap(sql, orig.call(this, sql));
  };
}

const dir = mkdtempSync(join(tmpdir(), 'alkstore-flow-stmts-'));
const store = await openStore({ url: `sqlite://${join(dir, 's.db')}` });

async function prepare(v: string): Promise<Queue> {
  const q =
    v === 'key-concurrency'
      ? store.queue(`fs-${v}`, { limitKeys: { concurrencyKey: 'payload.k' } })
      : v === 'key-rate'
        ? store.queue(`fs-${v}`, { limitKeys: { rateLimitKey: 'payload.k' } })
        : store.queue(`fs-${v}`);
  if (v === 'global-concurrency') await q.setLimits({ globalConcurrency: 100 });
  if (v === 'key-concurrency') await q.setLimits({ concurrencyLimit: 1 });
  if (v === 'key-rate') await q.setLimits({ keyRateLimit: { max: 1_000_000, perMs: 3_600_000 } });
  for (let i = 0; i < N; i += 1000) {
    const b = Array.from({ length: Math.min(1000, N - i) }, (_, j) => ({ i: i + j, k: `k-${(i + j) % 1000}` }));
    if (v === 'ordering-keys') await q.enqueueBulk(b.map((p) => ({ payload: p, opts: { orderingKey: p.k } })));
    else await q.enqueueMany(b);
  }
  return q;
}

const variants = process.argv[3]?.split(',') ?? [
  'none',
  'key-concurrency',
  'key-rate',
  'global-concurrency',
  'ordering-keys',
];
for (const v of variants) {
  const q = await prepare(v);
  prof.clear();
  let handled = 0;
  const w = new QueueWorker({
    queue: q,
    handler: async () => {
      handled++;
    },
    name: `fs-${v}`,
    concurrency: 10,
    idlePollIntervalMs: 1000,
    drainTimeoutMs: 2000,
    workerId: `fs-${v}`,
    logger: { log: () => undefined, warn: () => undefined, error: (m) => process.stderr.write(`${m}\n`) },
  });
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  w.start();
  for (;;) {
    if (handled >= N) {
      const st = await q.stats();
      if (st.pending + st.processing === 0) break;
    }
    await new Promise((r) => setTimeout(r, handled >= N ? 2 : 5));
  }
  const rate = (N * 1000) / (performance.now() - t0);
  const cpu = process.cpuUsage(c0);
  await w.stop();
  let total = 0;
  for (const e of prof.values()) total += e.ms;
  console.log(
    `== ${v}: ${rate.toFixed(0)} jobs/s, ${((total * 1000) / N).toFixed(1)} µs/job in statements, ${((cpu.user + cpu.system) / N).toFixed(1)} µs/job of CPU`,
  );
  for (const [sql, e] of [...prof].sort((a, b) => b[1].ms - a[1].ms).slice(0, 10))
    console.log(
      `  ${(e.n / N).toFixed(3)}/job ${((e.ms * 1000) / N).toFixed(1).padStart(5)} µs/job  ${sql.replace(/\s+/g, ' ').trim().slice(0, 110)}`,
    );
}
await store.close();
rmSync(dir, { recursive: true, force: true });
