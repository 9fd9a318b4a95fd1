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

/** The partitions of `schema`.`table`, by name. */
export function partitionsOf(schema: string, table: string): Promise<string[]> {
  return withClient(async (c) =>
    (
      await c.query<{ name: string }>(
        `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent = $1::regclass ORDER BY c.relname`,
        [`"${schema}".${table}`],
      )
    ).rows.map((r) => r.name),
  );
}

export async function dropSchema(schema: string): Promise<void> {
  await withClient((c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
}

/** A logger that records every line. */
export function recordingLogger(): {
  lines: string[];
  log(m: string): void;
  warn(m: string): void;
  error(m: string): void;
} {
  const lines: string[] = [];
  return {
    lines,
    log: (m) => void lines.push(m),
    warn: (m) => void lines.push(m),
    error: (m) => void lines.push(m),
  };
}

/** A node of an `EXPLAIN (FORMAT JSON)` plan. */
export interface PlanNode {
  'Node Type'?: string;
  'Index Name'?: string;
  'Relation Name'?: string;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: PlanNode[];
}

/** Runs `text` on `c` under `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)` (so it does run) and returns the top plan node. */
export async function explainAnalyzed(c: pg.Client, text: string, values: unknown[] = []): Promise<PlanNode> {
  const r = await c.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`, values);
  return (r.rows[0]['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0]!.Plan;
}

/** The indexes a plan reads. */
export function indexesUsed(node: PlanNode, out = new Set<string>()): Set<string> {
  if (node['Index Name']) out.add(node['Index Name']);
  for (const child of node.Plans ?? []) indexesUsed(child, out);
  return out;
}

/** Shared-buffer pages a plan touched (hit or read), from its top node. */
export function pagesOf(plan: PlanNode): number {
  return (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0);
}

/**
 * Shared-buffer pages the plan's scans of `relation` touched (its heap and index scans), summed over
 * the tree. Unlike {@link pagesOf} it leaves out what the statement writes and the catalog pages a
 * fresh connection reads, which vary with what else the server is doing.
 */
export function scanPagesOn(node: PlanNode, relation: string): number {
  const own =
    node['Relation Name'] === relation && /Scan$/.test(node['Node Type'] ?? '')
      ? (node['Shared Hit Blocks'] ?? 0) + (node['Shared Read Blocks'] ?? 0)
      : 0;
  return own + (node.Plans ?? []).reduce((n, child) => n + scanPagesOn(child, relation), 0);
}
