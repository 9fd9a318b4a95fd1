import type { INestApplicationContext } from '@nestjs/common';
import { AlkstoreError, InvalidArgument } from '../../contract/errors.js';
import type { Job, JobInfo, Queue } from '../../contract/types.js';
import { outboxQueueName } from '../../contract/names.js';
import { isPermanent } from '../../worker/worker-core.js';
import { AlkstoreExplorer, type DiscoveredMethod } from '../alkstore.explorer.js';
import type { OutboxRef, QueueRef } from '../queue-ref.js';
import { Store } from '../store.token.js';

/** Options of {@link AlkstoreTestKit.drain}. */
export interface DrainOptions {
  /** Only these queues (names as handlers declare them; an outbox by its name). Default: every handled queue and outbox. */
  only?: readonly (string | QueueRef<unknown> | OutboxRef<unknown>)[];
  /** Give up (and throw) after running this many jobs: a handler that keeps enqueueing itself. Default 10 000. */
  maxJobs?: number;
}

/** What {@link AlkstoreTestKit.drain} did, Oban's `drain_queue` counts. */
export interface DrainResult {
  /** Handlers that returned: the job was acked. */
  readonly succeeded: number;
  /** Handlers that threw: the job went back to pending with its backoff (not run again by this drain while it waits). */
  readonly retried: number;
  /** Jobs dead-lettered: a `PermanentError`, or the last attempt failed. */
  readonly dead: number;
  /** Every failure, in the order it happened. */
  readonly failures: readonly { readonly queue: string; readonly jobId: number; readonly error: unknown }[];
}

interface Worked {
  readonly queue: Queue;
  readonly names: readonly string[];
  readonly method: DiscoveredMethod;
  /** A batch handler (`@QueueHandler(q, { batchSize })`): called with `[job]`, its per-job outcome applies. */
  readonly batch?: boolean;
}

/** `drain()` ran `maxJobs` jobs and work was still left: a handler that keeps enqueueing, most likely. */
export class DrainLimit extends AlkstoreError {
  constructor(readonly maxJobs: number) {
    super(
      'DRAIN_LIMIT',
      `drain ran ${maxJobs} jobs (maxJobs) and the queues are still not empty; a handler that keeps enqueueing? Raise maxJobs if that is expected`,
    );
  }
}

const WORKER_ID = 'alkstore-testing';
const BATCH = 100;

/**
 * Runs an application's alkstore handlers on demand, the way Oban.Testing's
 * `drain_queue` and `assert_enqueued` do: `drain()` runs everything enqueued
 * (outbox messages and scheduled fires included) until the queues are
 * empty, in the test's own call, and `enqueued(queue)` lists what waits.
 *
 * Get one from an application built with `AlkstoreTesting.manual(...)` (its
 * handlers then never run on their own) by `AlkstoreTestKit.from(app)`.
 */
export class AlkstoreTestKit {
  constructor(
    /** The application's store. */
    readonly store: Store,
    private readonly explorer: AlkstoreExplorer,
  ) {}

  /** The kit of an initialised application or testing module that imports `AlkstoreModule`. */
  static from(app: INestApplicationContext): AlkstoreTestKit {
    return new AlkstoreTestKit(app.get(Store, { strict: false }), app.get(AlkstoreExplorer, { strict: false }));
  }

  /**
   * Payloads of the pending jobs of `queue` (delayed ones included), in claim
   * order. Typed by a `defineQueue<T>` ref. Jobs enqueued in a transaction
   * show up once it commits.
   */
  async enqueued<T = unknown>(queue: string | QueueRef<T>): Promise<T[]> {
    return (await this.pendingJobs(typeof queue === 'string' ? queue : queue.name)).map((j) => j.payload as T);
  }

  /** Payloads of the outbox messages of `outbox` not delivered yet, in delivery order. */
  async outboxed<T = unknown>(outbox: string | OutboxRef<T>): Promise<T[]> {
    return (await this.pendingJobs(outboxQueueName(typeof outbox === 'string' ? outbox : outbox.name))).map(
      (j) => j.payload as T,
    );
  }

  /** The pending jobs of `queue` as rows (payload, attempts, priority, run time...), in claim order. */
  async pendingJobs(queue: string): Promise<JobInfo[]> {
    const admin = this.store.admin();
    const out: JobInfo[] = [];
    let cursor: string | undefined;
    do {
      const page = await admin.listJobs(
        queue,
        cursor === undefined ? { state: 'pending', limit: 1000 } : { state: 'pending', cursor, limit: 1000 },
      );
      out.push(...page.jobs);
      cursor = page.next ?? undefined;
    } while (cursor !== undefined);
    return out;
  }

  /** Fires the `@Scheduled` (or stored) schedule `name` now; `drain()` then runs it. Resolves to the job id. */
  async triggerSchedule(name: string): Promise<number> {
    const id = await this.store.triggerSchedule(name);
    if (id === null) throw new InvalidArgument('name', `names no schedule: ${JSON.stringify(name)}`);
    return id;
  }

  /**
   * Runs the handlers of every ready job, round after round, until no handled
   * queue or outbox has a ready job: jobs that handlers enqueue (an outbox
   * handler feeding a queue, say) run in the same drain. A throw retries the
   * job with its backoff (the drain does not wait for it), a `PermanentError`
   * or a last attempt dead-letters it; both are counted, never rethrown.
   */
  async drain(options: DrainOptions = {}): Promise<DrainResult> {
    const maxJobs = options.maxJobs ?? 10_000;
    if (!Number.isInteger(maxJobs) || maxJobs < 1)
      throw new InvalidArgument('maxJobs', `must be a positive integer, got ${String(maxJobs)}`);
    const worked = this.worked(options.only);
    const result = {
      succeeded: 0,
      retried: 0,
      dead: 0,
      failures: [] as { queue: string; jobId: number; error: unknown }[],
    };
    let ran = 0;
    for (;;) {
      let round = 0;
      for (const w of worked) {
        for (;;) {
          const jobs = await w.queue.claimBatch(BATCH, WORKER_ID);
          if (jobs.length === 0) break;
          for (const job of jobs) {
            if (ran >= maxJobs) {
              await Promise.allSettled(jobs.filter((j) => j !== job).map((j) => j.release()));
              await job.release();
              throw new DrainLimit(maxJobs);
            }
            ran += 1;
            round += 1;
            await this.runOne(w, job, result);
          }
        }
      }
      if (round === 0) return result;
    }
  }

  private async runOne(
    w: Worked,
    job: Job,
    result: {
      succeeded: number;
      retried: number;
      dead: number;
      failures: { queue: string; jobId: number; error: unknown }[];
    },
  ): Promise<void> {
    try {
      if (w.batch) {
        const call = w.method.call as unknown as (jobs: Job[], signal: AbortSignal) => Promise<unknown>;
        const outcomes = await call([job], new AbortController().signal);
        if (Array.isArray(outcomes) && outcomes[0] instanceof Error) throw outcomes[0];
      } else {
        await w.method.call(job, new AbortController().signal);
      }
    } catch (error) {
      result.failures.push({ queue: w.queue.name, jobId: job.id, error });
      const permanent = isPermanent(error);
      if (permanent || job.attempts >= job.maxAttempts) result.dead += 1;
      else result.retried += 1;
      await (permanent ? job.fail(error) : job.retry(error));
      return;
    }
    await job.ack();
    result.succeeded += 1;
  }

  private worked(only: DrainOptions['only']): Worked[] {
    const { queueHandlers, scheduled, outboxHandlers } = this.explorer;
    const all: Worked[] = [
      ...queueHandlers.map((h) => ({
        queue: this.store.queue(h.meta.queue, h.meta.options.queueOpts),
        names: [h.meta.queue],
        method: h,
        batch: h.meta.options.batchSize !== undefined,
      })),
      ...scheduled.map((s) => ({ queue: this.store.queue(s.queue), names: [s.queue], method: s })),
      ...outboxHandlers.map((h) => ({
        queue: this.store.outbox(h.meta.outbox).queue,
        names: [h.meta.outbox, outboxQueueName(h.meta.outbox)],
        method: h,
      })),
    ];
    if (only === undefined) return all;
    const wanted = new Set(only.map((o) => (typeof o === 'string' ? o : o.name)));
    const unknown = [...wanted].filter((n) => !all.some((w) => w.names.includes(n)));
    if (unknown.length > 0)
      throw new InvalidArgument(
        'only',
        `names no handled queue or outbox: ${unknown.map((n) => JSON.stringify(n)).join(', ')}`,
      );
    return all.filter((w) => w.names.some((n) => wanted.has(n)));
  }
}
