import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe } from '@jest/globals';
import type { EnqueueHeadersHook } from '../../lib/contract/job-extras.js';
import type { Store, StoreLogger } from '../../lib/contract/types.js';

/** Connection string of the test PostgreSQL (set by global-setup). */
export const PG_URL = process.env.ALKSTORE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/** True when global-setup reached PostgreSQL. */
export const PG_AVAILABLE = process.env.ALKSTORE_PG_AVAILABLE === '1';

/** Opens a fresh store; `reopen` opens another store on the same database (a second process's view). */
export interface EngineFixture {
  readonly name: string;
  readonly kind: 'sqlite' | 'postgres';
  /** A fresh, empty database for one test file (or one test). */
  create(): Promise<EngineDb>;
}

/** Options a test may add when opening a store (the same on both engines). */
export interface OpenExtra {
  /** The backoff jitter's random source. */
  random?: () => number;
  /** Local hand-off to this store's idle workers (default true). */
  localHandoff?: boolean;
  /** Largest payload JSON in bytes (default 1 MiB). */
  maxPayloadBytes?: number;
  /** Headers this store adds to every enqueue (default none). */
  enqueueHeaders?: EnqueueHeadersHook;
  /** A readable prefix of the store's outbox message ids (default none). */
  messageIdPrefix?: string;
  /** Where the store logs (default: warnings and errors to stderr). */
  logger?: StoreLogger;
}

export interface EngineDb {
  /** Opens a store on this database. Call it twice for two independent handles. */
  open(extra?: OpenExtra): Promise<Store>;
  /** Closes every store opened here and drops the database. */
  destroy(): Promise<void>;
  /** For engine-only tests: the SQLite file path or the PostgreSQL schema. */
  readonly location: string;
}

/** The SQLite driver the suites run on: `ALKSTORE_SQLITE_DRIVER=node:sqlite` runs them without better-sqlite3. */
export function sqliteDriverFromEnv(): { driver?: 'better-sqlite3' | 'node:sqlite' } {
  const d = process.env.ALKSTORE_SQLITE_DRIVER;
  return d === 'better-sqlite3' || d === 'node:sqlite' ? { driver: d } : {};
}

let counter = 0;
function uniqueName(prefix: string): string {
  counter += 1;
  return `${prefix}_${process.pid}_${Date.now().toString(36)}_${counter}`;
}

export const sqliteFile: EngineFixture = {
  name: 'sqlite (file)',
  kind: 'sqlite',
  async create(): Promise<EngineDb> {
    const dir = mkdtempSync(join(tmpdir(), 'alkstore-test-'));
    const path = join(dir, 'store.db');
    const stores: Store[] = [];
    const { openSqliteStore } = await import('../../lib/engines/sqlite/index.js');
    return {
      location: path,
      async open(extra?: OpenExtra) {
        const s = await openSqliteStore({ path, ...sqliteDriverFromEnv(), ...extra });
        stores.push(s);
        return s;
      },
      async destroy() {
        for (const s of stores) await s.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

export const postgres: EngineFixture = {
  name: 'postgres',
  kind: 'postgres',
  async create(): Promise<EngineDb> {
    const schema = uniqueName('t');
    const stores: Store[] = [];
    const { openPostgresStore } = await import('../../lib/engines/postgres/index.js');
    return {
      location: schema,
      async open(extra?: OpenExtra) {
        const s = await openPostgresStore({ connectionString: PG_URL, schema, poolSize: 4, ...extra });
        stores.push(s);
        return s;
      },
      async destroy() {
        for (const s of stores) await s.close();
        await dropPgSchemas(schema);
      },
    };
  },
};

/**
 * `'step'`: makes a closed store's database look as it did before the store had an id (before step
 * 18): no store id, no legacy bound, the step not recorded, so the next open runs step 18 again.
 * `'id'`: deletes only the store id (what docs/brokers.md tells the owner of a copied database to do).
 */
export async function forgetStoreIdentity(
  kind: 'sqlite' | 'postgres',
  location: string,
  what: 'step' | 'id' = 'step',
): Promise<void> {
  if (kind === 'sqlite') {
    const Database = (await import('better-sqlite3')).default;
    const raw = new Database(location);
    try {
      raw.exec(
        what === 'id'
          ? "DELETE FROM __alkstore_meta WHERE key = 'store_id'"
          : `DELETE FROM __alkstore_meta WHERE key IN ('store_id', 'legacy_message_ids', 'migration:18');
             UPDATE __alkstore_meta SET value = 17 WHERE key = 'schema_version';`,
      );
    } finally {
      raw.close();
    }
    return;
  }
  const pg = (await import('pg')).default;
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    await c.query(
      what === 'id'
        ? `DELETE FROM "${location}".meta WHERE key = 'store_id'`
        : `DROP TABLE "${location}".meta; DELETE FROM "${location}".migrations WHERE version = 18`,
    );
  } finally {
    await c.end();
  }
}

/** Drops test schemas on the test PostgreSQL (CASCADE). */
export async function dropPgSchemas(...schemas: string[]): Promise<void> {
  const pg = (await import('pg')).default;
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    for (const schema of schemas) await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await c.end();
  }
}

/**
 * Gives the enclosing describe block a fresh database and one open store:
 * created in beforeAll (handed to `opened`), destroyed in afterAll.
 */
export function withEngineDb(engine: EngineFixture, opened: (db: EngineDb, store: Store) => void): void {
  let db: EngineDb | undefined;
  beforeAll(async () => {
    db = await engine.create();
    opened(db, await db.open());
  }, 60_000);
  afterAll(async () => {
    await db?.destroy();
  }, 60_000);
}

/** Engines the shared contract suite runs against. PostgreSQL only when reachable. */
export function contractEngines(): EngineFixture[] {
  return PG_AVAILABLE ? [sqliteFile, postgres] : [sqliteFile];
}

/** `describe` for a PostgreSQL-only block: skipped (with global-setup's one line) when PostgreSQL is not reachable. */
export const describePg: typeof describe = (PG_AVAILABLE ? describe : describe.skip) as typeof describe;

/** Waits until `check` returns a truthy value, polling; throws naming `what` at the deadline. Never a fixed sleep as proof. */
export async function waitFor<T>(
  what: string,
  check: () => T | Promise<T>,
  timeoutMs = 10_000,
  intervalMs = 5,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
