import { workflowsQueueName } from '../contract/names.js';
import type { Store, StreamEvent } from '../contract/types.js';
import type { JournaledError } from './errors.js';
import { workflowSqlOf } from './sql-seam.js';
import { epochOfKey, readSteps, type StepRow } from './steps.js';
import type { RunState, RunStep, WorkflowRun } from './types.js';

// The journal of a run is two things read together. Its positioned entries (a step's outcome, a retry, a
// sleep, a wait, a join), written by the run's driver, are rows of the steps table (steps.ts), keyed by
// position and what the entry is there, so a position holds at most one entry of each kind. Its other
// entries (the start, signals and cancellation, written by anyone, workflows.retry's re-drive and the end)
// are events of the stream `<ns>:run:<id>`, in commit order. Runs journaled before the steps table kept
// their positioned entries in the stream too (each under an inbox guard): those are read as they are.
//
// The code works with the readable entries below; `encodeEntry` / `decodeEntry` are the only places that
// know the stored form, whose keys are single letters (`{ t: 'done', p, k, n, r: { v }, e, a }`) so that a
// journal stays small. The stored form is the one every earlier release wrote: journals written before
// carry on unchanged.

/** What a positioned call was. */
export type CallKind = 'step' | 'transaction' | 'sleep' | 'signal' | 'now' | 'random' | 'child' | 'children' | 'patch';

/** The run began. */
export interface StartEntry {
  readonly type: 'start';
  readonly workflow: string;
  readonly version: number;
  readonly input: unknown;
  /** The parent run of a child started by `ctx.startChild`. */
  readonly parentId?: string;
  /** The run's priority and limit keys, stamped on every job that advances it. */
  readonly priority?: number;
  readonly concurrencyKey?: string;
  readonly rateLimitKey?: string;
}

/**
 * A call's outcome: its `result` (the JSON form; absent for `undefined`), or its `error` after
 * `attempts` attempts. A consumed signal's result is `{ offset, data }` (`undefined` on a timeout).
 */
export interface DoneEntry {
  readonly type: 'done';
  readonly position: number;
  readonly kind: CallKind;
  readonly name: string;
  readonly result?: unknown;
  readonly error?: JournaledError;
  readonly attempts?: number;
}

/** Attempt `attempt` of a step failed with `error`; the next one is due at `retryAt` (database clock). */
export interface RetryEntry {
  readonly type: 'retry';
  readonly position: number;
  readonly kind: CallKind;
  readonly name: string;
  readonly attempt: number;
  readonly error: JournaledError;
  readonly retryAt: number;
}

/** A sleep began; it is over once the database clock reaches `until`. */
export interface SleepEntry {
  readonly type: 'sleep';
  readonly position: number;
  readonly until: number;
}

/** A wait for signal `signal` began; it times out at `until` (null: never). */
export interface WaitEntry {
  readonly type: 'wait';
  readonly position: number;
  readonly signal: string;
  readonly until: number | null;
}

/** A `ctx.waitAll` began waiting for the runs `runIds` (each child's end drives this run again). */
export interface JoinEntry {
  readonly type: 'join';
  readonly position: number;
  readonly runIds: readonly string[];
}

/** `workflows.retry` re-drives a failed run from its first failed position: entries before `fromPosition` stay. */
export interface RetriedEntry {
  readonly type: 'retried';
  readonly fromPosition: number;
}

/** A signal (consumed by the first wait for its name that finds it unconsumed). */
export interface SignalEntry {
  readonly type: 'signal';
  readonly name: string;
  readonly data: unknown;
}

export interface CancelEntry {
  readonly type: 'cancel';
}

/** The run ended: `result` (the JSON form; absent for `undefined`) when completed, `error` when failed. */
export type EndEntry =
  | { readonly type: 'end'; readonly state: 'completed'; readonly result?: unknown }
  | { readonly type: 'end'; readonly state: 'failed'; readonly error: JournaledError };

export type Entry =
  | StartEntry
  | DoneEntry
  | RetryEntry
  | SleepEntry
  | WaitEntry
  | JoinEntry
  | RetriedEntry
  | SignalEntry
  | CancelEntry
  | EndEntry;

/** What a consumed signal's `done` entry holds. */
export interface ConsumedSignal {
  /** The offset of the signal's event in the run's journal. */
  readonly offset: number;
  readonly data: unknown;
}

/** The stored form of a result: wrapped so that `undefined` (an empty object) survives JSON. */
type StoredResult = { readonly v?: unknown };

/** The stored form of an entry, as every release wrote it. */
export type StoredEntry =
  | {
      readonly t: 'start';
      readonly wf: string;
      readonly v: number;
      readonly input: unknown;
      readonly pa?: string;
      readonly pr?: number;
      readonly ck?: string;
      readonly rk?: string;
    }
  | {
      readonly t: 'done';
      readonly p: number;
      readonly k: CallKind;
      readonly n: string;
      readonly r?: StoredResult;
      readonly e?: JournaledError;
      readonly a?: number;
    }
  | {
      readonly t: 'retry';
      readonly p: number;
      readonly k: CallKind;
      readonly n: string;
      readonly a: number;
      readonly e: JournaledError;
      readonly at: number;
    }
  | { readonly t: 'sleep'; readonly p: number; readonly until: number }
  | { readonly t: 'wait'; readonly p: number; readonly n: string; readonly until: number | null }
  | { readonly t: 'join'; readonly p: number; readonly ids: readonly string[] }
  | { readonly t: 'retried'; readonly from: number }
  | { readonly t: 'signal'; readonly n: string; readonly d: unknown }
  | { readonly t: 'cancel' }
  | { readonly t: 'end'; readonly s: 'completed' | 'failed'; readonly r?: StoredResult; readonly e?: JournaledError };

/** `{ v }` for a defined value, `{}` for `undefined`: the stored result. */
function storeResult(value: unknown): StoredResult {
  return value === undefined ? {} : { v: value };
}

/** The stored form of a call's result (a consumed signal's offset and data are `o` and `d`). */
function encodeResult(kind: CallKind, result: unknown): StoredResult {
  if (kind === 'signal' && result !== undefined) {
    const s = result as ConsumedSignal;
    return { v: { o: s.offset, d: s.data } };
  }
  return storeResult(result);
}

function decodeResult(kind: CallKind, r: StoredResult | undefined): unknown {
  const v = r?.v;
  if (kind === 'signal' && v !== null && typeof v === 'object') {
    const s = v as { o?: unknown; d?: unknown };
    if (typeof s.o === 'number') return { offset: s.o, data: s.d } satisfies ConsumedSignal;
  }
  return v;
}

/** The stored form of `e`: what the store's stream keeps. */
export function encodeEntry(e: Entry): StoredEntry {
  switch (e.type) {
    case 'start':
      return {
        t: 'start',
        wf: e.workflow,
        v: e.version,
        input: e.input,
        ...(e.parentId === undefined ? {} : { pa: e.parentId }),
        ...(e.priority === undefined ? {} : { pr: e.priority }),
        ...(e.concurrencyKey === undefined ? {} : { ck: e.concurrencyKey }),
        ...(e.rateLimitKey === undefined ? {} : { rk: e.rateLimitKey }),
      };
    case 'done':
      return e.error === undefined
        ? { t: 'done', p: e.position, k: e.kind, n: e.name, r: encodeResult(e.kind, e.result) }
        : { t: 'done', p: e.position, k: e.kind, n: e.name, e: e.error, a: e.attempts ?? 1 };
    case 'retry':
      return { t: 'retry', p: e.position, k: e.kind, n: e.name, a: e.attempt, e: e.error, at: e.retryAt };
    case 'sleep':
      return { t: 'sleep', p: e.position, until: e.until };
    case 'wait':
      return { t: 'wait', p: e.position, n: e.signal, until: e.until };
    case 'join':
      return { t: 'join', p: e.position, ids: e.runIds };
    case 'retried':
      return { t: 'retried', from: e.fromPosition };
    case 'signal':
      return { t: 'signal', n: e.name, d: e.data };
    case 'cancel':
      return { t: 'cancel' };
    case 'end':
      return e.state === 'completed'
        ? { t: 'end', s: 'completed', r: storeResult(e.result) }
        : { t: 'end', s: 'failed', e: e.error };
  }
}

/**
 * The entry a stored event holds, or null for a payload that is no journal entry (one a later release
 * may add): the fold skips it.
 */
export function decodeEntry(payload: unknown): Entry | null {
  if (payload === null || typeof payload !== 'object') return null;
  const s = payload as StoredEntry;
  switch (s.t) {
    case 'start':
      return {
        type: 'start',
        workflow: s.wf,
        version: s.v,
        input: s.input,
        ...(s.pa === undefined ? {} : { parentId: s.pa }),
        ...(s.pr === undefined ? {} : { priority: s.pr }),
        ...(s.ck === undefined ? {} : { concurrencyKey: s.ck }),
        ...(s.rk === undefined ? {} : { rateLimitKey: s.rk }),
      };
    case 'done':
      return s.e === undefined
        ? { type: 'done', position: s.p, kind: s.k, name: s.n, ...resultOf(decodeResult(s.k, s.r)) }
        : { type: 'done', position: s.p, kind: s.k, name: s.n, error: s.e, attempts: s.a ?? 1 };
    case 'retry':
      return { type: 'retry', position: s.p, kind: s.k, name: s.n, attempt: s.a, error: s.e, retryAt: s.at };
    case 'sleep':
      return { type: 'sleep', position: s.p, until: s.until };
    case 'wait':
      return { type: 'wait', position: s.p, signal: s.n, until: s.until };
    case 'join':
      return { type: 'join', position: s.p, runIds: s.ids };
    case 'retried':
      return { type: 'retried', fromPosition: s.from };
    case 'signal':
      return { type: 'signal', name: s.n, data: s.d };
    case 'cancel':
      return { type: 'cancel' };
    case 'end':
      return s.s === 'completed'
        ? { type: 'end', state: 'completed', ...resultOf(s.r?.v) }
        : { type: 'end', state: 'failed', error: s.e ?? { name: 'Error', message: 'failed', code: null } };
    default:
      return null;
  }
}

/** `{ result }`, or nothing for `undefined`: a decoded entry equals the one encoded. */
function resultOf(result: unknown): { result?: unknown } {
  return result === undefined ? {} : { result };
}

/** What every job advancing a run carries: its priority and limit keys, from its start entry. */
export type RunStamp = Pick<StartEntry, 'priority' | 'concurrencyKey' | 'rateLimitKey'>;

/** Largest job priority (the queue's bound). */
const MAX_JOB_PRIORITY = 2 ** 31 - 1;

/**
 * The job options of a run's stamp (none for a run started without them). `resumed`: a job that
 * brings a parked run back (a signal, a due sleep or retry, a child's end, a retry), one priority
 * above the run's own, so it goes ahead of the runs of that priority waiting for their first pass.
 */
export function stampOpts(
  s: RunStamp | null | undefined,
  resumed = false,
): {
  priority?: number;
  concurrencyKey?: string;
  rateLimitKey?: string;
} {
  const priority = Math.min(MAX_JOB_PRIORITY, (s?.priority ?? 0) + (resumed ? 1 : 0));
  if (!s) return priority === 0 ? {} : { priority };
  return {
    ...(priority === 0 ? {} : { priority }),
    ...(s.concurrencyKey === undefined ? {} : { concurrencyKey: s.concurrencyKey }),
    ...(s.rateLimitKey === undefined ? {} : { rateLimitKey: s.rateLimitKey }),
  };
}

/** The names a namespace's workflows live under. */
export interface Names {
  readonly ns: string;
  /** The queue that carries the runs' jobs (`__alkstore_workflows:<ns>`). */
  readonly queue: string;
  readonly runsStream: string;
  readonly runsInbox: string;
  readonly journalInbox: string;
  readonly cancelChannel: string;
  runStream(id: string): string;
  runChannel(id: string): string;
  /** Guard of one entry of a run: `<id>#<what>` (`what` never holds `#`). */
  guard(id: string, what: string): string;
}

export function namesOf(ns: string): Names {
  return {
    ns,
    queue: workflowsQueueName(ns),
    runsStream: `${ns}:runs`,
    runsInbox: `${ns}:runs`,
    journalInbox: `${ns}:journal`,
    cancelChannel: `${ns}:cancel`,
    runStream: (id) => `${ns}:run:${id}`,
    runChannel: (id) => `${ns}:run:${id}`,
    guard: (id, what) => `${id}#${what}`,
  };
}

/** A run's journal folded for the driver and for readers. */
export class Journal {
  start: StartEntry | null = null;
  startedAt = 0;
  end: EndEntry | null = null;
  cancelled = false;
  finishedAt: number | null = null;
  readonly done = new Map<number, DoneEntry>();
  readonly retries = new Map<number, RetryEntry[]>();
  readonly sleeps = new Map<number, SleepEntry>();
  readonly waits = new Map<number, WaitEntry>();
  readonly joins = new Map<number, JoinEntry>();
  /** Child runs started, by position. */
  readonly children = new Map<number, string>();
  /** How many times `workflows.retry` re-drove this run. */
  retried = 0;
  readonly signals: { offset: number; name: string; data: unknown }[] = [];
  /** Signal offsets already consumed by a journaled wait. */
  readonly consumed = new Set<number>();
  readonly lastAt = new Map<number, number>();
  offset = 0;

  /** Step rows folded, by position and key (a read from {@link stepFrom} on finds some again). */
  private readonly stepKeys = new Set<string>();
  /** Where the next read of the step rows starts (the last position read: a position may get more rows). */
  private stepFrom = 0;
  /** The first re-driven position of each `workflows.retry` applied, in order (see {@link addStep}). */
  private readonly retriedFrom: number[] = [];

  /** Folds an event of the run's stream. */
  add(ev: StreamEvent): void {
    // Already folded (a read that raced this journal's own write).
    if (ev.offset <= this.offset) return;
    this.offset = ev.offset;
    const e = decodeEntry(ev.payload);
    if (e === null) return;
    this.apply(e, ev.createdAt, ev.offset);
  }

  /**
   * Folds a step row; false when it belongs to a retry epoch whose re-drive is not folded yet (the next
   * read finds it again). A row written before a `workflows.retry` that re-drove its position is skipped.
   */
  private addStep(row: StepRow): boolean {
    const id = `${row.position}\u0000${row.key}`;
    if (this.stepKeys.has(id)) return true;
    const epoch = epochOfKey(row.key);
    if (epoch > this.retried) return false;
    this.stepKeys.add(id);
    for (let k = epoch; k < this.retriedFrom.length; k++) if (row.position >= this.retriedFrom[k]!) return true;
    const e = decodeEntry(row.payload);
    if (e !== null && 'position' in e) this.apply(e, row.createdAt, 0);
    return true;
  }

  private apply(e: Entry, createdAt: number, offset: number): void {
    const ev = { createdAt, offset };
    switch (e.type) {
      case 'start':
        this.start ??= e;
        this.startedAt = ev.createdAt;
        break;
      case 'done':
        if (!this.done.has(e.position)) this.done.set(e.position, e);
        if (e.kind === 'child' && !e.error) this.children.set(e.position, (e.result as { id: string }).id);
        if (e.kind === 'signal' && e.result !== undefined) this.consumed.add((e.result as ConsumedSignal).offset);
        this.lastAt.set(e.position, ev.createdAt);
        break;
      case 'retry':
        this.retries.set(
          e.position,
          [...(this.retries.get(e.position) ?? []), e].sort((a, b) => a.attempt - b.attempt),
        );
        this.lastAt.set(e.position, ev.createdAt);
        break;
      case 'sleep':
        this.sleeps.set(e.position, e);
        this.lastAt.set(e.position, ev.createdAt);
        break;
      case 'wait':
        this.waits.set(e.position, e);
        this.lastAt.set(e.position, ev.createdAt);
        break;
      case 'join':
        this.joins.set(e.position, e);
        this.lastAt.set(e.position, ev.createdAt);
        break;
      case 'retried':
        // A retry forgets the run's end and every position from the failed one on (their guards are
        // re-keyed by the retry count, see guard()).
        if (this.end?.state === 'failed') {
          this.end = null;
          this.finishedAt = null;
          this.retried += 1;
          for (const m of [
            this.done,
            this.retries,
            this.sleeps,
            this.waits,
            this.joins,
            this.children,
            this.lastAt,
          ] as Map<number, unknown>[])
            for (const k of [...m.keys()]) if (k >= e.fromPosition) m.delete(k);
          this.retriedFrom.push(e.fromPosition);
          this.stepFrom = Math.min(this.stepFrom, e.fromPosition);
        }
        break;
      case 'signal':
        this.signals.push({ offset: ev.offset, name: e.name, data: e.data });
        break;
      case 'cancel':
        if (!this.end && !this.cancelled) {
          this.cancelled = true;
          this.finishedAt = ev.createdAt;
        }
        break;
      case 'end':
        if (!this.end && !this.cancelled) {
          this.end = e;
          this.finishedAt = ev.createdAt;
        }
        break;
    }
  }

  private reading: Promise<unknown> = Promise.resolve();
  /** Reads in flight: while one is, an entry of our own is not folded (the read brings it). */
  private reads = 0;

  /**
   * Folds `stored`, a stream entry this process just committed at `offset` (a run's start), when it
   * directly follows what was folded: true. False when the journal must be read.
   */
  follows(offset: number, stored: unknown): boolean {
    if (this.reads > 0 || offset !== this.offset + 1) return false;
    this.add({ offset, stream: '', key: null, payload: stored as never, createdAt: Date.now() });
    return true;
  }

  /**
   * Folds `stored`, a step entry this process just committed at `position` under `key`, when the run's
   * stream head was `head` then and nothing of the stream is unread (`head` is what was folded): true.
   * False when the journal must be read. Its time is this process's clock (only readers' views show
   * entry times, and they read).
   */
  own(head: number, position: number, key: string, stored: unknown): boolean {
    if (this.reads > 0 || head !== this.offset) return false;
    return this.addStep({ position, key, payload: stored, createdAt: Date.now() });
  }

  /** Reads what was journaled since the last read (one read at a time); true when there was anything. */
  refresh(store: Store, names: Names, id: string): Promise<boolean> {
    this.reads += 1;
    const next = this.reading.then(() => this.readMore(store, names, id)).finally(() => (this.reads -= 1));
    this.reading = next.catch(() => undefined);
    return next;
  }

  private async readMore(store: Store, names: Names, id: string): Promise<boolean> {
    let any = false;
    const stream = names.runStream(id);
    for (;;) {
      const events = await store.stream(stream).readSince(this.offset, 1000);
      for (const ev of events) this.add(ev);
      if (events.length > 0) any = true;
      if (events.length < 1000) break;
    }
    // The stream first: a row of a retry epoch is folded once the stream's re-drive entry is.
    const sql = workflowSqlOf(store as object);
    if (sql === null) return any;
    const rows = await readSteps(sql, names.ns, id, this.stepFrom);
    let from: number | null = null;
    for (const row of rows) {
      const had = this.stepKeys.size;
      if (!this.addStep(row)) from ??= row.position;
      else if (this.stepKeys.size > had) any = true;
    }
    this.stepFrom = from ?? (rows.length > 0 ? rows[rows.length - 1]!.position : this.stepFrom);
    return any;
  }

  /** A guard's `what` in the run's current retry epoch (positions re-run after `workflows.retry` get fresh guards). */
  epoch(what: string): string {
    return this.retried === 0 ? what : `${what}@${this.retried}`;
  }

  get state(): RunState {
    if (this.cancelled) return 'cancelled';
    if (this.end) return this.end.state;
    return 'running';
  }

  /** The first signal named `name` that no wait consumed, or null. */
  firstUnconsumed(name: string): { offset: number; data: unknown } | null {
    return this.signals.find((s) => s.name === name && !this.consumed.has(s.offset)) ?? null;
  }

  /** Every journaled position, ascending. */
  positions(): number[] {
    return [
      ...new Set([
        ...this.done.keys(),
        ...this.retries.keys(),
        ...this.sleeps.keys(),
        ...this.waits.keys(),
        ...this.joins.keys(),
      ]),
    ].sort((a, b) => a - b);
  }

  toRun(id: string): WorkflowRun | null {
    const s = this.start;
    if (!s) return null;
    const steps: RunStep[] = this.positions().map((p) => this.stepAt(p));
    const end = this.end;
    return {
      id,
      workflow: s.workflow,
      version: s.version,
      state: this.state,
      input: s.input,
      parentId: s.parentId ?? null,
      children: [...this.children.entries()].sort((a, b) => a[0] - b[0]).map(([, id]) => id),
      result: end?.state === 'completed' ? end.result : undefined,
      error: end?.state === 'failed' ? end.error : null,
      startedAt: this.startedAt,
      finishedAt: this.finishedAt,
      steps,
    };
  }

  private stepAt(p: number): RunStep {
    const d = this.done.get(p);
    const retries = this.retries.get(p) ?? [];
    const sleep = this.sleeps.get(p);
    const wait = this.waits.get(p);
    const join = this.joins.get(p);
    const at = this.lastAt.get(p) ?? 0;
    const failures = retries.length + (d?.error ? 1 : 0);
    if (d)
      return {
        position: p,
        kind: d.kind,
        name: d.name,
        state: d.error ? 'failed' : 'done',
        failures,
        until: null,
        at,
        ...(d.error ? { error: d.error } : {}),
      };
    if (sleep) return { position: p, kind: 'sleep', name: '', state: 'sleeping', failures: 0, until: sleep.until, at };
    if (wait)
      return { position: p, kind: 'signal', name: wait.signal, state: 'waiting', failures: 0, until: wait.until, at };
    if (join)
      return {
        position: p,
        kind: 'children',
        name: join.runIds.join(' '),
        state: 'waiting',
        failures: 0,
        until: null,
        at,
      };
    const last = retries[retries.length - 1]!;
    return {
      position: p,
      kind: last.kind,
      name: last.name,
      state: 'retrying',
      failures,
      until: last.retryAt,
      at,
      error: last.error,
    };
  }
}

/** Reads a whole run's journal. */
export async function loadJournal(store: Store, names: Names, id: string): Promise<Journal> {
  const j = new Journal();
  await j.refresh(store, names, id);
  return j;
}

/** A journal entry as readers list it: a stream event (`offset`) or a step row (`offset` null), with its time. */
export interface JournalLine {
  readonly offset: number | null;
  readonly at: number;
  readonly entry: Entry;
}

/**
 * The first `limit` stream events of run `id` and its first `limit` step rows, decoded, in time order
 * (ties: stream events by offset, then step rows by position): the raw journal a reader shows.
 */
export async function journalLines(store: Store, names: Names, id: string, limit: number): Promise<JournalLine[]> {
  const events = await store.stream(names.runStream(id)).readSince(0, limit);
  const sql = workflowSqlOf(store as object);
  const rows = sql === null ? [] : await readSteps(sql, names.ns, id, 0, limit);
  const lines: (JournalLine & { readonly order: number })[] = [];
  for (const ev of events) {
    const entry = decodeEntry(ev.payload);
    if (entry !== null) lines.push({ offset: ev.offset, at: ev.createdAt, entry, order: ev.offset });
  }
  for (const row of rows) {
    const entry = decodeEntry(row.payload);
    if (entry !== null) lines.push({ offset: null, at: row.createdAt, entry, order: Number.MAX_SAFE_INTEGER });
  }
  return lines.sort((a, b) => a.at - b.at || a.order - b.order).map(({ offset, at, entry }) => ({ offset, at, entry }));
}

/** An entry of the runs index (`<ns>:runs`, keyed by run id): a start, then at most one terminal state. */
export type IndexEntry =
  | { readonly state: 'running'; readonly workflow: string; readonly version: number }
  | { readonly state: Exclude<RunState, 'running'> | 'pruned' };

/** The stored form of an {@link IndexEntry}. */
export type StoredIndexEntry =
  | { readonly s: 'running'; readonly wf: string; readonly v: number }
  | { readonly s: Exclude<RunState, 'running'> | 'pruned' };

export function encodeIndexEntry(e: IndexEntry): StoredIndexEntry {
  return e.state === 'running' ? { s: 'running', wf: e.workflow, v: e.version } : { s: e.state };
}

/** The index entry a stored event holds, or null for anything else. */
export function decodeIndexEntry(payload: unknown): IndexEntry | null {
  if (payload === null || typeof payload !== 'object') return null;
  const s = payload as StoredIndexEntry;
  if (s.s === 'running') return { state: 'running', workflow: s.wf, version: s.v };
  return typeof s.s === 'string' ? { state: s.s } : null;
}

/** A run as the 0.2 runs index tells it. */
export interface LegacyRun {
  readonly id: string;
  readonly workflow: string;
  readonly version: number;
  readonly state: RunState;
  readonly startedAt: number;
  readonly finishedAt: number | null;
}

/**
 * The runs index of 0.2 (`<ns>:runs`, superseded by the runs table: prune.ts adopts it) folded, and how far
 * it can be trimmed: `firstOffset` of each run is the offset of
 * its first entry still needed (its latest start), and `last` the offset of the last entry read.
 */
export async function readIndex(
  store: Store,
  names: Names,
): Promise<{ runs: (LegacyRun & { readonly firstOffset: number })[]; last: number }> {
  const runs = new Map<
    string,
    {
      id: string;
      workflow: string;
      version: number;
      state: RunState;
      startedAt: number;
      finishedAt: number | null;
      firstOffset: number;
    }
  >();
  let offset = 0;
  for (;;) {
    const events = await store.stream(names.runsStream).readSince(offset, 1000);
    for (const ev of events) {
      offset = ev.offset;
      const id = ev.key;
      if (id === null) continue;
      const e = decodeIndexEntry(ev.payload);
      if (e === null) continue;
      const run = runs.get(id);
      if (e.state === 'running') {
        if (!run)
          runs.set(id, {
            id,
            workflow: e.workflow,
            version: e.version,
            state: 'running',
            startedAt: ev.createdAt,
            finishedAt: null,
            firstOffset: ev.offset,
          });
        else if (run.state === 'failed') {
          // workflows.retry re-drove it.
          run.state = 'running';
          run.finishedAt = null;
        }
      } else if (e.state === 'pruned') {
        runs.delete(id);
      } else if (run && run.state === 'running') {
        run.state = e.state;
        run.finishedAt = ev.createdAt;
      }
    }
    if (events.length < 1000) break;
  }
  return { runs: [...runs.values()], last: offset };
}
