import { createHash, randomUUID } from 'node:crypto';
import { scheduleBoundaryOf } from '../contract/schedule-headers.js';
import { encodePayload } from '../contract/codec.js';
import { InvalidArgument, InvalidName, InvalidOption, PermanentError } from '../contract/errors.js';
import type { JobOpts } from '../contract/options.js';
import type { Job, Queue, Store, StoreLogger, TxOpen, TxOps, WakeReceiver } from '../contract/types.js';
import {
  asOption,
  optionalObject,
  requireBoolean,
  requireCount,
  requireFunction,
  requireInt,
  requireMaxAttempts,
  requireTimerMs,
  validateKey,
  validateName,
  MAX_PRIORITY,
  MIN_PRIORITY,
} from '../contract/validate.js';
import { Instrument } from './instrument.js';
import { QueueWorker } from '../worker/queue-worker.js';
import { handoffPoint, type HandoffSlot } from '../internal/handoff.js';
import { ClaimedJob } from '../engines/shared/job.js';
import { queueDriverOf } from '../engines/shared/queue.js';
import { runLimitKeys, validateWorkflowName } from './define.js';
import { resolveLimits, type QueueLimits } from '../contract/limits.js';
import { RunDriver, type DeferredEntry, type DriverDeps, type TransactionRunner } from './driver.js';
import { TxBatcher } from './batch.js';
import { adoptLegacyIndex, pruneRuns } from './prune.js';
import {
  workflowSqlOf,
  type EndedRun,
  type PassAck,
  type RunStart,
  type StartOutcome,
  type WorkflowSql,
} from './sql-seam.js';
import { needsOutcome } from '../contract/results.js';
import { newRunId } from './run-id.js';
import { countRuns, insertRun, listRuns, moveRun, parseCursor, runningVersions, sqlOfTx, type RunRow } from './runs.js';
import {
  UnknownWorkflow,
  journalError,
  type JournaledError,
  WorkflowCancelled,
  WorkflowInterrupted,
  WorkflowFailed,
  WorkflowTimeout,
} from './errors.js';
import {
  decodeEntry,
  encodeEntry,
  loadJournal,
  namesOf,
  stampOpts,
  Journal,
  type EndEntry,
  type Names,
  type RunStamp,
  type StartEntry,
} from './journal.js';
import type {
  ListRunsOptions,
  RunPageResult,
  RunState,
  RunSummary,
  SignalOptions,
  StartedRun,
  StartOptions,
  WaitForResultOptions,
  WorkflowDefinition,
  WorkflowRun,
  WorkflowsOptions,
} from './types.js';

/** Largest run id, in UTF-8 bytes (it is part of stream names, at most 255 bytes with the namespace). */
export const MAX_RUN_ID_BYTES = 200;
/** Largest namespace, in UTF-8 bytes. */
const MAX_NAMESPACE_BYTES = 40;
/** Passes of one job that found their position taken by another writer, before the job is retried later. */
const MAX_SUPERSEDED_PASSES = 5;
/** Most run jobs the worker holds claimed beyond those running (at most `concurrency`). */
const MAX_PREFETCH = 16;
/** Most runs remembered between their start and their first pass (see `Workflows.fresh`), and their inputs' JSON length. */
const FRESH_STARTS = 10_000;
const FRESH_STARTS_BYTES = 16 * 1024 * 1024;
/** A start whose input's JSON is longer is not remembered: its first pass reads the journal. */
const FRESH_START_MAX_BYTES = 64 * 1024;

const OPTION_KEYS = [
  'workflows',
  'worker',
  'concurrency',
  'namespace',
  'leaseMs',
  'idlePollIntervalMs',
  'drainTimeoutMs',
  'maxAttempts',
  'backoffBaseMs',
  'transaction',
  'logger',
  'workerId',
  'retentionMs',
  'metrics',
  'tracing',
  'limits',
];
/** Default `retentionMs`: 7 days, like the jobs' `resultRetentionMs`. */
const DEFAULT_RETENTION_MS = 7 * 24 * 3_600_000;
/** How often a worker tries to prune (under a lock: one worker of the fleet at a time). */
const PRUNE_INTERVAL_MS = 60_000;
/** Owner of the schedules `createWorkflows` upserts. */
const SCHEDULE_OWNER = 'alkstore:workflows';

type AnyDefinition = WorkflowDefinition<never, unknown, unknown>;

const DEFAULT_LOGGER: StoreLogger = {
  log: () => undefined,
  warn: (m) => console.warn(m),
  error: (m, e) => console.error(m, e),
};

/** The logger the store was opened with (the engines' stores carry it), or null for a store without one. */
function loggerOf(store: Store): StoreLogger | null {
  const l = (store as { logger?: Partial<StoreLogger> }).logger;
  return l && typeof l.warn === 'function' && typeof l.error === 'function' && typeof l.log === 'function'
    ? (l as StoreLogger)
    : null;
}

function validateRunId(id: unknown): string {
  const v = validateKey('workflow id', id);
  if (Buffer.byteLength(v, 'utf8') > MAX_RUN_ID_BYTES)
    throw new InvalidName('workflow id', v, `must be at most ${MAX_RUN_ID_BYTES} UTF-8 bytes`);
  return v;
}

/**
 * Durable workflows over one store: starts, signals, cancels and reads runs, and (unless `worker: false`)
 * advances them. Make one with {@link createWorkflows}; `close()` stops its worker.
 */
export class Workflows<X = TxOps> {
  private readonly names: Names;
  private readonly byName = new Map<string, AnyDefinition[]>();
  private readonly deps: DriverDeps;
  /**
   * The queue that carries this namespace's runs (`__alkstore_workflows:<ns>`): its `stats()` tell how
   * many passes wait or run. Its jobs are the workflows' own; do not enqueue into it.
   */
  readonly queue: Queue;
  private readonly worker: QueueWorker | null;
  private readonly instrument: Instrument;
  private readonly retentionMs: number | null;
  private readonly scheduled: Promise<void>;
  private pruneTimer: NodeJS.Timeout | null = null;
  private pruning: Promise<unknown> = Promise.resolve();
  private readonly active = new Set<RunDriver>();
  private cancelWakes: WakeReceiver | null = null;
  private closed = false;
  private readonly logger: StoreLogger;
  private readonly sql: WorkflowSql;
  /** Transactions shared by the journal writes of many runs (steps, ends, starts): one commit for many. */
  private readonly batch: TxBatcher;
  private startup: Promise<unknown> = Promise.resolve();
  /**
   * Pass jobs whose ack their run's end statement wrote (true: it landed; false: fenced, the claim had
   * lapsed), taken by the worker's ack instead of a write of its own.
   */
  private readonly ackedByEnd = new WeakMap<Job, boolean>();

  constructor(
    private readonly store: Store,
    opts: WorkflowsOptions<X>,
  ) {
    const o = asOption(() => optionalObject<WorkflowsOptions<X>>('workflows options', opts)) ?? {};
    for (const k of Object.keys(o))
      if (!OPTION_KEYS.includes(k))
        throw new InvalidOption(k.slice(0, 64), `is not a createWorkflows option (${OPTION_KEYS.join(', ')})`);
    const ns = o.namespace === undefined ? 'alkstore.workflows' : validateName('stream', o.namespace);
    if (Buffer.byteLength(ns, 'utf8') > MAX_NAMESPACE_BYTES)
      throw new InvalidOption('namespace', `must be at most ${MAX_NAMESPACE_BYTES} UTF-8 bytes`);
    this.names = namesOf(ns);
    const sql = workflowSqlOf(store as object);
    if (sql === null)
      throw new InvalidArgument(
        'createWorkflows(store)',
        'needs a store of this package (openPostgresStore, openSqliteStore): the runs live in its tables',
      );
    this.sql = sql;
    // SQLite has one write path: one shared transaction at a time takes every write waiting, and each
    // lane's statement of the moment goes to the writer beside the others'. PostgreSQL commits
    // concurrently: a few at once keep its round trips overlapping.
    this.batch = new TxBatcher(
      store,
      sql.dialect === 'sqlite' ? { all: 4, tx: 1, lane: 1 } : { all: 4, tx: 4, lane: 4 },
      sql,
      this.names.journalInbox,
      this.names.runsInbox,
    );
    if (!Array.isArray(o.workflows))
      throw new InvalidOption('workflows', 'must be an array of workflow definitions (defineWorkflow)');
    for (const [i, d] of (o.workflows as readonly AnyDefinition[]).entries()) {
      if (
        d === null ||
        typeof d !== 'object' ||
        typeof d.run !== 'function' ||
        !Number.isSafeInteger(d.version) ||
        d.version < 1
      )
        throw new InvalidOption(`workflows[${i}]`, 'must be a workflow definition (defineWorkflow)');
      const name = validateWorkflowName(d.name);
      const list = this.byName.get(name) ?? [];
      if (list.some((x) => x.version === d.version))
        throw new InvalidOption(
          `workflows[${i}]`,
          `defines workflow ${JSON.stringify(name)} version ${d.version} twice`,
        );
      list.push(d);
      list.sort((a, b) => b.version - a.version);
      this.byName.set(name, list);
    }
    const concurrency =
      o.concurrency === undefined ? 10 : asOption(() => requireCount('concurrency', o.concurrency, 10_000));
    const leaseMs = o.leaseMs === undefined ? 30_000 : asOption(() => requireTimerMs('leaseMs', o.leaseMs));
    const idlePollIntervalMs =
      o.idlePollIntervalMs === undefined
        ? 1_000
        : asOption(() => requireTimerMs('idlePollIntervalMs', o.idlePollIntervalMs));
    const drainTimeoutMs =
      o.drainTimeoutMs === undefined ? 10_000 : asOption(() => requireTimerMs('drainTimeoutMs', o.drainTimeoutMs, 0));
    const maxAttempts =
      o.maxAttempts === undefined ? 3 : asOption(() => requireMaxAttempts('maxAttempts', o.maxAttempts));
    const backoffBaseMs =
      o.backoffBaseMs === undefined ? 5_000 : asOption(() => requireTimerMs('backoffBaseMs', o.backoffBaseMs, 0));
    const runWorker = o.worker === undefined ? true : asOption(() => requireBoolean('worker', o.worker));
    const open =
      o.transaction === undefined
        ? undefined
        : asOption(() => requireFunction<TxOpen<unknown>>('transaction', o.transaction));
    const transaction: TransactionRunner<unknown> = open
      ? (fn) => store.joinTransaction(open, fn)
      : (fn) => store.withTx((tx) => fn(tx, tx));
    const logger = o.logger ?? loggerOf(store) ?? DEFAULT_LOGGER;
    this.logger = logger;
    this.retentionMs =
      o.retentionMs === undefined
        ? DEFAULT_RETENTION_MS
        : o.retentionMs === null
          ? null
          : asOption(() => requireInt('retentionMs', o.retentionMs, 1, Number.MAX_SAFE_INTEGER));
    if (o.metrics !== undefined && (o.metrics === null || typeof o.metrics !== 'object'))
      throw new InvalidOption('metrics', 'must be a WorkflowMetrics (createPrometheusWorkflowMetrics())');
    const tracing = o.tracing === undefined ? true : asOption(() => requireBoolean('tracing', o.tracing));
    this.instrument = new Instrument(ns, o.metrics ?? null, tracing);
    // Checked here, applied once at ready (queue.setLimits): the keys come from each run's start entry.
    const limits: QueueLimits | null = o.limits === undefined ? null : (resolveLimits(o.limits), o.limits);
    // A run's jobs survive many crashes: each pass counts one attempt, and a crashed pass resumes where the journal ends.
    const jobOpts: JobOpts = { leaseMs, maxAttempts: 1000, backoffBaseMs: 1000 };
    this.deps = {
      store,
      names: this.names,
      batch: this.batch,
      transaction,
      jobOpts,
      maxAttempts,
      backoffBaseMs,
      instrument: this.instrument,
      deferSteps: this.batch.endsCarryEntry,
      logger,
      startRun: (tx, workflow, input, id, parent) => {
        const def = this.latest(workflow as string);
        return this.startIn(tx, def, input, id, parent, { ...runLimitKeys(def, input) });
      },
      checkChild: (workflow, input, id) => {
        const name = typeof workflow === 'string' ? workflow : (workflow as { name?: unknown } | null)?.name;
        const def = this.latest(validateWorkflowName(name));
        if (id !== undefined) validateRunId(id);
        encodePayload({ input }, 'child input');
        runLimitKeys(def, input);
        return { workflow: def.name };
      },
      childId: (parent, position) => {
        const id = `${parent}:${position}`;
        return Buffer.byteLength(id, 'utf8') <= MAX_RUN_ID_BYTES
          ? id
          : `child-${createHash('sha256').update(id).digest('hex').slice(0, 40)}`;
      },
    };
    this.queue = store.queue(this.names.queue, jobOpts);
    this.worker = runWorker
      ? new QueueWorker(
          {
            queue: this.queue,
            name: `workflows ${JSON.stringify(ns)}`,
            handler: (job, signal) => this.handle(job, signal),
            concurrency,
            // The next runs' jobs are claimed while the current passes run, so a pass starts as soon as a
            // slot frees instead of after a claim's round trip.
            prefetch: Math.min(concurrency, MAX_PREFETCH),
            leaseMs,
            idlePollIntervalMs,
            drainTimeoutMs,
            workerId: o.workerId === undefined ? `workflows-${randomUUID()}` : validateKey('workerId', o.workerId),
            logger,
          },
          { ackBatch: (jobs) => this.ackPasses(jobs) },
        )
      : null;
    this.scheduled = (limits ? this.queue.setLimits(limits) : Promise.resolve()).then(() => this.upsertSchedules());
    this.scheduled.catch((err: unknown) =>
      logger.error(`workflows ${JSON.stringify(ns)}: upserting the workflows' schedules failed`, err),
    );
    if (this.worker) {
      this.startup = this.adoptUnderLock()
        .then(() => this.checkVersions())
        .catch((err: unknown) =>
          logger.warn(
            `workflows ${JSON.stringify(ns)}: reading the runs at start failed: ${err instanceof Error ? err.message : String(err)}`,
          ),
        );
      this.watchCancellations();
      this.worker.start();
      if (this.retentionMs !== null) {
        this.pruneTimer = setInterval(() => {
          this.pruning = this.pruneUnderLock().catch((err: unknown) =>
            logger.warn(
              `workflows ${JSON.stringify(ns)}: pruning failed: ${err instanceof Error ? err.message : String(err)}`,
            ),
          );
        }, PRUNE_INTERVAL_MS);
        this.pruneTimer.unref();
      }
    }
  }

  /**
   * Resolves once the schedules of the workflows given (their `schedule` option) are stored; rejects
   * with the store's error for one it refused (an `InvalidSpec`, say), which is also logged.
   */
  ready(): Promise<void> {
    // (and once the `limits` option is applied to the queue)
    return this.scheduled;
  }

  private async upsertSchedules(): Promise<void> {
    for (const [name, list] of this.byName) {
      const s = list[0]!.schedule;
      if (!s) continue;
      await this.store.schedule(
        this.scheduleName(name),
        s.cron,
        this.names.queue,
        { k: 'cron', wf: name },
        { owner: SCHEDULE_OWNER, ...(s.timeZone ? { timeZone: s.timeZone } : {}) },
      );
    }
  }

  /** The schedule that starts runs of `workflow`: `<ns>:schedule:<workflow>`. */
  scheduleName(workflow: string): string {
    return `${this.names.ns}:schedule:${validateWorkflowName(workflow)}`;
  }

  /** The definition new runs of `name` start on: its highest version. */
  private latest(name: string): AnyDefinition {
    const d = this.byName.get(name)?.[0];
    if (!d) throw new UnknownWorkflow(name, null, [...this.byName.keys()]);
    return d;
  }

  private definition(name: string, version: number): AnyDefinition {
    const d = this.byName.get(name)?.find((x) => x.version === version);
    if (!d)
      throw new UnknownWorkflow(
        name,
        version,
        [...this.byName.entries()].flatMap(([n, l]) => l.map((x) => `${n}@${x.version}`)),
      );
    return d;
  }

  /** The options of a job that drives run `id`: its ordering key, priority and limit keys (see stampOpts). */
  private driveOpts(id: string, stamp: RunStamp | null, resumed: boolean): JobOpts {
    return { ...this.deps.jobOpts, orderingKey: id, ...stampOpts(stamp, resumed) };
  }

  /**
   * Enqueues a pass of run `id`, stamped with its priority and limit keys (`stamp`: its start entry); one
   * that resumes a run (every one but the first) a priority above it (see stampOpts).
   */
  private driveJob(tx: TxOps | null, id: string, stamp: RunStamp | null, resumed = true): Promise<number> {
    const opts = this.driveOpts(id, stamp, resumed);
    const payload = { k: 'drive', id };
    return tx ? tx.enqueue(this.names.queue, payload, opts) : this.queue.enqueue(payload, opts);
  }

  /**
   * The stamp of run `id`: its start entry, the first of its journal (read before the transaction
   * that enqueues the pass; a start is never rewritten). Null when the run is not visible (a signal
   * inside the transaction that starts the run): that one pass goes unstamped.
   */
  private async stampOf(id: string): Promise<RunStamp | null> {
    const [first] = await this.store.stream(this.names.runStream(id)).readSince(0, 1);
    const e = first === undefined ? null : decodeEntry(first.payload);
    return e?.type === 'start' ? e : null;
  }

  /** The start entry of run `id` of `def` (a child of `parent` when given). */
  private startEntry(def: AnyDefinition, input: unknown, parent: string | null, stamp: RunStamp): StartEntry {
    return {
      type: 'start',
      workflow: def.name,
      version: def.version,
      input,
      ...(parent === null ? {} : { parentId: parent }),
      ...stamp,
    };
  }

  /**
   * Starts run `id` through `sql` (a transaction's, or the store's own: one commit) where the engine
   * writes a start in one statement: the guard, the start entry, the run's row and the job that drives
   * it. False when the id was taken.
   */
  private startOn(
    sql: WorkflowSql,
    def: AnyDefinition,
    input: unknown,
    id: string,
    start: StartEntry,
  ): Promise<StartOutcome> {
    const r = this.runStart(def, input, id, start);
    return sql.startRun!(this.names.runsInbox, r.stream, r.entry, r.run, r.job);
  }

  /** What a start of run `id` of `def` writes where the engine writes it in one statement. */
  private runStart(
    def: AnyDefinition,
    input: unknown,
    id: string,
    start: StartEntry,
    slot: HandoffSlot | null = null,
  ): RunStart {
    return {
      stream: this.names.runStream(id),
      entry: encodeEntry(start),
      run: {
        ns: this.names.ns,
        id,
        workflow: def.name,
        version: def.version,
        parentId: start.parentId ?? null,
        input: input === undefined ? null : JSON.stringify(input),
      },
      job: {
        queue: this.names.queue,
        payload: { k: 'drive', id },
        opts: this.driveOpts(id, start, false),
        handoff: slot && { workerId: slot.workerId, leaseMs: slot.leaseMs },
      },
    };
  }

  /**
   * A slot of this instance's worker, when idle, for the first pass of a run started now without a
   * caller's transaction: the start then inserts the pass's job claimed by it (a local hand-off, as a
   * plain enqueue's), so the pass begins once the start commits, with no claim. Not for runs with limit
   * keys, which a claim must count.
   */
  private firstPassSlot(stamp: RunStamp): HandoffSlot | null {
    if (!this.worker || stamp.concurrencyKey !== undefined || stamp.rateLimitKey !== undefined) return null;
    return handoffPoint(this.queue)?.reserve() ?? null;
  }

  /** Gives `slot` the first pass's job the start handed off to it, or frees it. */
  private settleSlot(slot: HandoffSlot, started: StartOutcome): void {
    const driver = started.claimed ? queueDriverOf(this.queue) : null;
    if (driver && started.claimed) slot.deliver(new ClaimedJob(driver, started.claimed));
    else slot.cancel();
  }

  /** Starts run `id` of `def` in `tx` (a child of `parent` when given); false when the id was taken. */
  private async startIn(
    tx: TxOps,
    def: AnyDefinition,
    input: unknown,
    id: string,
    parent: string | null,
    stamp: RunStamp,
  ): Promise<boolean> {
    const start = this.startEntry(def, input, parent, stamp);
    const sql = sqlOfTx(tx);
    if (sql.startRun) return (await this.startOn(sql, def, input, id, start)).created;
    if ((await tx.inboxClaim(this.names.runsInbox, id)) !== 'claimed') return false;
    await tx.publish(this.names.runStream(id), encodeEntry(start));
    await insertRun(sql, this.names.ns, { id, workflow: def.name, version: def.version, input, parentId: parent });
    await this.driveJob(tx, id, start, false);
    return true;
  }

  /**
   * Starts a run of `workflow` (a definition or its name; new runs take the highest version) with
   * `input` (JSON). Idempotent by `id`: when a run with that id exists, nothing is started and
   * `created` is false. With `tx`, the run commits with the caller's transaction or not at all.
   * @throws UnknownWorkflow for a workflow this instance was not given; `Codec` for input that is not JSON;
   *   `InvalidName` for a bad id. All before any I/O.
   */
  async start<I>(
    workflow: WorkflowDefinition<I, unknown, X> | string,
    input: I,
    opts?: StartOptions,
  ): Promise<StartedRun> {
    const name = typeof workflow === 'string' ? workflow : (workflow as { name?: unknown } | null)?.name;
    const def = this.latest(validateWorkflowName(name));
    const o = asOption(() => optionalObject<StartOptions>('start options', opts)) ?? {};
    const id = o.id === undefined ? newRunId() : validateRunId(o.id);
    const priority = o.priority === undefined ? 0 : requireInt('priority', o.priority, MIN_PRIORITY, MAX_PRIORITY);
    const inputBytes = encodePayload({ input }, 'input').length;
    const stamp: RunStamp = { ...(priority === 0 ? {} : { priority }), ...runLimitKeys(def, input) };
    if (o.tx) {
      const created = await this.startIn(o.tx, def, input, id, null, stamp);
      if (created) this.instrument.count('started', def.name);
      return { id, created };
    }
    // Without a caller's transaction: one statement where the engine has it, shared with the other
    // starts of the moment where it writes many at once (PostgreSQL).
    const entry = this.startEntry(def, input, null, stamp);
    if (this.batch.manyStarts) {
      const slot = this.firstPassSlot(stamp);
      let started: StartOutcome;
      try {
        started = await this.batch.start(this.runStart(def, input, id, entry, slot));
      } catch (err) {
        slot?.cancel();
        throw err;
      }
      // Remembered before the pass can begin: a handed-off job is given to the worker after this.
      if (started.created && started.job !== null) this.rememberStart(id, started.job, entry, inputBytes);
      if (slot) this.settleSlot(slot, started);
      if (started.created) this.instrument.count('started', def.name);
      return { id, created: started.created };
    }
    const started = await this.batch.run(
      async (tx): Promise<StartOutcome> => ({
        created: await this.startIn(tx, def, input, id, null, stamp),
        job: null,
      }),
      this.sql.startRun ? () => this.startOn(this.sql, def, input, id, entry) : undefined,
    );
    if (started.created && started.job !== null) this.rememberStart(id, started.job, entry, inputBytes);
    if (started.created) this.instrument.count('started', def.name);
    return { id, created: started.created };
  }

  /**
   * Runs this instance started, committed, whose first pass has not begun here: the start entry and the
   * job that drives it. That job's first attempt is the run's first pass (passes of a run take turns by
   * its ordering key), so no step can be journaled yet and the pass need not read the journal to begin.
   * Bounded: the oldest are forgotten (their first pass reads the journal, as a pass always did).
   */
  private readonly fresh = new Map<string, { job: number; entry: unknown; bytes: number }>();
  /** The JSON length of the inputs of the starts in {@link fresh}. */
  private freshBytes = 0;

  private rememberStart(id: string, job: number, entry: StartEntry, bytes: number): void {
    if (!this.worker || bytes > FRESH_START_MAX_BYTES) return;
    this.forget(id);
    this.fresh.set(id, { job, entry: encodeEntry(entry), bytes });
    this.freshBytes += bytes;
    while (this.fresh.size > FRESH_STARTS || this.freshBytes > FRESH_STARTS_BYTES)
      this.forget(this.fresh.keys().next().value!);
  }

  private forget(id: string): { job: number; entry: unknown } | undefined {
    const f = this.fresh.get(id);
    if (f === undefined) return undefined;
    this.fresh.delete(id);
    this.freshBytes -= f.bytes;
    return f;
  }

  /**
   * The journal of a run's first pass from its remembered start entry, when `job` is the job its start
   * enqueued, on its first attempt; else null (read it). Anything journaled since (a signal, a
   * cancellation) is read when the pass's first write finds the journal moved, or when it waits.
   */
  private freshJournal(id: string, job: Job): Journal | null {
    const f = this.forget(id);
    if (f === undefined) return null;
    if (f.job !== job.id || job.attempts !== 1) return null;
    const j = new Journal();
    return j.follows(1, f.entry) && j.start ? j : null;
  }

  /**
   * Sends signal `name` with `data` (JSON, default null) to run `id`: a `ctx.waitForSignal(name)` of the
   * run, now or later, receives it. With `tx`, it exists (and wakes the run) once the transaction commits.
   */
  async signal(id: string, name: string, data: unknown = null, opts?: SignalOptions): Promise<void> {
    const runId = validateRunId(id);
    const n = validateKey('signal name', name);
    const o = asOption(() => optionalObject<SignalOptions>('signal options', opts)) ?? {};
    encodePayload({ data }, 'signal data');
    const stamp = await this.stampOf(runId);
    const body = async (tx: TxOps): Promise<void> => {
      await tx.publish(this.names.runStream(runId), encodeEntry({ type: 'signal', name: n, data: data ?? null }));
      await this.driveJob(tx, runId, stamp);
    };
    await (o.tx ? body(o.tx) : this.store.withTx(body));
  }

  /**
   * Cancels a running run: no new step starts, a running step's `AbortSignal` aborts (on the worker that
   * runs it, within one wake), `waitForResult` rejects with `WorkflowCancelled`. Steps already done stay
   * done (no compensation runs). Resolves false when the run does not exist or has already ended.
   */
  async cancel(id: string): Promise<boolean> {
    const runId = validateRunId(id);
    this.forget(runId);
    const j = await loadJournal(this.store, this.names, runId);
    if (!j.start || j.state !== 'running') return false;
    const wf = j.start.workflow;
    const parentId = j.start.parentId;
    const parentStamp = parentId === undefined ? null : await this.stampOf(parentId);
    const ok = await this.store.withTx(async (tx) => {
      if ((await tx.inboxClaim(this.names.journalInbox, this.names.guard(runId, j.epoch('end')))) !== 'claimed')
        return false;
      await tx.publish(this.names.runStream(runId), encodeEntry({ type: 'cancel' }));
      if (!(await moveRun(sqlOfTx(tx), this.names.ns, runId, 'running', 'cancelled')))
        await this.adoptRow(tx, j, runId, 'cancelled', {});
      await tx.notify(this.names.cancelChannel);
      await tx.notify(this.names.runChannel(runId));
      // A parent waiting for this run learns of its end.
      if (parentId !== undefined) await this.driveJob(tx, parentId, parentStamp);
      return true;
    });
    if (!ok) return false;
    this.instrument.count('cancelled', wf);
    // Children go with their parent (a child started after this read cancels itself on its first pass).
    for (const child of j.children.values()) await this.cancel(child);
    return true;
  }

  /**
   * Re-drives a failed run from its first failed position: the steps before it stay done (their
   * results replay), the failed step and everything after it run again, on the same version's code.
   * Resolves false when the run does not exist or has not failed. Concurrent retries of one run
   * re-drive it once.
   */
  async retry(id: string): Promise<boolean> {
    const runId = validateRunId(id);
    const j = await loadJournal(this.store, this.names, runId);
    if (!j.start || j.state !== 'failed') return false;
    const failedAt = [...j.done.values()]
      .filter(
        (d) =>
          d.error !== undefined ||
          (d.kind === 'children' && (d.result as { failed?: unknown } | undefined)?.failed !== undefined),
      )
      .map((d) => d.position);
    const from = failedAt.length > 0 ? Math.min(...failedAt) : Math.max(-1, ...j.positions()) + 1;
    const start = j.start;
    return this.store.withTx(async (tx) => {
      if (
        (await tx.inboxClaim(this.names.journalInbox, this.names.guard(runId, `retry@${j.retried + 1}`))) !== 'claimed'
      )
        return false;
      await tx.publish(this.names.runStream(runId), encodeEntry({ type: 'retried', fromPosition: from }));
      if (!(await moveRun(sqlOfTx(tx), this.names.ns, runId, 'failed', 'running')))
        await this.adoptRow(tx, j, runId, 'running', {});
      await this.driveJob(tx, runId, start);
      return true;
    });
  }

  /**
   * Prunes the runs that finished more than `retentionMs` ago (the workers call it every minute, one of
   * the fleet at a time): their journals, their once-only guards and their entries in the runs index.
   * Afterwards `getStatus` is null for them, `list` skips them and their ids are free again (a `start`
   * with one starts a new run). Resolves to the number pruned.
   */
  async prune(): Promise<number> {
    if (this.retentionMs === null) return 0;
    return pruneRuns(this.store, this.names, (await this.store.now()) - this.retentionMs);
  }

  /** Moves what is left of a 0.2 runs index into the runs table (one worker of the fleet at a time). */
  private async adoptUnderLock(): Promise<void> {
    const lock = await this.store.tryLock(`${this.names.ns}:prune`, `adopt-${randomUUID()}`, 5 * PRUNE_INTERVAL_MS);
    if (!lock) return;
    try {
      await adoptLegacyIndex(this.store, this.names);
    } finally {
      await lock.release().catch(() => undefined);
    }
  }

  /**
   * The running runs pinned to a version no definition given to this instance serves: they stay
   * parked until a process that has that version's code runs. Logged as a warning and reported to
   * the metrics' `unservedRuns` at start (with a worker); resolves to them.
   */
  async unservedRuns(): Promise<{ workflow: string; version: number; runs: number }[]> {
    const running = await runningVersions(this.sql, this.names.ns);
    return running.filter((r) => !this.byName.get(r.workflow)?.some((d) => d.version === r.version));
  }

  private async checkVersions(): Promise<void> {
    const unserved = await this.unservedRuns();
    for (const u of unserved) {
      this.instrument.unserved(u.workflow, u.version, u.runs);
      const known = this.byName.get(u.workflow)?.map((d) => d.version) ?? [];
      this.logger.warn(
        `workflows ${JSON.stringify(this.names.ns)}: ${u.runs} running run(s) of workflow ${JSON.stringify(u.workflow)} ` +
          `are on version ${u.version}, which no definition given to createWorkflows serves ` +
          `(${known.length > 0 ? `it has ${known.join(', ')}` : 'none of that workflow'}); they wait for a worker with that version's code`,
      );
    }
  }

  private async pruneUnderLock(): Promise<void> {
    const lock = await this.store.tryLock(`${this.names.ns}:prune`, `prune-${randomUUID()}`, 5 * PRUNE_INTERVAL_MS);
    if (!lock) return;
    try {
      await adoptLegacyIndex(this.store, this.names);
      await this.prune();
    } finally {
      await lock.release().catch(() => undefined);
    }
  }

  /** The run as its journal tells it (state, input, result or error, the steps), or null when no run has this id. */
  async getStatus(id: string): Promise<WorkflowRun | null> {
    const runId = validateRunId(id);
    return (await loadJournal(this.store, this.names, runId)).toRun(runId);
  }

  /**
   * Waits for run `id` to end, from any process: resolves with its result, rejects with `WorkflowFailed`,
   * `WorkflowCancelled` or (after `timeoutMs`, default 60 s) `WorkflowTimeout`. Woken by the run's end
   * committing; re-reads at least every `pollMs` in case a wake is lost.
   */
  async waitForResult<T = unknown>(id: string, opts?: WaitForResultOptions): Promise<T> {
    const runId = validateRunId(id);
    const o = asOption(() => optionalObject<WaitForResultOptions>('waitForResult options', opts)) ?? {};
    const timeoutMs = o.timeoutMs === undefined ? 60_000 : requireTimerMs('timeoutMs', o.timeoutMs);
    const pollMs = o.pollMs === undefined ? 1_000 : requireTimerMs('pollMs', o.pollMs);
    const wakes = this.store.listen(this.names.runChannel(runId));
    const deadline = performance.now() + timeoutMs;
    try {
      for (;;) {
        const j = await loadJournal(this.store, this.names, runId);
        const end = j.end;
        if (end?.state === 'completed') return end.result as T;
        if (end?.state === 'failed') throw new WorkflowFailed(runId, end.error);
        if (j.state === 'cancelled') throw new WorkflowCancelled(runId);
        const left = deadline - performance.now();
        if (left <= 0) throw new WorkflowTimeout(runId, timeoutMs, j.start !== null);
        await wakes.recv(AbortSignal.timeout(Math.max(1, Math.min(pollMs, Math.ceil(left)))));
      }
    } finally {
      wakes.close();
    }
  }

  /**
   * Runs by state and workflow, oldest start first (`order: 'desc'`: newest first), at most `limit`.
   * One index range of the runs table: its cost is the page's, whatever the number of runs. For the
   * pages after it, see {@link Workflows.listPage}.
   */
  async list(opts?: ListRunsOptions): Promise<RunSummary[]> {
    return [...(await this.listPage(opts)).runs];
  }

  /**
   * A page of {@link Workflows.list} and the cursor of the next one (`next`, null on the last page):
   * pass it back as `after` (keyset paging through the runs table's indexes).
   * @throws InvalidArgument for a malformed `after`, an unknown `state` or `order`.
   */
  async listPage(opts?: ListRunsOptions): Promise<RunPageResult> {
    const o = asOption(() => optionalObject<ListRunsOptions>('list options', opts)) ?? {};
    const limit = o.limit === undefined ? 1000 : requireCount('limit', o.limit, 10_000);
    if (o.state !== undefined && !RUN_STATES.includes(o.state))
      throw new InvalidArgument('list state', `must be one of ${RUN_STATES.join(', ')}`);
    if (o.order !== undefined && o.order !== 'asc' && o.order !== 'desc')
      throw new InvalidArgument('list order', "must be 'asc' (oldest start first) or 'desc'");
    const after = o.after === undefined ? null : parseCursor(String(o.after));
    if (o.after !== undefined && after === null)
      throw new InvalidArgument('list after', 'must be the `next` cursor of a page listPage returned');
    const page = await listRuns(this.sql, this.names.ns, {
      ...(o.state === undefined ? {} : { state: o.state }),
      ...(o.workflow === undefined ? {} : { workflow: o.workflow }),
      limit,
      after,
      order: o.order ?? 'asc',
    });
    return { runs: page.runs.map(summaryOf), next: page.next };
  }

  /**
   * What this instance holds in memory for runs now: `passes`, the passes its worker runs; `jobs`, the
   * run jobs its worker has claimed (running or about to); `writes`, journal writes waiting for their
   * shared transaction. A parked run (sleeping, waiting for a signal or for its children) is in none of
   * them: only its journal and its row in the database hold it, so a million parked runs cost a worker
   * nothing. `passes` is bounded by `concurrency`, `jobs` by `concurrency` plus the jobs claimed ahead
   * (as many again, at most 16), the writes by the passes and starts in flight.
   */
  get held(): { passes: number; jobs: number; writes: number } {
    return { passes: this.active.size, jobs: this.worker?.inFlight ?? 0, writes: this.batch.waiting };
  }

  /** How many runs are in each state (kept counts: constant time, whatever the number of runs). */
  counts(): Promise<Record<RunState, number>> {
    return countRuns(this.sql, this.names.ns);
  }

  /** Stops the worker: no new pass starts, running steps get `drainTimeoutMs` to finish. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    this.fresh.clear();
    this.freshBytes = 0;
    this.cancelWakes?.close();
    await this.worker?.stop();
    await this.startup;
    await this.pruning;
    await this.scheduled.catch(() => undefined);
  }

  private watchCancellations(): void {
    const wakes = this.store.listen(this.names.cancelChannel);
    this.cancelWakes = wakes;
    void (async () => {
      while ((await wakes.recv()) !== null) {
        // A run cancelled before its first pass: that pass reads the journal (which run it was is unknown).
        this.fresh.clear();
        this.freshBytes = 0;
        for (const d of this.active) void d.checkCancelled().catch(() => undefined);
      }
    })();
  }

  private async handle(job: Job, signal: AbortSignal): Promise<void> {
    const { k, id, wf } = job.payload as { k: string; id: string; wf?: string };
    if (k === 'timer') {
      await this.driveJob(null, id, await this.stampOf(id));
      return;
    }
    if (k === 'cron') {
      // One run per fire, whoever handles the job (and however often): the id is derived from the boundary.
      const boundary = scheduleBoundaryOf(job) ?? job.enqueuedAt;
      const def = this.byName.get(wf ?? '')?.[0];
      if (!def) throw new UnknownWorkflow(wf ?? '', null, [...this.byName.keys()]);
      await this.start(def.name, (def.schedule?.input ?? null) as never, { id: `cron:${def.name}:${boundary}` });
      return;
    }
    for (let pass = 0; pass < MAX_SUPERSEDED_PASSES; pass++) {
      const j = (pass === 0 ? this.freshJournal(id, job) : null) ?? (await loadJournal(this.store, this.names, id));
      if (!j.start || j.state !== 'running') return;
      if (pass === 0 && j.start.parentId !== undefined) {
        // A child started while its parent's cancel committed: it goes with its parent.
        const parent = await loadJournal(this.store, this.names, j.start.parentId);
        if (parent.state === 'cancelled') {
          await this.cancel(id);
          return;
        }
      }
      const driver = new RunDriver(this.deps, id, j, this.definition(j.start.workflow, j.start.version), signal);
      this.active.add(driver);
      let outcome;
      try {
        outcome = await driver.execute();
      } finally {
        this.active.delete(driver);
        driver.dispose();
      }
      // The run's last step, when its entry waits for the end's commit (see RunDriver.takeDeferred).
      let before: DeferredEntry | null = null;
      if (outcome.kind === 'returned' || outcome.kind === 'threw' || outcome.kind === 'fatal') {
        const d = await driver.takeDeferred();
        if (d === 'superseded') continue;
        before = d;
      } else await driver.settleDeferred();
      switch (outcome.kind) {
        case 'superseded':
          continue;
        case 'broken':
          throw outcome.error;
        case 'stopped':
          throw new WorkflowInterrupted(id, 'the worker stopped during a step');
        case 'suspended':
        case 'cancelled':
          return;
        case 'returned':
          if (!(await this.finish(j, id, completed(outcome.value), job, before))) continue;
          return;
        case 'threw':
        case 'fatal': {
          const end: EndEntry = { type: 'end', state: 'failed', error: journalError(outcome.error) };
          if (!(await this.finish(j, id, end, job, before, outcome.error))) continue;
          return;
        }
      }
    }
    throw new WorkflowInterrupted(id, `another writer journaled first ${MAX_SUPERSEDED_PASSES} times`);
  }

  /** The row of a run the runs table lacks (one started on 0.2's index, not adopted yet), in `state`. */
  private async adoptRow(
    tx: TxOps,
    j: Journal,
    id: string,
    state: RunState,
    outcome: { result?: unknown; error?: JournaledError },
  ): Promise<void> {
    if (!j.start) return;
    await insertRun(sqlOfTx(tx), this.names.ns, {
      id,
      workflow: j.start.workflow,
      version: j.start.version,
      input: j.start.input,
      parentId: j.start.parentId ?? null,
      state,
      createdAt: j.startedAt,
      ...outcome,
    });
  }

  /**
   * The worker's coalesced acks: a job whose run's end acked it (see {@link finish}) costs no write; the
   * others go to the queue's `ackBatch`. Resolves to how many landed.
   */
  private ackPasses(jobs: readonly Job[]): Promise<number> {
    let landed = 0;
    const rest: Job[] = [];
    for (const job of jobs) {
      const acked = this.ackedByEnd.get(job);
      if (acked === undefined) rest.push(job);
      else if (acked) landed += 1;
    }
    return rest.length === 0 ? Promise.resolve(landed) : this.queue.ackBatch(rest).then((n) => n + landed);
  }

  /** The ack of `job`'s claim for its run's end statement, or null when it must be acked on its own. */
  private passAck(job: Job): PassAck | null {
    // A job that records an outcome (a waiter, a flow) is acked through its outcome path, not in bulk.
    if (!(job instanceof ClaimedJob) || needsOutcome(job, undefined)) return null;
    return {
      queue: job.queue,
      id: job.id,
      claimToken: job.claimToken,
      plain: job.orderingKey === null,
      times: ClaimedJob.timesOf(job),
    };
  }

  /**
   * Journals the run's end (once: a lost guard means another writer ended it); a failure is logged as an
   * error. Where the end goes in a statement shared with other ends, `job` (the pass's) is acked by it.
   * `before`: the run's last step's entry, written first (in the end's commit where the engine can).
   * False when another writer journaled `before`'s position first (nothing ended: replay).
   */
  private async finish(
    j: Journal,
    id: string,
    end: EndEntry,
    job: Job,
    before: DeferredEntry | null,
    cause?: unknown,
  ): Promise<boolean> {
    const parent = j.start?.parentId;
    const parentStamp = parent === undefined ? null : await this.stampOf(parent);
    // A shared transaction holds only the resources of its own runs, so two of them never wait for each
    // other; an end that wakes its parent takes the parent's job lock too, so it commits on its own.
    const write = <T>(fn: (tx: TxOps) => Promise<T>): Promise<T> =>
      parent === undefined ? this.batch.run(fn) : this.store.withTx(fn);
    const outcome = end.state === 'completed' ? { result: end.result } : { error: end.error };
    const endedRun = (): EndedRun => ({
      ns: this.names.ns,
      id,
      guard: this.names.guard(id, j.epoch('end')),
      stream: this.names.runStream(id),
      entry: encodeEntry(end),
      state: end.state,
      result: end.state === 'completed' ? (end.result === undefined ? null : JSON.stringify(end.result)) : null,
      error: end.state === 'failed' ? JSON.stringify(end.error) : null,
      channel: this.names.runChannel(id),
    });
    let ended: boolean | null = null;
    if (parent === undefined && this.batch.manyEnds) {
      // One statement shared with the other runs ending now, which acks the pass's job too (a pass run
      // again after the end does nothing); a run without a running row goes below.
      const carried = this.batch.endsCarryEntry ? before : null;
      const { outcome: r, acked } = await this.batch.end({ ...endedRun(), ack: this.passAck(job), before: carried });
      if (r === 'superseded') return false;
      if (r !== 'skipped' && carried !== null) before = null;
      if (acked !== null) this.ackedByEnd.set(job, acked);
      if (r === 'no-row') await this.batch.run((tx) => this.adoptRow(tx, j, id, end.state, outcome));
      if (r !== 'skipped') ended = r !== 'taken';
    }
    // Not written with the end: an append of its own first, as a step's entry goes.
    if (before !== null && ended === null) {
      const at = await this.batch.append({
        ns: this.names.ns,
        run: id,
        position: before.position,
        key: before.key,
        stream: this.names.runStream(id),
        payload: before.payload,
      });
      if (at === null) return false;
    }
    ended ??= await write(async (tx) => {
      const sql = sqlOfTx(tx);
      if (sql.endRun) {
        // The engine writes the guard, the entry, the row's move and the wake in one statement.
        const r = await sql.endRun(this.names.journalInbox, endedRun());
        if (r === 'taken') return false;
        if (r === 'no-row') await this.adoptRow(tx, j, id, end.state, outcome);
        if (parent !== undefined) await this.driveJob(tx, parent, parentStamp);
        return true;
      }
      if ((await tx.inboxClaim(this.names.journalInbox, this.names.guard(id, j.epoch('end')))) !== 'claimed')
        return false;
      await tx.publish(this.names.runStream(id), encodeEntry(end));
      if (!(await moveRun(sqlOfTx(tx), this.names.ns, id, 'running', end.state, outcome)))
        await this.adoptRow(tx, j, id, end.state, outcome);
      await tx.notify(this.names.runChannel(id));
      // A parent waiting in ctx.waitAll is driven again by its child's end, in the same transaction.
      if (parent !== undefined) await this.driveJob(tx, parent, parentStamp);
      return true;
    });
    if (!ended || !j.start) return true;
    this.instrument.count(end.state, j.start.workflow);
    if (end.state === 'failed')
      this.logger.error(
        `workflow ${JSON.stringify(j.start.workflow)} run ${JSON.stringify(id)} failed: ${end.error.name}: ${end.error.message}`,
        cause ?? end.error,
      );
    return true;
  }
}

const RUN_STATES: readonly RunState[] = ['running', 'completed', 'failed', 'cancelled'];

/** The summary of a run's row. */
function summaryOf(r: Omit<RunRow, 'input' | 'result' | 'updatedAt'>): RunSummary {
  return {
    id: r.id,
    workflow: r.workflow,
    version: r.version,
    state: r.state,
    startedAt: r.createdAt,
    finishedAt: r.finishedAt,
    parentId: r.parentId,
    waiting: r.state === 'running' ? r.waiting : null,
    wakeAt: r.state === 'running' ? r.wakeAt : null,
    error: r.error,
  };
}

/** The end entry of a run that returned `value`: its JSON form, or a failure when it has none. */
function completed(value: unknown): EndEntry {
  try {
    return {
      type: 'end',
      state: 'completed',
      result: (JSON.parse(JSON.stringify({ value })) as { value?: unknown }).value,
    };
  } catch (err) {
    return {
      type: 'end',
      state: 'failed',
      error: journalError(
        new PermanentError(
          `the result of the workflow is not JSON (${err instanceof Error ? err.message : String(err)})`,
        ),
      ),
    };
  }
}

/**
 * Creates the workflows of a store (the plain API; Nest users inject `Workflows`). Options are checked
 * at once (`InvalidOption` / `InvalidArgument` naming the option); with `worker` (the default) it starts
 * advancing runs right away, `concurrency` at a time. Call `close()` before closing the store.
 *
 * ```ts
 * const workflows = createWorkflows(store, { workflows: [greet], concurrency: 4 });
 * const { id } = await workflows.start(greet, { name: 'Ada' });
 * console.log(await workflows.waitForResult(id));
 * ```
 */
export function createWorkflows<X = TxOps>(store: Store, opts: WorkflowsOptions<X>): Workflows<X> {
  return new Workflows<X>(store, opts);
}
