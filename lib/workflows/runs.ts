import type { JournaledError } from './errors.js';
import { InvalidArgument } from '../contract/errors.js';
import type { TxOps } from '../contract/types.js';
import { clockSql, workflowSqlOf, type WorkflowSql } from './sql-seam.js';
import type { RunState } from './types.js';
import { runStateOf } from './tables-ddl.js';
import { deleteSteps } from './steps.js';

// The runs table (tables-ddl.ts): one row per run, moved by the same transactions that journal the
// run's start, waits and end. Listing reads it in keyset pages through its indexes; the counts per
// state are the sum of the delta rows each move appends.

/** A run's row. */
export interface RunRow {
  readonly id: string;
  readonly workflow: string;
  readonly version: number;
  readonly state: RunState;
  readonly input: unknown;
  readonly result: unknown;
  readonly error: JournaledError | null;
  readonly parentId: string | null;
  /** What a running run waits for: `signal:<name>`, `sleep`, `retry` or `children`; else null. */
  readonly waiting: string | null;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly finishedAt: number | null;
  /** When a sleeping or retrying run is due (epoch ms, database clock). */
  readonly wakeAt: number | null;
}

function json(v: unknown): string | null {
  return v === undefined ? null : JSON.stringify(v);
}

function parse(v: unknown): unknown {
  return typeof v === 'string' ? (JSON.parse(v) as unknown) : undefined;
}

function num(v: unknown): number | null {
  return v === null || v === undefined ? null : Number(v);
}

const COLUMNS =
  'id, workflow, version, state, input, result, error, parent_id, waiting, created_at, updated_at, finished_at, wake_at';
/** What a listing reads: a run's summary, without its input and result (either can be large, TOASTed on PostgreSQL). */
const LIST_COLUMNS = 'id, workflow, version, state, error, parent_id, waiting, created_at, finished_at, wake_at';

/** A run's row as a listing reads it: no input, no result, no update time. */
export type RunListRow = Omit<RunRow, 'input' | 'result' | 'updatedAt'>;

function rowOf(r: Record<string, unknown>): RunRow {
  return {
    id: String(r.id),
    workflow: String(r.workflow),
    version: Number(r.version),
    state: String(r.state) as RunState,
    input: parse(r.input),
    result: parse(r.result),
    error: (parse(r.error) as JournaledError | undefined) ?? null,
    parentId: (r.parent_id as string | null) ?? null,
    waiting: (r.waiting as string | null) ?? null,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
    finishedAt: num(r.finished_at),
    wakeAt: num(r.wake_at),
  };
}

function listRowOf(r: Record<string, unknown>): RunListRow {
  return {
    id: String(r.id),
    workflow: String(r.workflow),
    version: Number(r.version),
    state: String(r.state) as RunState,
    error: (parse(r.error) as JournaledError | undefined) ?? null,
    parentId: (r.parent_id as string | null) ?? null,
    waiting: (r.waiting as string | null) ?? null,
    createdAt: Number(r.created_at),
    finishedAt: num(r.finished_at),
    wakeAt: num(r.wake_at),
  };
}

async function count(sql: WorkflowSql, ns: string, deltas: readonly [string, number][]): Promise<void> {
  for (const [state, n] of deltas)
    await sql.query(
      `INSERT INTO ${sql.prefix}workflow_counts (ns, state, n) VALUES ($1, $2, $3)`,
      [ns, state, n],
      true,
    );
}

/**
 * Adds run `id` (running unless `state` says otherwise; nothing when it exists). `createdAt` absent: the
 * database clock; `finishedAt` absent: the clock for a run that ended.
 */
export async function insertRun(
  sql: WorkflowSql,
  ns: string,
  run: {
    id: string;
    workflow: string;
    version: number;
    input: unknown;
    parentId: string | null;
    state?: RunState;
    createdAt?: number;
    finishedAt?: number | null;
    result?: unknown;
    error?: JournaledError;
  },
): Promise<boolean> {
  const state = run.state ?? 'running';
  const t = `COALESCE(CAST($8 AS bigint), ${clockSql(sql)})`;
  const insert = `INSERT INTO ${sql.prefix}workflow_runs
       (ns, id, workflow, version, state, input, parent_id, created_at, updated_at, finished_at, result, error)
     VALUES ($1, $2, $3, $4, $5, $6, $7, ${t}, ${t}, COALESCE(CAST($9 AS bigint), CASE WHEN $5 <> 'running' THEN ${clockSql(sql)} END),
       $10, $11) ON CONFLICT (ns, id) DO NOTHING RETURNING id`;
  const rows = await sql.query(
    // PostgreSQL: the count's delta row in the same statement (one round trip, not two).
    sql.dialect === 'postgres'
      ? `WITH ins AS (${insert}),
           c AS (INSERT INTO ${sql.prefix}workflow_counts (ns, state, n) SELECT $1, $5, 1 FROM ins)
         SELECT id FROM ins`
      : insert,
    [
      ns,
      run.id,
      run.workflow,
      run.version,
      state,
      json(run.input),
      run.parentId,
      run.createdAt ?? null,
      run.finishedAt ?? null,
      json(run.result),
      json(run.error),
    ],
    true,
  );
  if (rows.length === 0) return false;
  if (sql.dialect !== 'postgres') await count(sql, ns, [[state, 1]]);
  return true;
}

/**
 * The statement of {@link moveRun}: $1 ns, $2 id, $3 the new state, $4 the state it must be in, $5 result,
 * $6 error → the run's id when it moved. On PostgreSQL it appends the counts' delta rows too (one round
 * trip, not three).
 */
export function moveRunText(sql: Pick<WorkflowSql, 'dialect' | 'prefix'>, ended: boolean): string {
  const update = `UPDATE ${sql.prefix}workflow_runs SET state = $3, result = $5, error = $6, waiting = NULL, wake_at = NULL,
       updated_at = ${clockSql(sql)}, finished_at = ${ended ? clockSql(sql) : 'NULL'}
     WHERE ns = $1 AND id = $2 AND ${runStateOf()} = $4 RETURNING id`;
  return sql.dialect === 'postgres'
    ? `WITH up AS (${update}),
         c AS (INSERT INTO ${sql.prefix}workflow_counts (ns, state, n)
           SELECT $1, v.s, v.d FROM up, (VALUES ($4, -1), ($3, 1)) AS v(s, d))
       SELECT id FROM up`
    : update;
}

/** Moves run `id` from `from` to `to` (an end, a cancellation, a retry); false when it was not in `from`. */
export async function moveRun(
  sql: WorkflowSql,
  ns: string,
  id: string,
  from: RunState,
  to: RunState,
  outcome: { result?: unknown; error?: JournaledError | null } = {},
): Promise<boolean> {
  const rows = await sql.query(
    moveRunText(sql, to !== 'running'),
    [ns, id, to, from, json(outcome.result), json(outcome.error ?? undefined)],
    true,
  );
  if (rows.length === 0) return false;
  if (sql.dialect !== 'postgres')
    await count(sql, ns, [
      [from, -1],
      [to, 1],
    ]);
  return true;
}

/** The statement of {@link setWaiting}: $1 ns, $2 id, $3 what it waits for, $4 when it is due. */
export function setWaitingText(sql: Pick<WorkflowSql, 'dialect' | 'prefix'>): string {
  return `UPDATE ${sql.prefix}workflow_runs SET waiting = $3, wake_at = $4, updated_at = ${clockSql(sql)}
     WHERE ns = $1 AND id = $2 AND ${runStateOf()} = 'running'`;
}

/** Notes what a running run waits for (null: nothing) and when it is due. */
export async function setWaiting(
  sql: WorkflowSql,
  ns: string,
  id: string,
  waiting: string | null,
  wakeAt: number | null,
): Promise<void> {
  await sql.query(setWaitingText(sql), [ns, id, waiting, wakeAt], true);
}

export async function getRun(sql: WorkflowSql, ns: string, id: string): Promise<RunRow | null> {
  const rows = await sql.query(
    `SELECT ${COLUMNS} FROM ${sql.prefix}workflow_runs WHERE ns = $1 AND id = $2`,
    [ns, id],
    false,
  );
  return rows[0] ? rowOf(rows[0]) : null;
}

/** A page of runs: `next` is the cursor of the page after it (null on the last page). */
export interface RunPage {
  readonly runs: readonly RunListRow[];
  readonly next: string | null;
}

/** The cursor of the page after `row`. */
export function cursorOf(row: Pick<RunRow, 'createdAt' | 'id'>): string {
  return `${row.createdAt}.${row.id}`;
}

/** The position a cursor holds, or null for a malformed one. */
export function parseCursor(cursor: string): { createdAt: number; id: string } | null {
  const dot = cursor.indexOf('.');
  if (dot < 1) return null;
  const createdAt = Number(cursor.slice(0, dot));
  return Number.isSafeInteger(createdAt) ? { createdAt, id: cursor.slice(dot + 1) } : null;
}

/**
 * The query of one page (exported for the index test's EXPLAIN and B11's reads).
 *
 * The cursor is one row comparison, `(created_at, id) < (…)`, which both engines take as the bound of
 * the index range: a page after the first starts at the cursor instead of filtering every row before it.
 *
 * PostgreSQL: the statement is prepared, and from its sixth execution PostgreSQL keeps one generic plan
 * if that plan's estimated cost is no worse than a plan for the values. A `LIMIT $n` of the generic plan
 * is costed as a tenth of the rows it filters, so once a state holds many runs the generic plan looks
 * dear and every listing was planned again (about 60 µs, half a first page's time at 1M runs; at 1k
 * runs the generic plan won). The page is therefore read by a subquery with a constant limit, the
 * power of two at or above `limit + 1`, under the caller's `LIMIT $n`: the planner costs the constant,
 * the executor stops at `$n` (rows are pulled one at a time), and the texts stay few (11 limits). Not
 * when a workflow is named without a state: no index serves that filter in start order, so which plan
 * is best depends on how many runs the workflow has, and a plan for the values is kept.
 */
export function listQuery(
  sql: WorkflowSql,
  ns: string,
  o: {
    state?: RunState;
    workflow?: string;
    limit: number;
    after?: { createdAt: number; id: string } | null;
    order: 'asc' | 'desc';
  },
): { text: string; params: unknown[] } {
  const params: unknown[] = [ns];
  const where = ['ns = $1'];
  if (o.state !== undefined) {
    params.push(o.state);
    where.push(`state = $${params.length}`);
  }
  if (o.workflow !== undefined) {
    params.push(o.workflow);
    where.push(`workflow = $${params.length}`);
  }
  if (o.after) {
    params.push(o.after.createdAt, o.after.id);
    const a = params.length - 1;
    where.push(`(created_at, id) ${o.order === 'asc' ? '>' : '<'} ($${a}, $${a + 1})`);
  }
  params.push(o.limit + 1);
  const dir = o.order === 'asc' ? 'ASC' : 'DESC';
  const order = `ORDER BY created_at ${dir}, id ${dir}`;
  const select = `SELECT ${LIST_COLUMNS} FROM ${sql.prefix}workflow_runs WHERE ${where.join(' AND ')}\n      ${order}`;
  const limit = `LIMIT $${params.length}`;
  if (sql.dialect !== 'postgres' || (o.workflow !== undefined && o.state === undefined))
    return { text: `${select} ${limit}`, params };
  const cap = 2 ** Math.max(4, Math.ceil(Math.log2(o.limit + 1)));
  return { text: `SELECT ${LIST_COLUMNS} FROM (${select} LIMIT ${cap}) AS page\n      ${order} ${limit}`, params };
}

export async function listRuns(sql: WorkflowSql, ns: string, o: Parameters<typeof listQuery>[2]): Promise<RunPage> {
  const q = listQuery(sql, ns, o);
  const rows = (await sql.query(q.text, q.params, false)).map(listRowOf);
  const more = rows.length > o.limit;
  const runs = more ? rows.slice(0, o.limit) : rows;
  return { runs, next: more ? cursorOf(runs[runs.length - 1]!) : null };
}

/** The namespaces that have runs (their count rows: a small table, one row per state once folded). */
export async function runNamespaces(sql: WorkflowSql): Promise<string[]> {
  const rows = await sql.query(`SELECT DISTINCT ns FROM ${sql.prefix}workflow_counts`, [], false);
  return rows.map((r) => String(r.ns));
}

/** How many runs are in each state. */
export async function countRuns(sql: WorkflowSql, ns: string): Promise<Record<RunState, number>> {
  const rows = await sql.query(
    `SELECT state, SUM(n) AS n FROM ${sql.prefix}workflow_counts WHERE ns = $1 GROUP BY state`,
    [ns],
    false,
  );
  const out: Record<RunState, number> = { running: 0, completed: 0, failed: 0, cancelled: 0 };
  for (const r of rows) if (String(r.state) in out) out[String(r.state) as RunState] = Number(r.n);
  return out;
}

/**
 * Folds the delta rows of `ns` into one row per state. `sql` is a transaction's: on PostgreSQL one
 * statement (concurrent folds count each row once), on SQLite (one writer at a time) read, delete, insert.
 */
export async function foldCounts(sql: WorkflowSql, ns: string): Promise<void> {
  const t = `${sql.prefix}workflow_counts`;
  if (sql.dialect === 'postgres') {
    await sql.query(
      `WITH d AS (DELETE FROM ${t} WHERE ns = $1 RETURNING state, n)
       INSERT INTO ${t} (ns, state, n) SELECT $1, state, SUM(n) FROM d GROUP BY state`,
      [ns],
      true,
    );
    return;
  }
  const sums = await sql.query(`SELECT state, SUM(n) AS n FROM ${t} WHERE ns = $1 GROUP BY state`, [ns], true);
  await sql.query(`DELETE FROM ${t} WHERE ns = $1`, [ns], true);
  await count(
    sql,
    ns,
    sums.map((r) => [String(r.state), Number(r.n)]),
  );
}

/** Runs of `ns` that finished at or before `horizon`, oldest end first, at most `limit`. */
export async function finishedBefore(
  sql: WorkflowSql,
  ns: string,
  horizon: number,
  limit: number,
): Promise<{ id: string; state: RunState }[]> {
  const rows = await sql.query(
    `SELECT id, state FROM ${sql.prefix}workflow_runs WHERE ns = $1 AND finished_at IS NOT NULL AND finished_at <= $2
     ORDER BY finished_at LIMIT $3`,
    [ns, horizon, limit],
    false,
  );
  return rows.map((r) => ({ id: String(r.id), state: String(r.state) as RunState }));
}

/** Deletes finished run `id`: its row, its count and its step rows. */
export async function deleteRun(sql: WorkflowSql, ns: string, id: string): Promise<void> {
  const rows = await sql.query(
    `DELETE FROM ${sql.prefix}workflow_runs WHERE ns = $1 AND id = $2 AND state <> 'running' RETURNING state`,
    [ns, id],
    true,
  );
  if (!rows[0]) return;
  await count(sql, ns, [[String(rows[0].state), -1]]);
  await deleteSteps(sql, ns, id);
}

/** The running runs per workflow and version (for the versions no definition serves). */
export async function runningVersions(
  sql: WorkflowSql,
  ns: string,
): Promise<{ workflow: string; version: number; runs: number }[]> {
  const rows = await sql.query(
    `SELECT workflow, version, COUNT(*) AS n FROM ${sql.prefix}workflow_runs WHERE ns = $1 AND state = 'running'
     GROUP BY workflow, version`,
    [ns],
    false,
  );
  return rows.map((r) => ({ workflow: String(r.workflow), version: Number(r.version), runs: Number(r.n) }));
}

/** The workflows' tables in transaction `tx`, which must be one of this package's stores'. */
export function sqlOfTx(tx: TxOps): WorkflowSql {
  const s = workflowSqlOf(tx as object);
  if (!s)
    throw new InvalidArgument(
      'tx',
      "must be a transaction of this package's store (the tx of store.withTx or store.joinTransaction)",
    );
  return s;
}
