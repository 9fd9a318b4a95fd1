import { AlkstoreError } from '../../contract/errors.js';
import type { SqliteConn } from './connection.js';
import { QUEUE_COUNTS_STEP } from './counts.sql.js';

/**
 * Numbered upgrade steps after the base DDL (version 1), sharing their numbers
 * with the PostgreSQL migrations. Each applied step is recorded in
 * `__alkstore_meta` as `migration:<n>`, so a step numbered below one already
 * applied (a gap filled by a later build) still runs. Steps are idempotent:
 * a fresh file runs them all after the base DDL.
 */
export interface SqliteMigration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/** The upgrade steps, in order. Never edit a released one: add the next. */
export const SQLITE_MIGRATIONS: readonly SqliteMigration[] = Object.freeze([
  { version: 4, name: 'queue counters', sql: QUEUE_COUNTS_STEP },
]);

/** Version of the `__alkstore_*` tables this build reads and writes. */
export const SCHEMA_VERSION = Math.max(1, ...SQLITE_MIGRATIONS.map((m) => m.version));

// Ids of jobs use AUTOINCREMENT so an id is never reused after deletes (a stale
// `cancel(id)` must not hit a newer job). Stream offsets come from a per-stream
// head row for the same reason after `trimTo`. Notify ids are pruned keeping
// the max row, so plain rowids never go backwards either.
const DDL = `
CREATE TABLE IF NOT EXISTS __alkstore_meta (
  key TEXT PRIMARY KEY,
  value INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS __alkstore_jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  queue TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'processing', 'dead')),
  payload TEXT NOT NULL,
  priority INTEGER NOT NULL,
  attempts INTEGER NOT NULL,
  max_attempts INTEGER NOT NULL,
  visibility_timeout_ms INTEGER NOT NULL,
  backoff_base_ms INTEGER NOT NULL,
  dead_letter_retention_ms INTEGER,
  run_at INTEGER NOT NULL,
  enqueued_at INTEGER NOT NULL,
  expires_at INTEGER,
  claimed_until INTEGER,
  claim_token TEXT,
  worker_id TEXT,
  last_error TEXT,
  died_at INTEGER
);
CREATE INDEX IF NOT EXISTS __alkstore_jobs_pending
  ON __alkstore_jobs (queue, priority DESC, run_at) WHERE state = 'pending'; -- rowid (id) is the implicit last key: claim order without a sort
CREATE INDEX IF NOT EXISTS __alkstore_jobs_processing
  ON __alkstore_jobs (queue, claimed_until) WHERE state = 'processing';
CREATE INDEX IF NOT EXISTS __alkstore_jobs_dead
  ON __alkstore_jobs (queue, id) WHERE state = 'dead';
CREATE INDEX IF NOT EXISTS __alkstore_jobs_expiring
  ON __alkstore_jobs (queue, expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE IF NOT EXISTS __alkstore_stream_heads (
  stream TEXT PRIMARY KEY,
  last_seq INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS __alkstore_events (
  stream TEXT NOT NULL,
  seq INTEGER NOT NULL,
  key TEXT,
  payload TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (stream, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS __alkstore_offsets (
  stream TEXT NOT NULL,
  consumer TEXT NOT NULL,
  seq INTEGER NOT NULL,
  PRIMARY KEY (stream, consumer)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS __alkstore_notify (
  id INTEGER PRIMARY KEY,
  channel TEXT NOT NULL,
  created_at INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS __alkstore_locks (
  name TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  expires_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS __alkstore_schedules (
  name TEXT PRIMARY KEY,
  spec TEXT NOT NULL,
  interval_ms INTEGER NOT NULL,
  queue TEXT NOT NULL,
  payload TEXT NOT NULL,
  priority INTEGER NOT NULL,
  max_attempts INTEGER,
  expires_in_ms INTEGER,
  next_fire_at INTEGER NOT NULL
) WITHOUT ROWID;
`;

/**
 * Creates the engine tables if missing and checks the stored schema version.
 * Runs inside the caller's write transaction, so concurrent opens are safe.
 * (A meta row, not `PRAGMA user_version`: the file may be shared with an
 * application that owns user_version.)
 */
export function applySchema(conn: SqliteConn): void {
  conn.db.exec(DDL);
  const stored = conn.db.prepare("SELECT value FROM __alkstore_meta WHERE key = 'schema_version'").pluck().get() as number | undefined;
  if (stored !== undefined && stored > SCHEMA_VERSION) {
    throw new AlkstoreError(
      'DATABASE',
      `the SQLite file has alkstore schema version ${stored}, newer than this build's ${SCHEMA_VERSION}; upgrade alkstore`,
    );
  }
  const applied = conn.db.prepare("SELECT key FROM __alkstore_meta WHERE key LIKE 'migration:%'").pluck().all() as string[];
  for (const m of SQLITE_MIGRATIONS) {
    if (applied.includes(`migration:${m.version}`)) continue;
    conn.db.exec(m.sql);
    conn.db.prepare('INSERT INTO __alkstore_meta (key, value) VALUES (?, 1)').run(`migration:${m.version}`);
  }
  conn.db.prepare("INSERT INTO __alkstore_meta (key, value) VALUES ('schema_version', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value").run(SCHEMA_VERSION);
}
