import { backoffDelayMs } from '../../contract/backoff.js';
import { decodePayload } from '../../contract/codec.js';
import { decodeHeaders } from '../../contract/job-extras.js';
import type { Job, JobFields } from '../../contract/types.js';
import { requireDurationMs } from '../../contract/validate.js';
import { errorText } from '../../internal/outbox-handle.js';
import { encodeResult, needsOutcome, reportProgress, settleProgress } from '../../contract/results.js';
import type { OutcomeTimes } from '../../internal/outcome-counter.js';
import type { ClaimedRow, ClaimRef, QueueDriver } from './queue-driver.js';
import { FLOW_HEADER, type ChildResult } from '../../contract/flows.js';

// The fields are the contract's JobFields, declared once there; the class adds the operations.
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface ClaimedJob<T = unknown> extends Omit<JobFields<T>, 'deadline'> {}

/**
 * A claimed job on either engine. Every operation is fenced by the claim token and deadline in the
 * driver; this class checks the arguments, computes the retry backoff, and counts outcomes. One
 * method per outcome: a new outcome is one method here and one driver operation.
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export class ClaimedJob<T = unknown> implements Job<T> {
  private currentDeadline: number;
  private readonly backoffBaseMs: number;
  /** Due to claimed (ms, database clock: the claim instant is its deadline less the lease it granted). */
  private readonly waitMs: number;
  /** When this process had the claim (monotonic clock), for the run time of the outcome. */
  private readonly claimedAtPerf = performance.now();
  /** An outcome op ran, or a heartbeat found the claim gone: later progress values are dropped at once. */
  private claimEnded = false;

  constructor(
    private readonly driver: QueueDriver,
    row: ClaimedRow,
  ) {
    const fields: Omit<JobFields<T>, 'deadline'> = {
      id: row.id,
      // The driver's own string when equal (it always is): one copy per queue, not one per claimed job.
      queue: row.queue === driver.queue ? driver.queue : row.queue,
      payload: decodePayload(row.payloadText, `payload of job ${row.id}`) as JobFields<T>['payload'],
      priority: row.priority,
      attempts: row.attempts,
      maxAttempts: row.maxAttempts,
      claimToken: row.claimToken,
      leaseMs: row.leaseMs,
      enqueuedAt: row.enqueuedAt,
      headers: decodeHeaders(row.headersText),
      uniqueKey: row.uniqueKey,
      orderingKey: row.orderingKey,
    };
    Object.assign(this, fields);
    this.currentDeadline = row.deadline;
    this.backoffBaseMs = row.backoffBaseMs;
    this.waitMs = Math.max(0, row.deadline - row.leaseMs - Math.max(row.runAt, row.enqueuedAt));
  }

  /** Wait and run time of `job`'s attempt, as of now (the dashboard's latency charts). Static: not a method of the public handle. */
  static timesOf(job: ClaimedJob): OutcomeTimes {
    return { waitMs: job.waitMs, runMs: performance.now() - job.claimedAtPerf };
  }

  /** The claim deadline as of the claim or the last successful heartbeat (see {@link Job.deadline}). */
  get deadline(): number {
    return this.currentDeadline;
  }

  payloadAs<U>(): U {
    return this.payload as U;
  }

  async ack(result?: unknown): Promise<boolean> {
    this.driver.guard();
    const ok = needsOutcome(this, result)
      ? await ackWithOutcome(this.driver, this, result)
      : await this.driver.ack(claimRef(this));
    this.claimEnded = true;
    if (ok) this.driver.outcomes.record(this.queue, 'completed', 1, [ClaimedJob.timesOf(this)]);
    return ok;
  }

  async retry(error: unknown, delayMs?: number): Promise<boolean> {
    this.driver.guard();
    // One draw per retry without a delay, before the write, even on the last attempt (which the
    // write dead-letters): the same random sequence gives the same delays on both engines.
    const delay =
      delayMs === undefined
        ? backoffDelayMs(this.attempts, this.backoffBaseMs, this.driver.random)
        : requireDurationMs('delayMs', delayMs, { allowZero: true });
    // The next attempt starts with no progress (the retry clears it); a retry that dead-letters
    // (the last attempt) keeps the last value, as `fail` does.
    const text = await settleProgress(this);
    if (text !== null && this.attempts >= this.maxAttempts) await this.driver.progress(claimRef(this), text);
    const outcome = await this.driver.retry(claimRef(this), delay, errorText(error), attemptError(error));
    this.claimEnded = true;
    if (outcome !== null) this.driver.outcomes.record(this.queue, outcome, 1, [ClaimedJob.timesOf(this)]);
    if (outcome === 'dead') await this.driver.wakeWaiters();
    if (outcome === 'dead' && inFlow(this)) await this.driver.settleFlows([this.id]);
    return outcome !== null;
  }

  async fail(error: unknown): Promise<boolean> {
    this.driver.guard();
    await flushProgress(this.driver, this);
    const ok = await this.driver.fail(claimRef(this), errorText(error), attemptError(error));
    this.claimEnded = true;
    if (ok) this.driver.outcomes.record(this.queue, 'dead', 1, [ClaimedJob.timesOf(this)]);
    // Waiters of the job read its last error (dying is not the plain path).
    if (ok) await this.driver.wakeWaiters();
    // Its dependents apply their policy (the sweep settles them should this process die first).
    if (ok && inFlow(this)) await this.driver.settleFlows([this.id]);
    return ok;
  }

  async childResults(): Promise<ChildResult[]> {
    this.driver.guard();
    return this.driver.childResults(this.id);
  }

  progress(value: unknown): Promise<boolean> {
    try {
      this.driver.guard();
    } catch (err) {
      return Promise.reject(err);
    }
    return reportProgress(
      this,
      value,
      (text) => this.driver.progress(claimRef(this), text),
      this.driver.progressWrites,
      this.claimEnded,
    );
  }

  async heartbeat(extendMs: number): Promise<boolean> {
    this.driver.guard();
    const deadline = await this.driver.heartbeat(claimRef(this), requireDurationMs('extendMs', extendMs));
    if (deadline === null) {
      this.claimEnded = true;
      return false;
    }
    this.currentDeadline = deadline;
    return true;
  }

  async release(): Promise<boolean> {
    this.driver.guard();
    const ok = await this.driver.release(claimRef(this));
    this.claimEnded = true;
    return ok;
  }
}

/** The ack that records the outcome: the result checked before any I/O, the last progress value with it. */
async function ackWithOutcome(driver: QueueDriver, job: ClaimedJob, result: unknown): Promise<boolean> {
  const text = encodeResult(result, job.id, driver.maxPayloadBytes);
  return driver.ackOutcome(claimRef(job), text, await settleProgress(job), inFlow(job));
}

/** Before a fail: the progress value still waiting for its window is written first (the dead job keeps the last value). */
async function flushProgress(driver: QueueDriver, job: ClaimedJob): Promise<void> {
  const text = await settleProgress(job);
  if (text !== null) await driver.progress(claimRef(job), text);
}

/** Something depends on the job: its end settles its dependents. */
function inFlow(job: ClaimedJob): boolean {
  return job.headers[FLOW_HEADER] !== undefined;
}

/** A claim as the driver's fenced operations take it. */
function claimRef(job: ClaimedJob): ClaimRef {
  return { id: job.id, claimToken: job.claimToken, plain: job.orderingKey === null };
}

/** Most characters of an error's stack an attempt row keeps (docs/operations.md, Failed attempts). */
export const ATTEMPT_ERROR_MAX = 8192;

/**
 * What a failed attempt's row records: the error's stack when it is an Error with one (the stack
 * begins with the name and message), else the last error's text; cut to {@link ATTEMPT_ERROR_MAX}.
 */
export function attemptError(err: unknown): string {
  const text = err instanceof Error && typeof err.stack === 'string' && err.stack !== '' ? err.stack : errorText(err);
  return text.length > ATTEMPT_ERROR_MAX ? text.slice(0, ATTEMPT_ERROR_MAX) : text;
}
