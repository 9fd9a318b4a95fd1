import { performance } from 'node:perf_hooks';
import { FLOW_HEADER } from './flows.js';
import { encodePayload } from './codec.js';
import { JobCancelled, JobDead, ResultTimeout } from './errors.js';
import { optionalObject, RESERVED_PREFIX, requireJobId, requireTimerMs } from './validate.js';
import type { JobOpts } from './options.js';
import type { Job, JobInfo, WakeReceiver } from './types.js';

// Results, progress and cancellation of jobs (SPEC §11), the parts both engines share: the rules pinned
// by conformance/contract/results.json, the wake channels, and the waiter loop over the public Queue API.

/** Largest progress value, in UTF-8 bytes of its JSON: progress is for a percentage or a small object, not data. */
export const MAX_PROGRESS_BYTES = 4096;

/**
 * Progress writes of one job are at most one per this many ms (worker's monotonic clock): the first
 * call writes at once, later calls inside the window replace the value waiting for the window's end,
 * and the last value is always written with the job's outcome (ack, or a retry that dead-letters,
 * or fail). No call waits for a write.
 */
export const PROGRESS_INTERVAL_MS = 1000;

/** How often a waiter re-reads the job when no wake came (a lost wake costs at most this). */
export const RESULT_POLL_MS = 1000;

/**
 * A header `enqueueAndWait` puts on its job: the job's outcome is recorded (and wakes waiters) even
 * when the handler returns nothing. Visible in `headers` like any other.
 */
export const WAIT_HEADER = 'alkstore-wait';

/** Default `resultRetentionMs`: outcome records (results, cancellations) are kept 7 days. */
export const DEFAULT_RESULT_RETENTION_MS = 604_800_000;

/** Wakes when an outcome record of the queue's jobs commits (completed with a record, cancelled, dead through a waited job). */
export function resultWakeChannel(queue: string): string {
  return `${RESERVED_PREFIX}result:${queue}`;
}

/** Wakes the queue's workers when a job of it was cancelled while processing. */
export function cancelWakeChannel(queue: string): string {
  return `${RESERVED_PREFIX}cancel:${queue}`;
}

/** Wakes when a job of the queue reported progress (re-read it with `getJob`). */
export function progressWakeChannel(queue: string): string {
  return `${RESERVED_PREFIX}progress:${queue}`;
}

/** Encodes a handler's result (the payload codec and the store's `maxPayloadBytes`); null for `undefined` (nothing to store). */
export function encodeResult(value: unknown, jobId: number, maxBytes: number): string | null {
  if (value === undefined) return null;
  return encodePayload(value, `result of job ${jobId}`, maxBytes);
}

/** Encodes a progress value: JSON of at most {@link MAX_PROGRESS_BYTES}, else `Codec` / `PayloadTooLarge` naming it. */
export function encodeProgress(value: unknown): string {
  return encodePayload(value, 'progress', MAX_PROGRESS_BYTES);
}

/**
 * One job's progress throttle: what to write now, what waits for the window's end. Pure over the
 * clock it is given, so conformance vectors can pin it.
 */
export class ProgressThrottle {
  private lastWriteAt: number | null = null;
  /** The newest value not yet written (JSON text), or null. */
  pending: string | null = null;
  /** Some value was reported: the outcome must carry the last one. */
  reported = false;

  constructor(private readonly intervalMs: number = PROGRESS_INTERVAL_MS) {}

  /** A new value at `now`: `'write'` (send it now) or `'defer'` (kept in `pending`, due at {@link dueAt}). */
  offer(text: string, now: number): 'write' | 'defer' {
    this.reported = true;
    if (this.lastWriteAt === null || now - this.lastWriteAt >= this.intervalMs) {
      this.lastWriteAt = now;
      this.pending = null;
      return 'write';
    }
    this.pending = text;
    return 'defer';
  }

  /** When the deferred value may be written (ms on the same clock), or null when nothing waits. */
  dueAt(): number | null {
    return this.pending === null || this.lastWriteAt === null ? null : this.lastWriteAt + this.intervalMs;
  }

  /** Takes the deferred value for a write at `now` (null when none). */
  take(now: number): string | null {
    const text = this.pending;
    this.pending = null;
    if (text !== null) this.lastWriteAt = now;
    return text;
  }
}

/**
 * A store's progress writes still to land: the deferred values waiting for the end of their
 * window, and the writes in flight. A waiting value holds the process open (its timer is not
 * unref'd) until it is written, so a short script that reports progress and returns still stores
 * it; a closing store writes them all first ({@link flush}).
 */
export class ProgressWrites {
  /** Per job whose deferred value waits for its timer: the function that writes it now. */
  private readonly waiting = new Set<() => void>();
  private readonly inFlight = new Set<Promise<void>>();

  /** A job's deferred value waits (`writeNow` sends it). */
  hold(writeNow: () => void): void {
    this.waiting.add(writeNow);
  }

  /** The job's deferred value no longer waits (sent, or taken by the outcome). */
  release(writeNow: () => void): void {
    this.waiting.delete(writeNow);
  }

  /** Counts a write until it settles (it never rejects). */
  track(write: Promise<void>): void {
    this.inFlight.add(write);
    void write.then(() => this.inFlight.delete(write));
  }

  /** Writes every waiting value now and resolves once every write in flight has settled. */
  async flush(): Promise<void> {
    for (const writeNow of [...this.waiting]) writeNow();
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  /** Nothing waits and nothing is being written. */
  get idle(): boolean {
    return this.waiting.size === 0 && this.inFlight.size === 0;
  }
}

const throttles = new WeakMap<Job, JobProgress>();
const TAKEN = Promise.resolve(true);
const DROPPED = Promise.resolve(false);

/** A claimed job's progress state (throttle, deferred write, the write in flight). */
interface JobProgress {
  readonly throttle: ProgressThrottle;
  readonly write: (text: string) => Promise<boolean>;
  readonly writes: ProgressWrites;
  /** The deferred value's timer, or null when no value waits for one. */
  timer: ReturnType<typeof setTimeout> | null;
  /** The job's last write (writes of one job run one after another, so none lands out of order). */
  chain: Promise<void>;
  /** A write found the claim gone: later values are dropped and `progress` resolves false. */
  lost: boolean;
  /** Values offered so far: a failed write gives its value back only when no newer one came. */
  seq: number;
  /** Sends the deferred value now (its timer's callback, and the store's flush at close). */
  readonly writeNow: () => void;
}

/** Sends `text` after the job's previous write; the caller never waits for it. */
function send(p: JobProgress, text: string): void {
  const seq = p.seq;
  const run = p.chain.then(async () => {
    try {
      if (!(await p.write(text))) p.lost = true;
    } catch {
      // Not written (a connection failed, the store is closing): the outcome carries it, unless a newer value came.
      if (p.seq === seq && p.throttle.pending === null) p.throttle.pending = text;
    }
  });
  p.chain = run;
  p.writes.track(run);
}

/** The deferred value's time has come (or the store closes): send it. */
function writeDeferred(p: JobProgress): void {
  if (p.timer !== null) clearTimeout(p.timer);
  p.timer = null;
  p.writes.release(p.writeNow);
  const text = p.throttle.take(performance.now());
  if (text !== null && !p.lost) send(p, text);
}

/**
 * `job.progress(value)` for an engine's job handle: checks the value before any I/O, then resolves
 * at once. The value is written in the background through `write` (fenced: false once the claim is
 * lost) at most once per {@link PROGRESS_INTERVAL_MS}: the first at once, the newest of a window at
 * its end. Resolves `false`, dropping the value, once the claim is known to be gone: `ended` (the
 * handle ran an outcome, or a heartbeat found it gone) or a write of this job found it so.
 */
export function reportProgress(
  job: Job,
  value: unknown,
  write: (text: string) => Promise<boolean>,
  writes: ProgressWrites,
  ended = false,
): Promise<boolean> {
  let text: string;
  try {
    text = encodeProgress(value);
  } catch (err) {
    return Promise.reject(err);
  }
  if (ended) return DROPPED;
  let p = throttles.get(job);
  if (!p) {
    const state: JobProgress = {
      throttle: new ProgressThrottle(),
      write,
      writes,
      timer: null,
      chain: Promise.resolve(),
      lost: false,
      seq: 0,
      writeNow: () => writeDeferred(state),
    };
    throttles.set(job, (p = state));
  }
  if (p.lost) return DROPPED;
  p.seq += 1;
  if (p.throttle.offer(text, performance.now()) === 'write') send(p, text);
  else if (p.timer === null) {
    const due = p.throttle.dueAt() ?? performance.now();
    p.timer = setTimeout(p.writeNow, Math.max(0, due - performance.now()));
    p.writes.hold(p.writeNow);
  }
  return TAKEN;
}

/**
 * At the outcome: stops the job's deferred progress write, waits for a write in flight, and hands
 * back the value still unwritten (it goes with the outcome), or null.
 */
export async function settleProgress(job: Job): Promise<string | null> {
  const p = throttles.get(job);
  if (!p) return null;
  stopDeferred(p);
  await p.chain;
  // A write that failed meanwhile gave its value back; a value reported meanwhile waits again.
  stopDeferred(p);
  return p.throttle.take(performance.now());
}

function stopDeferred(p: JobProgress): void {
  if (p.timer !== null) clearTimeout(p.timer);
  p.timer = null;
  p.writes.release(p.writeNow);
}

/** Whether acking `job` with `result` must write an outcome record (instead of the plain delete). */
export function needsOutcome(job: Job, result: unknown): boolean {
  return (
    result !== undefined ||
    job.headers[WAIT_HEADER] !== undefined ||
    job.headers[FLOW_HEADER] !== undefined ||
    throttles.get(job)?.throttle.reported === true
  );
}

/** Options of `waitForResult` / `enqueueAndWait`. */
export interface WaitOpts {
  /** Give up after this long (ms, integer in 1..2^31-1): `ResultTimeout`. Default 30 000. */
  timeoutMs?: number;
}

/** Default `timeoutMs` of a wait. */
export const DEFAULT_WAIT_TIMEOUT_MS = 30_000;

/** Validates {@link WaitOpts} before any I/O; resolves the timeout. */
export function waitInput(id: number, opts: WaitOpts | undefined): { id: number; timeoutMs: number } {
  const jobId = requireJobId('id', id);
  const o = optionalObject<WaitOpts>('opts', opts);
  const timeoutMs = o?.timeoutMs === undefined ? DEFAULT_WAIT_TIMEOUT_MS : requireTimerMs('timeoutMs', o.timeoutMs);
  return { id: jobId, timeoutMs };
}

/**
 * What a waiter makes of a job's row: the result (`done`), an error to reject with, or `wait`. A job
 * that is gone without a record was acked without one (or its record was pruned): `done` with
 * `undefined`.
 */
export function settledOutcome(
  info: JobInfo | null,
): { done: true; result: unknown } | { done: false; error: Error | null } {
  if (info === null) return { done: true, result: undefined };
  switch (info.state) {
    case 'completed':
      return { done: true, result: info.result };
    case 'dead':
      return { done: false, error: new JobDead(info.id, info.lastError) };
    case 'cancelled':
      return { done: false, error: new JobCancelled(info.id) };
    default:
      return { done: false, error: null };
  }
}

/**
 * Waits for the outcome of job `id`: listens first (so no commit between the read and the wait is
 * missed), then reads the job on every wake of the queue's result channel and at least every
 * {@link RESULT_POLL_MS}, until it is completed (resolves the result), dead or cancelled (rejects), or
 * the timeout passes (`ResultTimeout`).
 */
export async function waitForOutcome(
  listen: () => WakeReceiver,
  getJob: (id: number) => Promise<JobInfo | null>,
  id: number,
  timeoutMs: number,
): Promise<unknown> {
  const rx = listen();
  try {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const s = settledOutcome(await getJob(id));
      if (s.done) return s.result;
      if (s.error) throw s.error;
      const left = deadline - performance.now();
      if (left <= 0) throw new ResultTimeout(id, timeoutMs);
      await rx.recv(AbortSignal.timeout(Math.max(1, Math.ceil(Math.min(left, RESULT_POLL_MS)))));
    }
  } finally {
    rx.close();
  }
}

/**
 * `enqueueAndWait`'s options split, checked before any I/O: the job's options with the
 * {@link WAIT_HEADER} added, and the wait's timeout.
 */
export function enqueueAndWaitInput(opts: (JobOpts & WaitOpts) | undefined): { jobOpts: JobOpts; timeoutMs: number } {
  const o = optionalObject<JobOpts & WaitOpts>('opts', opts) ?? {};
  const { timeoutMs, ...jobOpts } = o;
  const { timeoutMs: ms } = waitInput(1, timeoutMs === undefined ? undefined : { timeoutMs });
  const headers = optionalObject<Record<string, string>>('headers', jobOpts.headers) ?? {};
  return { jobOpts: { ...jobOpts, headers: { ...headers, [WAIT_HEADER]: '1' } }, timeoutMs: ms };
}

/** Which jobs a cancel ends: one by id, the live holder of a unique key, or every live job of an ordering key. */
export type CancelTarget = { readonly id: number } | { readonly uniqueKey: string } | { readonly orderingKey: string };
