import type { Pool } from 'pg';
import { AlkstoreError, Database, InvalidOption } from '../../contract/errors.js';
import type { StoreLogger } from '../../contract/types.js';
import { MIGRATIONS_1_TO_3 } from './migrations/v1-3.js';
import { MIGRATIONS_4_TO_9 } from './migrations/v4-9.js';
import { MIGRATION_10 } from './migrations/v10.js';
import { MIGRATION_11 } from './migrations/v11.js';
import { MIGRATION_12 } from './migrations/v12.js';
import { MIGRATION_13 } from './migrations/v13.js';
import { MIGRATION_14 } from './migrations/v14.js';
import { MIGRATION_15 } from './migrations/v15.js';
import { MIGRATION_16 } from './migrations/v16.js';
import { MIGRATION_18 } from './migrations/v18.js';
import { MIGRATION_19 } from './migrations/v19.js';
import { LEGACY_IDS_KEY, STORE_ID_KEY, type StoreIdentity } from '../../internal/message-id.js';
import { MIGRATION_20 } from './migrations/v20.js';
import { MIGRATION_21 } from './migrations/v21.js';
import { MIGRATION_22 } from './migrations/v22.js';
import { MIGRATION_24 } from './migrations/v24.js';
import { MIGRATION_25 } from './migrations/v25.js';
import { MIGRATION_26 } from './migrations/v26.js';
import { MIGRATION_27 } from './migrations/v27.js';
import { MIGRATION_28 } from './migrations/v28.js';
import { MIGRATION_30 } from './migrations/v30.js';
import { MIGRATION_31 } from './migrations/v31.js';
import { MIGRATION_32 } from './migrations/v32.js';
import { MIGRATION_33 } from './migrations/v33.js';
import { MIGRATION_34 } from './migrations/v34.js';
import { migrationLockKey, quoteIdent, validateSchemaName } from './schema-sql.js';

/** One numbered, immutable migration of the engine schema. Never edit a released one: add the next. */
export interface PostgresMigration {
  readonly version: number;
  readonly name: string;
  /** The migration's SQL for a schema (the argument is the already-quoted schema name). */
  sql(quotedSchema: string): string;
}

/**
 * The engine's migrations, in order. Applied at open (unless `migrate: false`)
 * and recorded in `<schema>.migrations`.
 */
export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = Object.freeze([
  ...MIGRATIONS_1_TO_3,
  ...MIGRATIONS_4_TO_9,
  MIGRATION_10,
  MIGRATION_11,
  MIGRATION_12,
  MIGRATION_13,
  MIGRATION_14,
  MIGRATION_15,
  MIGRATION_16,
  MIGRATION_18,
  MIGRATION_19,
  MIGRATION_20,
  MIGRATION_21,
  MIGRATION_22,
  MIGRATION_24,
  MIGRATION_25,
  MIGRATION_26,
  MIGRATION_27,
  MIGRATION_28,
  MIGRATION_30,
  MIGRATION_31,
  MIGRATION_32,
  MIGRATION_33,
  MIGRATION_34,
]);

export const POSTGRES_SCHEMA_VERSION = POSTGRES_MIGRATIONS[POSTGRES_MIGRATIONS.length - 1]!.version;

function migrationsTable(s: string): string {
  return `CREATE TABLE IF NOT EXISTS ${s}.migrations (
  version integer PRIMARY KEY,
  name text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
);`;
}

/**
 * The full SQL (schema, migrations table, every migration and its record) for
 * teams that run their own migrations; open the store with `migrate: false`.
 * Idempotent only as a whole on an empty schema: run it once.
 */
export function postgresMigrationSql(schema = 'alkstore'): string {
  const s = quoteIdent(validateSchemaName(schema));
  const parts = [`CREATE SCHEMA IF NOT EXISTS ${s};`, migrationsTable(s)];
  for (const m of POSTGRES_MIGRATIONS) {
    parts.push(
      `-- ${m.version}: ${m.name}`,
      m.sql(s).trim(),
      `INSERT INTO ${s}.migrations (version, name) VALUES (${m.version}, '${m.name}');`,
    );
  }
  return `${parts.join('\n')}\n`;
}

/**
 * Applies missing migrations in one transaction holding
 * `pg_advisory_xact_lock(<key of the schema>)`, so processes booting at once
 * migrate exactly once. Resolves to the versions this call applied.
 */
export async function applyMigrations(pool: Pool, schema: string, logger?: StoreLogger): Promise<number[]> {
  const s = quoteIdent(schema);
  let client;
  try {
    client = await pool.connect();
  } catch (err) {
    throw new Database(`connecting to migrate schema ${JSON.stringify(schema)}`, err);
  }
  const applied: number[] = [];
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1::bigint)', [migrationLockKey(schema)]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    await client.query(migrationsTable(s));
    const done = await client.query<{ version: number }>(`SELECT version FROM ${s}.migrations`);
    const have = new Set(done.rows.map((r) => Number(r.version)));
    const newest = Math.max(0, ...have);
    if (newest > POSTGRES_SCHEMA_VERSION) throw tooNew(schema, newest);
    for (const m of POSTGRES_MIGRATIONS) {
      if (have.has(m.version)) continue;
      await client.query(m.sql(s));
      await client.query(`INSERT INTO ${s}.migrations (version, name) VALUES ($1, $2)`, [m.version, m.name]);
      applied.push(m.version);
    }
    await client.query('COMMIT');
    client.release();
    for (const v of applied)
      logger?.log(
        `alkstore postgres: applied migration ${v} (${POSTGRES_MIGRATIONS.find((m) => m.version === v)!.name}) to schema ${JSON.stringify(schema)}`,
      );
    return applied;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    client.release();
    if (err instanceof AlkstoreError) throw err;
    throw new Database(`migrating schema ${JSON.stringify(schema)}`, err);
  }
}

/** With `migrate: false`: checks the schema is at exactly the expected version, else a clear error. */
export async function verifySchema(pool: Pool, schema: string): Promise<void> {
  const s = quoteIdent(schema);
  let version: number;
  try {
    const reg = await pool.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [`${s}.migrations`]);
    if (!reg.rows[0]?.t) {
      throw new InvalidOption(
        'migrate',
        `is false but schema ${JSON.stringify(schema)} has no alkstore migrations table; apply postgresMigrationSql(${JSON.stringify(schema)}) or open with migrate: true`,
      );
    }
    const r = await pool.query<{ v: number | null }>(`SELECT max(version) AS v FROM ${s}.migrations`);
    version = Number(r.rows[0]?.v ?? 0);
  } catch (err) {
    if (err instanceof AlkstoreError) throw err;
    throw new Database(`checking the version of schema ${JSON.stringify(schema)}`, err);
  }
  if (version > POSTGRES_SCHEMA_VERSION) throw tooNew(schema, version);
  if (version < POSTGRES_SCHEMA_VERSION) {
    throw new InvalidOption(
      'migrate',
      `is false but schema ${JSON.stringify(schema)} is at version ${version}; this alkstore needs version ${POSTGRES_SCHEMA_VERSION} (apply the missing POSTGRES_MIGRATIONS or open with migrate: true)`,
    );
  }
}

/**
 * The store id and the legacy id bound from `<schema>.meta` (migration 18), read once at open. A
 * schema whose store id was deleted (to give a restored copy an id of its own) gets a new one here.
 */
export async function readStoreIdentity(pool: Pool, schema: string): Promise<StoreIdentity> {
  const s = quoteIdent(schema);
  const read = async (): Promise<Map<string, string>> => {
    const r = await pool.query<{ key: string; value: string }>(
      `SELECT key, value FROM ${s}.meta WHERE key = ANY($1::text[])`,
      [[STORE_ID_KEY, LEGACY_IDS_KEY]],
    );
    return new Map(r.rows.map((row) => [row.key, row.value]));
  };
  try {
    let meta = await read();
    if (!meta.has(STORE_ID_KEY)) {
      await pool.query(
        `INSERT INTO ${s}.meta (key, value) VALUES ($1, gen_random_uuid()::text) ON CONFLICT (key) DO NOTHING`,
        [STORE_ID_KEY],
      );
      meta = await read();
    }
    return { storeId: meta.get(STORE_ID_KEY)!, legacyMaxRowId: Number(meta.get(LEGACY_IDS_KEY) ?? 0) };
  } catch (err) {
    throw new Database(`reading the store id of schema ${JSON.stringify(schema)}`, err);
  }
}

function tooNew(schema: string, version: number): AlkstoreError {
  return new InvalidOption(
    'schema',
    `${JSON.stringify(schema)} is at migration version ${version}, newer than this alkstore knows (${POSTGRES_SCHEMA_VERSION}); upgrade alkstore`,
  );
}
