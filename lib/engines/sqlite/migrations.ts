import { AlkstoreError } from '../../contract/errors.js';
import { LEGACY_IDS_KEY, STORE_ID_KEY, type StoreIdentity } from '../../internal/message-id.js';
import type { SqliteConn } from './connection.js';
import { INSERT_TRIGGER, QUEUE_COUNTS_STEP } from './counts.sql.js';
import { workflowStepsDdl, workflowTablesDdl } from '../../workflows/tables-ddl.js';
import { LIMITS_COLUMNS, LIMITS_DDL, LIMITS_INDEX_DDL, RATE_WINDOWS_INDEX_DDL } from './limits.sql.js';

/** Version of the `__alkstore_*` tables this build reads and writes: the newest numbered step (SQLITE_MIGRATIONS). */
export const SCHEMA_VERSION = 29;

// The workflows' runs table and counts (step 24, number of its own; PostgreSQL migration 22).
const WORKFLOW_DDL = workflowTablesDdl('__alkstore_', 'INTEGER');
const WORKFLOW_STEPS_DDL = workflowStepsDdl('__alkstore_', 'INTEGER');

// Throughput minutes for the dashboard (step 6), written by the store's outcome counter every few seconds.
const THROUGHPUT_DDL = `
CREATE TABLE IF NOT EXISTS __alkstore_queue_minutes (
  queue TEXT NOT NULL,
  minute INTEGER NOT NULL,
  completed INTEGER NOT NULL DEFAULT 0,
  retried INTEGER NOT NULL DEFAULT 0,
  dead INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (queue, minute)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS __alkstore_queue_minutes_minute ON __alkstore_queue_minutes (minute);
`;

// Per-minute wait and run latency for the dashboard (step 13, number shared with PostgreSQL migration 13),
// written with the throughput minutes by the same flush: count, sum and a fixed 12-bucket histogram per kind.
const LATENCY_DDL = `
CREATE TABLE IF NOT EXISTS __alkstore_queue_latency (
  queue TEXT NOT NULL,
  minute INTEGER NOT NULL,
  wait_n INTEGER NOT NULL DEFAULT 0,
  wait_ms INTEGER NOT NULL DEFAULT 0,
${Array.from({ length: 12 }, (_, i) => `  w${i} INTEGER NOT NULL DEFAULT 0,`).join('\n')}
  run_n INTEGER NOT NULL DEFAULT 0,
  run_ms INTEGER NOT NULL DEFAULT 0,
${Array.from({ length: 12 }, (_, i) => `  r${i} INTEGER NOT NULL DEFAULT 0,`).join('\n')}
  PRIMARY KEY (queue, minute)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS __alkstore_queue_latency_minute ON __alkstore_queue_latency (minute);
`;

// Failed job attempts (step 14, number shared with PostgreSQL migration 14): one row per attempt
// that ended in retry or dead, written by the retry / fail write; claimed_at = claimed_until - visibility_timeout_ms.
const ATTEMPTS_DDL = `
CREATE TABLE IF NOT EXISTS __alkstore_job_attempts (
  job_id INTEGER NOT NULL,
  queue TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  worker_id TEXT,
  claimed_at INTEGER,
  ended_at INTEGER NOT NULL,
  outcome TEXT NOT NULL CHECK (outcome IN ('retried', 'dead', 'lapsed')),
  error TEXT,
  PRIMARY KEY (job_id, attempt)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS __alkstore_job_attempts_queue ON __alkstore_job_attempts (queue, job_id);
`;

// Consumer inbox and outbox delivery receipts (step 9, number shared with PostgreSQL migration 9): the inbox primary key is the effectively-once guard.
const INBOX_DDL = `
CREATE TABLE IF NOT EXISTS __alkstore_inbox (
  inbox TEXT NOT NULL,
  message_id TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('done', 'failed', 'dead')),
  attempts INTEGER NOT NULL,
  received_at INTEGER NOT NULL,
  done_at INTEGER,
  last_error TEXT,
  PRIMARY KEY (inbox, message_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS __alkstore_inbox_done ON __alkstore_inbox (inbox, done_at) WHERE state = 'done';
CREATE TABLE IF NOT EXISTS __alkstore_outbox_receipts (
  outbox TEXT NOT NULL,
  message_id INTEGER NOT NULL,
  receipt TEXT NOT NULL,
  delivered_at INTEGER NOT NULL,
  PRIMARY KEY (outbox, message_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS __alkstore_outbox_receipts_delivered ON __alkstore_outbox_receipts (outbox, delivered_at);
`;

// Bounded growth (step 20, number shared with PostgreSQL migration 20): the retention runner removes an
// inbox's failed and dead entries by when they were first received. Claims insert `done` rows, which
// this partial index leaves out.
const INBOX_OPEN_DDL = `
CREATE INDEX IF NOT EXISTS __alkstore_inbox_open ON __alkstore_inbox (inbox, received_at) WHERE state <> 'done';
`;

// Worker node heartbeats (step 26; PostgreSQL migration 24): one row per node for the dashboard's fleet view,
// refreshed by the node and deleted by the retention runner an hour after its last heartbeat.
const NODES_DDL = `
CREATE TABLE IF NOT EXISTS __alkstore_nodes (
  node_id TEXT PRIMARY KEY,
  info TEXT NOT NULL,
  heartbeat_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS __alkstore_nodes_heartbeat ON __alkstore_nodes (heartbeat_at);
`;

// Dead worker detection (step 28, liveness.ts): the worker ids claims record, each with the process
// that vouches for it (pid, start time, and a tag of the host and pid namespace its pid means something in).
const LIVENESS_DDL = `
CREATE TABLE IF NOT EXISTS __alkstore_worker_liveness (
  worker_id TEXT NOT NULL,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  started TEXT NOT NULL,
  registered_at INTEGER NOT NULL,
  PRIMARY KEY (worker_id, host, pid)
) WITHOUT ROWID;
`;

// Job flows (step 11, docs/flows.md): one edge per (dependent, dependency), one wait row per job
// that waits, with the count still pending and its policy. A waiting job is a pending row held back
// by the existing `blocked` flag.
const FLOWS_DDL = `
CREATE TABLE IF NOT EXISTS __alkstore_job_waits (
  job_id INTEGER PRIMARY KEY,
  queue TEXT NOT NULL,
  pending INTEGER NOT NULL,
  policy TEXT NOT NULL CHECK (policy IN ('fail', 'ignore', 'continue'))
);
CREATE TABLE IF NOT EXISTS __alkstore_job_deps (
  job_id INTEGER NOT NULL,
  dep_id INTEGER NOT NULL,
  dep_queue TEXT NOT NULL,
  done INTEGER NOT NULL DEFAULT 0,
  outcome TEXT CHECK (outcome IN ('completed', 'dead', 'cancelled')),
  PRIMARY KEY (job_id, dep_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS __alkstore_job_deps_dep ON __alkstore_job_deps (dep_id) WHERE done = 0;
`;

// Outcome records (step 10, number shared with PostgreSQL migration 10): completed jobs with a
// result (or progress, or a waiter) and cancelled jobs move here from __alkstore_jobs when they end.
const OUTCOMES_DDL = `
CREATE TABLE IF NOT EXISTS __alkstore_job_outcomes (
  id INTEGER PRIMARY KEY,
  queue TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('completed', 'cancelled')),
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
  headers TEXT,
  unique_key TEXT,
  ordering_key TEXT,
  result TEXT,
  progress TEXT,
  finished_at INTEGER NOT NULL,
  keep_until INTEGER
);
CREATE INDEX IF NOT EXISTS __alkstore_job_outcomes_keep ON __alkstore_job_outcomes (queue, keep_until) WHERE keep_until IS NOT NULL;
`;

// The store id (step 18, number shared with PostgreSQL migration 18): a random UUID (version 4,
// from randomblob) in the meta table, and the highest job id handed out before it. An outbox row
// at or below that id keeps its bare row id as its message id, so a message published before the
// upgrade is deduplicated as before when it is published again; every later row's message id is
// `<storeId>:<rowId>`, which no other store produces. Idempotent: the open runs it on every file,
// so a file whose store id was deleted (a copy that needs one of its own) gets a new one.
const STORE_ID_SQL = `
INSERT OR IGNORE INTO __alkstore_meta (key, value) VALUES ('${STORE_ID_KEY}',
  lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' || substr(lower(hex(randomblob(2))), 2) || '-' ||
  substr('89ab', 1 + (random() & 3), 1) || substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6))));
INSERT OR IGNORE INTO __alkstore_meta (key, value) VALUES ('${LEGACY_IDS_KEY}',
  coalesce((SELECT seq FROM sqlite_sequence WHERE name = '__alkstore_jobs'), 0));
`;

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
  died_at INTEGER,
  headers TEXT,
  unique_key TEXT,
  ordering_key TEXT,
  blocked INTEGER NOT NULL DEFAULT 0,
  progress TEXT,
  concurrency_key TEXT,
  rate_key TEXT,
  precounted INTEGER
);
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

CREATE TABLE IF NOT EXISTS __alkstore_queue_settings (
  queue TEXT PRIMARY KEY,
  paused INTEGER NOT NULL DEFAULT 0,
  rate_max INTEGER,
  rate_per_ms INTEGER,
  window_start INTEGER NOT NULL DEFAULT 0,
  window_count INTEGER NOT NULL DEFAULT 0,
  keyed INTEGER NOT NULL DEFAULT 0,
  concurrency_limit INTEGER,
  global_concurrency INTEGER,
  key_rate_max INTEGER,
  key_rate_per_ms INTEGER
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
  next_fire_at INTEGER NOT NULL,
  time_zone TEXT NOT NULL DEFAULT 'UTC',
  catch_up TEXT NOT NULL DEFAULT 'all',
  owner TEXT,
  paused INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
${THROUGHPUT_DDL}${INBOX_DDL}${OUTCOMES_DDL}${FLOWS_DDL}${LIMITS_DDL}${LATENCY_DDL}${ATTEMPTS_DDL}${RATE_WINDOWS_INDEX_DDL}${INBOX_OPEN_DDL}${WORKFLOW_DDL}${NODES_DDL}${LIVENESS_DDL}${WORKFLOW_STEPS_DDL}`;

/** The engine tables' DDL (idempotent: `CREATE … IF NOT EXISTS`), for `alkstore migrate --print`. The store applies it itself at open. */
export function sqliteSchemaSql(): string {
  return `${DDL.trim()}\n${INDEX_DDL.trim()}\n${LIMITS_INDEX_DDL.trim()}\n`;
}

// Indexes on columns a numbered step may have added: created after the steps ran.
const INDEX_DDL = `
-- Jobs waiting behind an older live job of their ordering key are blocked: claims never walk them.
CREATE INDEX IF NOT EXISTS __alkstore_jobs_pending
  ON __alkstore_jobs (queue, priority DESC, run_at) WHERE state = 'pending' AND blocked = 0; -- rowid (id) is the implicit last key: claim order without a sort
CREATE UNIQUE INDEX IF NOT EXISTS __alkstore_jobs_unique
  ON __alkstore_jobs (queue, unique_key) WHERE unique_key IS NOT NULL AND state IN ('pending', 'processing');
CREATE INDEX IF NOT EXISTS __alkstore_jobs_ordering
  ON __alkstore_jobs (queue, ordering_key, id) WHERE ordering_key IS NOT NULL AND state IN ('pending', 'processing');
`;

/**
 * One numbered upgrade of an existing file (numbers shared with the PostgreSQL migrations). Each
 * applied step is recorded under its own meta key (`migration:<n>`), so a step numbered below one a
 * file already has (a gap filled later) still runs.
 */
export interface SqliteMigration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
  /**
   * Columns the step adds, each only when missing (SQLite has no `ADD COLUMN IF NOT EXISTS`): a step
   * above a file's stored version always runs, so it must be idempotent.
   */
  readonly addColumns?: readonly { readonly table: string; readonly column: string; readonly type: string }[];
}

/** `__alkstore_jobs.precounted`: 1 on rows whose insert counted them itself (counts.sql.ts, INSERT_TRIGGER). */
const PRECOUNTED_COLUMN = { table: '__alkstore_jobs', column: 'precounted', type: 'INTEGER' } as const;

/** Upgrades applied, in order, to existing files that lack them. Fresh files get the full DDL instead. */
export const SQLITE_MIGRATIONS: readonly SqliteMigration[] = Object.freeze([
  {
    version: 3,
    name: 'queue features',
    sql: `
ALTER TABLE __alkstore_jobs ADD COLUMN headers TEXT;
ALTER TABLE __alkstore_jobs ADD COLUMN unique_key TEXT;
ALTER TABLE __alkstore_jobs ADD COLUMN ordering_key TEXT;
ALTER TABLE __alkstore_jobs ADD COLUMN blocked INTEGER NOT NULL DEFAULT 0;
DROP INDEX IF EXISTS __alkstore_jobs_pending;
`,
  },
  // Per-queue counters kept by triggers, so stats() does not count rows (counts.sql.ts). Idempotent:
  // fresh files run it too, and so does a file whose version passed 4 before this step existed.
  // The insert trigger reads NEW.precounted (step 17), so the column comes first.
  { version: 4, name: 'queue counters', sql: QUEUE_COUNTS_STEP, addColumns: [PRECOUNTED_COLUMN] },
  {
    version: 5,
    name: 'cron schedules',
    sql: `
ALTER TABLE __alkstore_schedules ADD COLUMN time_zone TEXT NOT NULL DEFAULT 'UTC';
ALTER TABLE __alkstore_schedules ADD COLUMN catch_up TEXT NOT NULL DEFAULT 'all';
ALTER TABLE __alkstore_schedules ADD COLUMN owner TEXT;
ALTER TABLE __alkstore_schedules ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;
`,
  },
  {
    version: 6,
    name: 'per-minute queue throughput',
    sql: THROUGHPUT_DDL,
  },
  { version: 9, name: 'inbox and delivery receipts', sql: INBOX_DDL },
  {
    version: 10,
    name: 'job outcomes and progress',
    sql: OUTCOMES_DDL,
    addColumns: [{ table: '__alkstore_jobs', column: 'progress', type: 'TEXT' }],
  },
  { version: 11, name: 'job flows', sql: FLOWS_DDL },
  { version: 12, name: 'per-key and global limits', sql: LIMITS_DDL, addColumns: LIMITS_COLUMNS },
  { version: 13, name: 'per-minute queue latency', sql: LATENCY_DDL },
  { version: 14, name: 'job attempts', sql: ATTEMPTS_DDL },
  // Plain batches count themselves with one upsert; the insert trigger skips their rows (counts.sql.ts).
  { version: 17, name: 'batch-counted inserts', sql: INSERT_TRIGGER, addColumns: [PRECOUNTED_COLUMN] },
  { version: 18, name: 'store id', sql: STORE_ID_SQL },
  { version: 20, name: 'bounded growth', sql: INBOX_OPEN_DDL },
  // The limited claim's scan leaves out the keys whose rate window of the running period is full (limits.ts).
  { version: 23, name: 'full rate windows by period', sql: RATE_WINDOWS_INDEX_DDL },
  // The durable workflows' runs and their counts per state (lib/workflows/runs.ts).
  { version: 24, name: 'workflow runs', sql: WORKFLOW_DDL },
  { version: 26, name: 'worker node heartbeats', sql: NODES_DDL },
  { version: 28, name: 'worker liveness', sql: LIVENESS_DDL },
  // A workflow run's positioned journal entries, one row each (lib/workflows/journal.ts).
  { version: 29, name: 'workflow steps', sql: WORKFLOW_STEPS_DDL },
]);

/**
 * Creates the engine tables if missing and checks the stored schema version.
 * Runs inside the caller's write transaction, so concurrent opens are safe.
 * (A meta row, not `PRAGMA user_version`: the file may be shared with an
 * application that owns user_version.) Returns what it did, for the open's log.
 */
export function applySchema(conn: SqliteConn): SchemaChange {
  const change: SchemaChange = { created: false, applied: [], identity: { storeId: '', legacyMaxRowId: 0 } };
  const fresh =
    conn.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '__alkstore_meta'").get() ===
    undefined;
  conn.db.exec(DDL);
  const stored = conn.db.prepare("SELECT value FROM __alkstore_meta WHERE key = 'schema_version'").pluck().get() as
    number | undefined;
  const mark = conn.db.prepare('INSERT OR IGNORE INTO __alkstore_meta (key, value) VALUES (?, ?)');
  if (stored === undefined || fresh) {
    // A fresh file: the DDL above already holds every step's result.
    conn.db
      .prepare("INSERT OR REPLACE INTO __alkstore_meta (key, value) VALUES ('schema_version', ?)")
      .run(SCHEMA_VERSION);
    for (const m of SQLITE_MIGRATIONS) mark.run(`migration:${m.version}`, m.version);
    change.created = true;
  } else if (stored > SCHEMA_VERSION) {
    throw new AlkstoreError(
      'DATABASE',
      `the SQLite file has alkstore schema version ${stored}, newer than this build's ${SCHEMA_VERSION}; upgrade alkstore`,
    );
  } else {
    const done = conn.db.prepare('SELECT 1 FROM __alkstore_meta WHERE key = ?').pluck();
    // A file from before per-step records holds every step at or below its version.
    const legacy =
      conn.db.prepare("SELECT 1 FROM __alkstore_meta WHERE key LIKE 'migration:%' LIMIT 1").get() === undefined;
    for (const m of SQLITE_MIGRATIONS) {
      // Above the stored version a step always runs; at or below it, only when it is missing (a gap filled later).
      const covered = m.version <= stored && (legacy || done.get(`migration:${m.version}`) !== undefined);
      if (!covered) {
        for (const c of m.addColumns ?? []) {
          const cols = conn.db.prepare(`PRAGMA table_info(${c.table})`).all() as { name: string }[];
          if (!cols.some((x) => x.name === c.column))
            conn.db.exec(`ALTER TABLE ${c.table} ADD COLUMN ${c.column} ${c.type}`);
        }
        conn.db.exec(m.sql);
        change.applied.push(m);
      }
      mark.run(`migration:${m.version}`, m.version);
    }
    if (stored < SCHEMA_VERSION)
      conn.db.prepare("UPDATE __alkstore_meta SET value = ? WHERE key = 'schema_version'").run(SCHEMA_VERSION);
  }
  // Fresh files, and files whose version passed 4 before the counters step existed, get it here.
  if (
    conn.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '__alkstore_queue_counts'").get() ===
    undefined
  ) {
    conn.db.exec(QUEUE_COUNTS_STEP);
  }
  conn.db.exec(INDEX_DDL);
  conn.db.exec(LIMITS_INDEX_DDL);
  // Fresh files get their id here, and so does a file whose id was deleted.
  conn.db.exec(STORE_ID_SQL);
  const meta = conn.db.prepare('SELECT value FROM __alkstore_meta WHERE key = ?').pluck();
  change.identity = {
    storeId: String(meta.get(STORE_ID_KEY)),
    legacyMaxRowId: Number(meta.get(LEGACY_IDS_KEY) ?? 0),
  };
  return change;
}

/** What {@link applySchema} did: created the tables in a file that had none, or applied upgrade steps; and the store's id. */
export interface SchemaChange {
  created: boolean;
  applied: SqliteMigration[];
  identity: StoreIdentity;
}
