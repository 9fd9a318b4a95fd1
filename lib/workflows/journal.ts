import { workflowsQueueName } from '../contract/names.js';
import type { Store, StreamEvent } from '../contract/types.js';
import type { JournaledError } from './errors.js';
import type { RunState, RunStep, RunSummary, WorkflowRun } from './types.js';

// The journal of a run is the stream `<ns>:run:<id>`: one event per entry, in commit order. Entries with a
// position are written by the run's driver, each under a once-only inbox guard in the same transaction, so
// a position holds at most one entry of each kind; signals and cancellation are written by anyone.

/** What a positioned call was. */
export type CallKind = 'step' | 'transaction' | 'sleep' | 'signal' | 'now' | 'random' | 'child' | 'children';

export type Entry =
  /**
   * The run began; `pa` is the parent run of a child started by `ctx.startChild`; `pr` its priority,
   * `ck` / `rk` its concurrency and rate-limit keys, stamped on every job that advances it.
   */
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
  /** A call's outcome: `r` (wrapped so `undefined` survives JSON) or `e` after `a` attempts. */
  | {
      readonly t: 'done';
      readonly p: number;
      readonly k: CallKind;
      readonly n: string;
      readonly r?: { readonly v?: unknown };
      readonly e?: JournaledError;
      readonly a?: number;
    }
  /** Attempt `a` of a step failed; the next one is due at `at`. */
  | {
      readonly t: 'retry';
      readonly p: number;
      readonly k: CallKind;
      readonly n: string;
      readonly a: number;
      readonly e: JournaledError;
      readonly at: number;
    }
  /** A sleep began; it is over once the database clock reaches `until`. */
  | { readonly t: 'sleep'; readonly p: number; readonly until: number }
  /** A wait for signal `n` began; it times out at `until` (null: never). */
  | { readonly t: 'wait'; readonly p: number; readonly n: string; readonly until: number | null }
  /** A `ctx.waitAll` began waiting for the runs `ids` (each child's end drives this run again). */
  | { readonly t: 'join'; readonly p: number; readonly ids: readonly string[] }
  /** `workflows.retry` re-drives a failed run from its first failed position: entries before `from` stay. */
  | { readonly t: 'retried'; readonly from: number }
  /** A signal (consumed by the first wait for its name that finds it unconsumed). */
  | { readonly t: 'signal'; readonly n: string; readonly d: unknown }
  | { readonly t: 'cancel' }
  | {
      readonly t: 'end';
      readonly s: 'completed' | 'failed';
      readonly r?: { readonly v?: unknown };
      readonly e?: JournaledError;
    };

/** What every job advancing a run carries: its priority and limit keys, from its start entry. */
export type RunStamp = Pick<Entry & { t: 'start' }, 'pr' | 'ck' | 'rk'>;

/** The job options of a run's stamp (none for a run started without them). */
export function stampOpts(s: RunStamp | null | undefined): {
  priority?: number;
  concurrencyKey?: string;
  rateLimitKey?: string;
} {
  if (!s) return {};
  return {
    ...(s.pr ? { priority: s.pr } : {}),
    ...(s.ck === undefined ? {} : { concurrencyKey: s.ck }),
    ...(s.rk === undefined ? {} : { rateLimitKey: s.rk }),
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
  start: (Entry & { t: 'start' }) | null = null;
  startedAt = 0;
  end: (Entry & { t: 'end' }) | null = null;
  cancelled = false;
  finishedAt: number | null = null;
  readonly done = new Map<number, Entry & { t: 'done' }>();
  readonly retries = new Map<number, (Entry & { t: 'retry' })[]>();
  readonly sleeps = new Map<number, Entry & { t: 'sleep' }>();
  readonly waits = new Map<number, Entry & { t: 'wait' }>();
  readonly joins = new Map<number, Entry & { t: 'join' }>();
  /** Child runs started, by position. */
  readonly children = new Map<number, string>();
  /** How many times `workflows.retry` re-drove this run. */
  retried = 0;
  readonly signals: { offset: number; name: string; data: unknown }[] = [];
  /** Signal offsets already consumed by a journaled wait. */
  readonly consumed = new Set<number>();
  readonly lastAt = new Map<number, number>();
  offset = 0;

  add(ev: StreamEvent): void {
    this.offset = ev.offset;
    const e = ev.payload as Entry;
    switch (e.t) {
      case 'start':
        this.start ??= e;
        this.startedAt = ev.createdAt;
        break;
      case 'done':
        if (!this.done.has(e.p)) this.done.set(e.p, e);
        if (e.k === 'child' && !e.e) this.children.set(e.p, (e.r?.v as { id: string }).id);
        if (e.k === 'signal') {
          const o = (e.r?.v as { o?: unknown } | null | undefined)?.o;
          if (typeof o === 'number') this.consumed.add(o);
        }
        this.lastAt.set(e.p, ev.createdAt);
        break;
      case 'retry':
        this.retries.set(e.p, [...(this.retries.get(e.p) ?? []), e]);
        this.lastAt.set(e.p, ev.createdAt);
        break;
      case 'sleep':
        this.sleeps.set(e.p, e);
        this.lastAt.set(e.p, ev.createdAt);
        break;
      case 'wait':
        this.waits.set(e.p, e);
        this.lastAt.set(e.p, ev.createdAt);
        break;
      case 'join':
        this.joins.set(e.p, e);
        this.lastAt.set(e.p, ev.createdAt);
        break;
      case 'retried':
        // A retry forgets the run's end and every position from the failed one on (their guards are
        // re-keyed by the retry count, see guard()).
        if (this.end?.s === 'failed') {
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
            for (const k of [...m.keys()]) if (k >= e.from) m.delete(k);
        }
        break;
      case 'signal':
        this.signals.push({ offset: ev.offset, name: e.n, data: e.d });
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

  /** Reads the events after the ones folded so far (one read at a time); true when there were any. */
  refresh(store: Store, stream: string): Promise<boolean> {
    const next = this.reading.then(() => this.readMore(store, stream));
    this.reading = next.catch(() => undefined);
    return next;
  }

  private async readMore(store: Store, stream: string): Promise<boolean> {
    let any = false;
    for (;;) {
      const events = await store.stream(stream).readSince(this.offset, 1000);
      for (const ev of events) this.add(ev);
      if (events.length > 0) any = true;
      if (events.length < 1000) return any;
    }
  }

  /** A guard's `what` in the run's current retry epoch (positions re-run after `workflows.retry` get fresh guards). */
  epoch(what: string): string {
    return this.retried === 0 ? what : `${what}@${this.retried}`;
  }

  get state(): RunState {
    if (this.cancelled) return 'cancelled';
    if (this.end) return this.end.s;
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
    return {
      id,
      workflow: s.wf,
      version: s.v,
      state: this.state,
      input: s.input,
      parentId: s.pa ?? null,
      children: [...this.children.entries()].sort((a, b) => a[0] - b[0]).map(([, id]) => id),
      result: this.end?.s === 'completed' ? this.end.r?.v : undefined,
      error: this.end?.s === 'failed' ? (this.end.e ?? null) : null,
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
    const failures = retries.length + (d?.e ? 1 : 0);
    if (d) return { position: p, kind: d.k, name: d.n, state: d.e ? 'failed' : 'done', failures, until: null, at };
    if (sleep) return { position: p, kind: 'sleep', name: '', state: 'sleeping', failures: 0, until: sleep.until, at };
    if (wait)
      return { position: p, kind: 'signal', name: wait.n, state: 'waiting', failures: 0, until: wait.until, at };
    if (join)
      return {
        position: p,
        kind: 'children',
        name: join.ids.join(' '),
        state: 'waiting',
        failures: 0,
        until: null,
        at,
      };
    const last = retries[retries.length - 1]!;
    return { position: p, kind: last.k, name: last.n, state: 'retrying', failures, until: last.at, at };
  }
}

/** Reads a whole run's journal. */
export async function loadJournal(store: Store, names: Names, id: string): Promise<Journal> {
  const j = new Journal();
  await j.refresh(store, names.runStream(id));
  return j;
}

/** Index entries (`<ns>:runs`, keyed by run id): a start, then at most one terminal state. */
export type IndexEntry =
  | { readonly s: 'running'; readonly wf: string; readonly v: number }
  | { readonly s: Exclude<RunState, 'running'> | 'pruned' };

/** Folds the runs index into summaries, oldest start first. */
export async function foldIndex(store: Store, names: Names): Promise<RunSummary[]> {
  return (await readIndex(store, names)).runs.map(({ firstOffset: _, ...summary }) => summary);
}

/**
 * The runs index folded, and how far it can be trimmed: `firstOffset` of each run is the offset of
 * its first entry still needed (its latest start), and `last` the offset of the last entry read.
 */
export async function readIndex(
  store: Store,
  names: Names,
): Promise<{ runs: (RunSummary & { readonly firstOffset: number })[]; last: number }> {
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
      const e = ev.payload as IndexEntry;
      const run = runs.get(id);
      if (e.s === 'running') {
        if (!run)
          runs.set(id, {
            id,
            workflow: e.wf,
            version: e.v,
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
      } else if (e.s === 'pruned') {
        runs.delete(id);
      } else if (run && run.state === 'running') {
        run.state = e.s;
        run.finishedAt = ev.createdAt;
      }
    }
    if (events.length < 1000) break;
  }
  return { runs: [...runs.values()], last: offset };
}
