import {
  AUDIT_STREAM,
  outboxQueueName,
  RESERVED_PREFIX,
  RETENTION_LOCK,
  WORKFLOWS_QUEUE_PREFIX,
} from '../contract/names.js';
import { NODE_REMOVED_AFTER_MS } from '../contract/admin.js';
import type { Lock, Queue, RunRetentionOpts } from '../contract/types.js';
import {
  optionalKey,
  optionalObject,
  requireBoolean,
  requireDurationMs,
  requireFunction,
  requireSignal,
  requireTimerMs,
  validateName,
} from '../contract/validate.js';
import { InvalidArgument } from '../contract/errors.js';
import { sleep } from './sleep.js';

/** Default time between retention sweeps. */
export const DEFAULT_RETENTION_INTERVAL_MS = 60_000;
/** Default `inboxRetentionMs` and `receiptRetentionMs`: 7 days, like `resultRetentionMs`. */
export const DEFAULT_ENTRY_RETENTION_MS = 7 * 86_400_000;
/** Default `auditRetentionMs`: 90 days. */
export const DEFAULT_AUDIT_RETENTION_MS = 90 * 86_400_000;

/**
 * The store-wide deletes of the retention runner, one engine statement (or a few bounded ones)
 * each, and the queue names a sweep has rows to remove from. Internal to the package.
 */
export interface RetentionDriver {
  /**
   * Queues with rows a queue's `sweepExpired` removes that `admin().queueNames()` may not list: jobs
   * that expire or wait behind their ordering key, outcome records with a retention, failed attempts,
   * flow waits and unsettled edges.
   */
  sweepQueueNames(): Promise<string[]>;
  /**
   * PostgreSQL: drops the ranges of job outcome records past their retention (a partition each), before
   * the queue sweeps delete what is left row by row; resolves to how many (an estimate). SQLite: 0.
   */
  retireOutcomes(): Promise<number>;
  /** Deletes the delivery receipts of every outbox delivered more than `olderThanMs` ago; resolves to how many. */
  pruneReceipts(olderThanMs: number): Promise<number>;
  /**
   * Deletes entries of `inbox`: done ones whose effect committed more than `olderThanMs` ago, failed
   * and dead ones first received more than `olderThanMs` ago.
   */
  pruneInbox(inbox: string, olderThanMs: number): Promise<number>;
  /** Deletes locks past their expiry (nobody holds them: renew and release already refuse). */
  pruneLocks(): Promise<number>;
  /** Deletes the heartbeat rows of worker nodes silent for more than `olderThanMs`. */
  pruneNodes(olderThanMs: number): Promise<number>;
  /** Deletes the events of `stream` published more than `olderThanMs` ago, oldest first. */
  trimStreamByAge(stream: string, olderThanMs: number): Promise<number>;
  /** Deletes throughput and latency minutes past the charts' day (the flush of a busy store does it too). */
  pruneMinutes(): Promise<number>;
  /** SQLite: deletes wake rows older than a lagging watcher may still read (none on PostgreSQL). */
  pruneWakes(): Promise<number>;
  /**
   * Deletes a stream outright: its events, its head and its consumers' saved offsets. A later publish
   * starts it again at offset 1, so only for a stream nobody reads by offset any more (a pruned
   * workflow run's journal).
   */
  dropStream(stream: string): Promise<void>;
  /**
   * Deletes the entries of `inbox` whose message id is one of `ids`, or `<owner>#<what>` for one of
   * `owners` with no `#` in `what` (a workflow run's once-only guards: a run id may hold `#`, `what`
   * never does, so the guards of run `a#b` are not those of run `a`).
   */
  forgetGuards(inbox: string, ids: readonly string[], owners: readonly string[]): Promise<number>;
}

/**
 * Internal to the package: a store built on `StoreBase` carries its {@link RetentionDriver} under
 * this symbol, for the package's own prunes that go beyond the public API (workflows).
 */
export const RETENTION_DRIVER: unique symbol = Symbol('alkstore.retentionDriver');

/** The {@link RetentionDriver} of a store of this package, or null for any other `Store`. */
export function retentionDriverOf(store: object): RetentionDriver | null {
  const d = (store as { [RETENTION_DRIVER]?: RetentionDriver })[RETENTION_DRIVER];
  return d ?? null;
}

/** What `runRetention` needs from an engine. */
export interface RetentionEngine {
  tryLock(name: string, owner: string, ttlMs: number): Promise<Lock | null>;
  queue(name: string): Queue;
  outboxQueue(name: string): Queue;
  /** A handle on an engine-derived queue (a workflows namespace's), without the reserved-name check. */
  internalQueue(name: string): Queue;
  /** Every queue name the database has jobs of (outbox backing queues included). */
  queueNames(): Promise<string[]>;
  /** Deletes the ended per-key rate windows of every queue (listed or not); resolves to the rows deleted. */
  sweepRateWindows(): Promise<number>;
  /** The store-wide deletes. */
  readonly driver: RetentionDriver;
  /** Inboxes opened through this store, with the longest retention floor their options gave. */
  inboxFloors(): ReadonlyMap<string, number>;
}

const OUTBOX_PREFIX = outboxQueueName('x').slice(0, -1);

/** The retention periods of the store-wide tables, validated (null keeps forever). */
export interface RetentionPeriods {
  readonly inboxMs: number | null;
  readonly receiptMs: number | null;
  readonly auditMs: number | null;
  /** Stream name → age, the audit log's included. */
  readonly streams: readonly (readonly [string, number])[];
}

/**
 * Validates the retention periods of `RunRetentionOpts` (and of the Nest module's `retention`, whose
 * field names carry `prefix`), before any I/O: an `InvalidArgument` naming the field.
 */
export function retentionPeriods(
  o: Pick<RunRetentionOpts, 'inboxRetentionMs' | 'receiptRetentionMs' | 'auditRetentionMs' | 'streamRetention'>,
  prefix = '',
): RetentionPeriods {
  const keepFor = (name: string, v: unknown, dflt: number): number | null => {
    if (v === undefined) return dflt;
    if (v === null) return null;
    return requireDurationMs(`${prefix}${name}`, v, { allowZero: true });
  };
  const auditMs = keepFor('auditRetentionMs', o.auditRetentionMs, DEFAULT_AUDIT_RETENTION_MS);
  const given = optionalObject<Record<string, number>>(`${prefix}streamRetention`, o.streamRetention);
  const streams = Object.entries(given ?? {}).map(([name, ms]): [string, number] => {
    const field = `${prefix}streamRetention[${JSON.stringify(name.slice(0, 64))}]`;
    try {
      validateName('stream', name);
    } catch (err) {
      throw new InvalidArgument(field, `names no stream alkstore accepts: ${(err as Error).message}`);
    }
    return [name, requireDurationMs(field, ms, { allowZero: true })];
  });
  if (auditMs !== null) streams.push([AUDIT_STREAM, auditMs]);
  return {
    inboxMs: keepFor('inboxRetentionMs', o.inboxRetentionMs, DEFAULT_ENTRY_RETENTION_MS),
    receiptMs: keepFor('receiptRetentionMs', o.receiptRetentionMs, DEFAULT_ENTRY_RETENTION_MS),
    auditMs,
    streams,
  };
}

/**
 * Engine-agnostic `runRetention`: every interval, the holder of
 * `__alkstore_retention` runs `sweepExpired` on each listed queue and outbox,
 * then deletes the ended per-key rate windows of every queue (a queue's windows
 * outlive its jobs, and its name may be on no list) and prunes the store-wide
 * tables. The lock outlives a few intervals, so a crashed leader is replaced
 * within about three rounds; a graceful stop releases it.
 */
export async function runRetention(
  engine: RetentionEngine,
  signal: AbortSignal,
  opts?: RunRetentionOpts,
): Promise<void> {
  requireSignal('signal', signal);
  const o = optionalObject<RunRetentionOpts>('runRetention opts', opts) ?? {};
  const owner = optionalKey('owner', o.owner) ?? `retention-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
  const intervalMs =
    o.intervalMs === undefined ? DEFAULT_RETENTION_INTERVAL_MS : requireTimerMs('intervalMs', o.intervalMs);
  for (const fn of ['queues', 'outboxes', 'inboxes', 'onSweep', 'onPrune', 'onError'] as const)
    if (o[fn] !== undefined) requireFunction(fn, o[fn]);
  const everyQueue = o.everyQueue === undefined ? false : requireBoolean('everyQueue', o.everyQueue);
  const { inboxMs, receiptMs, streams } = retentionPeriods(o);
  const ttlMs = Math.max(3 * intervalMs, 10_000);
  const report = (err: unknown): void => {
    if (o.onError) o.onError(err);
  };
  const prune = async (target: string, run: () => Promise<number>): Promise<void> => {
    if (signal.aborted) return;
    try {
      const n = await run();
      if (n > 0) o.onPrune?.(target, n);
    } catch (err) {
      report(err);
    }
  };
  let lock: Lock | null = null;
  try {
    while (!signal.aborted) {
      try {
        if (lock && !(await lock.renew(ttlMs))) lock = null;
        lock ??= await engine.tryLock(RETENTION_LOCK, owner, ttlMs);
      } catch (err) {
        lock = null;
        report(err);
      }
      if (lock) {
        const queues = new Set(o.queues?.() ?? []);
        const outboxes = new Set(o.outboxes?.() ?? []);
        const internal = new Set<string>();
        if (everyQueue) {
          try {
            const names = new Set([...(await engine.queueNames()), ...(await engine.driver.sweepQueueNames())]);
            for (const name of names) {
              if (name.startsWith(OUTBOX_PREFIX)) outboxes.add(name.slice(OUTBOX_PREFIX.length));
              else if (name.startsWith(WORKFLOWS_QUEUE_PREFIX)) internal.add(name);
              else if (!name.startsWith(RESERVED_PREFIX)) queues.add(name);
            }
          } catch (err) {
            report(err);
          }
        }
        // Whole ranges of expired outcome records first, so the sweeps' DELETE finds only what is left.
        await prune('job outcomes', () => engine.driver.retireOutcomes());
        const targets: [string, () => Queue][] = [
          ...[...queues].map((n): [string, () => Queue] => [`queue ${JSON.stringify(n)}`, () => engine.queue(n)]),
          ...[...outboxes].map((n): [string, () => Queue] => [
            `outbox ${JSON.stringify(n)}`,
            () => engine.outboxQueue(n),
          ]),
          ...[...internal].map((n): [string, () => Queue] => [
            `queue ${JSON.stringify(n)}`,
            () => engine.internalQueue(n),
          ]),
        ];
        for (const [label, queue] of targets) {
          if (signal.aborted) break;
          try {
            const result = await queue().sweepExpired();
            if (result.expired + result.purged > 0) o.onSweep?.(label, result);
          } catch (err) {
            report(err);
          }
        }
        if (!signal.aborted) await engine.sweepRateWindows().catch(report);
        await pruneStoreWide();
      }
      await sleep(intervalMs, signal);
    }
  } finally {
    if (lock) await lock.release().catch(() => false);
  }

  /** The tables no queue's sweep covers: each prune on its own, so one failure leaves the others to run. */
  async function pruneStoreWide(): Promise<void> {
    const d = engine.driver;
    if (receiptMs !== null) await prune('outbox receipts', () => d.pruneReceipts(receiptMs));
    if (inboxMs !== null) {
      const floors = new Map(engine.inboxFloors());
      try {
        for (const name of o.inboxes?.() ?? []) if (!floors.has(name)) floors.set(name, 0);
      } catch (err) {
        report(err);
      }
      for (const [name, floor] of floors) {
        await prune(`inbox ${JSON.stringify(name)}`, () =>
          d.pruneInbox(validateName('inbox', name), Math.max(inboxMs, floor)),
        );
      }
    }
    await prune('locks', () => d.pruneLocks());
    await prune('worker nodes', () => d.pruneNodes(NODE_REMOVED_AFTER_MS));
    for (const [name, ms] of streams) await prune(`stream ${JSON.stringify(name)}`, () => d.trimStreamByAge(name, ms));
    await prune('throughput minutes', () => d.pruneMinutes());
    await prune('wake rows', () => d.pruneWakes());
  }
}
