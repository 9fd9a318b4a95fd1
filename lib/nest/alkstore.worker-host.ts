import { Inject, Injectable, type BeforeApplicationShutdown, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Job, StoreLogger } from '../contract/types.js';
import { runnerTimings } from '../internal/scheduler-runner.js';
import { OutboxDispatcher, OutboxSettings, type OutboxSettingsInput } from '../outbox/index.js';
import { isPermanent } from '../worker/worker-core.js';
import { ALKSTORE_MODULE_OPTIONS, DEFAULT_DRAIN_TIMEOUT_MS, DEFAULT_IDLE_POLL_INTERVAL_MS } from './alkstore.constants.js';
import { AlkstoreExplorer, type DiscoveredMethod } from './alkstore.explorer.js';
import type { AlkstoreModuleOptions } from './interfaces/alkstore-options.interface.js';
import { validateModuleOptions } from './utils/validate-module-options.js';
import type { QueueHandlerOptions } from './interfaces/handler-options.interface.js';
import { Store } from './store.token.js';
import { nestStoreLogger } from './utils/nest-logger.js';
import { defaultWorkerId } from './utils/worker-id.js';
import { NestTimeouts } from './schedules/nest-timeouts.js';
import { DEFAULT_SCHEDULE_OWNER, syncSchedules } from './schedules/sync-schedules.js';
import { QueueWorker } from './workers/queue-worker.js';
import { supervise } from './workers/supervise.js';

/**
 * Runs what the explorer found: one `OutboxDispatcher` per `@OutboxHandler`,
 * one `QueueWorker` per `@QueueHandler` and per `@Scheduled` queue, and the
 * leader-elected scheduler runner. Starts them at bootstrap, drains them in
 * `beforeApplicationShutdown` (so handlers finish while the application's
 * own providers, a TypeORM DataSource say, are still up), and closes the
 * store in `onApplicationShutdown`.
 */
@Injectable()
export class AlkstoreWorkerHost implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger: StoreLogger;
  private readonly workerId: string;
  private readonly drainTimeoutMs: number;
  private readonly idlePollIntervalMs: number;
  private readonly abort = new AbortController();
  private readonly workers: QueueWorker[] = [];
  private readonly loops: Promise<void>[] = [];
  private stopped: Promise<void> | null = null;
  private readonly scheduleOwner: string;
  private readonly runnerTimings: { lockTtlMs: number; renewIntervalMs: number };
  private readonly timeouts: NestTimeouts;

  constructor(
    @Inject(ALKSTORE_MODULE_OPTIONS) private readonly options: AlkstoreModuleOptions,
    private readonly store: Store,
    private readonly explorer: AlkstoreExplorer,
  ) {
    this.logger = options.logger ?? nestStoreLogger();
    this.workerId = options.workerId ?? defaultWorkerId();
    this.drainTimeoutMs = options.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
    this.idlePollIntervalMs = options.idlePollIntervalMs ?? DEFAULT_IDLE_POLL_INTERVAL_MS;
    validateModuleOptions(options);
    this.scheduleOwner = options.scheduleOwner ?? DEFAULT_SCHEDULE_OWNER;
    this.runnerTimings = runnerTimings({ lockTtlMs: options.schedulerLockTtlMs, renewIntervalMs: options.schedulerRenewIntervalMs });
    this.timeouts = new NestTimeouts(this.logger);
  }

  async onApplicationBootstrap(): Promise<void> {
    this.timeouts.start(this.explorer.timeouts);
    if (this.options.workers === false) return;
    try {
      await this.startAll();
    } catch (err) {
      // Startup fails: stop what already runs and close the store, so nothing outlives the failed app.
      await this.beforeApplicationShutdown();
      await this.store.close().catch(() => undefined);
      throw err;
    }
  }

  private async startAll(): Promise<void> {
    const { outboxHandlers, queueHandlers, scheduled } = this.explorer;
    // Dispatchers are built first so invalid settings fail startup before anything runs.
    const dispatchers = outboxHandlers.map((h) => {
      const handler = this.loggedHandler(h, '@OutboxHandler');
      const settings = h.meta.settings instanceof OutboxSettings ? h.meta.settings : { ...this.dispatcherDefaults(), ...h.meta.settings };
      const create = (): OutboxDispatcher =>
        new OutboxDispatcher({ store: this.store, outbox: h.meta.outbox, handler, settings, logger: this.logger, workerId: this.workerId });
      let next: OutboxDispatcher | null = create();
      const run = (signal: AbortSignal): Promise<void> => {
        const dispatcher = next ?? create();
        next = null;
        return dispatcher.run(signal);
      };
      return { label: h.label, run };
    });
    await syncSchedules(this.store, scheduled, this.scheduleOwner, this.logger);
    // 'manual' (the testing kit): handlers run only when a test drains the queues.
    const runHandlers = this.options.workers !== 'manual';
    if (runHandlers) for (const h of queueHandlers) this.startQueueWorker(h.meta.queue, h, h.meta.options, '@QueueHandler');
    if (runHandlers) for (const s of scheduled) this.startQueueWorker(s.queue, s, s.meta.options, s.source ?? '@Scheduled');
    if (runHandlers) for (const d of dispatchers) this.loops.push(supervise(`@OutboxHandler ${d.label}`, d.run, this.abort.signal, this.logger));
    if (this.options.scheduler ?? scheduled.length > 0) {
      const runnerOpts = { owner: this.workerId, ...this.runnerTimings };
      this.loops.push(supervise('scheduler runner', (signal) => this.store.runSchedules(signal, runnerOpts), this.abort.signal, this.logger));
    }
  }

  /** Stops claiming everywhere, then waits for in-flight handlers up to the drain timeout. */
  beforeApplicationShutdown(): Promise<void> {
    this.stopped ??= (async () => {
      this.abort.abort();
      this.timeouts.stop();
      await Promise.allSettled([...this.workers.map((w) => w.stop()), ...this.loops]);
    })();
    return this.stopped;
  }

  async onApplicationShutdown(): Promise<void> {
    // Normally already drained; this covers an application context closed without the earlier hook.
    await this.beforeApplicationShutdown();
    await this.store.close();
  }

  private startQueueWorker(queueName: string, method: DiscoveredMethod, opts: QueueHandlerOptions, decorator: string): void {
    const worker = new QueueWorker({
      queue: this.store.queue(queueName, opts.queueOpts),
      handler: method.call,
      name: `${decorator} ${method.label}`,
      concurrency: opts.concurrency ?? 1,
      prefetch: opts.prefetch,
      visibilityTimeoutMs: opts.visibilityTimeoutMs,
      idlePollIntervalMs: opts.idlePollIntervalMs ?? this.idlePollIntervalMs,
      drainTimeoutMs: this.drainTimeoutMs,
      workerId: this.workerId,
      logger: this.logger,
    });
    this.workers.push(worker);
    worker.start();
  }

  /** Module-level tuning the dispatcher takes unless a handler's settings say otherwise. */
  private dispatcherDefaults(): OutboxSettingsInput {
    const defaults: { idlePollIntervalMs?: number; drainTimeoutMs: number } = { drainTimeoutMs: this.drainTimeoutMs };
    if (this.options.idlePollIntervalMs !== undefined) defaults.idlePollIntervalMs = this.options.idlePollIntervalMs;
    return defaults;
  }

  /** The dispatcher retries or dead-letters a throw; this adds which method threw to the log. */
  private loggedHandler(method: DiscoveredMethod, decorator: string): (job: Job, signal: AbortSignal) => Promise<void> {
    return async (job, signal) => {
      try {
        await method.call(job, signal);
      } catch (err) {
        // A PermanentError is a decision, not a crash: the dispatcher's one dead-letter WARN line reports it.
        if (!isPermanent(err)) this.logger.error(`${decorator} ${method.label} failed on job ${job.id} (attempt ${job.attempts}/${job.maxAttempts})`, err);
        throw err;
      }
    };
  }
}
