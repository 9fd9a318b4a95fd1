import { afterAll, beforeAll, expect } from '@jest/globals';
import type { RunSchedulesOpts, Store } from '../../lib/contract/types.js';
import { type EngineDb, type EngineFixture, waitFor } from '../helpers/engines.js';

/** What a contract module gets: one database per describe block, and stores on it. */
export interface ContractEnv {
  readonly engine: EngineFixture;
  readonly db: EngineDb;
  /** The main store. */
  readonly store: Store;
  /** A second, independent store on the same database (another process's view). */
  readonly other: Store;
}

/**
 * Registers beforeAll/afterAll for one describe block: a fresh database and two
 * stores on it. Tests use unique names (see {@link uid}) so they never share rows.
 */
export function useEnv(engine: EngineFixture): ContractEnv {
  let db: EngineDb | undefined;
  let store: Store | undefined;
  let other: Store | undefined;
  beforeAll(async () => {
    db = await engine.create();
    store = await db.open();
    other = await db.open();
  }, 60_000);
  afterAll(async () => {
    await db?.destroy();
  }, 60_000);
  const need = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`${what} is not open (did beforeAll fail?)`);
    return v;
  };
  return {
    engine,
    get db() {
      return need(db, 'the database');
    },
    get store() {
      return need(store, 'the store');
    },
    get other() {
      return need(other, 'the second store');
    },
  };
}

let seq = 0;
/** A name no other test uses (each test file runs in its own database anyway). */
export function uid(prefix: string): string {
  seq += 1;
  return `${prefix}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

type ErrorClass = abstract new (...args: never[]) => Error;

/**
 * Calls `fn` and asserts it fails with `cls`, whether it throws synchronously
 * or rejects (factories like `store.queue(name)` are synchronous).
 */
export async function expectError<E extends Error>(
  fn: () => unknown,
  cls: abstract new (...args: never[]) => E,
): Promise<E> {
  let caught: unknown;
  let threw = false;
  try {
    await fn();
  } catch (err) {
    caught = err;
    threw = true;
  }
  if (!threw) throw new Error(`expected ${cls.name}, but the call succeeded`);
  if (!(caught instanceof cls)) {
    throw new Error(
      `expected ${cls.name}, got ${caught instanceof Error ? `${caught.name}: ${caught.message}` : String(caught)}`,
    );
  }
  return caught;
}

/** Asserts `fn` fails with `cls` and that the message names `input`. */
export async function expectNamedError(fn: () => unknown, cls: ErrorClass, input: string): Promise<void> {
  const err = await expectError(fn, cls);
  expect(err.message).toContain(JSON.stringify(input));
}

/** Waits until the database clock is past `instant` (epoch ms). */
export async function untilDbPasses(store: Store, instant: number, timeoutMs = 15_000): Promise<number> {
  return waitFor(
    `the database clock to pass ${instant}`,
    async () => {
      const now = await store.now();
      return now > instant ? now : 0;
    },
    timeoutMs,
    10,
  );
}

/** Settles `p` or fails after `ms` naming `what` (for calls that must end, e.g. a runner after abort). */
export async function within<T>(what: string, ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A short pause that is never used as proof of anything (only to give a race a chance to happen). */
export function pause(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A `runSchedules` call running in the background. */
export interface Runner {
  /** Aborts the runner and waits (at most 15 s) for it to resolve. */
  stop(): Promise<void>;
  readonly result: Promise<void>;
  /** Set when the runner rejected before it was stopped. */
  readonly error: unknown;
}

/** Starts `runSchedules` in the background (maxTickMs 100 unless given); `stop()` aborts it and waits for it to resolve. */
export function startRunner(store: Store, opts: RunSchedulesOpts = {}): Runner {
  const ac = new AbortController();
  const result = store.runSchedules(ac.signal, { maxTickMs: 100, ...opts });
  let error: unknown;
  // Keep an early rejection from being reported as unhandled before the test awaits it.
  result.catch((err: unknown) => {
    error = err ?? new Error('runSchedules rejected');
  });
  return {
    result,
    get error() {
      return error;
    },
    async stop() {
      ac.abort();
      await within('runSchedules after abort', 15_000, result);
    },
  };
}

export { waitFor };
