import pg from 'pg';
import { PG_URL } from '../helpers/engines.js';

/** A schema name no other test file uses. */
export function freshSchema(prefix: string): string {
  return `${prefix}_${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 7)}`;
}

/** Runs `fn` with a raw pg client (for inspecting pg_stat_activity, dropping schemas, holding transactions). */
export async function withClient<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

export async function dropSchema(schema: string): Promise<void> {
  await withClient((c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
}

/** A logger that records every line. */
export function recordingLogger(): { lines: string[]; log(m: string): void; warn(m: string): void; error(m: string): void } {
  const lines: string[] = [];
  return {
    lines,
    log: (m) => void lines.push(m),
    warn: (m) => void lines.push(m),
    error: (m) => void lines.push(m),
  };
}
