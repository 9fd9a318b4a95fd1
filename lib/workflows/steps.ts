import { encodePayload } from '../contract/codec.js';
import { clockSql, type StepAppend, type WorkflowSql } from './sql-seam.js';

// A run's positioned journal entries are rows of the steps table (tables-ddl.ts), keyed by namespace,
// run, position and key; the key is the entry's once-only guard. These are the statements on it that
// go through the generic seam (`WorkflowSql.query`, inside a transaction or on their own): a write in
// a transaction that carries more (a step's own transaction, a child's start), the reads, and the
// deletes of retention. The engines write many entries at once with statements of their own
// (`appendSteps`, `endRuns`).

/** The head offset of `stream` (0: none yet), as an SQL query of the dialect with `$1` the stream. */
function headSql(sql: WorkflowSql): string {
  return sql.dialect === 'postgres'
    ? `SELECT last_offset AS head FROM ${sql.prefix}stream_heads WHERE stream = $1`
    : `SELECT last_seq AS head FROM ${sql.prefix}stream_heads WHERE stream = $1`;
}

/**
 * Writes `w` as a step row through `sql` (a transaction's seam: the caller's commit carries it):
 * resolves to the run stream's head offset when written, or null when its key was taken (nothing
 * written; on PostgreSQL the insert waits for a concurrent writer of the same key to end).
 */
export async function insertStep(sql: WorkflowSql, w: StepAppend): Promise<number | null> {
  const text = encodePayload(w.payload, 'payload');
  const rows = await sql.query(
    `INSERT INTO ${sql.prefix}workflow_steps (ns, run_id, position, key, entry, created_at)
     VALUES ($1, $2, $3, $4, $5, ${clockSql(sql)}) ON CONFLICT DO NOTHING RETURNING position`,
    [w.ns, w.run, w.position, w.key, text],
    true,
  );
  if (rows.length === 0) return null;
  const head = await sql.query(headSql(sql), [w.stream], true);
  return head[0] ? Number(head[0].head) : 0;
}

/** Sets the stored entry of the step row `w` wrote in this transaction (its outcome, known after the key was taken). */
export async function setStep(sql: WorkflowSql, w: StepAppend, stored: unknown): Promise<void> {
  await sql.query(
    `UPDATE ${sql.prefix}workflow_steps SET entry = $5 WHERE ns = $1 AND run_id = $2 AND position = $3 AND key = $4`,
    [w.ns, w.run, w.position, w.key, encodePayload(stored, 'payload')],
    true,
  );
}

/** A step row as read: its stored entry (parsed), position, key and time. */
export interface StepRow {
  readonly position: number;
  readonly key: string;
  readonly payload: unknown;
  readonly createdAt: number;
}

/** The step rows of run `id` at `from` or later (at most `limit`), by position and then by write time. */
export async function readSteps(
  sql: WorkflowSql,
  ns: string,
  id: string,
  from: number,
  limit?: number,
): Promise<StepRow[]> {
  const rows = await sql.query(
    `SELECT position, key, entry, created_at FROM ${sql.prefix}workflow_steps
     WHERE ns = $1 AND run_id = $2 AND position >= $3 ORDER BY position, created_at, key
     ${limit === undefined ? '' : 'LIMIT $4'}`,
    limit === undefined ? [ns, id, from] : [ns, id, from, limit],
    false,
  );
  return rows.map((r) => ({
    position: Number(r.position),
    key: String(r.key),
    payload: JSON.parse(String(r.entry)) as unknown,
    createdAt: Number(r.created_at),
  }));
}

/** Deletes the step rows of run `id` (retention, with the run). */
export async function deleteSteps(sql: WorkflowSql, ns: string, id: string): Promise<void> {
  await sql.query(`DELETE FROM ${sql.prefix}workflow_steps WHERE ns = $1 AND run_id = $2`, [ns, id], true);
}

/** The retry epoch a step key was written in (`3@2` → 2; no suffix → 0). */
export function epochOfKey(key: string): number {
  const at = key.lastIndexOf('@');
  return at < 0 ? 0 : Number(key.slice(at + 1));
}
