import type { Jsonified } from '../contract/codec.js';
import type { StoreLogger, TxOpen, TxOps } from '../contract/types.js';
import type { Duration } from './duration.js';
import type { JournaledError } from './errors.js';
import type { WorkflowMetrics } from './instrument.js';
import type { WorkflowLimitKeys } from './define.js';
import type { QueueLimits } from '../contract/limits.js';

/**
 * A child run started by `ctx.startChild`: pass it to `ctx.waitAll`. `O` is the child's result type
 * (a phantom: only `id` and `workflow` exist at run time).
 */
export interface ChildHandle<O = unknown> {
  /** The child run's id (given, or derived from the parent's id and the call's position). */
  readonly id: string;
  readonly workflow: string;
  /** Never set; carries the child's result type. */
  readonly __result?: O;
}

/** Options of `ctx.startChild`. */
export interface StartChildOptions {
  /** The child's run id (default `<parent id>:<position>`, or a hash of it when that is over 200 bytes). */
  readonly id?: string;
}

/** Retries of one step: at-least-once, with the jobs' equal-jitter exponential backoff. */
export interface StepOptions {
  /** Attempts before the step fails for good (default: the workflow's `maxAttempts`, else `createWorkflows`', 3). */
  readonly maxAttempts?: number;
  /** Base of the backoff between attempts, ms (default: the workflow's, else `createWorkflows`', 5 000). */
  readonly backoffBaseMs?: number;
}

/** Options of `ctx.waitForSignal`. */
export interface WaitForSignalOptions {
  /** Give up after this long (then the call resolves `undefined`); default: wait forever. */
  readonly timeoutMs?: Duration;
}

/**
 * What `run(input, ctx)` gets. Every call takes the next position of the run's journal; on replay a call
 * whose position is journaled returns the journaled outcome without running anything. Call them one at
 * a time (await each) and keep every other side effect inside a step: the code between calls runs again
 * on every replay.
 *
 * `X` is what a transactional step gets next to the `TxOps`: the handle of the ORM whose `open` is the
 * `transaction` option of `createWorkflows` (by default the store's own transaction, and `X` is its `tx`).
 */
export interface WorkflowContext<X = TxOps> {
  /** The run's id (the `id` given to `start`, or a generated UUID v7, ascending in start order within a process). */
  readonly runId: string;
  readonly workflow: string;
  /** The version this run started on; it replays on that version's code. */
  readonly version: number;
  /**
   * Runs `fn` at least once and journals its result (JSON) in the same transaction that records the step
   * as done; a replay returns the journaled result without calling `fn`. A throw is retried with backoff
   * up to `maxAttempts` (a `PermanentError` at once ends the step); the last failure is journaled and
   * thrown here as {@link StepFailed}, on every replay alike. `signal` aborts when the run is cancelled or
   * this worker stops. The value comes back as its JSON form, on the first run as on replays.
   */
  step<T>(name: string, fn: (signal: AbortSignal) => Promise<T> | T, opts?: StepOptions): Promise<Jsonified<T>>;
  /**
   * A step that is a transaction of the store: `fn`'s writes through `tx` (and through `external`, the
   * joined ORM transaction when `createWorkflows` was given a `transaction` runner) commit together with
   * the step's journal entry and its once-only guard, or not at all. So its effects happen effectively
   * once. A throw rolls everything back and is retried like {@link WorkflowContext.step}.
   */
  transaction<T>(fn: (tx: TxOps, external: X) => Promise<T>): Promise<Jsonified<T>>;
  transaction<T>(name: string, fn: (tx: TxOps, external: X) => Promise<T>, opts?: StepOptions): Promise<Jsonified<T>>;
  /**
   * Sleeps durably: journals the wake-up time (database clock) with a timer job, and frees the worker.
   * The run resumes on any worker once the time has come, never earlier.
   */
  sleep(duration: Duration): Promise<void>;
  /**
   * Waits durably for `workflows.signal(runId, name, data)`: resolves with the data of the first signal of
   * that name this run has not consumed yet (signals sent before the wait count), or `undefined` once
   * `timeoutMs` passed without one. Signals are consumed in the order they were committed.
   */
  waitForSignal<T = unknown>(name: string, opts?: WaitForSignalOptions): Promise<Jsonified<T> | undefined>;
  /**
   * Fan-out: starts a child run of `workflow` (a definition or a name given to `createWorkflows`) in the
   * same transaction that journals this call, so a replay returns the same handle and never starts a
   * second child. The child's id is `opts.id` or derived from this run's id and the call's position.
   * Cancelling this run cancels its children.
   */
  startChild<CI, CO>(
    workflow: WorkflowDefinition<CI, CO, X> | string,
    input: CI,
    opts?: StartChildOptions,
  ): Promise<ChildHandle<CO>>;
  /**
   * Fan-in: resolves with the results of `handles` (their JSON forms, in order) once every child
   * completed. Parks the run without holding a worker until then: each child's end drives it again.
   * Throws `ChildWorkflowFailed` (naming the child and its error) for the first of `handles` that
   * failed or was cancelled, the same way on every replay.
   */
  waitAll<CO>(handles: readonly ChildHandle<CO>[]): Promise<Jsonified<CO>[]>;
  /**
   * Whether this run takes the code of change `changeId` (`if (await ctx.patched('x')) new() else old()`):
   * true for a run that reaches this call on code that has it (the answer is journaled at this
   * position), false for a run whose journal already holds another call here (it started before the
   * change and replays through the old branch; nothing is journaled and no position is taken). Keep
   * the call once deployed; remove the old branch once no run started before the change is running.
   */
  patched(changeId: string): Promise<boolean>;
  /** The database clock (epoch ms), journaled: a replay sees the same instant. */
  now(): Promise<number>;
  /** `Math.random()`, journaled: a replay sees the same number. */
  random(): Promise<number>;
}

/** A workflow: a name, a version and the code of that version. Make one with `defineWorkflow`. */
export interface WorkflowDefinition<I = unknown, O = unknown, X = TxOps> {
  readonly name: string;
  /** Positive integer. New runs start on the highest version given to `createWorkflows`; a run stays on its own. */
  readonly version: number;
  /** Starts runs on a schedule (see `defineWorkflow`); the highest version's schedule counts. */
  readonly schedule?: { readonly cron: string; readonly timeZone?: string; readonly input?: unknown };
  /** The keys the queue's limits count runs by (see `defineWorkflow`'s `limitKeys`). */
  readonly limitKeys?: WorkflowLimitKeys<I>;
  /** Default attempts of its steps (see `defineWorkflow`). */
  readonly maxAttempts?: number;
  /** Default backoff base of its steps, ms (see `defineWorkflow`). */
  readonly backoffBaseMs?: number;
  /** The workflow's code. Its input is the JSON form of what `start` was given. */
  run(input: Jsonified<I>, ctx: WorkflowContext<X>): Promise<O>;
}

/** Where a run is. */
export type RunState = 'running' | 'completed' | 'failed' | 'cancelled';

/** One journaled position of a run, for timelines (dashboard, tests). */
export interface RunStep {
  readonly position: number;
  /** `step`, `transaction`, `sleep`, `signal`, `now`, `random`, `child` (a `startChild`) or `children` (a `waitAll`). */
  readonly kind: string;
  /** The step's name (the signal's name, the child's workflow, the children's ids; `''` for sleep, now and random). */
  readonly name: string;
  /** `done`, `failed`, `sleeping` (until `until`), `waiting` (for a signal or children), `retrying` (next attempt at `until`). */
  readonly state: 'done' | 'failed' | 'sleeping' | 'waiting' | 'retrying';
  /** Failed attempts so far. */
  readonly failures: number;
  readonly until: number | null;
  /** When the position's last entry committed (epoch ms, database clock). */
  readonly at: number;
  /** The last failed attempt's error (a failed or retrying step), else absent. */
  readonly error?: JournaledError;
}

/** A run as its journal tells it (`workflows.getStatus`). */
export interface WorkflowRun {
  readonly id: string;
  readonly workflow: string;
  readonly version: number;
  readonly state: RunState;
  readonly input: unknown;
  /** The run that started this one with `ctx.startChild`, else null. */
  readonly parentId: string | null;
  /** The child runs this run started, in call order. */
  readonly children: readonly string[];
  /** The value `run` resolved with (its JSON form), when completed. */
  readonly result: unknown;
  /** What ended a failed run, else null. */
  readonly error: JournaledError | null;
  /** Epoch ms, database clock. */
  readonly startedAt: number;
  readonly finishedAt: number | null;
  /** The journal, by position. */
  readonly steps: readonly RunStep[];
}

/** One row of `workflows.list()`. */
export interface RunSummary {
  readonly id: string;
  readonly workflow: string;
  readonly version: number;
  readonly state: RunState;
  readonly startedAt: number;
  readonly finishedAt: number | null;
  /** The run that started this one with `ctx.startChild`, else null. */
  readonly parentId: string | null;
  /** What a running run waits for: `signal:<name>`, `sleep`, `retry` or `children` (else null). */
  readonly waiting: string | null;
  /** When a sleeping run, or a step's next attempt, is due (epoch ms, database clock), else null. */
  readonly wakeAt: number | null;
  /** What ended a failed run, else null. */
  readonly error: JournaledError | null;
}

/** Filter and page of `workflows.list()` and `workflows.listPage()`. */
export interface ListRunsOptions {
  readonly state?: RunState;
  readonly workflow?: string;
  /** At most this many (default 1000, at most 10 000). */
  readonly limit?: number;
  /** `asc` (default): oldest start first; `desc`: newest first. */
  readonly order?: 'asc' | 'desc';
  /** The `next` cursor of the page before (same filter and order). */
  readonly after?: string;
}

/** A page of runs (`workflows.listPage()`). */
export interface RunPageResult {
  readonly runs: readonly RunSummary[];
  /** The cursor of the next page (pass it as `after`), or null on the last page. */
  readonly next: string | null;
}

/** Options of `workflows.start`. */
export interface StartOptions {
  /** The run's id (idempotency key): a second start with it starts nothing. Default: a new UUID v7 (time-ordered). */
  readonly id?: string;
  /**
   * Start inside this transaction (the `tx` of `store.withTx(fn)` or of `store.joinTransaction`): the
   * run exists once it commits, and never if it rolls back.
   */
  readonly tx?: TxOps;
  /**
   * Priority of the run's jobs (higher first, like jobs; default 0): when runs queue up for the
   * workers, a higher one's passes are claimed first.
   */
  readonly priority?: number;
}

/** What `workflows.start` did. */
export interface StartedRun {
  readonly id: string;
  /** False when a run with this id already existed (nothing was started). */
  readonly created: boolean;
}

/** Options of `workflows.signal`. */
export interface SignalOptions {
  /** Send inside this transaction: the signal exists (and wakes the run) once it commits. */
  readonly tx?: TxOps;
}

/** Options of `workflows.waitForResult`. */
export interface WaitForResultOptions {
  /** Give up with `WorkflowTimeout` after this long (default 60 000 ms). */
  readonly timeoutMs?: number;
  /** Re-read the run at least this often in case a wake is lost (default 1 000 ms). */
  readonly pollMs?: number;
}

/** Options of `createWorkflows`. */
export interface WorkflowsOptions<X = TxOps> {
  /** Every workflow (and every version still running) this process knows. */
  readonly workflows: readonly WorkflowDefinition<never, unknown, X>[];
  /** Run steps here (default true); false for a replica that only starts, signals and reads runs. */
  readonly worker?: boolean;
  /** Runs advanced at once by this process (default 10). */
  readonly concurrency?: number;
  /**
   * Prefix of the names the workflows' state lives under (streams `<ns>:run:<id>` and `<ns>:runs`, inboxes
   * `<ns>:runs` and `<ns>:journal`, channels `<ns>:…`, schedules `<ns>:schedule:<workflow>`, and the
   * engine-derived queue `__alkstore_workflows:<ns>`). Default `alkstore.workflows`.
   */
  readonly namespace?: string;
  /**
   * How long a finished run's journal is kept (ms, default 7 days, like `resultRetentionMs`): the
   * workers prune older ones (one worker of the fleet at a time), after which `getStatus` is null and
   * `list` no longer shows them. `null` keeps every journal.
   */
  readonly retentionMs?: number | null;
  /** Counters of runs and a histogram of step durations (e.g. `createPrometheusWorkflowMetrics()`). */
  readonly metrics?: WorkflowMetrics;
  /**
   * A span per step attempt in one trace per run when `@opentelemetry/api` is installed (default true;
   * spans go nowhere without an SDK).
   */
  readonly tracing?: boolean;
  /** Lease of a run's job (ms, default 30 000): a crashed worker's run resumes elsewhere after it. Renewed while a step runs. */
  readonly leaseMs?: number;
  /** Safety poll of the worker when no wake arrives (ms, default 1 000). */
  readonly idlePollIntervalMs?: number;
  /** How long `close()` waits for running steps (ms, default 10 000). */
  readonly drainTimeoutMs?: number;
  /** Default attempts of a step (default 3, like jobs). */
  readonly maxAttempts?: number;
  /** Default backoff base of a step (ms, default 5 000, like jobs). */
  readonly backoffBaseMs?: number;
  /**
   * The `open` of the ORM whose transaction a transactional step joins (`openTypeOrm(dataSource)`,
   * `openPrisma(prisma)`, … from `nestjs-alkstore`): the step's writes, its ORM rows and its journal
   * entry commit together, and `external` is the ORM's handle. Default: the store's own transaction
   * (`store.withTx`), with its `tx` as `external`.
   */
  readonly transaction?: TxOpen<X>;
  /**
   * Where the workflows log: each failed attempt of a step at warn (workflow, run id, step, attempt and
   * error), each failed run at error (run id and error), as a queue worker logs its jobs' failures.
   * Default: the logger the store was opened with (in Nest, Nest's `Logger`).
   */
  readonly logger?: StoreLogger;
  /** This worker's id in claims and logs (default a random one). */
  readonly workerId?: string;
  /**
   * Limits of the workflows' queue, applied once with `queue.setLimits` (`ready()` resolves after):
   * `concurrencyLimit` (passes of one `concurrencyKey` running at once, 1 unless set),
   * `globalConcurrency` (passes of the namespace running at once) and `keyRateLimit` (passes of
   * one `rateLimitKey` started per window). They hold across every process of the fleet; the keys
   * come from each workflow's `limitKeys` (docs/workflows.md, "Limits").
   */
  readonly limits?: QueueLimits;
}
