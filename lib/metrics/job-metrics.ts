import { InvalidOption } from '../contract/errors.js';
import type { DeadReason, WorkerObserver } from '../worker/worker-observer.js';

/** Sampled depth of one queue (from `queue.stats()`). */
export interface QueueDepth {
  readonly pending: number;
  readonly processing: number;
  readonly dead: number;
}

/**
 * Where the workers' metrics go: one sink for every `@QueueHandler` and
 * `@OutboxHandler` (module option `metrics`, per-handler override `metrics`).
 * Every method gets the queue name first (an outbox reports under its backing
 * queue, `__alkstore_outbox:<name>`); the only other label is the dead-letter
 * `reason`. Never a job id or error text. Calls are synchronous on the
 * worker's path: keep them cheap; a throw is caught and logged.
 *
 * Adapters: `createPrometheusMetrics` and `createOpenTelemetryMetrics`
 * (`nestjs-alkstore/observability`), or implement it for another backend.
 */
export interface JobMetrics {
  /** Jobs taken by one claim statement. */
  claimed(queue: string, count: number): void;
  /** A handler resolved (the ack is written right after, batched). */
  completed(queue: string): void;
  /** A handler threw or timed out (a `retried` or `dead` follows). */
  failed(queue: string): void;
  /** A failed job went back to pending with a backoff. */
  retried(queue: string): void;
  /** A job was dead-lettered: `permanent` (`PermanentError`) or `exhausted` (attempts ran out). */
  dead(queue: string, reason: DeadReason): void;
  /** The worker lost a claim it held (renewal or outcome fenced); the job may run again. */
  leaseLost(queue: string): void;
  /** Duration of one handler call in ms, whatever its result (a batch call counts once per job). */
  handlerDuration(queue: string, durationMs: number): void;
  /** Sampled queue depth. */
  depth(queue: string, depth: QueueDepth): void;
  /** Sampled age of the oldest ready pending job in ms (0 when none). */
  oldestReadyAge(queue: string, ageMs: number): void;
}

/** The worker-seam observer that feeds a {@link JobMetrics} for `queue`. */
export function jobMetricsObserver(m: JobMetrics, queue: string): WorkerObserver {
  return {
    claimed: (count) => m.claimed(queue, count),
    completed: (_job, ms) => {
      m.handlerDuration(queue, ms);
      m.completed(queue);
    },
    failed: (_job, _err, ms) => {
      m.handlerDuration(queue, ms);
      m.failed(queue);
    },
    retried: () => m.retried(queue),
    dead: (_job, reason) => m.dead(queue, reason),
    leaseLost: () => m.leaseLost(queue),
    stats: (st) => {
      m.depth(queue, { pending: st.pending, processing: st.processing, dead: st.dead });
      m.oldestReadyAge(queue, st.oldestPendingAgeMs);
    },
  };
}

const METHODS: readonly (keyof JobMetrics)[] = [
  'claimed',
  'completed',
  'failed',
  'retried',
  'dead',
  'leaseLost',
  'handlerDuration',
  'depth',
  'oldestReadyAge',
];

/** Checks that `m` implements {@link JobMetrics}: {@link InvalidOption} naming `field` and the missing method. */
export function validateJobMetrics(field: string, m: unknown): JobMetrics {
  if (m === null || typeof m !== 'object')
    throw new InvalidOption(field, 'must be a JobMetrics object (see nestjs-alkstore/observability)');
  for (const method of METHODS) {
    if (typeof (m as Record<string, unknown>)[method] !== 'function')
      throw new InvalidOption(field, `must implement JobMetrics: ${method} is not a function`);
  }
  return m as JobMetrics;
}
