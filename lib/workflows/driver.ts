import { backoffDelayMs } from '../contract/backoff.js';
import type { Jsonified } from '../contract/codec.js';
import { InvalidArgument, PermanentError } from '../contract/errors.js';
import type { JobOpts } from '../contract/options.js';
import type { Store, StoreLogger, TxOps } from '../contract/types.js';
import { validateKey } from '../contract/validate.js';
import { durationMs, type Duration } from './duration.js';
import {
  ChildWorkflowFailed,
  NonDeterministicWorkflow,
  StepFailed,
  journalError,
  type JournaledError,
} from './errors.js';
import {
  encodeEntry,
  loadJournal,
  stampOpts,
  type CallKind,
  type ConsumedSignal,
  type DoneEntry,
  type Entry,
  type Journal,
  type Names,
} from './journal.js';
import type {
  ChildHandle,
  StartChildOptions,
  StepOptions,
  WaitForSignalOptions,
  WorkflowContext,
  WorkflowDefinition,
} from './types.js';
import type { Instrument } from './instrument.js';
import type { TxBatcher } from './batch.js';
import { setWaiting, sqlOfTx } from './runs.js';
import type { EndedRun, StepAppend } from './sql-seam.js';
import { insertStep, setStep } from './steps.js';

/** A journal entry at a position: a row of the steps table. */
type PositionedEntry = Extract<Entry, { readonly position: number }>;

/** A pass's last step entry, left for the run's end to write (see `EndedRun.before`). */
export type DeferredEntry = NonNullable<EndedRun['before']>;

// One pass of a run on one worker: replays `run(input, ctx)` against the journal (journaled calls return
// their outcome, nothing runs), then does new work at the first unjournaled position until the run ends
// or must wait (a sleep, a signal, a retry's backoff). Waiting ends the pass: the run's job is acked and
// a timer job (or a signal's job) starts the next pass.
//
// A step costs one journal write, in a transaction shared with the writes of other passes (batch.ts), and
// no read: the pass knows its journal, and the offset its write got tells whether anything else was
// journaled since (a signal, a cancellation, another writer), which is then read before going on.

/** Opens the transaction of a transactional step and calls `fn` with alkstore's operations and the ORM's handle. */
export type TransactionRunner<X> = <T>(fn: (tx: TxOps, external: X) => Promise<T>) => Promise<T>;

/** What a pass needs of the workflows instance. */
export interface DriverDeps {
  readonly store: Store;
  readonly names: Names;
  /** Where the journal writes of steps go: transactions shared by the runs' passes (one commit for many). */
  readonly batch: TxBatcher;
  readonly transaction: TransactionRunner<unknown>;
  /** Options of every job of a run (lease, attempts). */
  readonly jobOpts: JobOpts;
  readonly maxAttempts: number;
  readonly backoffBaseMs: number;
  /** Metrics and spans of steps. */
  readonly instrument: Instrument;
  /**
   * A plain step's entry may wait for the pass's next journal write, or its run's end, to go with it
   * (where the engine writes an end's `before` entry in the end's commit, see {@link RunDriver.takeDeferred}).
   */
  readonly deferSteps: boolean;
  /** Where a step's failed attempts are reported (warn). */
  readonly logger: StoreLogger;
  /**
   * Starts run `id` of `workflow` (a definition or a name this instance knows) in `tx`, as a child of
   * `parent`; false when a run with that id already existed. Validates before any write.
   */
  startRun(tx: TxOps, workflow: unknown, input: unknown, id: string, parent: string): Promise<boolean>;
  /** Checks a child start's arguments before any I/O (the workflow is known, the input is JSON, the id is valid). */
  checkChild(workflow: unknown, input: unknown, id: string | undefined): { workflow: string };
  /** A child run's id derived from its parent's id and the call's position (in the run's retry epoch). */
  childId(parent: string, position: string): string;
}

/** Why a pass stopped before `run` settled. */
export type Halt =
  | { readonly kind: 'suspended' }
  | { readonly kind: 'superseded' }
  | { readonly kind: 'cancelled' }
  | { readonly kind: 'stopped' }
  /** The store failed under a call (not the step's own code): the job is retried, the run never sees it. */
  | { readonly kind: 'broken'; readonly error: unknown }
  | { readonly kind: 'fatal'; readonly error: NonDeterministicWorkflow };

export type PassOutcome =
  Halt | { readonly kind: 'returned'; readonly value: unknown } | { readonly kind: 'threw'; readonly error: unknown };

/** Another writer journaled this position first (a reclaimed job's old worker, say): re-read and replay. */
class Superseded extends Error {}

/** A step function's own throw, told apart from a failing journal write. */
class StepThrew extends Error {
  constructor(readonly error: unknown) {
    super('step threw');
  }
}

/**
 * A promise that never settles, fresh each time: the abandoned `run` awaiting it (and everything it
 * holds) becomes garbage with it. One shared promise would keep every abandoned run alive forever.
 */
function never(): Promise<never> {
  return new Promise<never>(() => undefined);
}

function describeCall(k: CallKind, n: string): string {
  if (k === 'children') return `waitAll(${n})`;
  return k === 'sleep' || k === 'now' || k === 'random' ? `${k}()` : `${k} ${JSON.stringify(n)}`;
}

/** The JSON form of a step's result (`undefined` stays `undefined`). */
function jsonForm(name: string, value: unknown): unknown {
  try {
    return (JSON.parse(JSON.stringify({ value })) as { value?: unknown }).value;
  } catch (err) {
    throw new StepThrew(
      new PermanentError(
        `the result of ${JSON.stringify(name)} is not JSON (${err instanceof Error ? err.message : String(err)})`,
      ),
    );
  }
}

function isPermanent(err: unknown): boolean {
  return err instanceof PermanentError || (err instanceof Error && (err as { code?: unknown }).code === 'PERMANENT');
}

export class RunDriver {
  private pos = 0;
  /**
   * A plain step's outcome not journaled yet: the pass's next journaled call writes it first (no step,
   * sleep or other journaled call starts before it commits), or its run's end writes it in the end's
   * commit; at the latest it is written once this turn of the event loop is over (`defer`).
   */
  private deferred: { readonly what: string; readonly entry: DoneEntry } | null = null;
  /** The write of {@link deferred} under way (kept after a failure, for the next caller to see it). */
  private flushing: Promise<void> | null = null;
  /** This pass's journal appends in flight (a step's entry is deferred only when none is). */
  private appending = 0;
  private halted: Halt | null = null;
  private onHalt!: (h: Halt) => void;
  private readonly halt = new Promise<Halt>((resolve) => (this.onHalt = resolve));
  private readonly abort = new AbortController();
  private knownNow = -Infinity;
  private readonly stream: string;

  constructor(
    private readonly deps: DriverDeps,
    readonly id: string,
    private readonly journal: Journal,
    private readonly def: WorkflowDefinition<never, unknown, unknown>,
    private readonly jobSignal: AbortSignal,
  ) {
    this.stream = deps.names.runStream(id);
    if (jobSignal.aborted) this.abort.abort();
    else jobSignal.addEventListener('abort', this.onJobAbort, { once: true });
  }

  private readonly onJobAbort = (): void => this.abort.abort();

  /** Detaches from the job's signal (shared by every job of the worker). */
  dispose(): void {
    this.jobSignal.removeEventListener('abort', this.onJobAbort);
  }

  /** Runs the pass until `run` settles or the pass halts. */
  async execute(): Promise<PassOutcome> {
    const start = this.journal.start!;
    const ctx = this.context();
    const ran = Promise.resolve()
      .then(() => this.def.run(start.input as never, ctx))
      .then(
        (value): PassOutcome => ({ kind: 'returned', value }),
        (error: unknown): PassOutcome => ({ kind: 'threw', error }),
      );
    const outcome = await Promise.race([ran, this.halt]);
    if (this.halted) return this.halted;
    // Code that ends before positions its journal holds took another path than the run did.
    const beyond = this.journal.positions().find((p) => p >= this.pos);
    if (beyond !== undefined) {
      const asked = outcome.kind === 'returned' ? 'the end of run' : 'a throw out of run';
      return { kind: 'fatal', error: new NonDeterministicWorkflow(this.id, beyond, asked, this.journaledAt(beyond)!) };
    }
    return outcome;
  }

  /** What the journal holds at `p`, described, or null. */
  private journaledAt(p: number): string | null {
    const j = this.journal;
    const done = j.done.get(p);
    const retry = j.retries.get(p)?.[0];
    if (done) return describeCall(done.kind, done.name);
    if (retry) return describeCall(retry.kind, retry.name);
    if (j.sleeps.has(p)) return describeCall('sleep', '');
    if (j.waits.has(p)) return describeCall('signal', j.waits.get(p)!.signal);
    if (j.joins.has(p)) return describeCall('children', j.joins.get(p)!.runIds.join(' '));
    return null;
  }

  /** Called when a cancellation may have been committed: aborts the running step and starts nothing new. */
  async checkCancelled(): Promise<void> {
    if (this.halted) return;
    await this.journal.refresh(this.deps.store, this.deps.names, this.id);
    if (this.journal.cancelled) this.stop({ kind: 'cancelled' });
  }

  private stop(h: Halt): Promise<never> {
    if (!this.halted) {
      this.halted = h;
      this.abort.abort();
      this.onHalt(h);
    }
    return never();
  }

  private context(): WorkflowContext<unknown> {
    const d = this.def;
    return {
      runId: this.id,
      workflow: d.name,
      version: d.version,
      step: <T>(name: string, fn: (signal: AbortSignal) => Promise<T> | T, opts?: StepOptions) => {
        validateKey('step name', name);
        if (typeof fn !== 'function') throw new InvalidArgument('ctx.step', 'needs a function (signal) => value');
        return this.shield(() =>
          this.step<T>('step', name, opts, (p, signal) => this.plainAttempt(p, name, fn, signal)),
        );
      },
      transaction: (<T>(
        a: string | ((tx: TxOps, x: unknown) => Promise<T>),
        b?: (tx: TxOps, x: unknown) => Promise<T>,
        opts?: StepOptions,
      ) => {
        const name = validateKey('step name', typeof a === 'string' ? a : 'transaction');
        const fn = typeof a === 'string' ? b : a;
        if (typeof fn !== 'function')
          throw new InvalidArgument('ctx.transaction', 'needs a function (tx, external) => Promise');
        return this.shield(() => this.step<T>('transaction', name, opts, (p) => this.txAttempt(p, name, fn)));
      }) as WorkflowContext<unknown>['transaction'],
      sleep: (duration: Duration) => {
        const ms = durationMs('duration', duration, { allowZero: true });
        return this.shield(() => this.sleep(ms));
      },
      waitForSignal: <T>(name: string, opts?: WaitForSignalOptions) => {
        validateKey('signal name', name);
        const timeoutMs =
          opts?.timeoutMs === undefined ? null : durationMs('timeoutMs', opts.timeoutMs, { allowZero: true });
        return this.shield(() => this.waitForSignal(name, timeoutMs)) as Promise<Jsonified<T> | undefined>;
      },
      startChild: (<O>(
        workflow: WorkflowDefinition<never, O, unknown> | string,
        input: unknown,
        opts?: StartChildOptions,
      ) => {
        const id = opts?.id === undefined ? undefined : validateKey('child workflow id', opts.id);
        const { workflow: wf } = this.deps.checkChild(workflow, input, id);
        return this.shield(() => this.startChild(wf, input, id)) as Promise<ChildHandle<O>>;
      }) as WorkflowContext<unknown>['startChild'],
      waitAll: (<O>(handles: readonly ChildHandle<O>[]) => {
        if (
          !Array.isArray(handles) ||
          handles.some((h) => h === null || typeof h !== 'object' || typeof (h as { id?: unknown }).id !== 'string')
        ) {
          throw new InvalidArgument('ctx.waitAll', 'needs an array of the handles ctx.startChild returned');
        }
        return this.shield(() => this.waitAll(handles.map((h) => h.id)));
      }) as WorkflowContext<unknown>['waitAll'],
      patched: (changeId: string) => {
        validateKey('patch id', changeId);
        return this.shield(() => this.patched(changeId));
      },
      now: () => this.shield(() => this.recorded('now', () => this.deps.store.now())) as Promise<number>,
      random: () => this.shield(() => this.recorded('random', () => Promise.resolve(Math.random()))) as Promise<number>,
    };
  }

  /**
   * Keeps the store's failures out of `run`: code that caught them could take a path the journal never
   * records. Only a step's journaled failure (`StepFailed`) reaches `run`; anything else ends the pass.
   */
  private async shield<T>(body: () => Promise<T>): Promise<T> {
    try {
      if (this.deferred !== null || this.flushing !== null) await this.flushDeferred();
      return await body();
    } catch (err) {
      if (err instanceof StepFailed || err instanceof ChildWorkflowFailed) throw err;
      if (err instanceof Superseded) return this.stop({ kind: 'superseded' });
      return this.stop({ kind: 'broken', error: err });
    }
  }

  /**
   * Checks that the journal holds nothing of another kind or name at `p` (else the run fails with
   * {@link NonDeterministicWorkflow}) and returns its outcome entry, if any.
   */
  private at(p: number, k: CallKind, n: string): DoneEntry | null | undefined {
    const done = this.journal.done.get(p);
    const there = this.journaledAt(p);
    const asked = describeCall(k, n);
    if (there !== null && there !== asked) {
      void this.stop({ kind: 'fatal', error: new NonDeterministicWorkflow(this.id, p, asked, there) });
      return undefined;
    }
    return done ?? null;
  }

  /**
   * Before new work: false when the pass must stop (cancelled, ended by another writer). The journal is
   * current as of this pass's last write (a write that found entries it had not read reads them at
   * once, see {@link wrote}); `read`: read what was committed since anyway (a wait for a signal).
   */
  private async fresh(read = false): Promise<boolean> {
    if (read) await this.journal.refresh(this.deps.store, this.deps.names, this.id);
    if (this.halted) return false;
    if (this.journal.cancelled) {
      void this.stop({ kind: 'cancelled' });
      return false;
    }
    if (this.journal.end) {
      void this.stop({ kind: 'superseded' });
      return false;
    }
    return true;
  }

  private async reached(instant: number): Promise<boolean> {
    if (this.knownNow >= instant) return true;
    this.knownNow = await this.deps.store.now();
    return this.knownNow >= instant;
  }

  /** Writes the deferred step entry, if any (or waits for its write under way); rejects as that write did. */
  private flushDeferred(): Promise<void> {
    const d = this.deferred;
    if (d !== null) {
      this.deferred = null;
      const f = this.append(d.what, d.entry);
      this.flushing = f;
      f.then(
        () => {
          if (this.flushing === f) this.flushing = null;
        },
        () => undefined,
      );
    }
    return this.flushing ?? Promise.resolve();
  }

  /**
   * Leaves `entry` (a plain step's outcome at `what`) to the next journal write or the run's end, or, when
   * neither came by the end of this turn of the event loop (`run` awaits something else), writes it then.
   */
  private defer(what: string, entry: DoneEntry): void {
    this.deferred = { what, entry };
    setImmediate(() => {
      if (this.deferred?.entry === entry) void this.flushDeferred().catch(() => undefined);
    });
  }

  /**
   * For the run's end, once `run` settled: the deferred step entry (its guard and stored form) for the
   * end's statement to write ahead of the end, or null; first waits for a write of it under way (rejecting
   * as that write did; `superseded` when it found its guard taken).
   */
  async takeDeferred(): Promise<DeferredEntry | null | 'superseded'> {
    if (this.flushing !== null) {
      try {
        await this.flushing;
      } catch (err) {
        if (err instanceof Superseded) return 'superseded';
        throw err;
      }
    }
    const d = this.deferred;
    if (d === null) return null;
    this.deferred = null;
    return { position: d.entry.position, key: this.journal.epoch(d.what), payload: encodeEntry(d.entry) };
  }

  /** A pass that halted: writes its deferred step entry as an awaited write would have; a failure leaves the step to run again. */
  async settleDeferred(): Promise<void> {
    await this.flushDeferred().catch(() => undefined);
  }

  /** Journals `entry` under its once-only guard, with `more` in the same (shared) transaction. */
  private async append(what: string, entry: PositionedEntry, more?: (tx: TxOps) => Promise<unknown>): Promise<void> {
    this.appending += 1;
    try {
      await this.appendNow(what, entry, more);
    } finally {
      this.appending -= 1;
    }
  }

  private async appendNow(what: string, entry: PositionedEntry, more?: (tx: TxOps) => Promise<unknown>): Promise<void> {
    const { batch, names } = this.deps;
    const { position } = entry;
    const stored = encodeEntry(entry);
    const write: StepAppend = {
      ns: names.ns,
      run: this.id,
      position,
      key: this.journal.epoch(what),
      stream: this.stream,
      payload: stored,
    };
    // A taken key writes nothing and throws nothing: the transaction is shared with other passes' writes.
    const head = more
      ? await batch.run(async (tx) => {
          const at = await insertStep(sqlOfTx(tx), write);
          if (at !== null) await more(tx);
          return at;
        })
      : await batch.append(write);
    if (head === null) throw new Superseded();
    await this.wrote(head, write);
  }

  /**
   * This pass's step entry `w` committed while the run's stream head was at `head`: folded into the
   * journal when nothing of the stream is unread; otherwise something else was journaled in between (a
   * signal, a cancellation, an end), read now so the next call sees it.
   */
  private async wrote(head: number, w: StepAppend): Promise<void> {
    if (!this.journal.own(head, w.position, w.key, w.payload))
      await this.journal.refresh(this.deps.store, this.deps.names, this.id);
  }

  private timer(at: number): (tx: TxOps) => Promise<number> {
    const stamp = stampOpts(this.journal.start, true);
    return (tx) =>
      tx.enqueue(this.deps.names.queue, { k: 'timer', id: this.id }, { ...this.deps.jobOpts, runAt: at, ...stamp });
  }

  /** Notes on the run's row what it waits for (null: nothing), with `also` in the same transaction. */
  private waiting(what: string | null, until: number | null, also?: (tx: TxOps) => Promise<unknown>) {
    return async (tx: TxOps): Promise<void> => {
      await setWaiting(sqlOfTx(tx), this.deps.names.ns, this.id, what, until);
      if (also) await also(tx);
    };
  }

  private replay(name: string, d: DoneEntry): unknown {
    if (d.error) throw new StepFailed(name, d.attempts ?? 1, d.error);
    return d.result;
  }

  private async step<T>(
    k: 'step' | 'transaction',
    name: string,
    opts: StepOptions | undefined,
    attempt: (p: number, signal: AbortSignal) => Promise<unknown>,
  ): Promise<Jsonified<T>> {
    const p = this.pos++;
    if (this.halted) return never();
    const d = this.at(p, k, name);
    if (d === undefined) return never();
    if (d) return this.replay(name, d) as Jsonified<T>;
    if (!(await this.fresh())) return never();
    // Another writer may have journaled this position since the pass read the journal.
    const late = this.journal.done.get(p);
    if (late) return this.stop({ kind: 'superseded' });
    const retries = this.journal.retries.get(p) ?? [];
    const last = retries[retries.length - 1];
    if (last && !(await this.reached(last.retryAt))) return this.stop({ kind: 'suspended' });
    const n = retries.length + 1;
    try {
      return (await this.deps.instrument.step(this.def.name, this.id, k, name, n, () =>
        attempt(p, this.abort.signal),
      )) as Jsonified<T>;
    } catch (err) {
      if (err instanceof Superseded) return this.stop({ kind: 'superseded' });
      if (!(err instanceof StepThrew)) throw err;
      if (this.jobSignal.aborted) return this.stop({ kind: 'stopped' });
      await this.checkCancelled();
      if (this.halted) return never();
      const error: JournaledError = journalError(err.error);
      const maxAttempts = opts?.maxAttempts ?? this.def.maxAttempts ?? this.deps.maxAttempts;
      if (n >= maxAttempts || isPermanent(err.error)) {
        await this.guarded(() =>
          this.append(String(p), { type: 'done', position: p, kind: k, name, error, attempts: n }),
        );
        if (this.halted) return never();
        this.logFailure(k, name, n, maxAttempts, error, 'the step failed for good');
        throw new StepFailed(name, n, error);
      }
      const retryAt =
        (await this.deps.store.now()) +
        backoffDelayMs(n, opts?.backoffBaseMs ?? this.def.backoffBaseMs ?? this.deps.backoffBaseMs);
      const retry: Entry = { type: 'retry', position: p, kind: k, name, attempt: n, error, retryAt };
      await this.guarded(() => this.append(`${p}/r${n}`, retry, this.waiting('retry', retryAt, this.timer(retryAt))));
      if (!this.halted)
        this.logFailure(k, name, n, maxAttempts, error, `retrying at ${new Date(retryAt).toISOString()}`);
      return this.stop({ kind: 'suspended' });
    }
  }

  /** One warning per failed attempt, once its journal entry committed (a superseded writer stays quiet). */
  private logFailure(
    k: 'step' | 'transaction',
    name: string,
    attempt: number,
    maxAttempts: number,
    error: JournaledError,
    next: string,
  ): void {
    const run = `workflow ${JSON.stringify(this.def.name)} run ${JSON.stringify(this.id)}`;
    const call = `${k} ${JSON.stringify(name)} failed on attempt ${attempt}/${maxAttempts}`;
    this.deps.logger.warn(`${run}: ${call} (${error.name}: ${error.message}); ${next}`);
  }

  /** Runs a journal write; a lost guard halts the pass as superseded. */
  private async guarded(write: () => Promise<void>): Promise<void> {
    try {
      await write();
    } catch (err) {
      if (err instanceof Superseded) {
        void this.stop({ kind: 'superseded' });
        return;
      }
      throw err;
    }
  }

  private async plainAttempt<T>(
    p: number,
    name: string,
    fn: (signal: AbortSignal) => Promise<T> | T,
    signal: AbortSignal,
  ): Promise<unknown> {
    let value: T;
    try {
      value = await fn(signal);
    } catch (err) {
      throw new StepThrew(err);
    }
    const result = jsonForm(name, value);
    const entry: DoneEntry = { type: 'done', position: p, kind: 'step', name, result };
    // Alone in flight, the entry may go with the next write instead of a commit of its own (see `deferred`).
    if (this.deps.deferSteps && this.appending === 0 && this.deferred === null && this.flushing === null)
      this.defer(String(p), entry);
    else await this.append(String(p), entry);
    return result;
  }

  /** The step's own transaction carries its journal entry: one commit for both. */
  private async txAttempt<T>(
    p: number,
    name: string,
    fn: (tx: TxOps, external: unknown) => Promise<T>,
  ): Promise<unknown> {
    const { names } = this.deps;
    const write: StepAppend = {
      ns: names.ns,
      run: this.id,
      position: p,
      key: this.journal.epoch(String(p)),
      stream: this.stream,
      payload: null,
    };
    const { result, head, stored } = await this.deps.transaction(async (tx, external) => {
      // The entry's key first (a concurrent writer of it waits here, then finds it taken), its outcome last.
      const sql = sqlOfTx(tx);
      const head = await insertStep(sql, write);
      if (head === null) throw new Superseded();
      let value: T;
      try {
        value = await fn(tx, external);
      } catch (err) {
        throw new StepThrew(err);
      }
      const result = jsonForm(name, value);
      const stored = encodeEntry({ type: 'done', position: p, kind: 'transaction', name, result });
      await setStep(sql, write, stored);
      return { result, head, stored };
    });
    await this.wrote(head, { ...write, payload: stored });
    return result;
  }

  private async sleep(ms: number): Promise<void> {
    const p = this.pos++;
    if (this.halted || this.at(p, 'sleep', '') === undefined) return never();
    const s = this.journal.sleeps.get(p);
    if (s) {
      if (await this.reached(s.until)) return;
      return this.stop({ kind: 'suspended' });
    }
    if (!(await this.fresh())) return never();
    const until = (await this.deps.store.now()) + ms;
    await this.guarded(() =>
      this.append(`${p}/s`, { type: 'sleep', position: p, until }, this.waiting('sleep', until, this.timer(until))),
    );
    return this.stop({ kind: 'suspended' });
  }

  private async waitForSignal(name: string, timeoutMs: number | null): Promise<unknown> {
    const p = this.pos++;
    if (this.halted) return never();
    const d = this.at(p, 'signal', name);
    if (d === undefined) return never();
    if (d) return (d.result as ConsumedSignal | undefined)?.data;
    // Signals are written by anyone: read what came since.
    if (!(await this.fresh(true))) return never();
    const sig = this.journal.firstUnconsumed(name);
    if (sig) {
      const result: ConsumedSignal = { offset: sig.offset, data: sig.data };
      const entry: Entry = { type: 'done', position: p, kind: 'signal', name, result };
      await this.guarded(() =>
        this.append(String(p), entry, this.journal.waits.has(p) ? this.waiting(null, null) : undefined),
      );
      if (this.halted) return never();
      this.journal.consumed.add(sig.offset);
      return sig.data;
    }
    const w = this.journal.waits.get(p);
    if (w) {
      if (w.until !== null && (await this.reached(w.until))) {
        await this.guarded(() =>
          this.append(String(p), { type: 'done', position: p, kind: 'signal', name }, this.waiting(null, null)),
        );
        if (this.halted) return never();
        return undefined;
      }
      return this.stop({ kind: 'suspended' });
    }
    const until = timeoutMs === null ? null : (await this.deps.store.now()) + timeoutMs;
    const wait: Entry = { type: 'wait', position: p, signal: name, until };
    await this.guarded(() =>
      this.append(
        `${p}/w`,
        wait,
        this.waiting(`signal:${name}`, until, until === null ? undefined : this.timer(until)),
      ),
    );
    return this.stop({ kind: 'suspended' });
  }

  /** `ctx.patched`: the journal's answer at this position, or (nothing journaled here) true, journaled. */
  private async patched(changeId: string): Promise<boolean> {
    const p = this.pos;
    if (this.halted) return never();
    const d = this.journal.done.get(p);
    if (d?.kind === 'patch' && d.name === changeId) {
      this.pos += 1;
      return true;
    }
    // Another call (or another patch) is journaled here: the run predates this change.
    if (this.journaledAt(p) !== null) return false;
    if (!(await this.fresh())) return never();
    if (this.journaledAt(p) !== null) return this.stop({ kind: 'superseded' });
    this.pos += 1;
    await this.guarded(() =>
      this.append(String(p), { type: 'done', position: p, kind: 'patch', name: changeId, result: true }),
    );
    if (this.halted) return never();
    return true;
  }

  private async recorded(k: 'now' | 'random', read: () => Promise<number>): Promise<unknown> {
    const p = this.pos++;
    if (this.halted) return never();
    const d = this.at(p, k, '');
    if (d === undefined) return never();
    if (d) return d.result;
    if (!(await this.fresh())) return never();
    const v = await read();
    await this.guarded(() => this.append(String(p), { type: 'done', position: p, kind: k, name: '', result: v }));
    if (this.halted) return never();
    return v;
  }

  /** Starts a child run in the transaction that journals the call: the child exists once, whatever crashes. */
  private async startChild(workflow: string, input: unknown, given: string | undefined): Promise<ChildHandle<unknown>> {
    const p = this.pos++;
    if (this.halted) return never();
    const d = this.at(p, 'child', workflow);
    if (d === undefined) return never();
    if (d) return d.result as ChildHandle<unknown>;
    if (!(await this.fresh())) return never();
    const id = given ?? this.deps.childId(this.id, this.journal.epoch(String(p)));
    const handle = { id, workflow };
    let created = false;
    await this.guarded(() =>
      this.append(
        String(p),
        { type: 'done', position: p, kind: 'child', name: workflow, result: handle },
        async (tx) => (created = await this.deps.startRun(tx, workflow, input, id, this.id)),
      ),
    );
    if (this.halted) return never();
    if (created) this.deps.instrument.count('started', workflow);
    this.journal.children.set(p, id);
    return handle;
  }

  /**
   * Fan-in: resolves with the children's results in order once every one completed, throws
   * {@link ChildWorkflowFailed} for the first (in order) that failed or was cancelled. Until then the
   * run is parked; each child's end drives it again.
   */
  private async waitAll(ids: string[]): Promise<unknown[]> {
    const p = this.pos++;
    if (this.halted) return never();
    const n = ids.join(' ');
    const d = this.at(p, 'children', n);
    if (d === undefined) return never();
    if (d) return this.joined(d);
    if (!(await this.fresh())) return never();
    const { store, names } = this.deps;
    const results: unknown[] = [];
    let pending = false;
    for (const id of ids) {
      const c = await loadJournal(store, names, id);
      const state = c.start ? c.state : 'missing';
      const end = c.end;
      if (end?.state === 'completed') {
        results.push(end.result);
        continue;
      }
      if (state === 'running') {
        pending = true;
        continue;
      }
      const error: JournaledError =
        end?.state === 'failed'
          ? end.error
          : {
              name: 'WorkflowCancelled',
              message:
                state === 'missing'
                  ? `no run ${JSON.stringify(id)} exists`
                  : `workflow run ${JSON.stringify(id)} was cancelled`,
              code: state === 'missing' ? 'UNKNOWN_WORKFLOW' : 'WORKFLOW_CANCELLED',
            };
      const failed = { id, workflow: c.start?.workflow ?? '', state, error };
      const entry: DoneEntry = { type: 'done', position: p, kind: 'children', name: n, result: { failed } };
      await this.guarded(() => this.append(String(p), entry));
      if (this.halted) return never();
      return this.joined(entry);
    }
    if (!pending) {
      const entry: DoneEntry = { type: 'done', position: p, kind: 'children', name: n, result: { results } };
      await this.guarded(() => this.append(String(p), entry));
      if (this.halted) return never();
      return results;
    }
    if (!this.journal.joins.has(p))
      await this.guarded(() =>
        this.append(`${p}/j`, { type: 'join', position: p, runIds: ids }, this.waiting('children', null)),
      );
    return this.stop({ kind: 'suspended' });
  }

  private joined(d: DoneEntry): unknown[] {
    const v = d.result as {
      results?: unknown[];
      failed?: { id: string; workflow: string; state: string; error: JournaledError };
    };
    if (v.failed) throw new ChildWorkflowFailed(v.failed.id, v.failed.workflow, v.failed.state, v.failed.error);
    return v.results ?? [];
  }
}
