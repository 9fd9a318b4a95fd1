import { encodePayload } from '../../contract/codec.js';
import {
  positional,
  type JournalAppend,
  type StartJob,
  type StartedRunRow,
  type StartOutcome,
  type WorkflowSql,
} from '../../workflows/sql-seam.js';
import { inboxClaimInput } from '../shared/inbox.js';
import type { SqliteConn } from './connection.js';
import type { SqliteCore } from './context.js';
import { claimInboxIn } from './inbox.js';
import { insertJobs } from './queue-ops.js';
import { INSERT_EVENT, NEXT_SEQ } from './stream.sql.js';
import { enqueueInput } from './tx-input.js';
import type { WriteCtx } from './writer.js';

/** Runs a statement (`?` placeholders) on a connection: its rows, or none for a statement that returns nothing. */
export function runOn(conn: SqliteConn, sql: string, params: readonly unknown[]): Record<string, unknown>[] {
  const st = conn.stmt(sql);
  if (/^\s*(SELECT|WITH|EXPLAIN)\b/i.test(sql) || /\bRETURNING\b/i.test(sql))
    return st.all(...params) as Record<string, unknown>[];
  st.run(...params);
  return [];
}

/** The workflows' statements through `run` (a store's read or write path, a transaction's savepoint, a caller's runner). */
export function sqliteWorkflowSql(
  run: (sql: string, params: unknown[], write: boolean) => Promise<Record<string, unknown>[]>,
): WorkflowSql {
  return {
    dialect: 'sqlite',
    prefix: '__alkstore_',
    query: (sql, params, write) => {
      const p = positional(sql, params);
      return run(p.sql, p.params, write);
    },
  };
}

/**
 * The workflows' writes that take one write of the store (one commit, grouped with other writes by the
 * writer) where the generic seam needs several statements: journal entries of many runs, each under
 * its once-only guard, and a run's start (guard, start entry, run row, count delta, the job that drives
 * it). Run on `write`: the store's writer, or a transaction's savepointed op. No stream wake: nothing
 * subscribes to a run's journal.
 */
export function sqliteWorkflowWrites(
  core: Pick<SqliteCore, 'registeredQueueOpts' | 'maxPayloadBytes' | 'enqueueHeaders'>,
  write: <T>(op: string, fn: (ctx: WriteCtx) => T) => Promise<T>,
): Pick<WorkflowSql, 'appendJournal' | 'startRun'> {
  const append = (ctx: WriteCtx, stream: string, text: string): number => {
    const seq = ctx.conn.pluck(NEXT_SEQ).get(stream) as number;
    ctx.conn.stmt(INSERT_EVENT).run(stream, seq, null, text, ctx.now);
    return seq;
  };
  return {
    appendJournal(inbox: string, writes: readonly JournalAppend[]): Promise<(number | null)[]> {
      const input = writes.map((w) => ({
        guard: inboxClaimInput(inbox, w.guard).messageId,
        stream: w.stream,
        text: encodePayload(w.payload, 'payload', core.maxPayloadBytes),
      }));
      return write('workflows.append', (ctx) =>
        input.map((w) => (claimInboxIn(ctx, inbox, w.guard) === 'claimed' ? append(ctx, w.stream, w.text) : null)),
      );
    },
    startRun(inbox: string, stream: string, entry: unknown, run: StartedRunRow, job: StartJob): Promise<StartOutcome> {
      const guard = inboxClaimInput(inbox, run.id).messageId;
      const text = encodePayload(entry, 'payload', core.maxPayloadBytes);
      const j = enqueueInput(core, job.queue, job.payload, job.opts);
      return write('workflows.start', (ctx) => {
        if (claimInboxIn(ctx, inbox, guard) !== 'claimed') return { created: false, job: null };
        append(ctx, stream, text);
        const ins = ctx.conn
          .stmt(INSERT_RUN)
          .get(run.ns, run.id, run.workflow, run.version, run.input, run.parentId, ctx.now, ctx.now);
        if (ins !== undefined) ctx.conn.stmt(INSERT_RUN_COUNT).run(run.ns);
        return { created: true, job: insertJobs(ctx, j.queue, [j.text], j.stamp)[0] ?? null };
      });
    },
  };
}

const INSERT_RUN = `INSERT INTO __alkstore_workflow_runs
  (ns, id, workflow, version, state, input, parent_id, created_at, updated_at)
  VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?) ON CONFLICT (ns, id) DO NOTHING RETURNING id`;
const INSERT_RUN_COUNT = `INSERT INTO __alkstore_workflow_counts (ns, state, n) VALUES (?, 'running', 1)`;
