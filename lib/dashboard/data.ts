import type { ThroughputPoint } from '../contract/admin.js';
import { outboxQueueName } from '../contract/names.js';
import type { JobInfo, Queue, QueueStats, Schedule, Store } from '../contract/types.js';

/**
 * What the dashboard and the CLI read, through the public `Store` API and
 * `store.admin()` only (no SQL here). Nest-free, so the CLI shares it.
 */

const OUTBOX_PREFIX = outboxQueueName('x').slice(0, -1);
/** Scheduled jobs are counted up to this many ("10000+" beyond). */
export const SCHEDULED_CAP = 10_000;
const HOUR = 3_600_000;

/** Queue operations added by later features, used when present (pause, settings). */
interface QueueExtras {
  pause?(): Promise<void>;
  resume?(): Promise<void>;
  settings?(): Promise<{ paused: boolean; rateLimit: { max: number; perMs: number } | null }>;
}

/** Store operations added by later features, used when present (schedule listing with leader, trigger). */
interface StoreExtras {
  listSchedules?(): Promise<{ now: number; leader: { owner: string; expiresAt: number } | null; schedules: Schedule[] }>;
  triggerSchedule?(name: string): Promise<number | null>;
}

/** One row of the queues page. */
export interface QueueRow {
  /** Stored queue name. */
  readonly name: string;
  /** The outbox it backs, else null. */
  readonly outbox: string | null;
  readonly pending: number;
  readonly processing: number;
  /** Pending jobs not yet due; `scheduledCapped` when there are at least that many. */
  readonly scheduled: number;
  readonly scheduledCapped: boolean;
  readonly dead: number;
  readonly oldestReadyAgeMs: number;
  readonly completedLastHour: number;
  readonly failedLastHour: number;
  /** null when the store has no pause feature. */
  readonly paused: boolean | null;
}

/** The outbox name of a stored queue name, or null. */
export function outboxOf(queue: string): string | null {
  return queue.startsWith(OUTBOX_PREFIX) ? queue.slice(OUTBOX_PREFIX.length) : null;
}

/** A handle on a stored queue name (outbox-backed names through their outbox). */
export function queueHandle(store: Store, name: string): Queue & QueueExtras {
  const box = outboxOf(name);
  return (box === null ? store.queue(name) : store.outbox(box).queue) as Queue & QueueExtras;
}

/** Whether queues can be paused on this store (the queue-settings feature). */
export function canPause(store: Store, queue: string): boolean {
  const q = queueHandle(store, queue);
  return typeof q.pause === 'function' && typeof q.resume === 'function';
}

/** Pauses or resumes a queue; false when the feature is missing. */
export async function setPaused(store: Store, queue: string, paused: boolean): Promise<boolean> {
  const q = queueHandle(store, queue);
  if (typeof q.pause !== 'function' || typeof q.resume !== 'function') return false;
  if (paused) await q.pause();
  else await q.resume();
  return true;
}

async function scheduledOf(store: Store, name: string, stats: QueueStats): Promise<number> {
  const fromStats = (stats as QueueStats & { scheduled?: number }).scheduled;
  if (typeof fromStats === 'number') return fromStats;
  return store.admin().countScheduled(name, SCHEDULED_CAP);
}

/** Every queue with its counts and last-hour outcomes (stats() per queue: constant-time counters). */
export async function queueRows(store: Store, now: number): Promise<{ rows: QueueRow[]; throughput: ThroughputPoint[] }> {
  const admin = store.admin();
  const [names, throughput] = await Promise.all([admin.queueNames(), admin.throughput(null, now - HOUR)]);
  const rows = await Promise.all(
    names.map(async (name): Promise<QueueRow> => {
      const q = queueHandle(store, name);
      const stats = await q.stats();
      const scheduled = await scheduledOf(store, name, stats);
      const mine = throughput.filter((p) => p.queue === name);
      const settings = typeof q.settings === 'function' ? await q.settings() : null;
      return {
        name,
        outbox: outboxOf(name),
        pending: stats.pending,
        processing: stats.processing,
        scheduled,
        scheduledCapped: scheduled >= SCHEDULED_CAP,
        dead: stats.dead,
        oldestReadyAgeMs: stats.oldestPendingAgeMs,
        completedLastHour: mine.reduce((a, p) => a + p.completed, 0),
        failedLastHour: mine.reduce((a, p) => a + p.retried + p.dead, 0),
        paused: settings ? settings.paused : null,
      };
    }),
  );
  return { rows, throughput };
}

/** The schedules with the leader, through `listSchedules` when the store has it, else the admin API. */
export async function scheduleListing(store: Store): Promise<{ now: number; leader: { owner: string; expiresAt: number } | null; schedules: Schedule[] }> {
  const s = store as Store & StoreExtras;
  if (typeof s.listSchedules === 'function') return s.listSchedules();
  const admin = store.admin();
  const [now, lock] = await Promise.all([store.now(), admin.lock('__alkstore_scheduler')]);
  const schedules: Schedule[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await admin.schedules({ after, limit: 500 });
    schedules.push(...page);
    if (page.length < 500) break;
    after = page[page.length - 1]!.name;
  }
  return { now, leader: lock && !lock.expired ? { owner: lock.owner, expiresAt: lock.expiresAt } : null, schedules };
}

/**
 * Fires a schedule once now (its next boundary unchanged): `triggerSchedule`
 * when the store has it, else one job enqueued as the schedule would.
 * Resolves to the job id, or null when there is no such schedule.
 */
export async function triggerSchedule(store: Store, name: string): Promise<number | null> {
  const s = store as Store & StoreExtras;
  if (typeof s.triggerSchedule === 'function') return s.triggerSchedule(name);
  const sched = await store.getSchedule(name);
  if (!sched) return null;
  return queueHandle(store, sched.queue).enqueue(sched.payload, {
    priority: sched.priority,
    ...(sched.maxAttempts === null ? {} : { maxAttempts: sched.maxAttempts }),
    ...(sched.expiresInMs === null ? {} : { expiresInMs: sched.expiresInMs }),
  });
}

/** Job headers when the store carries them (the headers feature), else null. */
export function headersOf(job: JobInfo): Readonly<Record<string, string>> | null {
  const h = (job as JobInfo & { headers?: Readonly<Record<string, string>> | null }).headers;
  return h && typeof h === 'object' && Object.keys(h).length > 0 ? h : null;
}
