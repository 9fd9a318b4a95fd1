import type { Job, Outbox, Queue, Store, StoreLogger } from '../../lib/contract/types.js';
import {
  OutboxDispatcher,
  type AbandonReason,
  type DeadReason,
  type OutboxDeliveryHandler,
  type OutboxMetrics,
  type OutboxSettingsInput,
  type PublishResult,
  type RetryReason,
} from '../../lib/outbox/index.js';

/** Short, test-friendly settings that still leave generous lease margins on a busy machine. */
export const FAST: OutboxSettingsInput = {
  claimSize: 8,
  concurrency: 16,
  leaseMs: 10_000,
  publishTimeoutMs: 5_000,
  storeTimeoutMs: 4_000,
  busyPollIntervalMs: 20,
  idlePollIntervalMs: 200,
  drainTimeoutMs: 5_000,
  statsIntervalMs: 50,
  retry: { baseMs: 20, maxDelayMs: 100, maxAttempts: 3, jitter: 0 },
};

/** A logger that keeps what it was told (and keeps the test output quiet). */
export class MemoryLogger implements StoreLogger {
  readonly lines: string[] = [];
  log(m: string): void {
    this.lines.push(`log ${m}`);
  }
  warn(m: string): void {
    this.lines.push(`warn ${m}`);
  }
  error(m: string): void {
    this.lines.push(`error ${m}`);
  }
}

/** Metrics that count what they were told, per label. */
export class RecordingMetrics implements OutboxMetrics {
  claimedRows = 0;
  publishedCount = 0;
  readonly retriedBy: Record<RetryReason, number> = { error: 0, timeout: 0 };
  readonly deadBy: Record<DeadReason, number> = { permanent: 0, exhausted: 0 };
  readonly abandonedBy: Record<AbandonReason, number> = { 'lease-lost': 0, 'outcome-write': 0, drain: 0 };
  readonly durations: Record<PublishResult, number> = { ok: 0, error: 0, timeout: 0, permanent: 0 };
  lastPending: number | null = null;
  lastOldestAgeMs: number | null = null;
  readonly outboxes = new Set<string>();

  claimed(count: number, outbox: string): void {
    this.claimedRows += count;
    this.outboxes.add(outbox);
  }
  published(_ms: number, outbox: string): void {
    this.publishedCount += 1;
    this.outboxes.add(outbox);
  }
  retried(reason: RetryReason, outbox: string): void {
    this.retriedBy[reason] += 1;
    this.outboxes.add(outbox);
  }
  dead(reason: DeadReason, outbox: string): void {
    this.deadBy[reason] += 1;
    this.outboxes.add(outbox);
  }
  publishDuration(_ms: number, result: PublishResult, outbox: string): void {
    this.durations[result] += 1;
    this.outboxes.add(outbox);
  }
  pending(count: number, outbox: string): void {
    this.lastPending = count;
    this.outboxes.add(outbox);
  }
  oldestPendingAgeMs(ms: number, outbox: string): void {
    this.lastOldestAgeMs = ms;
    this.outboxes.add(outbox);
  }
  abandoned(reason: AbandonReason, outbox: string): void {
    this.abandonedBy[reason] += 1;
    this.outboxes.add(outbox);
  }
}

/** A running dispatcher and the means to stop it. */
export interface Running {
  readonly dispatcher: OutboxDispatcher;
  readonly controller: AbortController;
  /** Settles when run() does. */
  readonly done: Promise<void>;
  resolved: boolean;
  stop(): Promise<void>;
}

export function startDispatcher(opts: {
  store: Pick<Store, 'outbox'>;
  outbox: string;
  handler: OutboxDeliveryHandler;
  settings?: OutboxSettingsInput;
  metrics?: OutboxMetrics;
  logger?: StoreLogger;
  workerId?: string;
  controller?: AbortController;
}): Running {
  const dispatcher = new OutboxDispatcher({
    store: opts.store,
    outbox: opts.outbox,
    handler: opts.handler,
    settings: { ...FAST, ...opts.settings },
    metrics: opts.metrics,
    logger: opts.logger ?? new MemoryLogger(),
    workerId: opts.workerId,
  });
  const controller = opts.controller ?? new AbortController();
  const r: Running = {
    dispatcher,
    controller,
    resolved: false,
    done: Promise.resolve(),
    async stop() {
      controller.abort();
      await r.done;
    },
  };
  (r as { done: Promise<void> }).done = dispatcher.run(controller.signal).finally(() => {
    r.resolved = true;
  });
  return r;
}

/** Resolves after `ms`; only for pacing a handler, never as a test's proof. */
export const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A promise with its resolver, to hold a handler until the test lets it go. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => {
    open = r;
  });
  return { promise, open };
}

/** Overrides of a claimed job's operations, for fault injection on top of the real store. */
export type JobPatch = Partial<Pick<Job, 'ack' | 'retry' | 'fail' | 'heartbeat' | 'release'>>;

/** A job that delegates to `job` except for the patched operations. */
export function patchJob(job: Job, patch: JobPatch): Job {
  return {
    get id() {
      return job.id;
    },
    get queue() {
      return job.queue;
    },
    get payload() {
      return job.payload;
    },
    get priority() {
      return job.priority;
    },
    get attempts() {
      return job.attempts;
    },
    get maxAttempts() {
      return job.maxAttempts;
    },
    get claimToken() {
      return job.claimToken;
    },
    get deadline() {
      return job.deadline;
    },
    get leaseMs() {
      return job.leaseMs;
    },
    get enqueuedAt() {
      return job.enqueuedAt;
    },
    get headers() {
      return job.headers;
    },
    get uniqueKey() {
      return job.uniqueKey;
    },
    get orderingKey() {
      return job.orderingKey;
    },
    payloadAs: <U>() => job.payloadAs<U>(),
    ack: patch.ack ?? ((result?: unknown) => job.ack(result)),
    progress: (value: unknown) => job.progress(value),
    retry: patch.retry ?? ((e: unknown, d?: number) => job.retry(e, d)),
    fail: patch.fail ?? ((e: unknown) => job.fail(e)),
    heartbeat: patch.heartbeat ?? ((ms: number) => job.heartbeat(ms)),
    release: patch.release ?? (() => job.release()),
    childResults: () => job.childResults(),
  };
}

/** Fault-injection hooks around the real `claimBatch`. */
export interface ClaimHooks {
  /** Runs before the real claim; a throw stands for a store error (nothing is claimed). */
  beforeClaim?: () => void | Promise<void>;
  /** May replace the jobs the real claim returned (e.g. patch their heartbeat). */
  afterClaim?: (jobs: Job[]) => Job[] | Promise<Job[]>;
  /**
   * Stands in for `queue.ackBatch` (the dispatcher writes its acks in batches); `real` reaches the
   * database. A throw stands for a store error.
   */
  ackBatch?: (jobs: readonly AckRef[], real: (jobs: readonly AckRef[]) => Promise<number>) => Promise<number>;
}

/** What `queue.ackBatch` takes per job. */
export type AckRef = Pick<Job, 'id' | 'claimToken'>;

/**
 * The real store seen through a fault-injecting lens. The database is real;
 * only what the dispatcher sees of a call is altered.
 */
export function faultyStore(
  store: Store,
  hooks: ClaimHooks | ((jobs: Job[]) => Job[] | Promise<Job[]>),
): Pick<Store, 'outbox'> {
  const h: ClaimHooks = typeof hooks === 'function' ? { afterClaim: hooks } : hooks;
  return {
    outbox(name: string): Outbox {
      const real = store.outbox(name);
      const queue = new Proxy(real.queue, {
        get(target, prop, receiver) {
          if (prop === 'claimBatch') {
            return async (...args: Parameters<Queue['claimBatch']>) => {
              await h.beforeClaim?.();
              const jobs = await target.claimBatch(...args);
              return h.afterClaim ? h.afterClaim(jobs) : jobs;
            };
          }
          if (prop === 'ackBatch' && h.ackBatch) {
            const hook = h.ackBatch;
            return (jobs: readonly AckRef[]) => hook(jobs, (js) => target.ackBatch(js));
          }
          const v: unknown = Reflect.get(target, prop, receiver);
          return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        },
      });
      return {
        name: real.name,
        queue,
        enqueue: (p, o) => real.enqueue(p, o),
        runOnce: (w, d) => real.runOnce(w, d),
        recordReceipts: (r) => real.recordReceipts(r),
        // A publisher-backed dispatcher acks with its receipts: the same ackBatch hook sees those acks.
        ackDelivered: (ds) =>
          h.ackBatch
            ? h.ackBatch(
                ds.map((d) => d.job),
                (js) => real.ackDelivered(ds.filter((d) => js.includes(d.job))),
              )
            : real.ackDelivered(ds),
        receipt: (id) => real.receipt(id),
        pruneReceipts: (ms) => real.pruneReceipts(ms),
        messageId: (id) => real.messageId(id),
      };
    },
  };
}
