/**
 * Fresh alkstore targets for the scale workloads (bench/scale/*.ts): a SQLite
 * file in a temp dir or a PostgreSQL schema, with direct SQL access for bulk
 * fills, removed afterwards.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { openStore } from '../../lib/index.js';
import type { Store } from '../../lib/contract/types.js';
import { dropSchema } from '../lib/pg.js';
import { PG_URL, uniqueId } from '../lib/util.js';

export type ScaleEngine = 'sqlite' | 'postgres';

/** One fresh database for a scale workload. */
export interface ScaleTarget {
  readonly engine: ScaleEngine;
  /** `sqlite:<file>` or the PostgreSQL URL. */
  readonly url: string;
  /** PostgreSQL schema (quoted) or '' for SQLite. */
  readonly schema: string;
  /** The jobs table, qualified. */
  readonly jobs: string;
  /** Opens a store on the target; PostgreSQL takes `crossProcessHandoff` (B3x's `B3X_HANDOFF=1`). */
  open(opts?: { crossProcessHandoff?: boolean }): Promise<Store>;
  /** Runs SQL outside the store (bulk fills, sizes). SQLite placeholders are `?`, PostgreSQL `$n`. */
  sql<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  /** Runs a script of several statements, no parameters. */
  exec(text: string): Promise<void>;
  cleanup(): Promise<void>;
}

export async function scaleTarget(engine: ScaleEngine): Promise<ScaleTarget> {
  if (engine === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'alkbench-scale-'));
    const file = join(dir, 'bench.db');
    let raw: Database.Database | null = null;
    const db = (): Database.Database => {
      raw ??= new Database(file, { timeout: 60_000 });
      return raw;
    };
    return {
      engine,
      url: `sqlite:${file}`,
      schema: '',
      jobs: '__alkstore_jobs',
      open: () => openStore({ url: `sqlite:${file}` }),
      async sql<T>(text: string, params: unknown[] = []) {
        const st = db().prepare(text);
        return (st.reader ? st.all(...params) : (st.run(...params), [])) as T[];
      },
      async exec(text: string) {
        db().exec(text);
      },
      async cleanup() {
        raw?.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const name = uniqueId('bench_scale');
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  return {
    engine,
    url: PG_URL,
    schema: `"${name}"`,
    jobs: `"${name}".jobs`,
    open: (opts = {}) => openStore({ url: PG_URL, schema: name, ...opts }),
    async sql<T>(text: string, params: unknown[] = []) {
      return (await client.query(text, params)).rows as T[];
    },
    async exec(text: string) {
      await client.query(text);
    },
    async cleanup() {
      await client.end().catch(() => undefined);
      await dropSchema(name);
    },
  };
}

export type JobKind = 'ready' | 'dead' | 'delayed';

/**
 * Inserts `n` jobs of one kind on `queue` with set-based SQL (indexes, and
 * SQLite's counter triggers, run as for any insert; PostgreSQL's counters are
 * rebuilt after), in statements of at most 100k rows.
 * Delayed jobs are due 1–2 h from now.
 */
export async function bulkJobs(t: ScaleTarget, queue: string, kind: JobKind, n: number): Promise<void> {
  const CHUNK = 100_000;
  for (let done = 0; done < n; done += CHUNK) {
    const k = Math.min(CHUNK, n - done);
    const nowMs = Date.now();
    const state = kind === 'dead' ? 'dead' : 'pending';
    const runAt = kind === 'delayed' ? `${nowMs + 3_600_000} + (i * 3600000) / ${k}` : `${nowMs}`;
    const died = kind === 'dead' ? `${nowMs}` : 'NULL';
    const cols =
      'queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, run_at, enqueued_at, died_at';
    if (t.engine === 'postgres') {
      await t.sql(
        `INSERT INTO ${t.jobs} (${cols}) SELECT $1, '${state}', json_build_object('i', i), 0, 0, 3, 300000, 5000, ${runAt}, ${nowMs}, ${died} FROM generate_series(1::bigint, ${k}::bigint) AS g(i)`,
        [queue],
      );
    } else {
      await t.sql(
        `WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < ${k})
         INSERT INTO ${t.jobs} (${cols}) SELECT ?, '${state}', json_object('i', i), 0, 0, 3, 300000, 5000, ${runAt}, ${nowMs}, ${died} FROM g`,
        [queue],
      );
    }
  }
  if (t.engine === 'postgres') {
    // Hand-written SQL does not write counter deltas (PostgreSQL migration 7): rebuild the queue's.
    await t.sql(`SELECT ${t.schema}.recount_queue_counts($1)`, [queue]);
    await t.sql(`VACUUM ANALYZE ${t.jobs}`);
    // The seed's dirty pages are written now, not by a checkpoint during the timings that follow.
    await t.sql('CHECKPOINT');
  } else await t.sql('ANALYZE __alkstore_jobs');
}

/** Sizes of the scale points: 10k, 100k, 1M times `scale` (at least 100 each). */
export function scalePoints(scale: number): number[] {
  return [10_000, 100_000, 1_000_000].map((n) => Math.max(100, Math.round(n * scale)));
}

export function label(n: number): string {
  if (n >= 1_000_000 && n % 1_000_000 === 0) return `${n / 1_000_000}M`;
  if (n >= 1000 && n % 1000 === 0) return `${n / 1000}k`;
  return String(n);
}
