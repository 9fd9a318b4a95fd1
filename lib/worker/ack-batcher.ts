/** Options of {@link AckBatcher}. */
export interface AckBatcherOptions<T> {
  /**
   * Writes one batch (`queue.ackBatch` over the items' jobs, usually with a
   * timeout) and resolves how many rows it changed. A count below the batch
   * size means some acks were fenced (their lease was lost), which is not an
   * error.
   */
  readonly write: (items: readonly T[]) => Promise<number>;
  /** Called once per batch that landed, with how many rows it changed. */
  readonly landed: (items: readonly T[], count: number) => void;
  /** Called once per batch whose write rejected; the owner decides whether to retry (by adding the items again). */
  readonly failed: (items: readonly T[], err: unknown) => void;
  /** Largest batch per write; a queue that reaches it is flushed at once. */
  readonly maxBatch: number;
  /** Writes allowed in flight at once (default 1: what completes during a write forms the next batch, as in a group commit). */
  readonly maxWrites?: number;
}

/**
 * Coalesces acks of jobs whose handlers succeeded into `queue.ackBatch` calls.
 *
 * An added item is written no later than the next macrotask (`setImmediate`,
 * so everything that completed in the same event-loop turn shares one
 * statement; no timer ever delays a lone ack), at once when the queue
 * reaches `maxBatch`, and, while a write is in flight, right after it
 * settles (so a slow database yields bigger batches instead of a backlog of
 * round trips). The batcher never retries by itself: `failed` hands the
 * items back to the owner, which knows its lease budget.
 */
export class AckBatcher<T> {
  private queued: T[] = [];
  private scheduled = false;
  private writing = 0;
  private writingBatches = 0;
  private idleWaiters: (() => void)[] = [];
  private readonly maxWrites: number;

  constructor(private readonly opts: AckBatcherOptions<T>) {
    if (!Number.isInteger(opts.maxBatch) || opts.maxBatch < 1)
      throw new RangeError(`maxBatch must be a positive integer, got ${String(opts.maxBatch)}`);
    this.maxWrites = opts.maxWrites ?? 1;
    if (!Number.isInteger(this.maxWrites) || this.maxWrites < 1)
      throw new RangeError(`maxWrites must be a positive integer, got ${String(opts.maxWrites)}`);
  }

  /** Items queued or being written. */
  get size(): number {
    return this.queued.length + this.writing;
  }

  /** Items waiting for a write (not yet sent). */
  get queuedCount(): number {
    return this.queued.length;
  }

  /** Queues one ack. */
  add(item: T): void {
    this.queued.push(item);
    if (this.queued.length >= this.opts.maxBatch && this.writingBatches < this.maxWrites) this.pump();
    else this.schedule();
  }

  /** Writes everything queued now (within `maxWrites`), without waiting for the next turn. */
  flush(): void {
    this.pump();
  }

  /** Resolves once nothing is queued or being written. */
  idle(): Promise<void> {
    if (this.queued.length === 0 && this.writingBatches === 0) return Promise.resolve();
    this.schedule();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    while (this.queued.length > 0 && this.writingBatches < this.maxWrites) {
      const batch = this.queued.splice(0, this.opts.maxBatch);
      void this.writeBatch(batch);
    }
    this.checkIdle();
  }

  private async writeBatch(batch: T[]): Promise<void> {
    this.writingBatches += 1;
    this.writing += batch.length;
    let count: number | null = null;
    let error: unknown = null;
    try {
      count = await this.opts.write(batch);
    } catch (err) {
      error = err;
    }
    this.writingBatches -= 1;
    this.writing -= batch.length;
    // Callbacks run before the next batch is cut, so items they add back join it.
    try {
      if (count !== null) this.opts.landed(batch, count);
      else this.opts.failed(batch, error);
    } finally {
      this.pump();
    }
  }

  private checkIdle(): void {
    if (this.queued.length > 0 || this.writingBatches > 0 || this.idleWaiters.length === 0) return;
    const ws = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of ws) w();
  }
}
