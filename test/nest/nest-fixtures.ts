import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Column, DataSource, Entity, PrimaryGeneratedColumn, type DataSourceOptions } from 'typeorm';
import type { StoreLogger } from '../../lib/contract/types.js';
import type { AlkstoreModuleOptions } from '../../lib/nest/index.js';
import { PG_AVAILABLE, PG_URL } from '../helpers/engines.js';

/** A business row written in the same TypeORM transaction as alkstore's. */
@Entity('widgets')
export class Widget {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column('varchar', { length: 100 })
  name!: string;
}

/** One database for one test file: module options, a matching TypeORM DataSource, cleanup. */
export interface NestDb {
  readonly kind: 'sqlite' | 'postgres';
  /** `url` (+ `schema` on PostgreSQL) for AlkstoreModule. */
  moduleOptions(extra?: AlkstoreModuleOptions): AlkstoreModuleOptions;
  /** An initialized DataSource over the same database (its tables in their own schema on PostgreSQL). */
  dataSource(): Promise<DataSource>;
  destroy(): Promise<void>;
}

export interface NestEngine {
  readonly name: string;
  readonly kind: 'sqlite' | 'postgres';
  create(): Promise<NestDb>;
}

let counter = 0;

const sqlite: NestEngine = {
  name: 'sqlite',
  kind: 'sqlite',
  async create() {
    const dir = mkdtempSync(join(tmpdir(), 'alkstore-nest-'));
    const path = join(dir, 'app.db');
    const sources: DataSource[] = [];
    return {
      kind: 'sqlite',
      moduleOptions: (extra = {}) => ({ url: `sqlite:${path}`, ...extra }),
      async dataSource() {
        const options: DataSourceOptions = {
          type: 'better-sqlite3',
          database: path,
          entities: [Widget],
          synchronize: true,
          enableWAL: true,
        };
        const ds = await new DataSource(options).initialize();
        sources.push(ds);
        return ds;
      },
      async destroy() {
        for (const ds of sources) if (ds.isInitialized) await ds.destroy();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

const postgres: NestEngine = {
  name: 'postgres',
  kind: 'postgres',
  async create() {
    counter += 1;
    const schema = `nest_${process.pid}_${Date.now().toString(36)}_${counter}`;
    const appSchema = `${schema}_app`;
    const sources: DataSource[] = [];
    const pg = (await import('pg')).default;
    const admin = async (sql: string): Promise<void> => {
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      try {
        await c.query(sql);
      } finally {
        await c.end();
      }
    };
    return {
      kind: 'postgres',
      moduleOptions: (extra = {}) => ({ url: PG_URL, schema, poolSize: 4, ...extra }),
      async dataSource() {
        await admin(`CREATE SCHEMA IF NOT EXISTS "${appSchema}"`);
        const ds = await new DataSource({
          type: 'postgres',
          url: PG_URL,
          schema: appSchema,
          entities: [Widget],
          synchronize: true,
          poolSize: 4,
        }).initialize();
        sources.push(ds);
        return ds;
      },
      async destroy() {
        for (const ds of sources) if (ds.isInitialized) await ds.destroy();
        await admin(`DROP SCHEMA IF EXISTS "${schema}" CASCADE; DROP SCHEMA IF EXISTS "${appSchema}" CASCADE`);
      },
    };
  },
};

/** The engines Nest tests run on: SQLite always, PostgreSQL when reachable. */
export function nestEngines(): NestEngine[] {
  return PG_AVAILABLE ? [sqlite, postgres] : [sqlite];
}

export const nestPostgres = postgres;
export const nestSqlite = sqlite;

/** A logger that keeps what it is told, for asserting on handler error logs. */
export class MemoryLogger implements StoreLogger {
  readonly lines: string[] = [];
  log(message: string): void {
    this.lines.push(`log ${message}`);
  }
  warn(message: string): void {
    this.lines.push(`warn ${message}`);
  }
  error(message: string, error?: unknown): void {
    this.lines.push(`error ${message} ${error instanceof Error ? error.message : String(error ?? '')}`);
  }
  has(pattern: RegExp): boolean {
    return this.lines.some((l) => pattern.test(l));
  }
}

/** A promise with its resolver outside, for handlers that block until the test lets them go. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}
