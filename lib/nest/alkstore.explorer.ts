import { Inject, Injectable, Optional, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { InvalidOption } from '../contract/errors.js';
import { validateName } from '../contract/names.js';
import type { Job, StoreLogger } from '../contract/types.js';
import { WORKER_EVENT_NAMES } from '../worker/worker-events.js';
import {
  ALKSTORE_LISTED_HANDLES,
  ALKSTORE_MODULE_OPTIONS,
  OUTBOX_HANDLER_METADATA,
  QUEUE_HANDLER_METADATA,
  SCHEDULED_METADATA,
  SCHEDULED_QUEUE_PREFIX,
  WORKER_EVENT_METADATA,
} from './alkstore.constants.js';
import { InvalidHandler } from './errors/invalid-handler.error.js';
import { exploreNestSchedule, type DiscoveredTimeout } from './schedules/explore-nest-schedule.js';
import { validateScheduledSpecs } from './schedules/sync-schedules.js';
import type { AlkstoreModuleOptions } from './interfaces/alkstore-options.interface.js';
import type {
  OutboxHandlerMetadata,
  QueueHandlerMetadata,
  ScheduledMetadata,
  WorkerEventMetadata,
} from './interfaces/handler-options.interface.js';
import { Store } from './store.token.js';
import { readMethodMetadata } from './utils/append-metadata.js';
import {
  ALL_SHARED,
  checkHandlerOptions,
  OUTBOX_HANDLER_SHAPE,
  outboxSettingsInput,
  type HandlerOptionsShape,
} from './utils/handler-options.js';
import { OutboxSettings } from '../outbox/index.js';
import { workersMode } from './utils/validate-module-options.js';
import { checkWiring, refuseUntypedParameters, type ListedHandles } from './utils/check-wiring.js';
import { nestStoreLogger } from './utils/nest-logger.js';
import { mayReadSignal } from '../worker/signal-use.js';

/** A discovered handler: `Class.method` and the bound method. */
export interface DiscoveredMethod {
  /** `ClassName.methodName`, used in every log line and error about it. */
  readonly label: string;
  readonly call: (job: Job, signal?: AbortSignal) => Promise<unknown>;
}

export interface DiscoveredOutboxHandler extends DiscoveredMethod {
  readonly meta: OutboxHandlerMetadata;
}
export interface DiscoveredQueueHandler extends DiscoveredMethod {
  readonly meta: QueueHandlerMetadata;
}
/** A discovered `@OnQueueEvent` / `@OnOutboxEvent` listener. */
export interface DiscoveredWorkerEvent {
  readonly label: string;
  readonly meta: WorkerEventMetadata;
  readonly call: (...args: unknown[]) => unknown;
}
export interface DiscoveredScheduled extends DiscoveredMethod {
  readonly meta: ScheduledMetadata;
  /** The queue the schedule fires on. */
  readonly queue: string;
  /** The decorator that declared it: `@Scheduled` unless taken over from `@nestjs/schedule`. */
  readonly source?: '@Scheduled' | '@Cron' | '@Interval';
}

/**
 * Finds `@OutboxHandler`, `@QueueHandler` and `@Scheduled` methods on
 * providers and controllers in `onModuleInit`, and fails startup on a name
 * used twice or an invalid name or spec. Starting the loops is
 * `AlkstoreWorkerHost`'s job, at bootstrap.
 */
@Injectable()
export class AlkstoreExplorer implements OnModuleInit {
  outboxHandlers: DiscoveredOutboxHandler[] = [];
  queueHandlers: DiscoveredQueueHandler[] = [];
  scheduled: DiscoveredScheduled[] = [];
  workerEvents: DiscoveredWorkerEvent[] = [];
  /** `@Timeout` methods, run per process under `nestSchedule: 'cluster'`. */
  timeouts: DiscoveredTimeout[] = [];
  private readonly logger: StoreLogger;
  private readonly nestSchedule: AlkstoreModuleOptions['nestSchedule'];
  private readonly workers: ReturnType<typeof workersMode>;

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly store: Store,
    @Inject(ALKSTORE_MODULE_OPTIONS) options: AlkstoreModuleOptions,
    @Optional() @Inject(ALKSTORE_LISTED_HANDLES) private readonly listed?: ListedHandles,
  ) {
    this.logger = options.logger ?? nestStoreLogger();
    this.nestSchedule = options.nestSchedule;
    this.workers = workersMode(options.workers);
  }

  async onModuleInit(): Promise<void> {
    try {
      this.refuseSecondRoot();
      refuseUntypedParameters(this.discovery);
      this.explore();
      await this.exploreSchedules();
      checkWiring(
        this.discovery,
        this.listed,
        {
          handled: {
            queue: new Set([...this.queueHandlers.map((h) => h.meta.queue), ...this.scheduled.map((s) => s.queue)]),
            outbox: new Set(this.outboxHandlers.map((h) => h.meta.outbox)),
          },
          // The testing kit's manual mode runs chosen handlers on purpose: no warning about the others.
          workers: this.workers === 'auto',
        },
        this.logger,
      );
    } catch (err) {
      // Startup fails here, before anything could close the store: do not leak its connections.
      await this.closeAfterFailedStart();
      throw err;
    }
  }

  /** Closes this explorer's store when startup fails. */
  async closeAfterFailedStart(): Promise<void> {
    await this.store.close().catch(() => undefined);
  }

  /**
   * Two `forRoot` / `forRootAsync` in one application open two stores, and
   * every module then gets the last one registered: refuse at bootstrap.
   */
  private refuseSecondRoot(): void {
    const roots = this.discovery.getProviders().filter((w) => w.instance instanceof AlkstoreExplorer);
    if (roots.length <= 1) return;
    for (const w of roots) if (w.instance !== this) void (w.instance as AlkstoreExplorer).closeAfterFailedStart();
    throw new InvalidOption(
      'AlkstoreModule.forRoot',
      `is registered ${roots.length} times in this application: each opens its own store, and every module ` +
        `would get the last one. Register forRoot or forRootAsync once, in the root module; ` +
        `feature modules use AlkstoreModule.forFeature({ queues, outboxes })`,
    );
  }

  private explore(): void {
    const outboxes = new Map<string, string>();
    const queues = new Map<string, string>();
    const schedules = new Map<string, string>();
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      const instance: unknown = wrapper.instance;
      if (!instance || typeof instance !== 'object') continue;
      const proto: unknown = Object.getPrototypeOf(instance);
      if (!proto) continue;
      const className = (instance.constructor as { name?: string } | undefined)?.name ?? String(wrapper.name);
      for (const methodName of this.scanner.getAllMethodNames(proto)) {
        const method: unknown = (instance as Record<string, unknown>)[methodName];
        const outboxMeta = readMethodMetadata<OutboxHandlerMetadata>(OUTBOX_HANDLER_METADATA, method);
        const queueMeta = readMethodMetadata<QueueHandlerMetadata>(QUEUE_HANDLER_METADATA, method);
        const scheduledMeta = readMethodMetadata<ScheduledMetadata>(SCHEDULED_METADATA, method);
        const eventMeta = readMethodMetadata<WorkerEventMetadata>(WORKER_EVENT_METADATA, method);
        if (outboxMeta.length + queueMeta.length + scheduledMeta.length + eventMeta.length === 0) continue;
        const label = `${className}.${methodName}`;
        if (!wrapper.isDependencyTreeStatic()) {
          this.logger.warn(
            `${label} is skipped: alkstore handlers cannot live on request-scoped (or transient-dependent) providers`,
          );
          continue;
        }
        const fn = method as (job: Job, signal?: AbortSignal) => unknown;
        // A method that cannot read a signal is called through a wrapper that cannot either, so the worker does not
        // give each of its jobs an AbortSignal of its own (lib/worker/signal-use.ts).
        const call = mayReadSignal(fn)
          ? async (job: Job, signal?: AbortSignal): Promise<unknown> => fn.call(instance, job, signal)
          : async (job: Job): Promise<unknown> => fn.call(instance, job);
        for (const meta of eventMeta) {
          this.check(label, () => {
            validateName(meta.kind, meta.name);
            if (!WORKER_EVENT_NAMES.includes(meta.event)) {
              throw new InvalidOption('event', `must be one of ${WORKER_EVENT_NAMES.join(', ')}`);
            }
          });
          const listener = method as (...args: unknown[]) => unknown;
          this.workerEvents.push({ label, meta, call: (...args: unknown[]) => listener.apply(instance, args) });
        }
        for (const meta of outboxMeta) {
          this.check(label, () => {
            validateName('outbox', meta.outbox);
            if (meta.settings instanceof OutboxSettings) return;
            checkHandlerOptions('@OutboxHandler', meta.settings, OUTBOX_HANDLER_SHAPE);
            outboxSettingsInput(meta.settings ?? {});
          });
          claimName(outboxes, `outbox ${JSON.stringify(meta.outbox)}`, meta.outbox, label, '@OutboxHandler');
          this.outboxHandlers.push({ label, call, meta });
        }
        for (const meta of queueMeta) {
          this.check(label, () => {
            validateName('queue', meta.queue);
            checkHandlerOptions('@QueueHandler', meta.options, QUEUE_HANDLER_SHAPE);
            if (meta.misuse) throw new InvalidOption(meta.misuse.option, meta.misuse.reason);
          });
          claimName(queues, `queue ${JSON.stringify(meta.queue)}`, meta.queue, label, '@QueueHandler');
          this.queueHandlers.push({ label, call, meta });
        }
        for (const meta of scheduledMeta) {
          const queue = meta.options.queue ?? `${SCHEDULED_QUEUE_PREFIX}${meta.name}`;
          this.check(label, () => {
            validateName('schedule', meta.name);
            validateName('queue', queue);
            checkHandlerOptions('@Scheduled', meta.options, SCHEDULED_SHAPE);
          });
          claimName(schedules, `schedule ${JSON.stringify(meta.name)}`, meta.name, label, '@Scheduled');
          claimName(queues, `queue ${JSON.stringify(queue)}`, queue, label, '@Scheduled');
          this.scheduled.push({ label, call, meta, queue });
        }
      }
    }
  }

  /** `@nestjs/schedule` takeover (own file) and every spec validated in its zone. */
  private async exploreSchedules(): Promise<void> {
    if (this.nestSchedule === 'cluster') {
      const taken = exploreNestSchedule(this.discovery, this.scanner);
      const names = new Map(this.scheduled.map((s) => [s.meta.name, s.label]));
      const queues = new Map(this.queueHandlers.map((h) => [h.meta.queue, h.label]));
      for (const s of [...this.scheduled]) queues.set(s.queue, s.label);
      for (const s of taken.scheduled) {
        this.check(s.label, () => validateName('schedule', s.meta.name));
        claimName(names, `schedule ${JSON.stringify(s.meta.name)}`, s.meta.name, s.label, s.source ?? '@Cron');
        claimName(queues, `queue ${JSON.stringify(s.queue)}`, s.queue, s.label, s.source ?? '@Cron');
        this.scheduled.push(s);
      }
      this.timeouts = taken.timeouts;
    }
    await validateScheduledSpecs(this.scheduled);
  }

  private check(label: string, validate: () => void): void {
    try {
      validate();
    } catch (err) {
      throw new InvalidHandler(`${label}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
  }
}

/** What `@QueueHandler` takes. */
const QUEUE_HANDLER_SHAPE: HandlerOptionsShape = {
  shared: ALL_SHARED,
  own: ['prefetch', 'queueOpts', 'batchSize'],
  renamed: { visibilityTimeoutMs: 'leaseMs' },
};

/** What `@Scheduled` takes. */
const SCHEDULED_SHAPE: HandlerOptionsShape = {
  shared: ALL_SHARED.filter((o) => o !== 'backoffBaseMs'),
  own: ['queue', 'payload', 'priority', 'expiresInMs', 'timeZone', 'catchUp', 'prefetch', 'batchSize'],
  renamed: { visibilityTimeoutMs: 'leaseMs' },
  elsewhere: {
    backoffBaseMs: "a schedule stores no backoff; its fired jobs retry with the queue's backoffBaseMs",
    queueOpts: 'name the queue with the queue option and give a @QueueHandler of it the queueOpts',
  },
};

/** Records `name` as handled by `label`, or throws naming both methods. */
function claimName(seen: Map<string, string>, what: string, name: string, label: string, decorator: string): void {
  const previous = seen.get(name);
  if (previous !== undefined) {
    throw new InvalidHandler(
      `${what} has two handlers: ${previous} and ${label} (${decorator}); one application may have one handler per name`,
    );
  }
  seen.set(name, label);
}
