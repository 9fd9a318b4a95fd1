// Probe (issue #27 item 6, limits): 4 worker processes, one SIGKILLed mid-run; sampled from the
// database, no concurrency key is ever over its limit and the queue never over its global limit;
// every job completes.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import {
  contractEngines,
  PG_URL,
  waitFor,
  withEngineDb,
  type EngineDb,
  type EngineFixture,
} from '../helpers/engines.js';
import { numbersOf, spawnStoreChild } from '../helpers/store-child.js';

const CHILD = fileURLToPath(new URL('./fixtures/limits-child.ts', import.meta.url));

/** One sample of what is processing under a live lease: per concurrency key, and in all. */
interface Sample {
  perKey: Map<string, number>;
  total: number;
}

/** Reads the jobs table directly (the engine's own tables, as an operator would). */
async function sampler(
  engine: EngineFixture,
  db: EngineDb,
  queue: string,
): Promise<{ sample(): Promise<Sample>; close(): Promise<void> }> {
  if (engine.kind === 'sqlite') {
    const Database = (await import('better-sqlite3')).default;
    const conn = new Database(db.location, { readonly: true, fileMustExist: true });
    conn.pragma('busy_timeout = 5000');
    const stmt = conn.prepare(
      `SELECT concurrency_key AS k, count(*) AS n FROM __alkstore_jobs WHERE queue = ? AND state = 'processing' AND claimed_until > CAST(unixepoch('subsec') * 1000 AS INTEGER) GROUP BY concurrency_key`,
    );
    return {
      sample: async () => toSample(stmt.all(queue) as { k: string | null; n: number }[]),
      close: async () => void conn.close(),
    };
  }
  const pg = (await import('pg')).default;
  const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
  const sql = `SELECT concurrency_key AS k, count(*)::int AS n FROM "${db.location}".jobs
    WHERE queue = $1 AND state = 'processing' AND claimed_until > floor(extract(epoch from clock_timestamp()) * 1000)::bigint GROUP BY concurrency_key`;
  return {
    sample: async () => toSample((await pool.query<{ k: string | null; n: number }>(sql, [queue])).rows),
    close: () => pool.end(),
  };
}

function toSample(rows: readonly { k: string | null; n: number }[]): Sample {
  const perKey = new Map<string, number>();
  let total = 0;
  for (const r of rows) {
    total += r.n;
    if (r.k !== null) perKey.set(r.k, r.n);
  }
  return { perKey, total };
}

const KEYS = 12;
const PER_KEY = 25;
const KEY_LIMIT = 2;
const GLOBAL = 7;

for (const engine of contractEngines()) {
  describe(`per-key and global limits across processes [${engine.name}]`, () => {
    let db!: EngineDb;
    let store!: Store;
    withEngineDb(engine, (d, s) => {
      db = d;
      store = s;
    });

    it('4 worker processes, one SIGKILLed mid-run: no key over its concurrencyLimit, the queue never over globalConcurrency, every job completes', async () => {
      const name = 'limits-probe';
      const q = store.queue(name, { leaseMs: 3000, maxAttempts: 10, limitKeys: { concurrencyKey: 'payload.tenant' } });
      await q.setLimits({ concurrencyLimit: KEY_LIMIT, globalConcurrency: GLOBAL });
      const ids = await q.enqueueMany(
        Array.from({ length: KEYS * PER_KEY }, (_, i) => ({ tenant: `t${Math.floor(i / PER_KEY)}`, n: i })),
      );
      // Unkeyed jobs (by name: the handle's key source does not apply) count against the global limit only.
      ids.push(
        ...(await store.withTx(async (tx) =>
          Promise.all(
            Array.from({ length: 30 }, (_, i) => tx.enqueue(name, { n: i }, { leaseMs: 3000, maxAttempts: 10 })),
          ),
        )),
      );
      const s = await sampler(engine, db, name);
      const children = Array.from({ length: 4 }, () => spawnStoreChild(CHILD, engine, db, [name], 'limits'));
      let maxKey = 0;
      let maxTotal = 0;
      let samples = 0;
      let sampling = true;
      const loop = (async () => {
        while (sampling) {
          const x = await s.sample();
          samples++;
          maxTotal = Math.max(maxTotal, x.total);
          for (const n of x.perKey.values()) maxKey = Math.max(maxKey, n);
          if (x.total > GLOBAL || [...x.perKey.values()].some((n) => n > KEY_LIMIT)) break;
          // Yield to timers and I/O (the SQLite read is synchronous): a sample every few ms.
          await new Promise((r) => setTimeout(r, 3));
        }
      })();
      try {
        await Promise.all(children.map((c) => c.ready));
        for (const c of children) c.send();
        await waitFor(
          'a quarter of the jobs done',
          () => children.reduce((n, c) => n + numbersOf(c.events, 'done').length, 0) >= ids.length / 4,
          60_000,
          20,
        );
        const victim = children[0]!;
        victim.proc.kill('SIGKILL');
        await victim.exited;
        await waitFor(
          'every job completed',
          async () => {
            const st = await q.stats();
            return st.pending === 0 && st.processing === 0;
          },
          120_000,
          100,
        );
        sampling = false;
        await loop;
        const survivors = children.slice(1);
        for (const c of survivors) c.send('stop');
        await Promise.all(survivors.map((c) => c.exited));
        expect(samples).toBeGreaterThan(20);
        expect(maxKey).toBeLessThanOrEqual(KEY_LIMIT);
        expect(maxTotal).toBeLessThanOrEqual(GLOBAL);
        // The limits were reached (the probe could see a breach), not just never approached.
        expect(maxTotal).toBeGreaterThanOrEqual(KEY_LIMIT);
        for (const id of ids) expect([id, (await q.getJob(id))?.state]).toEqual([id, 'completed']);
      } finally {
        sampling = false;
        await loop;
        await s.close();
        for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
      }
    }, 240_000);
  });
}
