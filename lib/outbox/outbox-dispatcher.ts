import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { AlreadyRunning, InvalidOption, PublishFailed } from '../contract/errors.js';
import { asOption, requireFunction, validateKey, validateName } from '../contract/validate.js';
import type { Job, Queue, Store, StoreLogger } from '../contract/types.js';
import { errorText } from '../internal/outbox-handle.js';
import { PublishTimeout } from '../worker/timers.js';
import { LeaseLostAbort } from '../worker/tracked.js';
import { WorkerCore, type FailureKind, type FailureOutcome, type HandlerWrapper } from '../worker/worker-core.js';
import { combineObservers, type WorkerObserver } from '../worker/worker-observer.js';
import { NoopOutboxMetrics, outboxMetricsObserver, type OutboxMetrics } from './outbox-metrics.js';
import { OutboxSettings, type OutboxSettingsInput } from './outbox-settings.js';
import { RetryPolicy } from './retry-policy.js';
import type { Publisher, PublisherHealth } from '../publishers/publisher.js';
import { pauseUnlessAborted } from '../publishers/reconnect.js';
import {
  DEFAULT_RESTART_ALLOWANCE_MS,
  publisherContext,
  publisherDelivery,
  receiptAcks,
} from './publisher-delivery.js';

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
  /** Custom delivery; give either this or `publisher`. */
  readonly handler?: OutboxDeliveryHandler;
  /**
   * A broker publisher (`nestjs-alkstore/brokers`) instead of a handler: the
   * dispatcher connects it before claiming (a server that is down keeps the
   * messages pending), publishes each message with its id as the broker's
   * dedup id, and stores the broker's receipt with the ack, in one write.
   */
  readonly publisher?: Publisher;
  /** With `publisher`: store each broker receipt with its ack, in the ack's own statement (default true; false stores none). */
  readonly receipts?: boolean;
  /** With `publisher`: the restart allowance of the retry horizon checked against the broker's dedup window (default 60 000 ms). */
  readonly restartAllowanceMs?: number;
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
  /** More observers of the worker seam (metrics adapters, lifecycle events); see `nestjs-alkstore`. */
  readonly observers?: readonly WorkerObserver[];
  /** Runs each delivery inside a context (tracing span, correlation id). */
  readonly wrap?: HandlerWrapper;
  /** Log every failed delivery at error level (default false: the outcome is in the row and the metrics). */
  readonly logHandlerErrors?: boolean;
}

/** Publishes failed in a row (no success between them) from which `health()` says `degraded`. */
export const FAILING_PUBLISHES_DEGRADED = 3;

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
 * A configuration of the shared {@link WorkerCore}: one slot per row
 * (`concurrency`), claims of at most `claimSize`, a per-row abort signal, the
 * seed-004 retry policy, and rows still running at the drain timeout left to
 * their lease.
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
  private readonly core: WorkerCore;
  private readonly publisher: Publisher | null;
  private readonly logger: StoreLogger;
  private publisherCtx: ReturnType<typeof publisherContext> | null = null;
  private active = false;
  /** While a broker outage lasts: the reason a publish starting meanwhile fails with (those in flight were aborted with it). */
  private pausedBy: unknown = null;
  /** Deliveries pause for a broker outage: the round stops, the next starts once the publisher is connected. */
  private outage = false;
  private round: AbortController | null = null;
  private failuresInRow = 0;
  private lastFailure: string | undefined;

  /** @throws InvalidOption (or the name errors of `store.outbox`) on bad options, before any I/O */
  constructor(options: OutboxDispatcherOptions) {
    if (options === null || typeof options !== 'object') throw new InvalidOption('options', 'must be an object');
    if (!options.store || typeof options.store.outbox !== 'function')
      throw new InvalidOption('store', 'must be an alkstore Store');
    if ((options.handler === undefined) === (options.publisher === undefined))
      throw new InvalidOption('handler', 'or publisher: give exactly one of them');
    if (options.handler !== undefined) asOption(() => requireFunction('handler', options.handler));
    if (
      options.publisher !== undefined &&
      (typeof options.publisher !== 'object' ||
        typeof options.publisher.publish !== 'function' ||
        typeof options.publisher.connect !== 'function')
    ) {
      throw new InvalidOption(
        'publisher',
        'must be a Publisher (connect, publish, health, close), e.g. new NatsJetStreamPublisher(...) from nestjs-alkstore/brokers',
      );
    }
    const restartAllowanceMs = options.restartAllowanceMs ?? DEFAULT_RESTART_ALLOWANCE_MS;
    if (!Number.isInteger(restartAllowanceMs) || restartAllowanceMs < 0 || restartAllowanceMs > 2_147_483_647)
      throw new InvalidOption('restartAllowanceMs', 'must be an integer in [0, 2147483647]');
    if (options.random !== undefined) asOption(() => requireFunction('random', options.random));
    this.outbox = validateName('outbox', options.outbox);
    this.settings = OutboxSettings.create(options.settings ?? {});
    this.retryPolicy = new RetryPolicy(this.settings.retry, options.random);
    const logger = options.logger ?? defaultLogger;
    if (options.workerId !== undefined) validateKey('worker', options.workerId);
    this.workerId = options.workerId ?? `${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
    const outboxHandle = options.store.outbox(this.outbox);
    const queue: Queue = outboxHandle.queue;
    this.publisher = options.publisher ?? null;
    this.logger = logger;
    if (this.publisher)
      this.publisherCtx = publisherContext(this.outbox, this.settings, restartAllowanceMs, logger, options.metrics);
    if (options.receipts !== undefined && typeof options.receipts !== 'boolean')
      throw new InvalidOption('receipts', 'must be a boolean');
    const storeReceipts = options.receipts ?? true;
    const handler = options.publisher
      ? publisherDelivery(options.publisher, outboxHandle, storeReceipts, {
          paused: () => this.pausedBy,
          delivered: () => {
            this.failuresInRow = 0;
          },
          failed: (err) => {
            this.failuresInRow += 1;
            this.lastFailure = errorText(err);
          },
        })
      : options.handler!;
    const s = this.settings;
    const name = `outbox ${JSON.stringify(this.outbox)}`;
    const metrics =
      options.metrics && !(options.metrics instanceof NoopOutboxMetrics)
        ? outboxMetricsObserver(options.metrics, this.outbox)
        : null;
    this.core = new WorkerCore({
      queue,
      name,
      handler,
      // A broker receipt is written by the ack's own statement.
      ackBatch: options.publisher && storeReceipts ? receiptAcks(outboxHandle) : undefined,
      concurrency: s.concurrency,
      // A broker publisher claims its next batch while the last one publishes (one claim ahead, at most claimSize
      // rows waiting for a slot), so the broker is not left idle during each claim's round trip. A handler keeps
      // concurrency as the most rows held.
      prefetch: options.publisher ? s.claimSize : 0,
      maxClaim: s.claimSize,
      // Two ack writes in flight: publishes that land during one ack round trip are written without waiting for it.
      ackWrites: 2,
      leaseMs: s.leaseMs,
      renewLeases: true,
      handlerTimeoutMs: s.publishTimeoutMs,
      timeoutError: (ms) => new PublishTimeout(ms),
      jobSignals: true,
      // A broker publisher's publishes that start in one turn time out together: one signal for them, not one each.
      turnSignals: options.publisher !== undefined,
      storeTimeoutMs: s.storeTimeoutMs,
      pollIntervalMs: s.busyPollIntervalMs,
      idlePollIntervalMs: s.idlePollIntervalMs,
      firstBackoffMs: s.busyPollIntervalMs,
      // Never below the first pause (the core requires first <= max); the effective cap is unchanged.
      maxBackoffMs: Math.max(s.busyPollIntervalMs, Math.min(STORE_BACKOFF_CAP_MS, Math.floor(s.leaseMs / 4))),
      drainTimeoutMs: s.drainTimeoutMs,
      minOutcomeDrainMs: 0,
      releaseOnDrainTimeout: false,
      stopMessage: 'dispatcher stopped',
      decide: (job, failure, error) => this.outcomeOf(job, failure, error),
      workerId: this.workerId,
      logger,
      logHandlerErrors: options.logHandlerErrors ?? false,
      observer: combineObservers([metrics, ...(options.observers ?? [])], logger, name),
      statsIntervalMs: s.statsIntervalMs,
      wrap: options.wrap ?? null,
    });
  }

  /** Rows claimed and not yet let go of whose delivery runs. */
  get inFlight(): number {
    return this.core.inFlight;
  }

  /**
   * Runs until `signal` aborts, then drains and resolves. Store errors are
   * logged and backed off, never thrown; a closed store ends the loop (it
   * resolves after draining what it can).
   * @throws Error when this dispatcher is already running
   */
  async run(signal: AbortSignal): Promise<void> {
    if (this.active || this.core.running)
      throw new AlreadyRunning(`the dispatcher of outbox ${JSON.stringify(this.outbox)}`);
    if (!this.publisher) return this.core.run(signal);
    const publisher = this.publisher;
    this.active = true;
    try {
      // Nothing is claimed until the broker is reachable and its configuration checked.
      await publisher.connect(this.publisherCtx!, signal);
      while (!signal.aborted) {
        await this.runRound(signal);
        // The round ended by itself (the store closed), not for an outage: so does the dispatcher.
        if (signal.aborted || !this.outage) break;
        await this.untilReachable(publisher, signal);
        this.pausedBy = null;
        this.outage = false;
      }
    } finally {
      this.active = false;
      this.outage = false;
      this.pausedBy = null;
      await publisher
        .close()
        .catch((err: unknown) =>
          this.logger.warn(`closing the publisher of outbox ${JSON.stringify(this.outbox)} failed: ${String(err)}`),
        );
    }
  }

  /**
   * The publisher's connection state, and whether its publishes succeed:
   * `degraded` while the broker is unreachable (deliveries paused) or once
   * {@link FAILING_PUBLISHES_DEGRADED} publishes failed in a row, with the
   * reason in `detail`; `down` once closed. A handler-backed dispatcher has no
   * connection: always `up`.
   */
  health(): PublisherHealth {
    if (!this.publisher) return { status: 'up' };
    const h = this.publisher.health();
    if (h.status !== 'up') return h;
    if (this.outage) return { status: 'degraded', detail: 'deliveries paused: the broker was unreachable' };
    if (this.failuresInRow >= FAILING_PUBLISHES_DEGRADED)
      return {
        status: 'degraded',
        detail: `${this.failuresInRow} publishes failed in a row (last: ${this.lastFailure ?? 'unknown'})`,
      };
    return h;
  }

  /** One run of the worker core, which a broker outage ends early (see {@link outcomeOf}). */
  private async runRound(signal: AbortSignal): Promise<void> {
    const round = new AbortController();
    const stop = (): void => round.abort();
    signal.addEventListener('abort', stop, { once: true });
    this.round = round;
    try {
      await this.core.run(round.signal);
    } finally {
      this.round = null;
      signal.removeEventListener('abort', stop);
    }
  }

  /**
   * Waits (a local read of the publisher's state, every poll interval) until the publisher is connected again.
   * @throws PublishFailed when the publisher closed meanwhile (it gave up reconnecting): the dispatcher stops
   */
  private async untilReachable(publisher: Publisher, signal: AbortSignal): Promise<void> {
    while (!signal.aborted && publisher.health().status === 'degraded')
      await pauseUnlessAborted(this.settings.busyPollIntervalMs, signal);
    if (signal.aborted) return;
    if (publisher.health().status === 'down')
      throw new PublishFailed(`the publisher of outbox ${JSON.stringify(this.outbox)} closed during a broker outage`);
    // Failures during the outage were the broker's, not the messages': health counts afresh.
    this.failuresInRow = 0;
    this.logger.log(`outbox ${JSON.stringify(this.outbox)}: the broker is reachable again; deliveries resume`);
  }

  /**
   * A failure while the broker is unreachable is not the message's: the
   * message is released (pending at once, its attempt given back) and the
   * dispatcher pauses: publishes in flight are aborted (and released too), the
   * round stops claiming, and the next one starts once the publisher is
   * connected again. So an outage, however long, never dead-letters a message.
   */
  private brokerOutage(error: unknown): boolean {
    if (this.outage) return true;
    const h = this.publisher?.health();
    if (!h || h.status === 'up') return false;
    this.outage = true;
    this.logger.log(
      `outbox ${JSON.stringify(this.outbox)}: the broker is unreachable (${h.detail ?? errorText(error)}); ` +
        `deliveries pause until it is back, and the messages keep their attempts`,
    );
    this.pausedBy = new PublishFailed('the broker is unreachable: publish abandoned, the message is released');
    this.core.abortRunning(this.pausedBy);
    this.round?.abort();
    return true;
  }

  private outcomeOf(job: Job, failure: FailureKind, error: unknown): FailureOutcome {
    // Aborted because a message started with it lost its lease: not its failure, so its attempt is given back.
    if (error instanceof LeaseLostAbort) return { kind: 'release', error };
    if (failure !== 'permanent' && this.publisher && this.brokerOutage(error)) return { kind: 'release', error };
    const decision = this.retryPolicy.decide(job.attempts, failure, job.maxAttempts);
    if (decision.kind === 'retry')
      return { kind: 'retry', reason: failure === 'timeout' ? 'timeout' : 'error', delayMs: decision.delayMs, error };
    const text =
      decision.reason === 'permanent'
        ? `permanent: ${errorText(error)}`
        : `exhausted after ${job.attempts} attempts: ${errorText(error)}`;
    return { kind: 'dead', reason: decision.reason, error: new Error(text, { cause: error }) };
  }
}
