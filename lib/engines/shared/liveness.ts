// Dead worker detection, both engines: the sweep's schedule and its failure handling. How a worker is
// judged dead is the engine's (PostgreSQL: session advisory locks; SQLite: process ids).
import type { StoreLogger } from '../../contract/types.js';

/** How often a store that claims looks for dead workers (ms), give or take {@link SWEEP_JITTER_MS}. */
export const LIVENESS_SWEEP_MS = 400;
const SWEEP_JITTER_MS = 100;

/**
 * Runs `sweep` every {@link LIVENESS_SWEEP_MS} ± {@link SWEEP_JITTER_MS} (jittered, so the stores of
 * a fleet do not sweep in step), each run after the last one settled, until `stopped()`. The timer
 * never keeps the process alive. Returns a function that cancels the next run.
 */
export function sweepEvery(sweep: () => Promise<unknown>, stopped: () => boolean): () => void {
  let timer: NodeJS.Timeout | null = null;
  const next = (): void => {
    timer = setTimeout(
      () => {
        void sweep().finally(() => {
          if (!stopped()) next();
        });
      },
      LIVENESS_SWEEP_MS - SWEEP_JITTER_MS + Math.floor(Math.random() * 2 * SWEEP_JITTER_MS),
    );
    timer.unref();
  };
  next();
  return () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
  };
}

/**
 * A store's sweep for dead workers: one {@link round} at a time every sweep interval once
 * {@link startSweeps} was called, until {@link close}. A round that fails is tried again at the next
 * interval (nothing of it was half done: each engine's round writes in one transaction); failures are
 * logged once per run of them.
 */
export abstract class LivenessSweeper {
  protected closed = false;
  private sweeping = false;
  private failing = false;
  /** Cancels the next sweep; null until the sweeps start. */
  private stopSweeps: (() => void) | null = null;

  constructor(
    private readonly engine: 'postgres' | 'sqlite',
    private readonly sweepLogger: StoreLogger,
  ) {}

  /** One look for dead workers; resolves to the queues whose jobs it freed (and woke). */
  protected abstract round(): Promise<string[]>;

  protected startSweeps(): void {
    if (this.stopSweeps !== null || this.closed) return;
    this.stopSweeps = sweepEvery(
      () => this.sweep(),
      () => this.closed,
    );
  }

  /** One round now (none while one runs or after close); the queues it woke. */
  async sweep(): Promise<string[]> {
    if (this.sweeping || this.closed) return [];
    this.sweeping = true;
    try {
      const queues = await this.round();
      this.failing = false;
      return queues;
    } catch (err) {
      if (!this.failing && !this.closed)
        this.sweepLogger.warn(`alkstore ${this.engine}: the dead worker sweep failed: ${String(err)}`);
      this.failing = true;
      return [];
    } finally {
      this.sweeping = false;
    }
  }

  close(): void {
    this.closed = true;
    this.stopSweeps?.();
  }
}
