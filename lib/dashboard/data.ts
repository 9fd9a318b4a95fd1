import { latencyQuantile, sumLatency, type ThroughputPoint } from '../contract/admin.js';
import { outboxQueueName, WORKFLOWS_QUEUE_PREFIX, workflowsQueueName } from '../contract/names.js';
import type { JobInfo, Queue, QueueSettings, Store } from '../contract/types.js';

/**
 * What the dashboard and the CLI read, through the public `Store` API and
 * `store.admin()` only (no SQL here). Nest-free, so the CLI shares it.
 */

const OUTBOX_PREFIX = outboxQueueName('x').slice(0, -1);
const HOUR = 3_600_000;

/** One row of the queues page. */
export interface QueueRow {
  /** Stored queue name. */
  readonly name: string;
  /** The outbox it backs, else null. */
  readonly outbox: string | null;
  readonly pending: number;
  readonly processing: number;
  /** Pending jobs not yet due (a subset of pending). */
  readonly scheduled: number;
  readonly dead: number;
  readonly oldestReadyAgeMs: number;
  readonly completedLastHour: number;
  readonly failedLastHour: number;
  /** Approximate p95 wait (due to claimed) of the jobs finished in the last hour, ms; null when none. */
  readonly waitP95Ms: number | null;
  /** Approximate p95 run time (claimed to finished) of the attempts that ended in the last hour, ms; null when none. */
  readonly runP95Ms: number | null;
  readonly paused: boolean;
  /** The queue's stored limits (docs/limits.md) and claim cap, as `queue.settings()` reports them. */
  readonly limits: Pick<QueueSettings, 'concurrencyLimit' | 'globalConcurrency' | 'keyRateLimit' | 'rateLimit'>;
}

/** The outbox name of a stored queue name, or null. */
export function outboxOf(queue: string): string | null {
  return queue.startsWith(OUTBOX_PREFIX) ? queue.slice(OUTBOX_PREFIX.length) : null;
}

/** Whether a stored queue name carries workflow runs (`__alkstore_workflows:<namespace>`): the dashboard neither pauses nor purges it. */
export function isWorkflowsQueue(name: string): boolean {
  return name.startsWith(WORKFLOWS_QUEUE_PREFIX);
}

/** A handle on a stored queue name (outbox-backed names through their outbox, workflow queues by their namespace). */
export function queueHandle(store: Store, name: string): Queue {
  const box = outboxOf(name);
  if (box !== null) return store.outbox(box).queue;
  if (name.startsWith(WORKFLOWS_QUEUE_PREFIX))
    return store.queue(workflowsQueueName(name.slice(WORKFLOWS_QUEUE_PREFIX.length)));
  return store.queue(name);
}

/** Pauses or resumes a queue on every replica. */
export async function setPaused(store: Store, queue: string, paused: boolean): Promise<void> {
  const q = queueHandle(store, queue);
  if (paused) await q.pause();
  else await q.resume();
}

/** Every queue with its counts and last-hour outcomes (stats() per queue: constant-time counters). */
export async function queueRows(
  store: Store,
  now: number,
): Promise<{ rows: QueueRow[]; throughput: ThroughputPoint[] }> {
  const admin = store.admin();
  const [names, throughput] = await Promise.all([admin.queueNames(), admin.throughput(null, now - HOUR)]);
  const rows = await Promise.all(
    names.map(async (name): Promise<QueueRow> => {
      const q = queueHandle(store, name);
      const stats = await q.stats();
      const mine = throughput.filter((p) => p.queue === name);
      const settings = await q.settings();
      return {
        name,
        outbox: outboxOf(name),
        pending: stats.pending,
        processing: stats.processing,
        scheduled: stats.scheduled,
        dead: stats.dead,
        oldestReadyAgeMs: stats.oldestPendingAgeMs,
        completedLastHour: mine.reduce((a, p) => a + p.completed, 0),
        failedLastHour: mine.reduce((a, p) => a + p.retried + p.dead, 0),
        waitP95Ms: latencyQuantile(sumLatency(mine.map((p) => p.wait)), 0.95),
        runP95Ms: latencyQuantile(sumLatency(mine.map((p) => p.run)), 0.95),
        paused: settings.paused,
        limits: {
          concurrencyLimit: settings.concurrencyLimit,
          globalConcurrency: settings.globalConcurrency,
          keyRateLimit: settings.keyRateLimit,
          rateLimit: settings.rateLimit,
        },
      };
    }),
  );
  return { rows, throughput };
}

/** Job headers, or null when the job has none. */
export function headersOf(job: JobInfo): Readonly<Record<string, string>> | null {
  return Object.keys(job.headers).length > 0 ? job.headers : null;
}
