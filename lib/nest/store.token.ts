import type { Store as StoreContract } from '../contract/types.js';

/**
 * The injection token of the opened store, so `constructor(private readonly
 * store: Store)` works in application code.
 *
 * The contract's `Store` is an interface, which has no runtime value Nest could
 * use as a token. This abstract class is that value; declaration merging gives
 * it every member of the contract's `Store`, so the parameter is fully typed.
 * The provided object is the engine's store: it is not an `instanceof Store`.
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export abstract class Store {}

// Merging is the point: the class is the token, the interface is the type.
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging, @typescript-eslint/no-empty-object-type
export interface Store extends StoreContract {}
