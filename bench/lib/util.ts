import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Repository root (bench/lib/../..). */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_HOST = '127.0.0.1';
export const REDIS_PORT = 6379;

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

let clockOverride: number | null = null;

/** Monotonic milliseconds (or the time set by `atTime` while its callback runs). */
export function now(): number {
  return clockOverride ?? performance.now();
}

/**
 * Runs the synchronous part of `fn` with `now()` reading `t`: a peer running
 * in a child process reports when its handler started (or its commit was
 * issued) and the parent replays that instant, so the stdio hop back is not
 * counted in the latency.
 */
export function atTime<T>(t: number, fn: () => T): T {
  const prev = clockOverride;
  clockOverride = t;
  try {
    return fn();
  } finally {
    clockOverride = prev;
  }
}

/** Milliseconds since the Unix epoch with sub-millisecond precision, comparable across processes on one machine. */
export function epochNow(): number {
  return performance.timeOrigin + performance.now();
}

/** `now()` of this process at another process's `epochNow()` reading. */
export function fromEpoch(epochMs: number): number {
  return epochMs - performance.timeOrigin;
}

/** Uniform integer gap in [lo, hi] ms (B3/B4/B5 latency samples). */
export function randomGap(lo = 5, hi = 25): number {
  return lo + Math.floor(Math.random() * (hi - lo + 1));
}

/** Nearest-rank percentile of an unsorted sample; NaN when empty. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export function median(values: readonly number[]): number {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return Number.NaN;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 === 1 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
}

/** Unique, lowercase identifier usable as a schema, queue or key prefix. */
export function uniqueId(prefix: string): string {
  return `${prefix}_${process.pid}_${Date.now().toString(36)}_${Math.floor(Math.random() * 1e6).toString(36)}`;
}

/** Rejects after `ms` with a message naming `what`; every await on a peer goes through this so no step can hang the run. */
export async function withTimeout<T>(what: string, ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
      }),
    ]);
  } finally {
    if (timer) clearTimeout(timer);
  }
}

/** Polls `check` every `intervalMs` until truthy; throws naming `what` after `timeoutMs`. */
export async function waitUntil(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  intervalMs = 2,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/** A counter whose `reached(n)` resolves as soon as the count gets to n (no polling for in-process events). */
export class Counter {
  private count = 0;
  private waiters: { n: number; resolve: () => void }[] = [];

  get value(): number {
    return this.count;
  }

  add(k = 1): void {
    this.count += k;
    if (this.waiters.length === 0) return;
    const still: { n: number; resolve: () => void }[] = [];
    for (const w of this.waiters) {
      if (this.count >= w.n) w.resolve();
      else still.push(w);
    }
    this.waiters = still;
  }

  reached(n: number, timeoutMs: number, what: string): Promise<void> {
    if (this.count >= n) return Promise.resolve();
    return withTimeout(
      `${what} (${this.count}/${n})`,
      timeoutMs,
      new Promise<void>((resolve) => {
        this.waiters.push({ n, resolve });
      }),
    );
  }
}

/** Waits for the handler of one latency sample; keyed by sample index. */
export class Arrivals {
  private readonly seen = new Map<number, number>();
  private readonly waiting = new Map<number, (t: number) => void>();

  mark(i: number): void {
    const t = now();
    if (this.seen.has(i)) return;
    this.seen.set(i, t);
    const w = this.waiting.get(i);
    if (w) {
      this.waiting.delete(i);
      w(t);
    }
  }

  /** Arrival time of sample `i` (monotonic ms), or null at the timeout. */
  async wait(i: number, timeoutMs: number): Promise<number | null> {
    const t = this.seen.get(i);
    if (t !== undefined) return t;
    let timer: NodeJS.Timeout | undefined;
    const r = await new Promise<number | null>((resolve) => {
      this.waiting.set(i, resolve);
      timer = setTimeout(() => {
        this.waiting.delete(i);
        resolve(null);
      }, timeoutMs);
    });
    if (timer) clearTimeout(timer);
    return r;
  }
}

const requireFromRoot = createRequire(join(ROOT, 'package.json'));

/** The installed version of a package, read from its own package.json. */
export function packageVersion(name: string): string {
  try {
    const path = requireFromRoot.resolve(`${name}/package.json`);
    return (JSON.parse(readFileSync(path, 'utf8')) as { version: string }).version;
  } catch {
    try {
      const path = join(ROOT, 'node_modules', name, 'package.json');
      return (JSON.parse(readFileSync(path, 'utf8')) as { version: string }).version;
    } catch {
      return 'unknown';
    }
  }
}

/** Payload of job `i`: small JSON, the same shape for every system. */
export function payload(i: number): { i: number; kind: string } {
  return { i, kind: 'bench' };
}

/** Index of a sample from whatever payload shape a peer hands back. */
export function indexOf(data: unknown): number {
  let d = data;
  if (typeof d === 'string') {
    try {
      d = JSON.parse(d) as unknown;
    } catch {
      return -1;
    }
  }
  if (d && typeof d === 'object' && 'i' in d && typeof (d as { i: unknown }).i === 'number')
    return (d as { i: number }).i;
  return -1;
}
