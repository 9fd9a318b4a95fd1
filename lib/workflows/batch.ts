import type { Store, TxOps } from '../contract/types.js';
import type { EndedRun, EndResult, RunStart, StartOutcome, StepAppend, WorkflowSql } from './sql-seam.js';
import { sqlOfTx } from './runs.js';
import { insertStep } from './steps.js';

// Group commit of the workflows' own writes: the journal entries of steps, the ends and the starts of
// many runs share one transaction (one commit, one fsync) instead of one each. A write that arrives
// while the engine's transactions are all busy waits for the next one, which takes every write
// waiting then; alone, a write goes at once. Each write is a function of the transaction that must
// not throw for an expected outcome (a lost once-only guard returns a value saying so, having
// written nothing): a throw rolls the shared transaction back, and then every write of it goes
// again in a transaction of its own, so one write's failure is its own.
//
// PostgreSQL runs several shared transactions at once: a write given here must lock only rows of its
// own run (or of a run it creates), so two shared transactions, holding disjoint runs, never wait for
// each other. A write that locks another run's rows (an end that enqueues its parent's pass) goes alone.
//
// A journal entry with nothing else to write (a step's outcome, the common case) takes `append`: where
// the engine writes many such entries at once (PostgreSQL: one statement; SQLite: one write of its
// writer), the entries waiting go together in one round trip and one commit; elsewhere (a store
// without that form) it is a shared write like any other. Starts and ends take `start` and `end` the
// same way where the engine writes many of them in one statement (PostgreSQL).

interface Queued {
  readonly fn: (tx: TxOps) => Promise<unknown>;
  /** The same write without a transaction of its own (one statement, its own commit), used when it goes alone. */
  readonly solo: (() => Promise<unknown>) | undefined;
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: unknown) => void;
}

/** Most writes in one shared transaction or statement. */
const MAX_BATCH = 128;

interface LaneItem<I, R> {
  readonly item: I;
  readonly resolve: (r: R) => void;
  readonly reject: (err: unknown) => void;
}

/**
 * Writes of one kind that the engine takes many at a time in one statement (`many`), each at most once
 * per statement by its `key` (a second write of a key waits for the next statement).
 */
class Lane<I, R> {
  readonly items: LaneItem<I, R>[] = [];
  /** Statements of this lane in flight. */
  flushing = 0;

  constructor(
    private readonly key: (item: I) => string,
    private readonly many: (items: readonly I[]) => Promise<R[]>,
    /** The write alone, where the engine has a lighter statement for one. */
    private readonly one?: (item: I) => Promise<R>,
  ) {}

  push(item: I, pump: () => void): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.items.push({ item, resolve, reject });
      pump();
    });
  }

  /** The next statement's writes: the first of each key, up to {@link MAX_BATCH}. */
  private take(): LaneItem<I, R>[] {
    const batch: LaneItem<I, R>[] = [];
    const keys = new Set<string>();
    for (let i = 0; i < this.items.length && batch.length < MAX_BATCH;) {
      const k = this.key(this.items[i]!.item);
      if (keys.has(k)) {
        i += 1;
        continue;
      }
      keys.add(k);
      batch.push(this.items[i]!);
      this.items.splice(i, 1);
    }
    return batch;
  }

  /** Writes the next statement's writes. */
  async flushNext(): Promise<void> {
    const batch = this.take();
    if (batch.length === 1 && this.one) {
      const b = batch[0]!;
      return this.one(b.item).then(b.resolve, b.reject);
    }
    let out: R[];
    try {
      out = await this.many(batch.map((b) => b.item));
    } catch (err) {
      if (batch.length === 1) return batch[0]!.reject(err);
      // Nothing of the statement committed: each write goes again on its own.
      await Promise.all(
        batch.map((b) =>
          this.many([b.item]).then(
            (r) => b.resolve(r[0]!),
            (e: unknown) => b.reject(e),
          ),
        ),
      );
      return;
    }
    for (const [i, b] of batch.entries()) b.resolve(out[i]!);
  }
}

export class TxBatcher {
  private readonly queued: Queued[] = [];
  private readonly appends: Lane<StepAppend, number | null> | null;
  private readonly ends: Lane<EndedRun, EndResult> | null;
  private readonly starts: Lane<RunStart, StartOutcome> | null;
  private inFlight = 0;
  /** Shared transactions open (of {@link inFlight}). */
  private txInFlight = 0;

  constructor(
    private readonly store: Store,
    /**
     * Writes in flight at once: `tx` shared transactions, `lane` statements of each lane, `all` in all.
     * SQLite has one write path, which an open transaction holds: one shared transaction, and one
     * statement per lane (its writer commits the lanes' statements of a moment together).
     */
    private readonly limits: { readonly all: number; readonly tx: number; readonly lane: number },
    /** The store's own statements, for the one-statement journal append where the engine has it. */
    private readonly sql: WorkflowSql,
    /** The inbox that holds the once-only guards of the runs' ends. */
    private readonly guardInbox: string,
    /** The inbox that holds the starts' once-only guards. */
    private readonly startInbox: string,
  ) {
    const { appendSteps, startRuns, endRuns } = sql;
    this.appends = appendSteps
      ? new Lane(
          (w) => w.stream,
          (ws) => appendSteps.call(sql, ws),
        )
      : null;
    this.ends = endRuns
      ? new Lane(
          (e) => e.stream,
          (es) => endRuns.call(sql, guardInbox, es),
        )
      : null;
    const { startRun } = sql;
    this.starts = startRuns
      ? new Lane(
          (s) => s.stream,
          (ss) => startRuns.call(sql, startInbox, ss),
          startRun && ((s) => startRun.call(sql, startInbox, s.stream, s.entry, s.run, s.job)),
        )
      : null;
  }

  /** Writes waiting for a transaction (bounded by the passes running: each waits for its own). */
  get waiting(): number {
    const lanes = [this.appends, this.ends, this.starts];
    return lanes.reduce((n, l) => n + (l?.items.length ?? 0), this.queued.length);
  }

  /**
   * Writes the step row `write` (its key is its once-only guard); resolves once committed to the head
   * offset of the run's stream then, or to null when another writer held the key (nothing written).
   */
  append(write: StepAppend): Promise<number | null> {
    if (this.appends) return this.appends.push(write, () => this.pump());
    return this.run((tx) => insertStep(sqlOfTx(tx), write));
  }

  /** Whether the engine writes many starts (`start`) and ends (`end`) in one statement. */
  get manyStarts(): boolean {
    return this.starts !== null;
  }

  get manyEnds(): boolean {
    return this.ends !== null;
  }

  /** Whether `end` writes an end's `before` entry in the same commit (see `WorkflowSql.endsCarryEntry`). */
  get endsCarryEntry(): boolean {
    return this.ends !== null && this.sql.endsCarryEntry === true;
  }

  /** A run's start in a statement shared with the other starts waiting (see `WorkflowSql.startRuns`). */
  start(start: RunStart): Promise<StartOutcome> {
    return this.starts!.push(start, () => this.pump());
  }

  /** A run's end in a statement shared with the other ends waiting (see `WorkflowSql.endRuns`). */
  end(end: EndedRun): Promise<EndResult> {
    return this.ends!.push(end, () => this.pump());
  }

  /**
   * Runs `fn` in a transaction shared with other writes; resolves once that transaction committed.
   * `solo`: the same write as one autocommit statement, taken instead when it goes alone.
   */
  run<T>(fn: (tx: TxOps) => Promise<T>, solo?: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queued.push({ fn, solo, resolve: resolve as (v: unknown) => void, reject });
      this.pump();
    });
  }

  private scheduled = false;

  /**
   * Flushes once the current turn of the event loop is over: passes whose steps finished in the same turn
   * share the commit instead of the first going alone.
   */
  private pump(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pumpNow();
    });
  }

  private pumpNow(): void {
    // Ends first (they free what their runs hold), then starts (new work, waited for by their callers),
    // then steps' entries. A lane at its limit lets the next one go: a start never waits behind the
    // entries of runs that keep stepping.
    const lanes = [this.ends, this.starts, this.appends];
    const { all, tx, lane: perLane } = this.limits;
    while (this.inFlight < all) {
      const lane = lanes.find((l) => l !== null && l.items.length > 0 && l.flushing < perLane);
      const shared = !lane && this.queued.length > 0 && this.txInFlight < tx;
      if (!lane && !shared) return;
      this.inFlight += 1;
      if (lane) {
        lane.flushing += 1;
        void lane.flushNext().finally(() => {
          lane.flushing -= 1;
          this.inFlight -= 1;
          this.pump();
        });
      } else {
        this.txInFlight += 1;
        void this.flush(this.queued.splice(0, MAX_BATCH)).finally(() => {
          this.txInFlight -= 1;
          this.inFlight -= 1;
          this.pump();
        });
      }
    }
  }

  private async flush(batch: Queued[]): Promise<void> {
    if (batch.length === 1) return this.alone(batch[0]!);
    let results: unknown[];
    try {
      results = await this.store.withTx(async (tx) => {
        const out: unknown[] = [];
        for (const w of batch) out.push(await w.fn(tx));
        return out;
      });
    } catch {
      // Nothing of the shared transaction committed: each write goes again on its own.
      await Promise.all(batch.map((w) => this.alone(w)));
      return;
    }
    for (const [i, w] of batch.entries()) w.resolve(results[i]);
  }

  private async alone(w: Queued): Promise<void> {
    try {
      w.resolve(await (w.solo ? w.solo() : this.store.withTx(w.fn)));
    } catch (err) {
      w.reject(err);
    }
  }
}
