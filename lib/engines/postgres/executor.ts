import type { Pool, PoolClient } from 'pg';
import { AlkstoreError, Database } from '../../contract/errors.js';
import type { QueryRunnerLike } from '../../contract/types.js';
import { NOTIFY_ONLY, type Wakes } from './own-wakes.js';
import type { Sql } from './schema-sql.js';

/** Rows of a statement. int8 columns arrive as strings: callers convert with `Number`. */
export interface Rows<R> {
  rows: R[];
  rowCount: number;
}

/** Where a statement runs: the pool, one pooled client (a transaction), or a caller's query runner. */
export interface Executor {
  /**
   * Whether statements run as named prepared statements (planned once per
   * connection). A caller's query runner cannot: long multi-CTE statements
   * then go through the engine's plpgsql functions instead of being planned
   * on every call.
   */
  readonly prepared: boolean;
  /** How statements on this executor announce wakes (see `OwnWakes`). */
  readonly wakes: Wakes;
  run<R>(sql: Sql, values: readonly unknown[]): Promise<Rows<R>>;
}

function wrap(sql: Sql, err: unknown): never {
  if (err instanceof AlkstoreError) throw err;
  throw new Database(`postgres statement ${sql.name}`, err);
}

/** Runs statements on a pool as named (prepared) statements. */
export class PoolExecutor implements Executor {
  readonly prepared = true;
  constructor(
    private readonly pool: Pool,
    readonly wakes: Wakes = NOTIFY_ONLY,
  ) {}

  async run<R>(sql: Sql, values: readonly unknown[]): Promise<Rows<R>> {
    try {
      const r = await this.pool.query({ name: sql.name, text: sql.text, values: values as unknown[] });
      return { rows: r.rows as R[], rowCount: r.rowCount ?? 0 };
    } catch (err) {
      wrap(sql, err);
    }
  }
}

/** Runs statements on one checked-out client (an engine-owned transaction). */
export class ClientExecutor implements Executor {
  readonly prepared = true;
  constructor(
    readonly client: PoolClient,
    readonly wakes: Wakes = NOTIFY_ONLY,
  ) {}

  async run<R>(sql: Sql, values: readonly unknown[]): Promise<Rows<R>> {
    try {
      const r = await this.client.query({ name: sql.name, text: sql.text, values: values as unknown[] });
      return { rows: r.rows as R[], rowCount: r.rowCount ?? 0 };
    } catch (err) {
      wrap(sql, err);
    }
  }
}

/**
 * Runs statements through a caller's TypeORM `QueryRunner` (never prepared: the
 * runner owns its connection). TypeORM 1.x's postgres runner returns, with
 * `useStructuredResult = true`, `{ records, affected }`; without it, `rows` for
 * SELECT/INSERT and `[rows, rowCount]` for UPDATE/DELETE. Both are understood,
 * as is a raw `pg` result, so any runner shaped like TypeORM's works.
 */
export class QueryRunnerExecutor implements Executor {
  readonly prepared = false;
  readonly wakes: Wakes = NOTIFY_ONLY;
  constructor(private readonly runner: QueryRunnerLike) {}

  async run<R>(sql: Sql, values: readonly unknown[]): Promise<Rows<R>> {
    let raw: unknown;
    try {
      raw = await this.runner.query(sql.text, [...values], true);
    } catch (err) {
      wrap(sql, err);
    }
    return normalize<R>(raw);
  }
}

function normalize<R>(raw: unknown): Rows<R> {
  if (raw && typeof raw === 'object' && !Array.isArray(raw)) {
    const o = raw as { records?: unknown; affected?: unknown; rows?: unknown; rowCount?: unknown };
    if (Array.isArray(o.records)) {
      return { rows: o.records as R[], rowCount: typeof o.affected === 'number' ? o.affected : o.records.length };
    }
    if (Array.isArray(o.rows)) return { rows: o.rows as R[], rowCount: typeof o.rowCount === 'number' ? o.rowCount : o.rows.length };
    return { rows: [], rowCount: typeof o.affected === 'number' ? o.affected : 0 };
  }
  if (Array.isArray(raw)) {
    if (raw.length === 2 && Array.isArray(raw[0]) && typeof raw[1] === 'number') return { rows: raw[0] as R[], rowCount: raw[1] };
    return { rows: raw as R[], rowCount: raw.length };
  }
  return { rows: [], rowCount: 0 };
}

/** int8 / numeric text → number; null stays null. */
export function num(v: unknown): number {
  return typeof v === 'number' ? v : Number(v);
}

export function numOrNull(v: unknown): number | null {
  return v === null || v === undefined ? null : num(v);
}
