import {
  Inject,
  Injectable,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { hostname } from 'node:os';
import { NODE_HEARTBEAT_MS, type NodeQueue } from '../contract/admin.js';
import { outboxQueueName } from '../contract/names.js';
import { packageVersion } from '../cli/version.js';
import { sleep } from '../internal/sleep.js';
import type { Job, StoreLogger } from '../contract/types.js';
import { jobMetricsObserver, validateJobMetrics, type JobMetrics } from '../metrics/job-metrics.js';
import { runnerTimings } from '../internal/scheduler-runner.js';
import { OutboxDispatcher, OutboxSettings, type OutboxSettingsInput } from '../outbox/index.js';
import { correlationWrapper, createTracingWrapper } from '../tracing/handler-span.js';
import { isPermanent, type HandlerWrapper } from '../worker/worker-options.js';
import { WorkerEvents } from '../worker/worker-events.js';
import type { WorkerObserver } from '../worker/worker-observer.js';
import {
  ALKSTORE_MODULE_OPTIONS,
  DEFAULT_DRAIN_TIMEOUT_MS,
  DEFAULT_IDLE_POLL_INTERVAL_MS,
} from './alkstore.constants.js';
import { AlkstoreExplorer, type DiscoveredMethod } from './alkstore.explorer.js';
import type { AlkstoreModuleOptions } from './interfaces/alkstore-options.interface.js';
import { outboxSettingsInput } from './utils/handler-options.js';
import { validateModuleOptions, workersMode } from './utils/validate-module-options.js';
import type { QueueHandlerOptions } from './interfaces/handler-options.interface.js';
import { Store } from './store.token.js';
import { nestStoreLogger } from './utils/nest-logger.js';
import { defaultWorkerId } from './utils/worker-id.js';
import { NestTimeouts } from './schedules/nest-timeouts.js';
import { DEFAULT_SCHEDULE_OWNER, syncSchedules } from './schedules/sync-schedules.js';
import { QueueWorker } from '../worker/queue-worker.js';
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
  private heartbeatLoop: Promise<void> | null = null;
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
    this.runnerTimings = runnerTimings({
      lockTtlMs: options.schedulerLockTtlMs,
      renewIntervalMs: options.schedulerRenewIntervalMs,
    });
    this.timeouts = new NestTimeouts(this.logger);
  }

  async onApplicationBootstrap(): Promise<void> {
    this.timeouts.start(this.explorer.timeouts);
    if (workersMode(this.options.workers) === 'off') return;
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
    this.warnUnmatchedEvents();
    const tracing = this.options.tracing !== false;
    const wrapFor = async (label: string): Promise<HandlerWrapper> =>
      tracing ? ((await createTracingWrapper(label)) ?? correlationWrapper) : correlationWrapper;
    // Dispatchers are built first so invalid settings fail startup before anything runs.
    const dispatchers = [];
    for (const h of outboxHandlers) {
      const handler = this.loggedHandler(h, '@OutboxHandler');
      const given = h.meta.settings;
      const metrics = given instanceof OutboxSettings ? undefined : given?.metrics;
      const settings =
        given instanceof OutboxSettings ? given : outboxSettingsInput(given ?? {}, this.dispatcherDefaults());
      const queueLabel = outboxQueueName(h.meta.outbox);
      const observers = this.observersFor('outbox', h.meta.outbox, queueLabel, metrics, `@OutboxHandler ${h.label}`);
      const wrap = await wrapFor(`outbox ${h.meta.outbox}`);
      const create = (): OutboxDispatcher =>
        new OutboxDispatcher({
          store: this.store,
          outbox: h.meta.outbox,
          handler,
          settings,
          logger: this.logger,
          workerId: this.workerId,
          observers,
          wrap,
        });
      let next: OutboxDispatcher | null = create();
      let current: OutboxDispatcher = next;
      const run = (signal: AbortSignal): Promise<void> => {
        current = next ?? create();
        next = null;
        return current.run(signal);
      };
      const probe = (): NodeQueue => ({
        queue: queueLabel,
        concurrency: current.settings.concurrency,
        running: current.inFlight,
      });
      dispatchers.push({ label: h.label, run, probe });
    }
    await syncSchedules(this.store, scheduled, this.scheduleOwner, this.logger);
    // 'manual' (the testing kit): handlers run only when a test drains the queues.
    const runHandlers = workersMode(this.options.workers) !== 'manual';
    if (runHandlers)
      for (const h of queueHandlers)
        this.startQueueWorker(h.meta.queue, h, h.meta.options, '@QueueHandler', await wrapFor(`queue ${h.meta.queue}`));
    if (runHandlers)
      for (const s of scheduled)
        this.startQueueWorker(s.queue, s, s.meta.options, s.source ?? '@Scheduled', await wrapFor(`queue ${s.queue}`));
    if (runHandlers)
      for (const d of dispatchers)
        this.loops.push(supervise(`@OutboxHandler ${d.label}`, d.run, this.abort.signal, this.logger));
    if (this.options.scheduler ?? scheduled.length > 0) {
      const runnerOpts = { owner: this.workerId, ...this.runnerTimings };
      this.loops.push(
        supervise(
          'scheduler runner',
          (signal) => this.store.runSchedules(signal, runnerOpts),
          this.abort.signal,
          this.logger,
        ),
      );
    }
    if (runHandlers) this.startRetention();
    if (runHandlers) this.startHeartbeat(dispatchers.map((d) => d.probe));
  }

  /**
   * The node heartbeat (the dashboard's fleet view): every interval, this process's queues and outboxes with
   * their concurrency and jobs in flight; the row is deleted on a graceful stop.
   */
  private startHeartbeat(outboxes: readonly (() => NodeQueue)[]): void {
    const every = this.options.heartbeatIntervalMs ?? NODE_HEARTBEAT_MS;
    if (every === false) return;
    const admin = this.store.admin();
    const hp = /^(.+?):(\d{1,10}):[0-9a-f]+$/.exec(this.workerId);
    const base = {
      nodeId: this.workerId,
      host: hp ? hp[1]! : hostname(),
      pid: process.pid,
      version: packageVersion(),
      startedAt: Date.now(),
      intervalMs: every,
    };
    const beat = async (): Promise<void> => {
      const queues = [
        ...this.workers.map((w) => ({ queue: w.queueName, concurrency: w.concurrency, running: w.inFlight })),
        ...outboxes.map((p) => p()),
      ];
      await admin.heartbeat({ ...base, queues });
    };
    this.heartbeatLoop = (async () => {
      const signal = this.abort.signal;
      while (!signal.aborted) {
        await beat().catch((err: unknown) =>
          this.logger.warn(`node heartbeat failed (${err instanceof Error ? err.message : String(err)}); retrying`),
        );
        await sleep(every, signal);
      }
    })();
  }

  /** SPEC §10 retention: one replica at a time sweeps every known queue and outbox on an interval. */
  private startRetention(): void {
    const retention = this.options.retention;
    if (retention === false) return;
    const { outboxHandlers, queueHandlers, scheduled } = this.explorer;
    const queues = [
      ...new Set([
        ...queueHandlers.map((h) => h.meta.queue),
        ...scheduled.map((s) => s.queue),
        ...(retention?.queues ?? []),
      ]),
    ];
    const outboxes = [...new Set([...outboxHandlers.map((h) => h.meta.outbox), ...(retention?.outboxes ?? [])])];
    const { intervalMs, inboxes, inboxRetentionMs, receiptRetentionMs, auditRetentionMs, streamRetention } =
      retention ?? {};
    this.loops.push(
      supervise(
        'retention',
        (signal) =>
          this.store.runRetention(signal, {
            queues: () => queues,
            outboxes: () => outboxes,
            everyQueue: true,
            ...(intervalMs === undefined ? {} : { intervalMs }),
            ...(inboxes === undefined ? {} : { inboxes: () => inboxes }),
            ...(inboxRetentionMs === undefined ? {} : { inboxRetentionMs }),
            ...(receiptRetentionMs === undefined ? {} : { receiptRetentionMs }),
            ...(auditRetentionMs === undefined ? {} : { auditRetentionMs }),
            ...(streamRetention === undefined ? {} : { streamRetention }),
            owner: this.workerId,
            onSweep: (target, r) =>
              this.logger.log(
                `retention: ${target}: ${r.expired} expired job(s) moved to dead, ${r.purged} dead letter(s) past retention deleted`,
              ),
            onPrune: (target, n) => this.logger.log(`retention: ${target}: ${n} row(s) past retention deleted`),
            onError: (err) =>
              this.logger.warn(
                `retention: a sweep failed (${err instanceof Error ? err.message : String(err)}); retrying next round`,
              ),
          }),
        this.abort.signal,
        this.logger,
      ),
    );
  }

  /** The observers of one worker: its metrics sink (the handler's, else the module's) and its `@On…Event` listeners. */
  private observersFor(
    kind: 'queue' | 'outbox',
    name: string,
    queueLabel: string,
    own: JobMetrics | false | undefined,
    workerName: string,
  ): WorkerObserver[] {
    const observers: WorkerObserver[] = [];
    if (own !== undefined && own !== false) validateJobMetrics(`metrics of ${workerName}`, own);
    const metrics = own === false ? undefined : (own ?? this.options.metrics);
    if (metrics) observers.push(jobMetricsObserver(metrics, queueLabel));
    const listeners = this.explorer.workerEvents.filter((e) => e.meta.kind === kind && e.meta.name === name);
    if (listeners.length > 0) {
      const events = new WorkerEvents(this.logger, workerName);
      for (const l of listeners) events.on(l.meta.event, l.call);
      observers.push(events);
    }
    return observers;
  }

  private warnUnmatchedEvents(): void {
    const { outboxHandlers, queueHandlers, scheduled, workerEvents } = this.explorer;
    const queues = new Set([...queueHandlers.map((h) => h.meta.queue), ...scheduled.map((s) => s.queue)]);
    const outboxes = new Set(outboxHandlers.map((h) => h.meta.outbox));
    for (const e of workerEvents) {
      const known = e.meta.kind === 'queue' ? queues.has(e.meta.name) : outboxes.has(e.meta.name);
      if (!known) {
        const decorator = e.meta.kind === 'queue' ? '@QueueHandler' : '@OutboxHandler';
        this.logger.warn(
          `${e.label}: no ${decorator} for ${e.meta.kind} ${JSON.stringify(e.meta.name)} in this application; its ${e.meta.event} listener never fires`,
        );
      }
    }
  }

  /** Stops claiming everywhere, then waits for in-flight handlers up to the drain timeout. */
  beforeApplicationShutdown(): Promise<void> {
    this.stopped ??= (async () => {
      this.abort.abort();
      this.timeouts.stop();
      await Promise.allSettled([...this.workers.map((w) => w.stop()), ...this.loops]);
      if (this.heartbeatLoop) {
        await this.heartbeatLoop;
        await this.store
          .admin()
          .forgetNode(this.workerId)
          .catch(() => undefined);
      }
    })();
    return this.stopped;
  }

  async onApplicationShutdown(): Promise<void> {
    // Normally already drained; this covers an application context closed without the earlier hook.
    await this.beforeApplicationShutdown();
    await this.store.close();
  }

  private startQueueWorker(
    queueName: string,
    method: DiscoveredMethod,
    opts: QueueHandlerOptions,
    decorator: string,
    wrap: HandlerWrapper,
  ): void {
    const name = `${decorator} ${method.label}`;
    const worker = new QueueWorker({
      queue: this.store.queue(queueName, opts.queueOpts),
      handler: method.call,
      name,
      batchSize: opts.batchSize,
      observers: this.observersFor('queue', queueName, queueName, opts.metrics, name),
      statsIntervalMs: this.options.metricsIntervalMs,
      wrap,
      concurrency: opts.concurrency ?? 1,
      prefetch: opts.prefetch,
      leaseMs: opts.leaseMs,
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
    const defaults: { idlePollIntervalMs?: number; drainTimeoutMs: number; statsIntervalMs?: number } = {
      drainTimeoutMs: this.drainTimeoutMs,
    };
    if (this.options.idlePollIntervalMs !== undefined) defaults.idlePollIntervalMs = this.options.idlePollIntervalMs;
    if (this.options.metricsIntervalMs !== undefined) defaults.statsIntervalMs = this.options.metricsIntervalMs;
    return defaults;
  }

  /** The dispatcher retries or dead-letters a throw; this adds which method threw to the log. */
  private loggedHandler(method: DiscoveredMethod, decorator: string): (job: Job, signal: AbortSignal) => Promise<void> {
    return async (job, signal) => {
      try {
        await method.call(job, signal);
      } catch (err) {
        // A PermanentError is a decision, not a crash: the dispatcher's one dead-letter WARN line reports it.
        if (!isPermanent(err))
          this.logger.error(
            `${decorator} ${method.label} failed on job ${job.id} (attempt ${job.attempts}/${job.maxAttempts})`,
            err,
          );
        throw err;
      }
    };
  }
}
