import { outboxQueueName, RESERVED_PREFIX, RETENTION_LOCK } from '../contract/names.js';
import type { Lock, Queue, RunRetentionOpts } from '../contract/types.js';
import {
  optionalKey,
  optionalObject,
  requireBoolean,
  requireFunction,
  requireSignal,
  requireTimerMs,
} from '../contract/validate.js';
import { sleep } from './sleep.js';

/** Default time between retention sweeps. */
export const DEFAULT_RETENTION_INTERVAL_MS = 60_000;

/** What the retention runner needs from an engine. */
export interface RetentionEngine {
  tryLock(name: string, owner: string, ttlMs: number): Promise<Lock | null>;
  queue(name: string): Queue;
  outboxQueue(name: string): Queue;
  /** Every queue name the database has jobs of (outbox backing queues included). */
  queueNames(): Promise<string[]>;
  /** Deletes the ended per-key rate windows of every queue (listed or not); resolves to the rows deleted. */
  sweepRateWindows(): Promise<number>;
}

const OUTBOX_PREFIX = outboxQueueName('x').slice(0, -1);

/**
 * Engine-agnostic `runRetention`: every interval, the holder of
 * `__alkstore_retention` runs `sweepExpired` on each listed queue and outbox,
 * then deletes the ended per-key rate windows of every queue (a queue's windows
 * outlive its jobs, and its name may be on no list). The lock outlives a few intervals, so a crashed leader is replaced within
 * about three rounds; a graceful stop releases it.
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
  for (const fn of ['queues', 'outboxes', 'onSweep', 'onError'] as const)
    if (o[fn] !== undefined) requireFunction(fn, o[fn]);
  const everyQueue = o.everyQueue === undefined ? false : requireBoolean('everyQueue', o.everyQueue);
  const ttlMs = Math.max(3 * intervalMs, 10_000);
  const report = (err: unknown): void => {
    if (o.onError) o.onError(err);
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
        if (everyQueue) {
          try {
            for (const name of await engine.queueNames()) {
              if (name.startsWith(OUTBOX_PREFIX)) outboxes.add(name.slice(OUTBOX_PREFIX.length));
              else if (!name.startsWith(RESERVED_PREFIX)) queues.add(name);
            }
          } catch (err) {
            report(err);
          }
        }
        const targets: [string, () => Queue][] = [
          ...[...queues].map((n): [string, () => Queue] => [`queue ${JSON.stringify(n)}`, () => engine.queue(n)]),
          ...[...outboxes].map((n): [string, () => Queue] => [
            `outbox ${JSON.stringify(n)}`,
            () => engine.outboxQueue(n),
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
      }
      await sleep(intervalMs, signal);
    }
  } finally {
    if (lock) await lock.release().catch(() => false);
  }
}
