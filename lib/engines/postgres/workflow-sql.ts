import { createHash } from 'node:crypto';
import { encodePayload } from '../../contract/codec.js';
import { inboxClaimInput } from '../shared/inbox.js';
import { InvalidArgument } from '../../contract/errors.js';
import { hasLimitKey } from '../../contract/limits.js';
import { validateName } from '../../contract/validate.js';
import { queueWakeChannel } from '../../contract/names.js';
import { resolveJobStamp } from '../../contract/options.js';
import type { EndedRun, JournalAppend, StartJob, StartedRunRow, WorkflowSql } from '../../workflows/sql-seam.js';
import { NOW_MS, wakePayload } from './schema-sql.js';
import { enqueueResolved, extraParams, stampParams, type PgContext } from './context.js';
import type { Executor } from './connection.js';

/** The workflows' statements on `exec` (the pool, a transaction's client or a caller's query runner). */
export function postgresWorkflowSql(ctx: PgContext, exec: Executor, check: () => void): WorkflowSql {
  const s = ctx.sql.schema;
  const names = new Map<string, string>();
  // Journal entries of many runs in one statement, each under its once-only guard: an entry whose guard
  // another writer holds is not written (no offset back). A guard's insert waits for a concurrent writer
  // of the same guard to end, as `inboxClaim` does. Each stream's head row stays locked to the commit, so
  // offsets follow commit order as `publish` keeps them. No stream wake: nothing subscribes to a journal.
  // One stream at most once per statement (a head row cannot be updated twice in one statement).
  const append = s.def(
    'wf_journal_append',
    `WITH t AS MATERIALIZED (SELECT ${NOW_MS} AS ms),
     u AS MATERIALIZED (
       SELECT * FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS u(guard, stream, payload, i)
     ),
     g AS (
       INSERT INTO ${s.q}.inbox (inbox, message_id, state, attempts, received_at, done_at)
       SELECT $1::text, u.guard, 'done', 1, t.ms, t.ms FROM u, t ORDER BY u.guard
       ON CONFLICT (inbox, message_id) DO NOTHING
       RETURNING message_id
     ),
     h AS (
       INSERT INTO ${s.q}.stream_heads AS h (stream, last_offset)
       SELECT u.stream, 1 FROM u JOIN g ON g.message_id = u.guard ORDER BY u.stream
       ON CONFLICT (stream) DO UPDATE SET last_offset = h.last_offset + 1
       RETURNING h.stream, h.last_offset
     ),
     e AS (
       INSERT INTO ${s.q}.stream_events (stream, seq, key, payload, created_at)
       SELECT h.stream, h.last_offset, NULL, u.payload::json, t.ms FROM h JOIN u ON u.stream = h.stream, t
       RETURNING stream, seq
     )
     SELECT u.i::int AS i, e.seq FROM u LEFT JOIN e ON e.stream = u.stream`,
  );
  // One journal entry under its guard, as the head of a statement: $1 inbox, $2 guard, $3 stream,
  // $4 entry; `g` holds the guard when it was won, `e` the entry's offset when written.
  const oneEntry = `WITH t AS MATERIALIZED (SELECT ${NOW_MS} AS ms),
     g AS (
       INSERT INTO ${s.q}.inbox (inbox, message_id, state, attempts, received_at, done_at)
       SELECT $1::text, $2::text, 'done', 1, t.ms, t.ms FROM t
       ON CONFLICT (inbox, message_id) DO NOTHING
       RETURNING message_id
     ),
     h AS (
       INSERT INTO ${s.q}.stream_heads AS h (stream, last_offset)
       SELECT $3::text, 1 FROM g
       ON CONFLICT (stream) DO UPDATE SET last_offset = h.last_offset + 1
       RETURNING h.stream, h.last_offset
     ),
     e AS (
       INSERT INTO ${s.q}.stream_events (stream, seq, key, payload, created_at)
       SELECT h.stream, h.last_offset, NULL, $4::text::json, t.ms FROM h, t
       RETURNING seq
     ),`;
  // A run's start: the guard, the start entry (offset 1 of its journal), the run's row, its count's delta
  // and the job that drives it (through the engine's enqueue function, as a keyed `tx.enqueue`), in one
  // statement. Nothing is written when the guard is taken; a row that exists already (adopted from 0.2's
  // index) is kept, and the job is enqueued all the same.
  const startCtes = `${oneEntry}
     r AS (
       INSERT INTO ${s.q}.workflow_runs AS r (ns, id, workflow, version, state, input, parent_id, created_at, updated_at)
       SELECT $5::text, $2::text, $6::text, $7::bigint, 'running', $8::text, $9::text, t.ms, t.ms FROM g, t
       ON CONFLICT (ns, id) DO NOTHING
       RETURNING r.id
     ),
     c AS (INSERT INTO ${s.q}.workflow_counts (ns, state, n) SELECT $5::text, 'running', 1 FROM r)`;
  const start = s.def('wf_start_run', `${startCtes} SELECT (SELECT count(*) FROM e)::int AS n`);
  const startWithJob = s.def(
    'wf_start_run_job',
    `${startCtes},
     j AS (
       SELECT ${s.q}.enqueue_job($10::text, $11::text, $12::int, $13::int, $14::bigint, $15::bigint, $16::bigint,
         $17::bigint, $18::bigint, $19::bigint, ${s.channel}, $20::text, $21::text, $22::text, $23::boolean, $24::text) AS id
       FROM g
     )
     SELECT (SELECT count(*) FROM e)::int AS n, (SELECT id FROM j) AS job`,
  );
  // A run's end: the guard, the end entry, the run's row moved from running with the counts' deltas, and
  // the wake of its channel, in one statement. Nothing is written when the guard is taken.
  const end = s.def(
    'wf_end_run',
    `${oneEntry}
     up AS (
       UPDATE ${s.q}.workflow_runs AS r SET state = $7::text, result = $8::text, error = $9::text, waiting = NULL,
         wake_at = NULL, updated_at = t.ms, finished_at = t.ms
       FROM g, t WHERE r.ns = $5::text AND r.id = $6::text AND r.state = 'running'
       RETURNING r.id
     ),
     c AS (
       INSERT INTO ${s.q}.workflow_counts (ns, state, n)
       SELECT $5::text, v.s, v.d FROM up, (VALUES ('running', -1), ($7::text, 1)) AS v(s, d)
     ),
     n AS (SELECT ${s.notify('$10')} AS x FROM g)
     SELECT (SELECT count(*) FROM e)::int AS wrote, (SELECT count(*) FROM up)::int AS moved,
       (SELECT count(*) FROM n)::int AS notified`,
  );
  return {
    dialect: 'postgres',
    prefix: `${s.q}.`,
    async query(text, params) {
      check();
      let name = names.get(text);
      if (name === undefined) {
        name = `wf_${createHash('sha256').update(text).digest('hex').slice(0, 16)}`;
        names.set(text, name);
      }
      return (await exec.run<Record<string, unknown>>(s.def(name, text), params)).rows;
    },
    async startRun(inbox: string, stream: string, entry: unknown, run: StartedRunRow, job: StartJob): Promise<boolean> {
      const guard = inboxClaimInput(inbox, run.id).messageId;
      const text = encodePayload(entry, 'payload', ctx.maxPayloadBytes);
      const params = [inbox, guard, stream, text, run.ns, run.workflow, run.version, run.input, run.parentId];
      const stamp = resolveJobStamp(ctx.queueOpts(job.queue), job.opts, ctx.enqueueHeaders);
      const jobText = encodePayload(job.payload, 'payload', ctx.maxPayloadBytes);
      check();
      if (hasLimitKey(stamp)) {
        // A limited job takes the engine's limited enqueue: a second statement on the same executor.
        const r = await exec.run<{ n: number }>(start, params);
        if ((r.rows[0]?.n ?? 0) === 0) return false;
        await enqueueResolved(ctx, exec, job.queue, jobText, stamp);
        return true;
      }
      const r = await exec.wakes.run(
        wakePayload(queueWakeChannel(job.queue)),
        (w) =>
          exec.run<{ n: number }>(startWithJob, [
            ...params,
            job.queue,
            jobText,
            ...stampParams(stamp),
            w,
            ...extraParams(stamp),
          ]),
        (res) => (res.rows[0]?.n ?? 0) > 0,
      );
      return (r.rows[0]?.n ?? 0) > 0;
    },
    async endRun(inbox: string, run: EndedRun): Promise<'ended' | 'taken' | 'no-row'> {
      const guard = inboxClaimInput(inbox, run.guard).messageId;
      validateName('channel', run.channel);
      const text = encodePayload(run.entry, 'payload', ctx.maxPayloadBytes);
      check();
      const r = await exec.wakes.run(
        wakePayload(run.channel),
        (w) =>
          exec.run<{ wrote: number; moved: number }>(end, [
            inbox,
            guard,
            run.stream,
            text,
            run.ns,
            run.id,
            run.state,
            run.result,
            run.error,
            w,
          ]),
        (res) => (res.rows[0]?.wrote ?? 0) > 0,
      );
      const row = r.rows[0];
      if (!row || row.wrote === 0) return 'taken';
      return row.moved > 0 ? 'ended' : 'no-row';
    },
    async appendJournal(inbox: string, writes: readonly JournalAppend[]): Promise<(number | null)[]> {
      const guards: string[] = [];
      const streams: string[] = [];
      const payloads: string[] = [];
      const seen = new Set<string>();
      for (const w of writes) {
        guards.push(inboxClaimInput(inbox, w.guard).messageId);
        if (seen.has(w.stream))
          throw new InvalidArgument(
            'journal append',
            `names stream ${JSON.stringify(w.stream)} twice (at most once each)`,
          );
        seen.add(w.stream);
        streams.push(w.stream);
        payloads.push(encodePayload(w.payload, 'payload', ctx.maxPayloadBytes));
      }
      check();
      const r = await exec.run<{ i: number; seq: string | null }>(append, [inbox, guards, streams, payloads]);
      const out: (number | null)[] = writes.map(() => null);
      for (const row of r.rows) out[row.i - 1] = row.seq === null ? null : Number(row.seq);
      return out;
    },
  };
}
