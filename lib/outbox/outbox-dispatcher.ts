import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import { AlkstoreError, InvalidOption, PermanentError } from '../contract/errors.js';
import { validateName } from '../contract/names.js';
import type { Job, Queue, Store, StoreLogger, WakeReceiver } from '../contract/types.js';
import { deadLetterLine } from '../internal/dead-letter-log.js';
import { errorText } from '../internal/outbox-handle.js';
import { sleep } from '../internal/sleep.js';
import { NOOP_OUTBOX_METRICS, NoopOutboxMetrics, type AbandonReason, type OutboxMetrics, type PublishResult, type RetryReason } from './outbox-metrics.js';
import { OutboxSettings, type OutboxSettingsInput } from './outbox-settings.js';
import { type DeadReason, type FailureKind, RetryPolicy } from './retry-policy.js';
import { AckBatcher } from './ack-batcher.js';
import { ChangeLatch, PublishTimeout, withTimeout } from './timers.js';

/**
 * Delivers one outbox message (publishes it to a broker, calls a webhook, …).
 * Resolve on success; throw to retry; throw {@link PermanentError} to
 * dead-letter at once. `signal` aborts when the publish times out, the lease
 * is lost, or shutdown gives up waiting: honour it to stop early. Delivery is
 * at-least-once, so the handler must be idempotent.
 */
export type OutboxDeliveryHandler = (job: Job, signal: AbortSignal) => Promise<void> | void;

/** Options of {@link OutboxDispatcher}. */
export interface OutboxDispatcherOptions {
  /** The store; the dispatcher uses only `store.outbox(name).queue`. */
  readonly store: Pick<Store, 'outbox'>;
  /** The outbox to drain (its backing queue is `__alkstore_outbox:<name>`). */
  readonly outbox: string;
  readonly handler: OutboxDeliveryHandler;
  /** Settings, or any subset of them over the defaults. */
  readonly settings?: OutboxSettings | OutboxSettingsInput;
  /** Default: a no-op. */
  readonly metrics?: OutboxMetrics;
  /** Default: warnings and errors to stderr, nothing else. */
  readonly logger?: StoreLogger;
  /** Recorded on claimed rows; default `<host>-<pid>-<random>`. */
  readonly workerId?: string;
  /** Uniform [0, 1) source of the retry jitter; inject for deterministic tests. */
  readonly random?: () => number;
}

/** A failed delivery's outcome, written by itself (failures are rare; acks are batched). */
type FailureOutcome =
  | { readonly kind: 'retry'; readonly reason: RetryReason; readonly delayMs: number; readonly error: unknown }
  | { readonly kind: 'dead'; readonly reason: DeadReason; readonly error: Error };

type Outcome = { readonly kind: 'ack' } | FailureOutcome;

/** A claimed row this dispatcher is responsible for until its outcome lands or it lets go. */
interface Tracked {
  readonly job: Job;
  /** running: handler in flight; recording: outcome write queued or in flight; unrecorded: outcome write failed, to be retried. */
  state: 'running' | 'recording' | 'unrecorded' | 'finished';
  readonly abort: AbortController;
  outcome: Outcome | null;
  /** performance.now() of the first failed outcome write. */
  writeFailingSince: number | null;
  leaseLost: boolean;
  renewing: boolean;
}

/** Cap of the store-error backoff (also bounded by a quarter of the lease, so outcome writes get several tries). */
const STORE_BACKOFF_CAP_MS = 10_000;

const defaultLogger: StoreLogger = {
  log: () => undefined,
  warn: (m) => console.warn(`[alkstore outbox] ${m}`),
  error: (m, e) => console.error(`[alkstore outbox] ${m}`, e ?? ''),
};

/**
 * The outbox worker loop: claims batches under a lease, delivers them
 * concurrently through the handler with a per-publish timeout, renews the
 * leases of rows in flight, writes each outcome fenced by the row's claim
 * token (ack, retry with the {@link RetryPolicy} delay, or dead-letter), and
 * on abort stops claiming, releases what never started and drains in-flight
 * deliveries for up to `drainTimeoutMs`.
 *
 * Guarantees: at-least-once, unordered. The duplicate windows are described
 * in docs/outbox.md. Built only on the public `Queue`/`Job` contract, so it
 * runs unchanged on every engine.
 *
 * ```ts
 * const d = new OutboxDispatcher({ store, outbox: 'orders', handler: async (job) => broker.publish(job.payload) });
 * const stop = new AbortController();
 * const done = d.run(stop.signal);
 * // … on shutdown:
 * stop.abort(); await done;
 * ```
 */
export class OutboxDispatcher {
  readonly outbox: string;
  readonly settings: OutboxSettings;
  readonly workerId: string;
  readonly retryPolicy: RetryPolicy;
  private readonly queue: Queue;
  private readonly handler: OutboxDeliveryHandler;
  private readonly metrics: OutboxMetrics;
  private readonly logger: StoreLogger;

  private readonly tracked = new Set<Tracked>();
  /** Acks of successful deliveries, coalesced into `queue.ackBatch` calls. */
  private readonly acks: AckBatcher<Tracked>;
  private readonly changed = new ChangeLatch();
  private wakes: WakeReceiver | null = null;
  private storeFailures = 0;
  private storeClosed = false;
  private stopped = false;
  private running = false;

  /** @throws InvalidOption (or the name errors of `store.outbox`) on bad options, before any I/O */
  constructor(options: OutboxDispatcherOptions) {
    if (options === null || typeof options !== 'object') throw new InvalidOption('options', 'must be an object');
    if (!options.store || typeof options.store.outbox !== 'function') throw new InvalidOption('store', 'must be an alkstore Store');
    if (typeof options.handler !== 'function') throw new InvalidOption('handler', 'must be a function');
    this.outbox = validateName('outbox', options.outbox);
    this.settings = OutboxSettings.create(options.settings ?? {});
    this.retryPolicy = new RetryPolicy(this.settings.retry, options.random);
    this.handler = options.handler;
    this.metrics = options.metrics ?? NOOP_OUTBOX_METRICS;
    this.logger = options.logger ?? defaultLogger;
    if (options.workerId !== undefined && (typeof options.workerId !== 'string' || options.workerId.trim() === '')) {
      throw new InvalidOption('workerId', 'must be a non-empty string');
    }
    this.workerId = options.workerId ?? `${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
    this.queue = options.store.outbox(this.outbox).queue;
    this.acks = new AckBatcher<Tracked>({
      maxBatch: this.settings.batchSize,
      write: (items) => this.writeAcks(items),
      landed: (items, count) => this.acksLanded(items, count),
      failed: (items, err) => this.acksFailed(items, err),
    });
  }

  /** Rows claimed and not yet let go of (delivering, or waiting for their outcome write). */
  get inFlight(): number {
    return this.tracked.size;
  }

  /**
   * Runs until `signal` aborts, then drains and resolves. Store errors are
   * logged and backed off, never thrown; a closed store ends the loop (it
   * resolves after draining what it can).
   * @throws Error when this dispatcher is already running
   */
  async run(signal: AbortSignal): Promise<void> {
    if (this.running) throw new Error(`the dispatcher of outbox ${JSON.stringify(this.outbox)} is already running`);
    this.running = true;
    this.stopped = false;
    this.storeClosed = false;
    this.storeFailures = 0;
    const background = new AbortController();
    try {
      if (signal.aborted) return;
      this.openWakes();
      const renewals = this.renewLoop(background.signal);
      const stats = this.statsLoop(background.signal);
      try {
        await this.claimLoop(signal);
      } finally {
        await this.drain();
        background.abort();
        await Promise.all([renewals, stats]);
      }
    } finally {
      background.abort();
      this.wakes?.close();
      this.wakes = null;
      this.running = false;
    }
  }

  private openWakes(): void {
    try {
      this.wakes = this.queue.listen();
    } catch (err) {
      this.wakes = null;
      this.logger.warn(`outbox ${JSON.stringify(this.outbox)}: cannot listen for commits (${errorText(err)}); polling only`);
    }
  }

  private async claimLoop(signal: AbortSignal): Promise<void> {
    const s = this.settings;
    while (!signal.aborted && !this.storeClosed) {
      if (this.hasUnrecorded()) await this.flushOutcomes();
      const capacity = s.maxInFlight - this.tracked.size;
      if (capacity <= 0) {
        // Full: a finished delivery fires `changed`; the poll bounds the wait for outcome retries.
        await this.waitForWork(this.pauseMs(s.pollIntervalMs), signal, true);
        continue;
      }
      const want = Math.min(s.batchSize, capacity);
      let jobs: Job[];
      try {
        jobs = await this.claim(want);
        this.storeFailures = 0;
      } catch (err) {
        if (this.noteStoreError('claim', err)) break;
        await sleep(this.backoffMs(), signal);
        continue;
      }
      if (jobs.length > 0) this.emit('claimed', (m) => m.claimed(jobs.length, this.outbox));
      if (signal.aborted) {
        // Claimed after shutdown began: never started, so hand them back with their attempt.
        await this.releaseAll(jobs);
        break;
      }
      for (const job of jobs) this.start(job);
      // A full batch: more rows are probably ready. Claim again at once, or (no room left) wait at the
      // top of the loop for a freed slot rather than for the poll interval.
      if (jobs.length === want) continue;
      const interval = jobs.length === 0 ? s.idlePollIntervalMs : s.pollIntervalMs;
      await this.waitForWork(this.pauseMs(interval), signal, false);
    }
  }

  private async claim(max: number): Promise<Job[]> {
    const pending = this.queue.claimBatch(max, this.workerId, { visibilityTimeoutMs: this.settings.leaseMs });
    try {
      return await withTimeout(pending, this.settings.storeTimeoutMs, 'claimBatch');
    } catch (err) {
      // A claim that lands after we gave up on it would strand its rows until their lease: hand them back.
      pending.then(
        (late) => this.releaseAll(late),
        () => undefined,
      );
      throw err;
    }
  }

  private start(job: Job): void {
    const t: Tracked = { job, state: 'running', abort: new AbortController(), outcome: null, writeFailingSince: null, leaseLost: false, renewing: false };
    this.tracked.add(t);
    void this.deliver(t).catch((err) => {
      this.logger.error(`outbox ${JSON.stringify(this.outbox)}: delivery bookkeeping of job ${job.id} failed`, err);
      this.untrack(t);
    });
  }

  private async deliver(t: Tracked): Promise<void> {
    const { publishTimeoutMs } = this.settings;
    const started = performance.now();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), publishTimeoutMs);
    });
    let result: PublishResult;
    let error: unknown = null;
    try {
      const attempt = Promise.resolve().then(() => this.handler(t.job, t.abort.signal));
      const r = await Promise.race([attempt.then(() => 'ok' as const), timedOut]);
      if (r === 'timeout') {
        result = 'timeout';
        error = new PublishTimeout(publishTimeoutMs);
        t.abort.abort(error);
      } else {
        result = 'ok';
      }
    } catch (err) {
      error = err;
      result = isPermanent(err) ? 'permanent' : 'error';
    } finally {
      clearTimeout(timer);
    }
    if (this.stopped) {
      // run() already resolved: whatever happened is left to the lease (drain window).
      this.untrack(t);
      return;
    }
    const durationMs = performance.now() - started;
    this.emit('publishDuration', (m) => m.publishDuration(durationMs, result, this.outbox));
    if (result === 'ok') this.emit('published', (m) => m.published(durationMs, this.outbox));
    if (t.leaseLost) {
      // Someone else owns the row now; its outcome is theirs to write.
      this.untrack(t);
      return;
    }
    if (result === 'ok') this.queueAck(t);
    else await this.record(t, this.outcomeOf(t.job, result, error));
  }

  /** The delivery succeeded: its ack joins the next `ackBatch` (written within the current event-loop turn or right after the write in flight). */
  private queueAck(t: Tracked): void {
    t.outcome = ACK;
    t.state = 'recording';
    this.acks.add(t);
  }

  private writeAcks(items: readonly Tracked[]): Promise<number> {
    // run() already resolved (drain window): these rows were let go of; leave them to their lease.
    if (this.stopped) return Promise.resolve(0);
    return withTimeout(
      this.queue.ackBatch(items.map((t) => t.job)),
      this.settings.storeTimeoutMs,
      'ackBatch',
    );
  }

  private acksLanded(items: readonly Tracked[], count: number): void {
    if (this.stopped) {
      for (const t of items) this.untrack(t);
      return;
    }
    this.storeFailures = 0;
    // Fenced rows (lease lapsed, maybe reclaimed) changed nothing; ackBatch does not say which, only how many.
    const lost = Math.max(0, items.length - count);
    for (let i = 0; i < lost; i++) this.emit('abandoned', (m) => m.abandoned?.('lease-lost', this.outbox));
    for (const t of items) this.untrack(t);
  }

  /** A failed ack write is kept for a retry on a later iteration, within the lease budget, as any outcome write. */
  private acksFailed(items: readonly Tracked[], err: unknown): void {
    if (this.stopped) {
      for (const t of items) this.untrack(t);
      return;
    }
    const ids = items.length === 1 ? `job ${items[0]!.job.id}` : `${items.length} jobs (${items[0]!.job.id}, …)`;
    if (this.noteStoreError(`writing the ack of ${ids}`, err)) {
      for (const t of items) this.abandon(t, 'outcome-write');
      return;
    }
    const now = performance.now();
    for (const t of items) {
      t.writeFailingSince ??= now;
      if (now - t.writeFailingSince >= this.settings.leaseMs) {
        this.logger.warn(`outbox ${JSON.stringify(this.outbox)}: giving up on the outcome of job ${t.job.id} after ${this.settings.leaseMs} ms; it will be redelivered after its lease`);
        this.abandon(t, 'outcome-write');
      } else {
        t.state = 'unrecorded';
      }
    }
    this.changed.fire();
  }

  private outcomeOf(job: Job, result: Exclude<PublishResult, 'ok'>, error: unknown): FailureOutcome {
    const failure: FailureKind = result === 'permanent' ? 'permanent' : result === 'timeout' ? 'timeout' : 'transient';
    const decision = this.retryPolicy.decide(job.attempts, failure, job.maxAttempts);
    if (decision.kind === 'retry') return { kind: 'retry', reason: result === 'timeout' ? 'timeout' : 'error', delayMs: decision.delayMs, error };
    const text = decision.reason === 'permanent' ? `permanent: ${errorText(error)}` : `exhausted after ${job.attempts} attempts: ${errorText(error)}`;
    return { kind: 'dead', reason: decision.reason, error: new Error(text, { cause: error }) };
  }

  /** Writes a retry or dead-letter outcome, fenced by the claim token; a store failure keeps it for a later retry within the lease budget. */
  private async record(t: Tracked, outcome: FailureOutcome): Promise<void> {
    t.outcome = outcome;
    t.state = 'recording';
    let landed: boolean;
    try {
      const write = outcome.kind === 'retry' ? t.job.retry(outcome.error, outcome.delayMs) : t.job.fail(outcome.error);
      landed = await withTimeout(write, this.settings.storeTimeoutMs, outcome.kind === 'dead' ? 'fail' : outcome.kind);
      this.storeFailures = 0;
    } catch (err) {
      if (this.stopped) return this.untrack(t);
      if (this.noteStoreError(`writing the outcome of job ${t.job.id}`, err)) return this.abandon(t, 'outcome-write');
      t.writeFailingSince ??= performance.now();
      if (performance.now() - t.writeFailingSince >= this.settings.leaseMs) {
        this.logger.warn(`outbox ${JSON.stringify(this.outbox)}: giving up on the outcome of job ${t.job.id} after ${this.settings.leaseMs} ms; it will be redelivered after its lease`);
        this.abandon(t, 'outcome-write');
      } else {
        t.state = 'unrecorded';
        this.changed.fire();
      }
      return;
    }
    if (!landed) {
      // Fenced: the lease lapsed and the row was (or may be) reclaimed. Zero rows changed.
      this.abandon(t, 'lease-lost');
      return;
    }
    if (outcome.kind === 'retry') this.emit('retried', (m) => m.retried(outcome.reason, this.outbox));
    if (outcome.kind === 'dead') {
      this.logger.warn(deadLetterLine(`outbox ${JSON.stringify(this.outbox)}`, t.job.id, outcome.error.message));
      this.emit('dead', (m) => m.dead(outcome.reason, this.outbox));
    }
    this.untrack(t);
  }

  private hasUnrecorded(): boolean {
    for (const t of this.tracked) if (t.state === 'unrecorded') return true;
    return false;
  }

  private async flushOutcomes(): Promise<void> {
    const writes: Promise<void>[] = [];
    let acks = 0;
    for (const t of this.tracked) {
      if (t.state !== 'unrecorded' || t.outcome === null) continue;
      if (t.outcome.kind === 'ack') {
        t.state = 'recording';
        this.acks.add(t);
        acks += 1;
      } else {
        writes.push(this.record(t, t.outcome));
      }
    }
    if (acks > 0) {
      this.acks.flush();
      writes.push(this.acks.idle());
    }
    await Promise.all(writes);
  }

  private abandon(t: Tracked, reason: AbandonReason): void {
    this.emit('abandoned', (m) => m.abandoned?.(reason, this.outbox));
    this.untrack(t);
  }

  private untrack(t: Tracked): void {
    t.state = 'finished';
    if (this.tracked.delete(t)) this.changed.fire();
  }

  private async releaseAll(jobs: readonly Job[]): Promise<void> {
    await Promise.all(
      jobs.map(async (job) => {
        try {
          await withTimeout(job.release(), this.settings.storeTimeoutMs, 'release');
        } catch (err) {
          this.logger.warn(`outbox ${JSON.stringify(this.outbox)}: could not release job ${job.id} (${errorText(err)}); it returns after its lease`);
        }
      }),
    );
  }

  /** Renews every tracked row's lease each `leaseMs / 2`, on a fixed schedule so one slow round does not delay the next. */
  private async renewLoop(stop: AbortSignal): Promise<void> {
    const every = Math.max(1, Math.floor(this.settings.leaseMs / 2));
    const inFlight = new Set<Promise<void>>();
    let next = performance.now() + every;
    while (!stop.aborted) {
      await sleep(next - performance.now(), stop);
      if (stop.aborted) break;
      next += every;
      for (const t of this.tracked) {
        if (t.renewing || t.leaseLost || t.state === 'finished') continue;
        const p = this.renew(t).finally(() => inFlight.delete(p));
        inFlight.add(p);
      }
    }
    await Promise.all(inFlight);
  }

  private async renew(t: Tracked): Promise<void> {
    t.renewing = true;
    try {
      const ok = await withTimeout(t.job.heartbeat(this.settings.leaseMs), this.settings.storeTimeoutMs, 'heartbeat');
      if (ok || t.state === 'finished' || t.state === 'recording') return; // a write in flight decides for itself
      this.loseLease(t);
    } catch (err) {
      // Not a verdict: the next round may still land before the deadline.
      this.noteStoreError(`renewing the lease of job ${t.job.id}`, err);
    } finally {
      t.renewing = false;
    }
  }

  private loseLease(t: Tracked): void {
    t.leaseLost = true;
    this.logger.warn(`outbox ${JSON.stringify(this.outbox)}: lost the lease of job ${t.job.id}; another worker may deliver it again`);
    if (t.state === 'running') {
      t.abort.abort(new Error('lease lost'));
      this.emit('abandoned', (m) => m.abandoned?.('lease-lost', this.outbox));
      // The slot stays taken until the handler settles (deliver() untracks it).
    } else {
      this.abandon(t, 'lease-lost');
    }
  }

  private async statsLoop(stop: AbortSignal): Promise<void> {
    if (this.metrics instanceof NoopOutboxMetrics) return;
    while (!stop.aborted) {
      try {
        const st = await withTimeout(this.queue.stats(), this.settings.storeTimeoutMs, 'stats');
        this.emit('pending', (m) => m.pending(st.pending, this.outbox));
        this.emit('oldestPendingAgeMs', (m) => m.oldestPendingAgeMs(st.oldestPendingAgeMs, this.outbox));
      } catch (err) {
        if (!isClosed(err)) this.logger.warn(`outbox ${JSON.stringify(this.outbox)}: sampling queue stats failed (${errorText(err)})`);
      }
      await sleep(this.settings.statsIntervalMs, stop);
    }
  }

  /** Stop claiming has happened; wait for in-flight work up to drainTimeoutMs, then let go of the rest. */
  private async drain(): Promise<void> {
    const deadline = performance.now() + this.settings.drainTimeoutMs;
    while (this.tracked.size > 0) {
      const left = deadline - performance.now();
      if (left <= 0) break;
      if (this.hasUnrecorded() && !this.storeClosed) await this.flushOutcomes();
      if (this.tracked.size === 0) break;
      const wait = this.hasUnrecorded() ? Math.min(left, this.backoffMs()) : left;
      await this.changed.wait(Math.max(0, Math.min(wait, deadline - performance.now())));
    }
    this.stopped = true;
    for (const t of [...this.tracked]) {
      t.abort.abort(new Error('dispatcher stopped'));
      this.abandon(t, 'drain');
    }
  }

  private async waitForWork(ms: number, signal: AbortSignal, wakeOnFreedSlot: boolean): Promise<void> {
    if (signal.aborted) return;
    const ac = new AbortController();
    const stop = (): void => ac.abort();
    signal.addEventListener('abort', stop, { once: true });
    const freed = wakeOnFreedSlot ? this.changed.wait(ms, ac.signal).then(stop) : null;
    try {
      const wakes = this.wakes;
      if (wakes && !wakes.closed) {
        const timer = setTimeout(stop, ms);
        try {
          await wakes.recv(ac.signal);
        } finally {
          clearTimeout(timer);
        }
      } else {
        await sleep(ms, ac.signal);
      }
    } finally {
      signal.removeEventListener('abort', stop);
      ac.abort();
      await freed;
    }
  }

  /** The wait before the next iteration: shorter while outcome writes wait for a retry. */
  private pauseMs(interval: number): number {
    return this.hasUnrecorded() ? Math.min(interval, this.backoffMs()) : interval;
  }

  private backoffMs(): number {
    const cap = Math.max(this.settings.pollIntervalMs, Math.min(STORE_BACKOFF_CAP_MS, Math.floor(this.settings.leaseMs / 4)));
    const n = Math.max(1, this.storeFailures);
    return Math.min(this.settings.pollIntervalMs * 2 ** Math.min(n - 1, 30), cap);
  }

  /** Logs a store error and counts it for the backoff; resolves true when the store is closed (the loop ends). */
  private noteStoreError(operation: string, err: unknown): boolean {
    if (isClosed(err)) {
      if (!this.storeClosed) this.logger.warn(`outbox ${JSON.stringify(this.outbox)}: the store is closed; the dispatcher stops`);
      this.storeClosed = true;
      return true;
    }
    this.storeFailures += 1;
    this.logger.warn(`outbox ${JSON.stringify(this.outbox)}: ${operation} failed (${errorText(err)}); retrying in ${this.backoffMs()} ms`);
    return false;
  }

  private emit(what: string, fn: (m: OutboxMetrics) => void): void {
    try {
      fn(this.metrics);
    } catch (err) {
      this.logger.warn(`outbox ${JSON.stringify(this.outbox)}: metrics hook ${what} threw (${errorText(err)})`);
    }
  }
}

const ACK: Outcome = { kind: 'ack' };

function isPermanent(err: unknown): boolean {
  // Also recognise a PermanentError from another copy of the package.
  return err instanceof PermanentError || (err instanceof Error && (err as { code?: unknown }).code === 'PERMANENT');
}

function isClosed(err: unknown): boolean {
  return err instanceof AlkstoreError && err.code === 'CLOSED';
}
