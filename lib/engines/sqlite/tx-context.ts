// SQLite only: one write connection per store, so an application transaction
// holds the store's whole write path across its awaits, and a plain write made
// inside it would wait for the commit that waits for it.
import { AsyncLocalStorage } from 'node:async_hooks';

/** The application transaction whose callback is running (`withTx(fn)`, `joinTransaction`). */
export interface OpenTx {
  /** The writer whose mutex the transaction holds (a store's identity). */
  readonly owner: object;
  /** How errors name it. */
  readonly label: string;
  /** False once the transaction ended: contexts outlive it in timers and promises started inside. */
  active: boolean;
}

const current = new AsyncLocalStorage<OpenTx>();

/** Runs `fn` as the body of `tx`: plain writes of the same store inside it are refused at once. */
export function runInOpenTx<T>(tx: OpenTx, fn: () => Promise<T>): Promise<T> {
  return current.run(tx, async () => {
    try {
      return await fn();
    } finally {
      tx.active = false;
    }
  });
}

/** The open transaction of `owner` whose callback this code runs in, if any. */
export function openTxOf(owner: object): OpenTx | null {
  const tx = current.getStore();
  return tx !== undefined && tx.active && tx.owner === owner ? tx : null;
}
