import type { Store, TxOps } from '../../lib/contract/types.js';

/** A store transaction held open until the test commits or rolls it back. */
export interface HeldTx extends TxOps {
  commit(): Promise<void>;
  rollback(): Promise<void>;
  /** True once `commit()` or `rollback()` was called. */
  readonly finished: boolean;
}

const ROLLBACK = Symbol('rollback');

/**
 * Opens `store.withTx(fn)` and keeps its callback waiting, so that a test can interleave two
 * transactions, write from outside one while it is open, or commit them out of order. The test's
 * own code runs outside the callback (as another request would), and `commit()` / `rollback()`
 * settle with what `withTx` settles with (a rollback's own rejection is swallowed).
 */
export async function openTx(store: Store): Promise<HeldTx> {
  let opened!: (tx: TxOps) => void;
  const ready = new Promise<TxOps>((resolve) => (opened = resolve));
  let end!: (commit: boolean) => void;
  const ending = new Promise<boolean>((resolve) => (end = resolve));
  const done = store.withTx(async (tx) => {
    opened(tx);
    if (!(await ending)) throw ROLLBACK;
  });
  const tx = await Promise.race([
    ready,
    done.then(() => Promise.reject(new Error('withTx ended before its callback ran'))),
  ]);
  let finished = false;
  const settle = async (commit: boolean): Promise<void> => {
    finished = true;
    end(commit);
    try {
      await done;
    } catch (err) {
      if (err !== ROLLBACK) throw err;
    }
  };
  return new Proxy(tx as HeldTx, {
    get(target, prop) {
      if (prop === 'commit') return () => settle(true);
      if (prop === 'rollback') return () => settle(false);
      if (prop === 'finished') return finished;
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
