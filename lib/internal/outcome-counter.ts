import { LATENCY_BUCKETS, latencyBucket } from '../contract/admin.js';
import { Closed } from '../contract/errors.js';

/** What a queue's workers reported, per kind. */
export interface OutcomeCounts {
  completed: number;
  retried: number;
  dead: number;
}

/** Buffered durations of one kind: count, sum and histogram (buckets of `LATENCY_BOUNDS_MS`). */
export interface LatencyBuffer {
  count: number;
  sumMs: number;
  buckets: number[];
}

/** Rows the engine adds to its per-minute throughput table in one statement, with the minute's latencies. */
export interface OutcomeRow extends OutcomeCounts {
  queue: string;
  wait: LatencyBuffer;
  run: LatencyBuffer;
}

/** How long one finished attempt waited for its claim and ran (ms). */
export interface OutcomeTimes {
  readonly waitMs: number;
  readonly runMs: number;
}

function emptyLatency(): LatencyBuffer {
  return { count: 0, sumMs: 0, buckets: new Array<number>(LATENCY_BUCKETS).fill(0) };
}

function addLatency(b: LatencyBuffer, ms: number): void {
  const v = Number.isFinite(ms) ? Math.max(0, Math.round(ms)) : 0;
  b.count += 1;
  b.sumMs += v;
  b.buckets[latencyBucket(v)]! += 1;
}

interface Buffered extends OutcomeCounts {
  wait: LatencyBuffer;
  run: LatencyBuffer;
}

/** How often buffered counts are written (ms). A crash loses at most this much of the chart, never a job. */
export const OUTCOME_FLUSH_MS = 5_000;

/**
 * Throughput counts for the dashboard, kept off the hot path: an ack only
 * bumps an in-memory number; every {@link OUTCOME_FLUSH_MS} (or when read, or
 * at close) one statement adds the buffered counts to the engine's per-minute
 * table. The counts are a display figure, so losing the last seconds on a
 * crash is acceptable; the jobs themselves are never affected.
 */
export class OutcomeCounter {
  private buffered = new Map<string, Buffered>();
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly write: (rows: OutcomeRow[]) => Promise<void>,
    private readonly onError: (err: unknown) => void,
  ) {}

  /**
   * Counts `n` outcomes of `kind`; `times` (one entry per outcome that has them) adds their wait and
   * run times to the minute's latency histograms. Memory only: a flush writes them.
   */
  record(queue: string, kind: keyof OutcomeCounts, n = 1, times: readonly OutcomeTimes[] = []): void {
    if (n <= 0) return;
    let c = this.buffered.get(queue);
    if (!c) {
      c = { completed: 0, retried: 0, dead: 0, wait: emptyLatency(), run: emptyLatency() };
      this.buffered.set(queue, c);
    }
    c[kind] += n;
    for (const t of times) {
      addLatency(c.wait, t.waitMs);
      addLatency(c.run, t.runMs);
    }
    if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = null;
        void this.flush().catch((err: unknown) => {
          if (!(err instanceof Closed)) this.onError(err);
        });
      }, OUTCOME_FLUSH_MS);
      this.timer.unref();
    }
  }

  /** Takes the buffered counts out (for a synchronous write at close). */
  drain(): OutcomeRow[] {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const rows = [...this.buffered].map(([queue, c]) => ({ queue, ...c }));
    this.buffered = new Map();
    return rows;
  }

  /** Writes what is buffered (in order with earlier flushes). */
  flush(): Promise<void> {
    const rows = this.drain();
    if (rows.length === 0) return this.writing;
    this.writing = this.writing.catch(() => undefined).then(() => this.write(rows));
    return this.writing;
  }

  /** Stops the timer; buffered counts are dropped unless `flush` ran first. */
  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
