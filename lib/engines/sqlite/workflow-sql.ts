import { encodePayload } from '../../contract/codec.js';
import {
  positional,
  type EndedRun,
  type EndResult,
  type StepAppend,
  type RunStart,
  type StartJob,
  type StartedRunRow,
  type StartOutcome,
  type WorkflowSql,
} from '../../workflows/sql-seam.js';
import { inboxClaimInput } from '../shared/inbox.js';
import type { SqliteConn } from './connection.js';
import type { SqliteCore } from './context.js';
import { claimInboxIn } from './inbox.js';
import { ackJob, insertJobHandingOff, insertJobs } from './queue-ops.js';
import { randomUUID } from 'node:crypto';
import { INSERT_EVENT, NEXT_SEQ } from './stream.sql.js';
import { enqueueInput, notifyInput } from './tx-input.js';
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
  core: Pick<SqliteCore, 'registeredQueueOpts' | 'maxPayloadBytes' | 'enqueueHeaders' | 'liveness' | 'outcomes'>,
  write: <T>(op: string, fn: (ctx: WriteCtx) => T) => Promise<T>,
): Pick<WorkflowSql, 'appendSteps' | 'startRun' | 'startRuns' | 'endRuns' | 'endsCarryEntry'> {
  const append = (ctx: WriteCtx, stream: string, text: string): number => {
    const seq = ctx.conn.pluck(NEXT_SEQ).get(stream) as number;
    ctx.conn.stmt(INSERT_EVENT).run(stream, seq, null, text, ctx.now);
    return seq;
  };
  // A step row (its key is its once-only guard): the run stream's head offset when written, null when taken.
  const step = (ctx: WriteCtx, w: Omit<StepAppend, 'payload'>, text: string): number | null => {
    if (ctx.conn.stmt(INSERT_STEP).run(w.ns, w.run, w.position, w.key, text, ctx.now).changes !== 1) return null;
    return (ctx.conn.pluck(STREAM_HEAD).get(w.stream) as number | undefined) ?? 0;
  };
  const startRuns = (inbox: string, starts: readonly RunStart[]): Promise<StartOutcome[]> => {
    const input = starts.map((st) => ({
      st,
      guard: inboxClaimInput(inbox, st.run.id).messageId,
      text: encodePayload(st.entry, 'payload', core.maxPayloadBytes),
      job: enqueueInput(core, st.job.queue, st.job.payload, st.job.opts),
    }));
    // Workers the jobs may go to claimed (a local hand-off), whose liveness this write records first.
    const lv = core.liveness;
    const takers = new Set<string>();
    for (const { st } of input)
      if (st.job.handoff && lv?.needs(st.job.handoff.workerId)) takers.add(st.job.handoff.workerId);
    const written = write('workflows.start', (ctx) => {
      for (const w of takers) lv!.record(ctx, w);
      const counts = new Counts();
      const out = input.map(({ st, guard, text, job }): StartOutcome => {
        if (claimInboxIn(ctx, inbox, guard) !== 'claimed') return { created: false, job: null };
        append(ctx, st.stream, text);
        const r = st.run;
        const ins = ctx.conn
          .stmt(INSERT_RUN)
          .get(r.ns, r.id, r.workflow, r.version, r.input, r.parentId, ctx.now, ctx.now);
        if (ins !== undefined) counts.add(r.ns, 'running', 1);
        const h = st.job.handoff;
        if (!h) return { created: true, job: insertJobs(ctx, job.queue, [job.text], job.stamp)[0] ?? null };
        const o = insertJobHandingOff(ctx, job.queue, job.text, job.stamp, h.workerId, h.leaseMs, randomUUID);
        return { created: true, job: o.id, claimed: o.claimed };
      });
      counts.write(ctx);
      return out;
    });
    if (takers.size === 0) return written;
    return written.then((out) => {
      for (const w of takers) lv!.recorded(w);
      return out;
    });
  };
  return {
    appendSteps(writes: readonly StepAppend[]): Promise<(number | null)[]> {
      const input = writes.map((w) => ({ w, text: encodePayload(w.payload, 'payload', core.maxPayloadBytes) }));
      return write('workflows.append', (ctx) => input.map(({ w, text }) => step(ctx, w, text)));
    },
    startRun(inbox: string, stream: string, entry: unknown, run: StartedRunRow, job: StartJob): Promise<StartOutcome> {
      return startRuns(inbox, [{ stream, entry, run, job }]).then((o) => o[0]!);
    },
    startRuns,
    endsCarryEntry: true,
    endRuns(inbox: string, ends: readonly EndedRun[]): Promise<EndResult[]> {
      const input = ends.map((e) => ({
        e,
        guard: inboxClaimInput(inbox, e.guard).messageId,
        text: encodePayload(e.entry, 'payload', core.maxPayloadBytes),
        channel: notifyInput(e.channel, undefined),
        before: e.before
          ? {
              position: e.before.position,
              key: e.before.key,
              text: encodePayload(e.before.payload, 'payload', core.maxPayloadBytes),
            }
          : null,
      }));
      const written = write('workflows.end', (ctx) => {
        const counts = new Counts();
        const out = input.map(({ e, guard, text, channel, before }): EndResult => {
          // A run without a running row is left to the end in a transaction, which adopts the row.
          if (ctx.conn.stmt(RUN_RUNNING).get(e.ns, e.id) === undefined) return { outcome: 'skipped', acked: null };
          // The run's last step goes first, under its own guard: taken, nothing of this end is written.
          if (before) {
            const at = { ns: e.ns, run: e.id, position: before.position, key: before.key, stream: e.stream };
            if (step(ctx, at, before.text) === null) return { outcome: 'superseded', acked: null };
          }
          if (claimInboxIn(ctx, inbox, guard) !== 'claimed') return { outcome: 'taken', acked: null };
          append(ctx, e.stream, text);
          const moved = ctx.conn.stmt(END_RUN).get(e.state, e.result, e.error, ctx.now, ctx.now, e.ns, e.id);
          if (moved !== undefined) {
            counts.add(e.ns, 'running', -1);
            counts.add(e.ns, e.state, 1);
          }
          ctx.wake(channel);
          if (moved === undefined) return { outcome: 'no-row', acked: null };
          // The pass's job goes with the end: its ack, fenced by its claim, in the same commit.
          const a = e.ack;
          return { outcome: 'ended', acked: a ? ackJob(ctx, a.queue, a.id, a.claimToken, a.plain) : null };
        });
        counts.write(ctx);
        return out;
      });
      return written.then((out) => {
        // As an ack counts its jobs for the queue's throughput figures.
        for (const [i, r] of out.entries()) {
          const a = ends[i]!.ack;
          if (r.acked === true && a) core.outcomes.record(a.queue, 'completed', 1, a.times ? [a.times] : []);
        }
        return out;
      });
    },
  };
}

const INSERT_STEP = `INSERT INTO __alkstore_workflow_steps (ns, run_id, position, key, entry, created_at)
  VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`;
const STREAM_HEAD = `SELECT last_seq FROM __alkstore_stream_heads WHERE stream = ?`;
const INSERT_RUN = `INSERT INTO __alkstore_workflow_runs
  (ns, id, workflow, version, state, input, parent_id, created_at, updated_at)
  VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?) ON CONFLICT (ns, id) DO NOTHING RETURNING id`;
const INSERT_RUN_COUNT = `INSERT INTO __alkstore_workflow_counts (ns, state, n) VALUES (?, ?, ?)`;

/** The count deltas of one write, summed per namespace and state: one row each instead of one per run. */
class Counts {
  private readonly deltas = new Map<string, { ns: string; state: string; n: number }>();

  add(ns: string, state: string, n: number): void {
    const key = `${ns}\u0000${state}`;
    const d = this.deltas.get(key);
    if (d) d.n += n;
    else this.deltas.set(key, { ns, state, n });
  }

  write(ctx: WriteCtx): void {
    for (const d of this.deltas.values()) if (d.n !== 0) ctx.conn.stmt(INSERT_RUN_COUNT).run(d.ns, d.state, d.n);
  }
}
const RUN_RUNNING = `SELECT 1 FROM __alkstore_workflow_runs WHERE ns = ? AND id = ? AND state = 'running'`;
const END_RUN = `UPDATE __alkstore_workflow_runs SET state = ?, result = ?, error = ?, waiting = NULL, wake_at = NULL,
  updated_at = ?, finished_at = ? WHERE ns = ? AND id = ? AND state = 'running' RETURNING id`;
