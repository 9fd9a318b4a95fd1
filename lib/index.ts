/**
 * alkstore: one `Store` over PostgreSQL or embedded SQLite.
 *
 * `openStore({ url })` picks the engine from the URL and loads only that
 * engine's driver, so a PostgreSQL-only application never loads better-sqlite3.
 */
export * from './contract/index.js';
export type { CommonStoreOptions, OpenStoreOptions } from './store-options.js';
export { openStore } from './open-store.js';
export { IncompatiblePeer, MissingPeer } from './internal/load-peer.js';
