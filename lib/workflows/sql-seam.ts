import type { JobOpts } from '../contract/options.js';
import type { ClaimedRow } from '../engines/shared/queue-driver.js';
import type { OutcomeTimes } from '../internal/outcome-counter.js';

// Internal to the package: how the workflows reach their own tables (tables-ddl.ts) on a store of this
// package, inside one of its transactions or on its own. The engines implement it; nothing else does.

/** Statements on the workflows' tables, in one transaction (a `TxOps`) or each in its own (a store). */
export interface WorkflowSql {
  readonly dialect: 'postgres' | 'sqlite';
  /** What table names start with: `"schema".` (PostgreSQL) or `__alkstore_` (SQLite). */
  readonly prefix: string;
  /**
   * Runs one statement (placeholders `$1`, `$2`, … on both engines) and resolves to its rows (int8
   * columns may arrive as strings: convert with `Number`). `write`: on SQLite, through the write path.
   */
  query(sql: string, params: readonly unknown[], write: boolean): Promise<Record<string, unknown>[]>;
  /**
   * Where the engine has it: positioned journal entries of many runs in one statement (one round trip,
   * one commit), each a row of the steps table whose key is its once-only guard; per write, the head
   * offset of the run's stream when it was written (0: no stream yet), or null when the key was taken
   * (another writer journaled it: nothing written). Without it, each is an {@link insertStep} in a
   * transaction.
   */
  appendSteps?(writes: readonly StepAppend[]): Promise<(number | null)[]>;
  /**
   * Where the engine has it: a run's start in one statement (its once-only guard in `inbox`, its start
   * entry first on `stream`, its row in the runs table, the count's delta and `job`); not created when
   * the guard was taken (nothing written). Without it, each is a statement of its own.
   */
  startRun?(inbox: string, stream: string, start: unknown, run: StartedRunRow, job: StartJob): Promise<StartOutcome>;
  /**
   * Where the engine has it: a run's end in one statement (its guard, its end entry, the run row moved
   * from running with the counts, the notification): `ended`, `taken` when the guard was taken (nothing
   * written), or `no-row` when the entry was written but the run has no running row (adopt it).
   */
  endRun?(inbox: string, end: EndedRun): Promise<'ended' | 'taken' | 'no-row'>;
  /**
   * Where the engine has it: the starts of many runs (each what {@link startRun} writes) in one statement
   * where it can; per start, not created when its guard was taken. At most one start per run.
   */
  startRuns?(inbox: string, starts: readonly RunStart[]): Promise<StartOutcome[]>;
  /**
   * Where the engine has it: the ends of many runs (each what {@link endRun} writes) in one statement; a
   * run whose row is not running when it starts is `skipped` (nothing written: end it with `endRun` in a
   * transaction that can adopt the row). At most one end per run. An end that carries its pass's job
   * (`EndedRun.ack`) and ends the run also acks that job in the same commit (fenced by its claim, as any
   * ack; `acked` says whether it landed), where the engine can: otherwise `acked` is null and the job is
   * acked as usual.
   */
  endRuns?(inbox: string, ends: readonly EndedRun[]): Promise<EndResult[]>;
  /**
   * Whether {@link endRuns} writes an end's `before` entry (the run's last step, see `EndedRun.before`)
   * in the same commit, ahead of the end, as a step row.
   */
  readonly endsCarryEntry?: boolean;
}

/**
 * What a start wrote: `created` false when the run's guard was taken; `job`, the id of the job that drives
 * it; `claimed`, that job's row when it went in claimed by the start's `handoff` worker (null or absent:
 * pending, or not created).
 */
export interface StartOutcome {
  readonly created: boolean;
  readonly job: number | null;
  readonly claimed?: ClaimedRow | null;
}

/**
 * What {@link WorkflowSql.endRuns} did with one end; `superseded`: the guard of its `before` entry was
 * taken (another writer journaled that position), nothing of it written.
 */
export type EndOutcome = 'ended' | 'taken' | 'no-row' | 'skipped' | 'superseded';

/** What {@link WorkflowSql.endRuns} did with one end, and with its pass's job (`EndedRun.ack`). */
export interface EndResult {
  readonly outcome: EndOutcome;
  /** The job's ack landed (true) or was fenced, its claim lapsed (false); null: not acked here, ack it as usual. */
  readonly acked: boolean | null;
}

/**
 * The claimed job of the pass that ends a run, acked by the end's statement: a pass run again after the
 * end does nothing, so the job need not outlive the end by a commit of its own.
 */
export interface PassAck {
  readonly queue: string;
  readonly id: number;
  readonly claimToken: string;
  /** The job has no ordering key (from this package's own claimed handle): nothing to promote. */
  readonly plain: boolean;
  /** Its wait and run times, for the queue's throughput figures (as an ack records them). */
  readonly times: OutcomeTimes | null;
}

/** One run's start for {@link WorkflowSql.startRuns}: its start entry on `stream`, its row and its job. */
export interface RunStart {
  readonly stream: string;
  readonly entry: unknown;
  readonly run: StartedRunRow;
  readonly job: StartJob;
}

/** A run's end, written by {@link WorkflowSql.endRun}. */
export interface EndedRun {
  readonly ns: string;
  readonly id: string;
  /** The once-only guard of the end entry (in the journal's inbox). */
  readonly guard: string;
  readonly stream: string;
  readonly entry: unknown;
  readonly state: 'completed' | 'failed';
  /** JSON text of the result or the error (null: none). */
  readonly result: string | null;
  readonly error: string | null;
  /** Notified once the end commits (`waitForResult`). */
  readonly channel: string;
  /** The pass's job, acked with the end by {@link WorkflowSql.endRuns} where the engine can (absent: not). */
  readonly ack?: PassAck | null;
  /**
   * A positioned journal entry of the run not written yet (its last step's outcome), written as a step
   * row under its own key ahead of the end by {@link WorkflowSql.endRuns} where `endsCarryEntry`: one
   * commit for both.
   */
  readonly before?: { readonly position: number; readonly key: string; readonly payload: unknown } | null;
}

/** The job that drives a started run, enqueued by the start's statement where the engine can. */
export interface StartJob {
  readonly queue: string;
  readonly payload: unknown;
  readonly opts: JobOpts;
  /**
   * A worker of this process that reserved a slot for the job (a local hand-off): where the engine can,
   * and the queue's settings, the clock, the jobs waiting and the job's key allow, the job goes in already
   * claimed by it (see `insertJobHandingOff`); else pending, as without.
   */
  readonly handoff?: { readonly workerId: string; readonly leaseMs: number | null } | null;
}

/** The row a start writes (state running, times from the database clock). */
export interface StartedRunRow {
  readonly ns: string;
  readonly id: string;
  readonly workflow: string;
  readonly version: number;
  /** The input's JSON text (null: undefined). */
  readonly input: string | null;
  readonly parentId: string | null;
}

/**
 * One positioned journal entry of run `run` of namespace `ns`: a row of the steps table at `position`,
 * keyed by `key` (what it is there, in the run's retry epoch: `3`, `3/r1`, `3/s`, `3@1`). `stream` is
 * the run's journal stream, whose head offset comes back with the write.
 */
export interface StepAppend {
  readonly ns: string;
  readonly run: string;
  readonly position: number;
  readonly key: string;
  readonly stream: string;
  readonly payload: unknown;
}

/** The database clock in epoch ms, as an SQL expression of `sql`'s dialect. */
export function clockSql(sql: Pick<WorkflowSql, 'dialect'>): string {
  return sql.dialect === 'postgres'
    ? 'floor(extract(epoch from clock_timestamp()) * 1000)::bigint'
    : "CAST(unixepoch('subsec') * 1000 AS INTEGER)";
}

/** Under this symbol, a store or a transaction of this package carries its {@link WorkflowSql}. */
export const WORKFLOW_SQL: unique symbol = Symbol('alkstore.workflowSql');

/** The {@link WorkflowSql} of a store or transaction of this package, or null for anything else. */
export function workflowSqlOf(x: object): WorkflowSql | null {
  return (x as { [WORKFLOW_SQL]?: WorkflowSql })[WORKFLOW_SQL] ?? null;
}

/**
 * SQLite's form of a statement written with `$n` placeholders: `?` in order of appearance, with the
 * parameters in that order (a `$n` used twice passes its value twice).
 */
export function positional(sql: string, params: readonly unknown[]): { sql: string; params: unknown[] } {
  const out: unknown[] = [];
  const text = sql.replace(/\$(\d+)/g, (_, n: string) => {
    out.push(params[Number(n) - 1]);
    return '?';
  });
  return { sql: text, params: out };
}
