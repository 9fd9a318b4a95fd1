import type { Store, TxOps } from '../contract/types.js';

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

interface Queued {
  readonly fn: (tx: TxOps) => Promise<unknown>;
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: unknown) => void;
}

/** Most writes in one shared transaction. */
const MAX_BATCH = 128;

export class TxBatcher {
  private readonly queued: Queued[] = [];
  private inFlight = 0;

  constructor(
    private readonly store: Store,
    /** Shared transactions open at once (SQLite has one write path: 1). */
    private readonly maxInFlight: number,
  ) {}

  /** Writes waiting for a transaction (bounded by the passes running: each waits for its own). */
  get waiting(): number {
    return this.queued.length;
  }

  /** Runs `fn` in a transaction shared with other writes; resolves once that transaction committed. */
  run<T>(fn: (tx: TxOps) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queued.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.queued.length > 0) {
      const batch = this.queued.splice(0, MAX_BATCH);
      this.inFlight += 1;
      void this.flush(batch).finally(() => {
        this.inFlight -= 1;
        this.pump();
      });
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
      w.resolve(await this.store.withTx(w.fn));
    } catch (err) {
      w.reject(err);
    }
  }
}
