/**
 * Reliable sync (seed 000): epoch-numbered byte frames kept in an outbox
 * until a peer acknowledges them, then pruned; replayed in ascending order
 * after a restart.
 *
 * `OutboxStore` (ordered byte storage) → `ReliableOutbox` (the protocol) →
 * `SyncDriver` (sending and acks). Independent of the `Store` engines; the
 * SQLite and PostgreSQL stores load their driver only when opened.
 */
export type { OutboxRecord } from './epoch.js';
export type { OutboxStore } from './outbox-store.js';
export { ReliableOutbox } from './reliable-outbox.js';
export { SyncDriver, type SyncDriverOptions, type SyncTransport } from './sync-driver.js';
export { DEFAULT_OUTBOX_KEY } from './store-options.js';
export { InMemoryOutboxStore } from './in-memory-outbox-store.js';
export { SqliteOutboxStore, type SqliteOutboxStoreOptions } from './sqlite-outbox-store.js';
export { PostgresOutboxStore, type PostgresOutboxStoreOptions } from './postgres-outbox-store.js';
export {
  FileJournalOutboxStore,
  journalFileName,
  type FileJournalOutboxStoreOptions,
  type JournalFsyncPolicy,
} from './file-journal-outbox-store.js';
export {
  JournalCorrupt,
  JOURNAL_OPCODES,
  applyJournal,
  decodeJournal,
  encodeJournalRecord,
  type DecodedJournal,
  type JournalRecord,
  type JournalState,
} from './journal-codec.js';
