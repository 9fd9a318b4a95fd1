import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { InvalidOption } from '../../contract/errors.js';
import { loadPeer } from '../../internal/load-peer.js';

/** Options of {@link createTestDatabase}. */
export interface TestDatabaseOptions {
  /** Default: `postgres` when `postgresUrl` is given, else `sqlite`. */
  engine?: 'sqlite' | 'postgres';
  /** A `postgres://` URL of a database the test may create schemas in. */
  postgresUrl?: string;
  /** SQLite: the directory the temporary folder is made in (default the OS temp dir). */
  dir?: string;
}

/** A database no other test shares: a SQLite file in a fresh folder, or fresh PostgreSQL schemas. */
export interface AlkstoreTestDatabase {
  readonly engine: 'sqlite' | 'postgres';
  /** The URL to open it with (`sqlite:<file>` or the PostgreSQL URL). */
  readonly url: string;
  /** SQLite: the file. */
  readonly path?: string;
  /** PostgreSQL: the schema alkstore's tables go in. */
  readonly schema?: string;
  /** `{ url, schema }` for `AlkstoreModule.forRoot`. */
  moduleOptions(): { url: string; schema?: string };
  /**
   * PostgreSQL: creates another fresh schema for the application's own tables
   * (TypeORM's `schema`), dropped with the rest, and resolves to its name.
   * SQLite: `undefined` (one file holds everything).
   */
  appSchema(suffix?: string): Promise<string | undefined>;
  /** Deletes the file, or drops every schema handed out. Idempotent. */
  drop(): Promise<void>;
}

/**
 * Makes an isolated database for one test file: a SQLite file in a new temp
 * folder, or (given `postgresUrl`) uniquely named PostgreSQL schemas that
 * `drop()` removes with everything in them.
 */
export async function createTestDatabase(options: TestDatabaseOptions = {}): Promise<AlkstoreTestDatabase> {
  const engine = options.engine ?? (options.postgresUrl ? 'postgres' : 'sqlite');
  if (engine === 'sqlite') {
    const dir = mkdtempSync(join(options.dir ?? tmpdir(), 'alkstore-test-'));
    const path = join(dir, 'test.db');
    return {
      engine,
      url: `sqlite:${path}`,
      path,
      moduleOptions: () => ({ url: `sqlite:${path}` }),
      appSchema: async () => undefined,
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  if (engine !== 'postgres')
    throw new InvalidOption('engine', `must be "sqlite" or "postgres", got ${JSON.stringify(engine)}`);
  const url = options.postgresUrl;
  if (typeof url !== 'string' || !/^postgres(ql)?:\/\//.test(url))
    throw new InvalidOption('postgresUrl', 'must be a postgres:// or postgresql:// URL for engine "postgres"');
  const base = `alkstore_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const schemas = [base];
  return {
    engine,
    url,
    schema: base,
    moduleOptions: () => ({ url, schema: base }),
    async appSchema(suffix = 'app') {
      if (typeof suffix !== 'string' || !/^[a-z0-9_]{1,20}$/.test(suffix))
        throw new InvalidOption('appSchema suffix', 'must be 1..20 characters of [a-z0-9_]');
      const name = `${base}_${suffix}`;
      if (!schemas.includes(name)) schemas.push(name);
      // The names are ours: fixed characters, nothing to escape.
      await withClient(url, (c) => c.query(`CREATE SCHEMA IF NOT EXISTS "${name}"`));
      return name;
    },
    async drop() {
      await withClient(url, async (c) => {
        for (const s of schemas) await c.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
      });
    },
  };
}

async function withClient(
  url: string,
  fn: (client: { query(sql: string): Promise<unknown> }) => Promise<unknown>,
): Promise<void> {
  const pg = (await loadPeer('pg', () => import('pg'), 'for a PostgreSQL test database')).default;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await fn(client);
  } finally {
    await client.end();
  }
}
