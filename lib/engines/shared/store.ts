import type { StoreAdmin } from '../../contract/admin.js';
import { WORKFLOW_SQL, type WorkflowSql } from '../../workflows/sql-seam.js';
import { AlkstoreError, Closed } from '../../contract/errors.js';
import type { InboxOpts } from '../../contract/inbox.js';
import {
  DEFAULT_QUEUE_OPTS,
  OUTBOX_QUEUE_OPTS,
  resolveQueueOpts,
  type JobOpts,
  type QueueOpts,
} from '../../contract/options.js';
import type {
  EngineKind,
  Inbox,
  Lock,
  Outbox,
  Queue,
  RunRetentionOpts,
  RunSchedulesOpts,
  Schedule,
  ScheduleListing,
  ScheduleOpts,
  Store,
  StoreLogger,
  Stream,
  TxOpen,
  TxOps,
  WakeReceiver,
} from '../../contract/types.js';
import { requireFunction, validateName } from '../../contract/validate.js';
import { InboxHandle, type InboxDriver } from '../../internal/inbox-handle.js';
import { loadCronIfInstalled } from '../../internal/load-cron.js';
import { formatMessageId, type StoreIdentity } from '../../internal/message-id.js';
import { OutboxHandle, type ReceiptDriver } from '../../internal/outbox-handle.js';
import { RETENTION_DRIVER, runRetention, type RetentionDriver } from '../../internal/retention-runner.js';
import { scheduleInput } from '../../internal/schedule-input.js';
import { runSchedules } from '../../internal/scheduler-runner.js';
import { takeLock, type LockDriver } from './lock.js';
import type { ScheduleDriver } from './scheduler.js';
import { StoreStream, type StreamDriver } from './stream.js';
import { QueueHandle } from './queue.js';
import type { QueueDriver } from './queue-driver.js';
import { runTx, type TxDriver } from './tx.js';

/**
 * The `Store` methods that are the same on every engine, written once over the engine's
 * drivers: the closed guard, name checks before any I/O, locks, streams, the schedule API and
 * its leader-elected runner, retention, and the transaction entry points. An engine supplies
 * its drivers, its queue handles, its admin, notify and close.
 */
export abstract class StoreBase implements Store {
  abstract readonly engine: EngineKind;
  abstract readonly closed: boolean;
  /** Where the store logs (public for the drivers' warnings). */
  abstract readonly logger: StoreLogger;
  protected abstract readonly lockDriver: LockDriver;
  protected abstract readonly streamDriver: StreamDriver;
  protected abstract readonly scheduleDriver: ScheduleDriver;
  /** The largest payload a schedule may carry (`maxPayloadBytes`). */
  abstract readonly maxPayloadBytes: number;
  private identity: StoreIdentity | null = null;
  /** The `messageIdPrefix` option, or null. */
  protected abstract readonly messageIdPrefix: string | null;

  abstract notify(channel: string, payload?: string): Promise<void>;
  abstract outboxEnqueue(outbox: string, payload: unknown, opts?: JobOpts): Promise<number>;
  abstract joinTransaction<H, T>(open: TxOpen<H>, fn: (tx: TxOps, handle: H) => Promise<T>): Promise<T>;
  abstract now(): Promise<number>;
  abstract close(): Promise<void>;
  /** A receiver on any channel, reserved engine channels included (no name validation). */
  abstract wakes(channel: string): WakeReceiver;
  protected abstract readonly txDriver: TxDriver;
  protected abstract readonly adminApi: StoreAdmin;
  /** The inbox and outbox-receipt statements. */
  protected abstract readonly inboxDriver: InboxDriver & ReceiptDriver;
  /** The store-wide deletes of the retention runner. */
  protected abstract readonly retentionDriver: RetentionDriver;
  /** Inboxes opened through this store, with the longest retention floor their options gave (one entry per inbox name). */
  private readonly inboxFloors = new Map<string, number>();
  /** The options each queue was opened with, by name (the latest `queue(name, opts)` wins). */
  private readonly queueOptsByName = new Map<string, Required<QueueOpts>>();
  /** The engine's driver of queue `name`. */
  protected abstract queueDriver(name: string): QueueDriver;

  /** The options registered for `queue`, else a copy of `defaults`. */
  registeredQueueOpts(queue: string, defaults: Readonly<Required<QueueOpts>>): Required<QueueOpts> {
    return this.queueOptsByName.get(queue) ?? { ...defaults };
  }

  /** A queue handle with `opts` registered for `name` (or the registered ones, else `defaults`); the name is validated. */
  protected queueHandle(
    name: string,
    opts: QueueOpts | undefined,
    defaults: Readonly<Required<QueueOpts>>,
  ): QueueHandle {
    let resolved: Required<QueueOpts>;
    if (opts !== undefined) {
      resolved = resolveQueueOpts(opts, defaults);
      this.queueOptsByName.set(name, resolved);
    } else {
      resolved = this.registeredQueueOpts(name, defaults);
    }
    return new QueueHandle(this.queueDriver(name), resolved);
  }
  /** Deletes the ended per-key rate windows of every queue (the retention runner's round); resolves to the rows deleted. */
  protected abstract sweepRateWindows(): Promise<number>;

  /** Throws `Closed` once the store is closed. */
  protected guard(): void {
    if (this.closed) throw new Closed();
  }

  listen(channel: string): WakeReceiver {
    this.guard();
    return this.wakes(validateName('channel', channel));
  }

  /** Read and repair operations for dashboards, the CLI and health checks. */
  admin(): StoreAdmin {
    this.guard();
    return this.adminApi;
  }

  queue(name: string, opts?: QueueOpts): Queue {
    this.guard();
    return this.queueHandle(validateName('queue', name), opts, DEFAULT_QUEUE_OPTS);
  }

  outbox(name: string, opts?: QueueOpts): Outbox {
    this.guard();
    return new OutboxHandle(
      name,
      (queueName, o) => this.queueHandle(queueName, o, OUTBOX_QUEUE_OPTS),
      opts,
      this.inboxDriver,
      (rowId) => formatMessageId(this.identityOrThrow(), this.messageIdPrefix, rowId),
    );
  }

  get storeId(): string {
    return this.identityOrThrow().storeId;
  }

  /**
   * Sets what the open read from the meta table (once, before the store is handed out).
   * @internal
   */
  setIdentity(identity: StoreIdentity): void {
    this.identity = identity;
  }

  private identityOrThrow(): StoreIdentity {
    // Set by the open before the store is handed out: only engine code running during the open can get here.
    if (this.identity === null)
      throw new AlkstoreError('DATABASE', 'the store has not read its id from the meta table yet (still opening)');
    return this.identity;
  }

  inbox(name: string, opts?: InboxOpts): Inbox {
    this.guard();
    const inbox = new InboxHandle(name, opts, this.inboxDriver);
    // The retention runner prunes it, never below the floor its options imply.
    const floor = inbox.settings.retentionFloorMs;
    if ((this.inboxFloors.get(inbox.name) ?? -1) < floor) this.inboxFloors.set(inbox.name, floor);
    return inbox;
  }

  /** Internal to the package: the workflows' tables, each statement in its own transaction. */
  protected abstract readonly workflowSql: WorkflowSql;

  get [WORKFLOW_SQL](): WorkflowSql {
    return this.workflowSql;
  }

  /** Internal to the package (workflows' prune): the store-wide deletes. */
  get [RETENTION_DRIVER](): RetentionDriver {
    return this.retentionDriver;
  }

  stream(name: string): Stream {
    this.guard();
    return new StoreStream(this.streamDriver, validateName('stream', name));
  }

  // ── locks and retention ─────────────────────────────────────────────

  async tryLock(name: string, owner: string, ttlMs: number): Promise<Lock | null> {
    this.guard();
    return takeLock(this.lockDriver, validateName('lock', name), owner, ttlMs);
  }

  async runRetention(signal: AbortSignal, opts?: RunRetentionOpts): Promise<void> {
    this.guard();
    return runRetention(
      {
        // The retention lock is a reserved name: no user-name validation.
        tryLock: (name, owner, ttlMs) => takeLock(this.lockDriver, name, owner, ttlMs),
        queue: (name) => this.queue(name),
        outboxQueue: (name) => this.outbox(name).queue,
        internalQueue: (name) => this.queueHandle(name, undefined, DEFAULT_QUEUE_OPTS),
        queueNames: () => this.admin().queueNames(),
        sweepRateWindows: () => this.sweepRateWindows(),
        driver: this.retentionDriver,
        inboxFloors: () => this.inboxFloors,
      },
      signal,
      opts,
    );
  }

  // ── scheduler ───────────────────────────────────────────────────────

  async schedule(name: string, spec: string, queue: string, payload: unknown, opts?: ScheduleOpts): Promise<Schedule> {
    this.guard();
    return this.scheduleDriver.upsert(await scheduleInput(name, spec, queue, payload, opts, this.maxPayloadBytes));
  }

  async unschedule(name: string): Promise<boolean> {
    this.guard();
    return this.scheduleDriver.remove(validateName('schedule', name));
  }

  async getSchedule(name: string): Promise<Schedule | null> {
    this.guard();
    return this.scheduleDriver.get(validateName('schedule', name));
  }

  async listSchedules(): Promise<ScheduleListing> {
    this.guard();
    return this.scheduleDriver.list();
  }

  async pauseSchedule(name: string): Promise<boolean> {
    this.guard();
    return this.scheduleDriver.setPaused(validateName('schedule', name), true);
  }

  async resumeSchedule(name: string): Promise<boolean> {
    this.guard();
    const n = validateName('schedule', name);
    // Skipping the elapsed boundaries of a cron spec needs croner loaded.
    await loadCronIfInstalled();
    return this.scheduleDriver.setPaused(n, false);
  }

  async triggerSchedule(name: string): Promise<number | null> {
    this.guard();
    return this.scheduleDriver.trigger(validateName('schedule', name));
  }

  /** One scheduler tick (the runner calls it); public for tests and custom runners. */
  async fireDue(): Promise<{ now: number; nextFireAt: number | null }> {
    await loadCronIfInstalled();
    return this.scheduleDriver.fireDue();
  }

  async runSchedules(signal: AbortSignal, opts?: RunSchedulesOpts): Promise<void> {
    this.guard();
    return runSchedules(
      {
        // The leadership lock and the schedules channel are reserved names: no user-name validation.
        tryLock: (name, owner, ttlMs) => takeLock(this.lockDriver, name, owner, ttlMs),
        listen: (channel) => this.wakes(channel),
        fireDue: () => this.fireDue(),
        wake: () => this.scheduleDriver.wake(),
      },
      signal,
      opts,
    );
  }

  // ── transactions ────────────────────────────────────────────────────

  withTx<T>(fn: (tx: TxOps) => Promise<T>): Promise<T> {
    try {
      this.guard();
      requireFunction('fn', fn);
    } catch (err) {
      return Promise.reject(err);
    }
    return runTx(this.txDriver, this, fn);
  }
}
