import { Closed } from '../../contract/errors.js';
import type { StoreIdentity } from '../../internal/message-id.js';
import type { Store } from '../../contract/types.js';
import { openConnection, retryOnBusy, sqliteOpener, type SqliteConn } from './connection.js';
import { resolveSqliteOptions, type SqliteStoreOptions } from './options.js';
import { applySchema, SCHEMA_VERSION } from './migrations.js';
import { SqliteStore } from './store.js';
import { asStoreError } from './writer.js';

export type { SqliteStoreOptions } from './options.js';
export { SqliteStore } from './store.js';
export { sqliteSchemaSql, SCHEMA_VERSION as SQLITE_SCHEMA_VERSION } from './migrations.js';

let fallbackSaid = false;

/**
 * Opens a store on an embedded SQLite file (WAL mode) or `:memory:`.
 * Creates the `__alkstore_*` tables if missing; safe to call from several
 * processes at once.
 */
export async function openSqliteStore(options: SqliteStoreOptions): Promise<Store> {
  const o = resolveSqliteOptions(options);
  const { open, fellBack } = await sqliteOpener(o.driver);
  if (fellBack && !fallbackSaid) {
    // Said once per process (a CLI command or an app may open several stores).
    fallbackSaid = true;
    // Installed but not loadable is worth a warning; not installed is the node:sqlite setup working as meant.
    if (fellBack.message.includes('native addon'))
      o.logger.warn(
        `SQLite driver: node:sqlite, because better-sqlite3's native addon does not load on Node ${process.version}; ` +
          "to use better-sqlite3, run npm rebuild better-sqlite3 (driver: 'node:sqlite' says node:sqlite is meant and drops this warning)",
      );
    else o.logger.log('SQLite driver: node:sqlite (better-sqlite3 is not installed)');
  }
  const writeConn = await openConnection(o.path, o.synchronous, {
    lockWaitTimeoutMs: o.lockWaitTimeoutMs,
    opener: open,
  });
  let readConn: SqliteConn | null = null;
  let claimConn: SqliteConn | null = null;
  let identity: StoreIdentity;
  try {
    const ready = (): void => undefined;
    if (!o.memory) {
      const mode = await retryOnBusy(
        'opening (journal_mode = WAL)',
        o.lockWaitTimeoutMs,
        ready,
        () => writeConn.db.pragma('journal_mode = WAL', { simple: true }) as string,
        asStoreError,
      );
      if (String(mode).toLowerCase() !== 'wal')
        o.logger.warn(
          `SQLite file ${JSON.stringify(o.path)} could not switch to WAL (journal_mode is ${String(mode)}); readers will block writers`,
        );
    }
    const change = await retryOnBusy(
      'creating the alkstore tables',
      o.lockWaitTimeoutMs,
      ready,
      () => {
        writeConn.db.exec('BEGIN IMMEDIATE');
        try {
          const done = applySchema(writeConn);
          writeConn.db.exec('COMMIT');
          return done;
        } catch (err) {
          if (writeConn.db.inTransaction) writeConn.db.exec('ROLLBACK');
          throw err;
        }
      },
      asStoreError,
    );
    identity = change.identity;
    if (change.created)
      o.logger.log(
        `alkstore sqlite: created the alkstore tables (schema version ${SCHEMA_VERSION}) in ${JSON.stringify(o.path)}`,
      );
    for (const m of change.applied)
      o.logger.log(`alkstore sqlite: applied migration ${m.version} (${m.name}) to ${JSON.stringify(o.path)}`);
    if (!o.memory)
      readConn = await openConnection(o.path, o.synchronous, { lockWaitTimeoutMs: o.lockWaitTimeoutMs, opener: open });
    // Deferred claims commit on their own NORMAL connection (PRAGMA synchronous cannot change per statement).
    if (!o.memory && o.synchronous === 'full' && o.claimDurability === 'deferred')
      claimConn = await openConnection(o.path, 'normal', { lockWaitTimeoutMs: o.lockWaitTimeoutMs, opener: open });
  } catch (err) {
    claimConn?.close();
    readConn?.close();
    writeConn.close();
    throw err instanceof Closed ? err : asStoreError(`opening SQLite store ${JSON.stringify(o.path)}`, err);
  }
  const store = new SqliteStore(o, writeConn, readConn, claimConn);
  store.setIdentity(identity);
  return store;
}
