import { InvalidOption } from '../contract/errors.js';
import type { EngineKind, Store, TxOps } from '../contract/types.js';
import type { Joined } from './runner.js';

/**
 * `store.joinTransaction` with the ORM's transaction wrapped as a {@link Joined}:
 * `fn` gets alkstore's operations and the ORM's own handle.
 */
export function joinVia<H, T>(
  store: Store,
  open: (body: (joined: Joined<H>) => Promise<T>) => Promise<T>,
  fn: (tx: TxOps, handle: H) => Promise<T>,
): Promise<T> {
  if (typeof fn !== 'function') throw new InvalidOption('fn', 'must be a function (tx, handle) => Promise<T>');
  return store.joinTransaction<Joined<H>, T>(open, (tx, joined) => fn(tx, joined.handle));
}

const ENGINE_NAME: Record<EngineKind, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' };

/** Refuses, before any I/O, an ORM handle on one SQL dialect joined to a store on the other. */
export function assertSameEngine(helper: string, input: string, handleEngine: EngineKind, store: Store): void {
  if (store === null || typeof store !== 'object' || typeof store.joinTransaction !== 'function') {
    throw new InvalidOption(
      `${helper}(store)`,
      'must be an alkstore Store (openStore(...), or the Store injected in Nest)',
    );
  }
  if (store.engine !== handleEngine) {
    throw new InvalidOption(
      `${helper}(${input})`,
      `is a ${ENGINE_NAME[handleEngine]} handle but the store is on ${ENGINE_NAME[store.engine]}; a transaction covers one database: open the store on the database this ${input} uses`,
    );
  }
}
