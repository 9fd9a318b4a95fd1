import { resolve } from 'node:path';

/** What the sample app needs to know; `configFromEnv()` reads it from the environment. */
export interface SampleConfig {
  /** `postgres://…` switches both TypeORM and alkstore to PostgreSQL. Default: embedded SQLite. */
  databaseUrl?: string;
  /** PostgreSQL schema of the sample's own tables (default `public`; it must exist). */
  databaseSchema?: string;
  /** PostgreSQL schema of alkstore's tables (default `alkstore`; created by its migrations). */
  alkstoreSchema?: string;
  /** SQLite file shared by TypeORM and alkstore (default `sample/data/app.db`). */
  sqlitePath: string;
  /** Workers' safety poll (ms); wakes make delivery prompt regardless. */
  idlePollIntervalMs?: number;
  drainTimeoutMs?: number;
  /** Password of the dashboard at /alkstore (HTTP Basic, any user name); unset or under 16 characters keeps it locked. */
  dashboardToken?: string;
}

/**
 * Reads `DATABASE_URL`, `DATABASE_SCHEMA`, `ALKSTORE_SCHEMA`, `SQLITE_PATH`,
 * `ALKSTORE_DASHBOARD_TOKEN`
 * (`PORT` is read by main.ts, `REPORT_SPEC` by the report job: a decorator
 * argument is fixed when its class is defined).
 */
export function configFromEnv(env: NodeJS.ProcessEnv = process.env): SampleConfig {
  return {
    databaseUrl: env.DATABASE_URL || undefined,
    databaseSchema: env.DATABASE_SCHEMA || undefined,
    alkstoreSchema: env.ALKSTORE_SCHEMA || undefined,
    sqlitePath: resolve(env.SQLITE_PATH || 'sample/data/app.db'),
    dashboardToken: env.ALKSTORE_DASHBOARD_TOKEN || undefined,
  };
}
