import type { EnqueueHeadersHook } from '../../contract/job-extras.js';
import { InvalidOption } from '../../contract/errors.js';
import type { StoreLogger } from '../../contract/types.js';
import { asOption, maxPayloadBytesOption, requireBoolean, requireFunction, requireTimerMs } from '../../contract/validate.js';
import { validateDriverOption, type SqliteDriverName } from './sqlite-driver.js';

/** Options of `openSqliteStore`. */
export interface SqliteStoreOptions {
  /** A file path, or `:memory:` (one store in one process; wakes are in-process only). */
  path: string;
  /** How often the watcher checks `PRAGMA data_version` for commits by other connections (ms, default 1). Runs only while someone listens. */
  pollIntervalMs?: number;
  /**
   * `'full'` (default): every acknowledged write is fsynced to the WAL before the call resolves.
   * `'normal'`: faster; a power loss (not a process crash) may lose the last commits.
   */
  synchronous?: 'full' | 'normal';
  /**
   * With `synchronous: 'full'`, whether a claim's COMMIT waits for its own fsync.
   * `'deferred'` (default): the claim commits without it and the WAL is fsynced right
   * after on a background thread (and by the next commit, usually the ack), so a woken
   * worker's handler starts one fsync sooner. Only a power loss in that short window can
   * undo a claim: the job is pending again with the attempt uncounted. Enqueues, acks,
   * retries, publishes and every other write always fsync before resolving.
   * `'immediate'`: every claim fsyncs before it resolves, like the other writes.
   */
  claimDurability?: 'deferred' | 'immediate';
  /**
   * Longest time (ms) a write waits, asynchronously, for the database write lock held by
   * another connection (another process, or an open TypeORM transaction) before it fails
   * with a `Database` error. Default 30 000.
   */
  lockWaitTimeoutMs?: number;
  /**
   * Cross-process turn-taking on the write lock (default true): a write that finds the lock
   * taken leaves a ticket in `<path>-alkwait/`, and the writers of other alkstore stores step
   * aside before their next transaction until it has had its turn, so one process writing flat
   * out cannot starve another (docs/sqlite.md, Several processes). `false`: plain polling.
   */
  writeFairness?: boolean;
  /**
   * Local hand-off (default true): while a worker of this store is idle on a queue (a free
   * slot, its last claim came back short), a plain `queue.enqueue` of this store (no ordering or
   * unique key, due now, not in a transaction) on a queue that is neither paused nor rate-limited
   * inserts the job already claimed by that worker and gives it straight to it: no claim write
   * and no wake. The job then runs in this process even when workers of other processes are idle
   * too. `false`: every enqueue inserts a pending job and workers claim it (docs/semantics.md,
   * Queues). Same option on PostgreSQL.
   */
  localHandoff?: boolean;
  /**
   * Largest queue, outbox, stream or schedule payload, in UTF-8 bytes of its JSON text
   * (default 1 048 576, 1 MiB; at most 2^30). A larger payload is `PayloadTooLarge` at the
   * call, before any write. Same option on both engines.
   */
  maxPayloadBytes?: number;
  /**
   * Which SQLite driver opens the file. `'auto'` (default): better-sqlite3 when it is installed,
   * else Node's built-in `node:sqlite` (Node 22.13+; no native addon to build). `'better-sqlite3'`
   * or `'node:sqlite'` to choose; the file, the tables and every behaviour are the same.
   */
  driver?: 'auto' | SqliteDriverName;
  /**
   * Adds context headers to every enqueue of this store, e.g. `withTraceContext` from
   * `alkstore/tracing` (after `loadOpenTelemetry()`). `openStore` sets it for you when
   * `@opentelemetry/api` is installed and `tracing` is not false. Default none.
   */
  enqueueHeaders?: EnqueueHeadersHook;
  /** Random source in [0, 1) for retry backoff jitter (tests inject it). Default `Math.random`. */
  random?: () => number;
  logger?: StoreLogger;
}

/** Options with defaults filled in. */
export interface ResolvedSqliteOptions {
  path: string;
  memory: boolean;
  pollIntervalMs: number;
  synchronous: 'full' | 'normal';
  claimDurability: 'deferred' | 'immediate';
  lockWaitTimeoutMs: number;
  writeFairness: boolean;
  localHandoff: boolean;
  maxPayloadBytes: number;
  driver: 'auto' | SqliteDriverName;
  enqueueHeaders: EnqueueHeadersHook | null;
  random: () => number;
  logger: StoreLogger;
}

const defaultLogger: StoreLogger = {
  log: () => undefined,
  warn: (m) => console.warn(`[alkstore] ${m}`),
  error: (m, e) => console.error(`[alkstore] ${m}`, e ?? ''),
};

function timerOption(field: string, v: unknown, dflt: number): number {
  return v === undefined ? dflt : requireTimerMs(field, v);
}

/** Validates `SqliteStoreOptions` and fills defaults. */
export function resolveSqliteOptions(o: SqliteStoreOptions): ResolvedSqliteOptions {
  if (o === null || typeof o !== 'object') throw new InvalidOption('sqlite options', 'must be an object with a path');
  if (typeof o.path !== 'string' || o.path.length === 0) throw new InvalidOption('path', 'must be a non-empty string (a file path or ":memory:")');
  const synchronous = o.synchronous ?? 'full';
  if (synchronous !== 'full' && synchronous !== 'normal') throw new InvalidOption('synchronous', `must be "full" or "normal", got ${JSON.stringify(synchronous)}`);
  const claimDurability = o.claimDurability ?? 'deferred';
  if (claimDurability !== 'deferred' && claimDurability !== 'immediate') {
    throw new InvalidOption('claimDurability', `must be "deferred" or "immediate", got ${JSON.stringify(claimDurability)}`);
  }
  return {
    path: o.path,
    memory: o.path === ':memory:',
    pollIntervalMs: timerOption('pollIntervalMs', o.pollIntervalMs, 1),
    synchronous,
    claimDurability,
    lockWaitTimeoutMs: timerOption('lockWaitTimeoutMs', o.lockWaitTimeoutMs, 30_000),
    writeFairness: o.writeFairness === undefined ? true : asOption(() => requireBoolean('writeFairness', o.writeFairness)),
    localHandoff: o.localHandoff === undefined ? true : asOption(() => requireBoolean('localHandoff', o.localHandoff)),
    maxPayloadBytes: maxPayloadBytesOption(o.maxPayloadBytes),
    driver: validateDriverOption(o.driver),
    enqueueHeaders: o.enqueueHeaders === undefined ? null : asOption(() => requireFunction<EnqueueHeadersHook>('enqueueHeaders', o.enqueueHeaders)),
    random: o.random === undefined ? Math.random : asOption(() => requireFunction<() => number>('random', o.random)),
    logger: o.logger ?? defaultLogger,
  };
}
