import type { Store, TxOps } from '../contract/types.js';
import type { JournalAppend, WorkflowSql } from './sql-seam.js';

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
// without that form) it is a shared write like any other.

interface Queued {
  readonly fn: (tx: TxOps) => Promise<unknown>;
  /** The same write without a transaction of its own (one statement, its own commit), used when it goes alone. */
  readonly solo: (() => Promise<unknown>) | undefined;
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: unknown) => void;
}

/** Most writes in one shared transaction. */
const MAX_BATCH = 128;

interface QueuedAppend {
  readonly write: JournalAppend;
  readonly resolve: (offset: number | null) => void;
  readonly reject: (err: unknown) => void;
}

export class TxBatcher {
  private readonly queued: Queued[] = [];
  private readonly appends: QueuedAppend[] = [];
  private inFlight = 0;

  constructor(
    private readonly store: Store,
    /** Shared transactions open at once (SQLite has one write path: 1). */
    private readonly maxInFlight: number,
    /** The store's own statements, for the one-statement journal append where the engine has it. */
    private readonly sql: WorkflowSql,
    /** The inbox that holds the journal's once-only guards. */
    private readonly guardInbox: string,
  ) {}

  /** Writes waiting for a transaction (bounded by the passes running: each waits for its own). */
  get waiting(): number {
    return this.queued.length + this.appends.length;
  }

  /**
   * Appends `write.payload` to `write.stream` under the once-only guard `write.guard`; resolves to its
   * offset once committed, or null when another writer held the guard (nothing written).
   */
  append(write: JournalAppend): Promise<number | null> {
    if (!this.sql.appendJournal) {
      return this.run(async (tx) => {
        if ((await tx.inboxClaim(this.guardInbox, write.guard)) !== 'claimed') return null;
        return tx.publish(write.stream, write.payload);
      });
    }
    return new Promise<number | null>((resolve, reject) => {
      this.appends.push({ write, resolve, reject });
      this.pump();
    });
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
    while (this.inFlight < this.maxInFlight && (this.queued.length > 0 || this.appends.length > 0)) {
      this.inFlight += 1;
      const done = (): void => {
        this.inFlight -= 1;
        this.pump();
      };
      if (this.appends.length > 0) {
        // One statement takes each stream at most once: a second write to a stream waits for the next.
        const batch: QueuedAppend[] = [];
        const streams = new Set<string>();
        for (let i = 0; i < this.appends.length && batch.length < MAX_BATCH;) {
          const a = this.appends[i]!;
          if (streams.has(a.write.stream)) {
            i += 1;
            continue;
          }
          streams.add(a.write.stream);
          batch.push(a);
          this.appends.splice(i, 1);
        }
        void this.flushAppends(batch).finally(done);
      } else void this.flush(this.queued.splice(0, MAX_BATCH)).finally(done);
    }
  }

  private async flushAppends(batch: QueuedAppend[]): Promise<void> {
    let offsets: (number | null)[];
    try {
      offsets = await this.sql.appendJournal!(
        this.guardInbox,
        batch.map((a) => a.write),
      );
    } catch (err) {
      if (batch.length === 1) return batch[0]!.reject(err);
      // Nothing of the statement committed: each write goes again on its own.
      await Promise.all(
        batch.map((a) =>
          this.sql.appendJournal!(this.guardInbox, [a.write]).then(
            (o) => a.resolve(o[0] ?? null),
            (e: unknown) => a.reject(e),
          ),
        ),
      );
      return;
    }
    for (const [i, a] of batch.entries()) a.resolve(offsets[i] ?? null);
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
