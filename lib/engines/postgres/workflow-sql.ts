import { createHash } from 'node:crypto';
import { encodePayload } from '../../contract/codec.js';
import { inboxClaimInput } from '../shared/inbox.js';
import { InvalidArgument } from '../../contract/errors.js';
import { hasLimitKey } from '../../contract/limits.js';
import { validateName } from '../../contract/validate.js';
import { queueWakeChannel } from '../../contract/names.js';
import { resolveJobStamp } from '../../contract/options.js';
import type {
  EndedRun,
  EndOutcome,
  EndResult,
  StepAppend,
  PassAck,
  RunStart,
  StartJob,
  StartOutcome,
  StartedRunRow,
  WorkflowSql,
} from '../../workflows/sql-seam.js';
import type { JobWrite } from '../../contract/options.js';
import type { ClaimedRow } from '../shared/queue-driver.js';
import { NOW_MS, wakePayload, type SchemaSql } from './schema-sql.js';
import { ackedJobs, ackFence, claimableWaiting, FINISHED, promoteFrom } from './queue.sql.js';
import { foldSometimes } from './counts.sql.js';
import { limitedQueues } from './limits.js';
import { enqueueResolved, extraParams, promoted, rewinding, stampParams, type PgContext } from './context.js';
import type { Executor } from './connection.js';
import { runStateOf } from '../../workflows/tables-ddl.js';

/** The workflows' statements of one schema, built once (a transaction's seam is made per transaction). */
const statementsOf = new WeakMap<SchemaSql, ReturnType<typeof buildStatements>>();

function buildStatements(s: SchemaSql) {
  // Journal entries of many runs in one statement (the runs' starts, their ends), each under its once-only
  // guard: an entry whose guard another writer holds is not written (no offset back). A guard's insert waits for a concurrent writer
  // of the same guard to end, as `inboxClaim` does. Each stream's head row stays locked to the commit, so
  // offsets follow commit order as `publish` keeps them. No stream wake: nothing subscribes to a journal.
  // One stream at most once per statement (a head row cannot be updated twice in one statement).
  // `w` holds the rows of `u` whose guard was won; `rest` follows the entry's CTEs.
  // The once-only guards in column `col` of the rows `rows` (those that are not null), claimed done in
  // inbox $1 in one insert; RETURNING holds the guards won.
  const guards = (rows: string, col: string): string => `
       INSERT INTO ${s.q}.inbox (inbox, message_id, state, attempts, received_at, done_at)
       SELECT $1::text, ${rows}.${col}, 'done', 1, t.ms, t.ms FROM ${rows}, t WHERE ${rows}.${col} IS NOT NULL ORDER BY ${rows}.${col}
       ON CONFLICT (inbox, message_id) DO NOTHING
       RETURNING message_id
     `;
  // The rows of `src` (columns guard, stream, entry) under their guards, each entry written on its
  // stream: `w` holds the rows whose guard was won, `e` the events written.
  const guardedEntries = (src: string): string => `g AS (${guards(src, 'guard')}),
     w AS MATERIALIZED (SELECT ${src}.* FROM ${src} JOIN g ON g.message_id = ${src}.guard),
     h AS (
       INSERT INTO ${s.q}.stream_heads AS h (stream, last_offset)
       SELECT w.stream, 1 FROM w ORDER BY w.stream
       ON CONFLICT (stream) DO UPDATE SET last_offset = h.last_offset + 1
       RETURNING h.stream, h.last_offset
     ),
     e AS (
       INSERT INTO ${s.q}.stream_events (stream, seq, key, payload, created_at)
       SELECT h.stream, h.last_offset, NULL, w.entry::json, t.ms FROM h JOIN w ON w.stream = h.stream, t
       RETURNING stream, seq
     )`;
  const entries = (u: string, rest: string): string => `WITH t AS MATERIALIZED (SELECT ${NOW_MS} AS ms),
     ${u},
     ${guardedEntries('u')}${rest}`;
  // Positioned journal entries of many runs in one statement, each a row of the steps table whose key is
  // its once-only guard: a row whose key another writer holds is not written (an insert of the same key
  // waits for a concurrent writer to end, as a guard's does). Per row written, its run stream's head
  // offset then (0: none yet), so the writer knows whether anything of the stream is unread.
  const appendSteps = s.def(
    'wf_steps_append',
    `WITH t AS MATERIALIZED (SELECT ${NOW_MS} AS ms),
     u AS MATERIALIZED (
       SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::text[])
       WITH ORDINALITY AS u(ns, run_id, position, key, stream, entry, i)
     ),
     ins AS (
       INSERT INTO ${s.q}.workflow_steps (ns, run_id, position, key, entry, created_at)
       SELECT u.ns, u.run_id, u.position, u.key, u.entry, t.ms FROM u, t ORDER BY u.ns, u.run_id, u.position, u.key
       ON CONFLICT DO NOTHING
       RETURNING ns, run_id, position, key
     )
     SELECT u.i::int AS i, coalesce(h.last_offset, 0) AS head
     FROM u JOIN ins ON ins.ns = u.ns AND ins.run_id = u.run_id AND ins.position = u.position AND ins.key = u.key
       LEFT JOIN ${s.q}.stream_heads h ON h.stream = u.stream`,
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
  // Whether a start's job may go in claimed by its hand-off worker (a local hand-off, see
  // `StartJob.handoff`): the queue `queue` is not paused or limited and no job a claim would take first
  // waits (at the job's `priority`); the function checks the rest after the key's lock (no job of the
  // key is live, due now).
  const mayTake = (queue: string, priority: string): string =>
    `NOT coalesce((SELECT qs.paused OR qs.rate_max IS NOT NULL OR qs.global_concurrency IS NOT NULL
         FROM ${s.q}.queue_settings qs WHERE qs.queue = ${queue}), false) AND NOT ${claimableWaiting(s, 't.ms', queue, priority)}`;
  // `startWithJob` with a hand-off to worker $25 (lease $26): the claim's token, deadline and times come back.
  const startHandingOff = s.def(
    'wf_start_run_handoff',
    `${startCtes},
     j AS (
       SELECT h.* FROM g, t, LATERAL ${s.q}.enqueue_job_handoff($10::text, $11::text, $12::int, $13::int, $14::bigint,
         $15::bigint, $16::bigint, $17::bigint, $18::bigint, $19::bigint, ${s.channel}, $20::text, $21::text, $22::text,
         $23::boolean, $24::text, ${mayTake('$10::text', '$12::int')}, $25::text, $26::bigint) AS h
     )
     SELECT (SELECT count(*) FROM e)::int AS n, j.id AS job, j.claim_token, j.claimed_until, j.enqueued_at, j.run_at
     FROM (SELECT 1) AS one LEFT JOIN j ON true`,
  );
  // The starts of many runs of one queue (no limit keys) in one statement: per run what `startWithJob`
  // (or, for a run whose `worker` is given, `startHandingOff`) writes. $2 is the queue, $3 the wake; one
  // row per run in the arrays after.
  const startMany = s.def(
    'wf_start_runs',
    entries(
      `u AS MATERIALIZED (
       SELECT * FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::bigint[],
         $11::text[], $12::text[], $13::text[], $14::int[], $15::int[], $16::bigint[], $17::bigint[], $18::bigint[],
         $19::bigint[], $20::bigint[], $21::bigint[], $22::text[], $23::text[], $24::boolean[], $25::text[],
         $26::text[], $27::bigint[])
       WITH ORDINALITY AS u(guard, stream, entry, ns, id, workflow, version, input, parent, job, priority, attempts,
         vis, backoff, dlr, delay, run_at, expires, headers, unique_key, replace, ordering_key, worker, lease, i)
     )`,
      `,
     r AS (
       INSERT INTO ${s.q}.workflow_runs AS r (ns, id, workflow, version, state, input, parent_id, created_at, updated_at)
       SELECT w.ns, w.id, w.workflow, w.version, 'running', w.input, w.parent, t.ms, t.ms FROM w, t ORDER BY w.ns, w.id
       ON CONFLICT (ns, id) DO NOTHING
       RETURNING r.ns
     ),
     c AS (INSERT INTO ${s.q}.workflow_counts (ns, state, n) SELECT r.ns, 'running', count(*) FROM r GROUP BY r.ns),
     j AS (
       SELECT w.i, ${s.q}.enqueue_job($2::text, w.job, w.priority, w.attempts, w.vis, w.backoff, w.dlr, w.delay, w.run_at,
           w.expires, ${s.channel}, $3::text, w.headers, w.unique_key, w.replace, w.ordering_key) AS id,
         NULL::text AS claim_token, NULL::bigint AS claimed_until, NULL::bigint AS enqueued_at, NULL::bigint AS run_at
       FROM w WHERE w.worker IS NULL
       UNION ALL
       SELECT w.i, h.id, h.claim_token, h.claimed_until, h.enqueued_at, h.run_at FROM w, t,
         LATERAL ${s.q}.enqueue_job_handoff($2::text, w.job, w.priority, w.attempts, w.vis, w.backoff, w.dlr, w.delay,
           w.run_at, w.expires, ${s.channel}, $3::text, w.headers, w.unique_key, w.replace, w.ordering_key,
           ${mayTake('$2::text', 'w.priority')}, w.worker, w.lease) AS h
       WHERE w.worker IS NOT NULL
     )
     SELECT u.i::int AS i, j.i IS NOT NULL AS created, j.id AS job, j.claim_token, j.claimed_until, j.enqueued_at,
       j.run_at FROM u LEFT JOIN j ON j.i = u.i`,
    ),
  );
  // A run's end: the guard, the end entry, the run's row moved from running with the counts' deltas, and
  // the wake of its channel, in one statement. Nothing is written when the guard is taken.
  const end = s.def(
    'wf_end_run',
    `${oneEntry}
     up AS (
       UPDATE ${s.q}.workflow_runs AS r SET state = $7::text, result = $8::text, error = $9::text, waiting = NULL,
         wake_at = NULL, updated_at = t.ms, finished_at = t.ms
       FROM g, t WHERE r.ns = $5::text AND r.id = $6::text AND ${runStateOf('r')} = 'running'
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
  // The ends of many runs in one statement: per run what `end` writes, for the runs whose row is running
  // when the statement starts (`u`); the others are left untouched, for the end in a transaction that
  // adopts a missing row. A run's last step's entry (`EndedRun.before`: position $11, key $12, entry
  // $13) goes first, as its step row (`sb`): when another writer holds its key, nothing of that end is
  // written. A run it ends whose pass's job is given ($14 id, $15 claim token; the jobs of queue $16,
  // ids $17) has that job acked as `ackBatch` acks it (queue.sql.ts, ackedJobs): deleted when still
  // claimed by that token, its counter delta, a fold now and then, and its ordering key (the run's own)
  // promoted to its next job, with the queue's wake $18; a job whose key another transaction holds is
  // left (`hd`: ack it as usual).
  const endMany = s.def(
    'wf_end_runs',
    `WITH t AS MATERIALIZED (SELECT ${NOW_MS} AS ms),
     a AS MATERIALIZED (
       SELECT * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
         $9::text[], $10::text[], $11::int[], $12::text[], $13::text[], $14::bigint[], $15::text[])
       WITH ORDINALITY AS a(guard, stream, entry, ns, id, state, result, error, wake, bpos, bkey, bentry, job, token, i)
     ),
     u AS MATERIALIZED (
       SELECT a.* FROM a WHERE EXISTS (
         SELECT 1 FROM ${s.q}.workflow_runs r WHERE r.ns = a.ns AND r.id = a.id AND ${runStateOf('r')} = 'running')
     ),
     sb AS (
       INSERT INTO ${s.q}.workflow_steps (ns, run_id, position, key, entry, created_at)
       SELECT u.ns, u.id, u.bpos, u.bkey, u.bentry, t.ms FROM u, t WHERE u.bkey IS NOT NULL
       ORDER BY u.ns, u.id, u.bpos, u.bkey
       ON CONFLICT DO NOTHING
       RETURNING ns, run_id
     ),
     ub AS MATERIALIZED (
       SELECT u.* FROM u WHERE u.bkey IS NULL OR EXISTS (SELECT 1 FROM sb WHERE sb.ns = u.ns AND sb.run_id = u.id)
     ),
     ${guardedEntries('ub')},
     up AS (
       UPDATE ${s.q}.workflow_runs AS r SET state = w.state, result = w.result, error = w.error, waiting = NULL,
         wake_at = NULL, updated_at = t.ms, finished_at = t.ms
       FROM w, t WHERE r.ns = w.ns AND r.id = w.id AND ${runStateOf('r')} = 'running'
       RETURNING r.ns, r.id, r.state
     ),
     c AS (
       INSERT INTO ${s.q}.workflow_counts (ns, state, n)
       SELECT v.ns, v.s, sum(v.d) FROM (
         SELECT up.ns, 'running' AS s, -1 AS d FROM up UNION ALL SELECT up.ns, up.state, 1 FROM up
       ) AS v GROUP BY v.ns, v.s
     ),
     n AS (SELECT w.i, ${s.notify('w.wake')} AS x FROM w),
     ax AS MATERIALIZED (SELECT w.i, w.job AS id, w.token FROM w JOIN up ON up.ns = w.ns AND up.id = w.id WHERE w.job IS NOT NULL),
     ${ackedJobs(s, '$16::text', '$17::bigint[]', '(SELECT ax.id, ax.token FROM ax) AS x(id, token)', FINISHED, true)},
     hd AS MATERIALIZED (
       SELECT x.id FROM ${s.q}.jobs j, (SELECT ax.id, ax.token FROM ax) AS x(id, token)
       WHERE ${ackFence('$16::text', '$17::bigint[]')} AND j.ordering_key IS NOT NULL AND x.id NOT IN (SELECT d.id FROM d)
     ),
     pr AS MATERIALIZED (
       SELECT ${promoteFrom(s, 'd', '$18')} AS promoted, ${foldSometimes(s.q, 'SELECT DISTINCT d.queue FROM d')} AS folded
     )
     SELECT a.i::int AS i, u.i IS NOT NULL AS live, ub.i IS NOT NULL AS carried, n.i IS NOT NULL AS wrote,
       up.id IS NOT NULL AS moved,
       CASE WHEN d.id IS NOT NULL THEN true WHEN ax.i IS NULL OR hd.id IS NOT NULL THEN NULL ELSE false END AS acked,
       pr.promoted
     FROM a LEFT JOIN u ON u.i = a.i LEFT JOIN ub ON ub.i = a.i LEFT JOIN n ON n.i = a.i
       LEFT JOIN up ON up.ns = a.ns AND up.id = a.id LEFT JOIN ax ON ax.i = a.i LEFT JOIN d ON d.id = ax.id
       LEFT JOIN hd ON hd.id = ax.id CROSS JOIN pr`,
  );
  return {
    appendSteps,
    start,
    startWithJob,
    startHandingOff,
    startMany,
    end,
    endMany,
    names: new Map<string, string>(),
  };
}

/** The job a start statement enqueued: `claim_token` and the times when it went in claimed (else absent or null). */
interface StartedJob {
  job: string | null;
  claim_token?: string | null;
  claimed_until?: string | null;
  enqueued_at?: string | null;
  run_at?: string | null;
}

/** A row of the one-run start statements: `n` entries written (0: the guard was taken). */
interface StartRow extends StartedJob {
  n: number;
}

/** A row of the statement of many starts. */
interface StartManyRow extends StartedJob {
  i: number;
  created: boolean;
}

/** The claim of a start's job that went in claimed by its hand-off worker, as a claim reports it. */
function handedOff(row: StartedJob, queue: string, payloadText: string, stamp: JobWrite, job: StartJob): ClaimedRow {
  return {
    id: Number(row.job),
    queue,
    payloadText,
    priority: stamp.priority,
    attempts: 1,
    maxAttempts: stamp.maxAttempts,
    claimToken: row.claim_token!,
    deadline: Number(row.claimed_until),
    leaseMs: job.handoff?.leaseMs ?? stamp.visibilityTimeoutMs,
    enqueuedAt: Number(row.enqueued_at),
    headersText: stamp.headersText,
    uniqueKey: null,
    orderingKey: stamp.orderingKey,
    backoffBaseMs: stamp.backoffBaseMs,
    runAt: Number(row.run_at),
  };
}

/** A row of the statement of many ends (`endMany`). */
interface EndRow {
  i: number;
  /** The run's row was running. */
  live: boolean;
  /** Its `before` entry, if any, was written (its guard won). */
  carried: boolean;
  /** Its end entry was written. */
  wrote: boolean;
  /** Its row moved from running. */
  moved: boolean;
  /** Its pass's job was acked (true), fenced (false), or left to be acked as usual (null). */
  acked: boolean | null;
}

/** What the statement of many ends did with `end`, as SQLite's `endRuns` says it. */
function endOutcome(row: EndRow, end: EndedRun): EndOutcome {
  if (!row.live) return 'skipped';
  // The run's last step goes first: its guard taken, nothing of this end is written.
  if (end.before && !row.carried) return 'superseded';
  if (!row.wrote) return 'taken';
  return row.moved ? 'ended' : 'no-row';
}

/** The workflows' statements of schema `s`, built once per schema. */
export function workflowStatements(s: SchemaSql): ReturnType<typeof buildStatements> {
  let st = statementsOf.get(s);
  if (st === undefined) statementsOf.set(s, (st = buildStatements(s)));
  return st;
}

/** The workflows' statements on `exec` (the pool, a transaction's client or a caller's query runner). */
export function postgresWorkflowSql(ctx: PgContext, exec: Executor, check: () => void): WorkflowSql {
  const s = ctx.sql.schema;
  const { appendSteps, start, startWithJob, startHandingOff, startMany, end, endMany, names } = workflowStatements(s);
  const seam: WorkflowSql = {
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
    async startRun(
      inbox: string,
      stream: string,
      entry: unknown,
      run: StartedRunRow,
      job: StartJob,
    ): Promise<StartOutcome> {
      const guard = inboxClaimInput(inbox, run.id).messageId;
      const text = encodePayload(entry, 'payload', ctx.maxPayloadBytes);
      const params = [inbox, guard, stream, text, run.ns, run.workflow, run.version, run.input, run.parentId];
      const stamp = resolveJobStamp(ctx.queueOpts(job.queue), job.opts, ctx.enqueueHeaders);
      const jobText = encodePayload(job.payload, 'payload', ctx.maxPayloadBytes);
      check();
      if (hasLimitKey(stamp)) {
        // A limited job takes the engine's limited enqueue: a second statement on the same executor.
        const r = await exec.run<{ n: number }>(start, params);
        if ((r.rows[0]?.n ?? 0) === 0) return { created: false, job: null };
        return { created: true, job: await enqueueResolved(ctx, exec, job.queue, jobText, stamp) };
      }
      const h = job.handoff;
      // Dead worker detection: a worker's id is watched before any job is claimed with it (liveness.ts).
      const watching = h ? ctx.liveness?.watch(h.workerId) : undefined;
      if (watching) await watching;
      const jobParams = [job.queue, jobText, ...stampParams(stamp)];
      const r = await exec.wakes.run(
        wakePayload(queueWakeChannel(job.queue)),
        (w) =>
          h
            ? exec.run<StartRow>(startHandingOff, [
                ...params,
                ...jobParams,
                w,
                ...extraParams(stamp),
                h.workerId,
                h.leaseMs,
              ])
            : exec.run<StartRow>(startWithJob, [...params, ...jobParams, w, ...extraParams(stamp)]),
        // Its job's run_at was read when the statement began: a claim that ran meanwhile may have left
        // the store's claim watermark past it, so the claims start again from the head (rewinding).
        rewinding(ctx, (res) => (res.rows[0]?.n ?? 0) > 0 && res.rows[0]?.claim_token == null),
      );
      const row = r.rows[0];
      if (!row || row.n === 0 || row.job === null) return { created: (row?.n ?? 0) > 0, job: null };
      const claimed = row.claim_token == null ? null : handedOff(row, job.queue, jobText, stamp, job);
      return { created: true, job: Number(row.job), claimed };
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
    async startRuns(inbox: string, starts: readonly RunStart[]): Promise<StartOutcome[]> {
      const out: StartOutcome[] = starts.map(() => ({ created: false, job: null }));
      const byQueue = new Map<string, { i: number; stamp: JobWrite; job: string }[]>();
      const limited: Promise<void>[] = [];
      const seen = new Set<string>();
      for (const [i, st] of starts.entries()) {
        const key = `${st.run.ns}\u0000${st.run.id}`;
        if (seen.has(key))
          throw new InvalidArgument(
            'workflow starts',
            `name run ${JSON.stringify(st.run.id)} twice (at most once each)`,
          );
        seen.add(key);
        const stamp = resolveJobStamp(ctx.queueOpts(st.job.queue), st.job.opts, ctx.enqueueHeaders);
        const job = encodePayload(st.job.payload, 'payload', ctx.maxPayloadBytes);
        if (hasLimitKey(stamp)) {
          // A limited job takes the engine's limited enqueue: the one-run start, a statement of its own.
          limited.push(seam.startRun!(inbox, st.stream, st.entry, st.run, st.job).then((o) => void (out[i] = o)));
          continue;
        }
        const group = byQueue.get(st.job.queue) ?? [];
        group.push({ i, stamp, job });
        byQueue.set(st.job.queue, group);
      }
      // Dead worker detection: a worker's id is watched before any job is claimed with it (liveness.ts).
      for (const st of starts) {
        const watching = st.job.handoff ? ctx.liveness?.watch(st.job.handoff.workerId) : undefined;
        if (watching) await watching;
      }
      for (const [queue, group] of byQueue) {
        const cols: unknown[][] = Array.from({ length: 24 }, () => []);
        for (const { i, stamp, job } of group) {
          const st = starts[i]!;
          const row = [
            inboxClaimInput(inbox, st.run.id).messageId,
            st.stream,
            encodePayload(st.entry, 'payload', ctx.maxPayloadBytes),
            st.run.ns,
            st.run.id,
            st.run.workflow,
            st.run.version,
            st.run.input,
            st.run.parentId,
            job,
            ...stampParams(stamp),
            ...extraParams(stamp),
            st.job.handoff?.workerId ?? null,
            st.job.handoff?.leaseMs ?? null,
          ];
          for (const [c, v] of row.entries()) cols[c]!.push(v);
        }
        check();
        const r = await exec.wakes.run(
          wakePayload(queueWakeChannel(queue)),
          (w) => exec.run<StartManyRow>(startMany, [inbox, queue, w, ...cols]),
          // As for one start: the jobs' run_at may lie behind a watermark a concurrent claim left.
          rewinding(ctx, (res) => res.rows.some((row) => row.created && row.claim_token === null)),
        );
        for (const row of r.rows) {
          const { i, stamp, job } = group[row.i - 1]!;
          const claimed = row.claim_token === null ? null : handedOff(row, queue, job, stamp, starts[i]!.job);
          out[i] = { created: row.created, job: row.job === null ? null : Number(row.job), claimed };
        }
      }
      await Promise.all(limited);
      return out;
    },
    endsCarryEntry: true,
    async endRuns(inbox: string, ends: readonly EndedRun[]): Promise<EndResult[]> {
      const cols: unknown[][] = Array.from({ length: 14 }, () => []);
      const seen = new Set<string>();
      // A limited queue's ack also wakes its claimers (postgres-driver.ts, `ended`): such jobs are acked as
      // usual, and so are those of a queue other than the first one's (one queue, one wake per statement).
      const limited = limitedQueues(ctx);
      const queue = ends.find((e) => e.ack && !limited.has(e.ack.queue))?.ack?.queue ?? null;
      const acks: (PassAck | null)[] = [];
      for (const e of ends) {
        const key = `${e.ns}\u0000${e.id}`;
        if (seen.has(key))
          throw new InvalidArgument('workflow ends', `name run ${JSON.stringify(e.id)} twice (at most once each)`);
        seen.add(key);
        validateName('channel', e.channel);
        const ack = e.ack && e.ack.queue === queue ? e.ack : null;
        acks.push(ack);
        const row = [
          inboxClaimInput(inbox, e.guard).messageId,
          e.stream,
          encodePayload(e.entry, 'payload', ctx.maxPayloadBytes),
          e.ns,
          e.id,
          e.state,
          e.result,
          e.error,
          // Untagged: this store's own receivers (a `waitForResult` here) wake on the NOTIFY's echo.
          wakePayload(e.channel),
          e.before?.position ?? null,
          e.before?.key ?? null,
          e.before ? encodePayload(e.before.payload, 'payload', ctx.maxPayloadBytes) : null,
          ack?.id ?? null,
          ack?.claimToken ?? null,
        ];
        for (const [c, v] of row.entries()) cols[c]!.push(v);
      }
      check();
      const ids = acks.flatMap((a) => (a ? [a.id] : []));
      const params = (wake: string | null): unknown[] => [inbox, ...cols, queue, ids, wake];
      // An ack that promotes the key's next job wakes the queue's workers (as `ackBatch` does).
      const r =
        queue === null
          ? await exec.run<EndRow>(endMany, params(null))
          : await exec.wakes.run(
              wakePayload(queueWakeChannel(queue)),
              (w) => exec.run<EndRow & { promoted: string }>(endMany, params(w)),
              rewinding(ctx, promoted),
            );
      const out: EndResult[] = ends.map(() => ({ outcome: 'skipped', acked: null }));
      for (const row of r.rows) {
        const outcome = endOutcome(row, ends[row.i - 1]!);
        const a = acks[row.i - 1];
        // Only a run the statement moved had its job's ack tried; the others (null) are acked as usual.
        const acked = a && outcome === 'ended' ? row.acked : null;
        // As an ack counts its jobs for the queue's throughput figures.
        if (acked === true && a) ctx.outcomes.record(a.queue, 'completed', 1, a.times ? [a.times] : []);
        out[row.i - 1] = { outcome, acked };
      }
      return out;
    },
    async appendSteps(writes: readonly StepAppend[]): Promise<(number | null)[]> {
      const cols: unknown[][] = Array.from({ length: 6 }, () => []);
      for (const w of writes) {
        const row = [
          w.ns,
          w.run,
          w.position,
          w.key,
          w.stream,
          encodePayload(w.payload, 'payload', ctx.maxPayloadBytes),
        ];
        for (const [c, v] of row.entries()) cols[c]!.push(v);
      }
      check();
      const r = await exec.run<{ i: number; head: string }>(appendSteps, cols);
      const out: (number | null)[] = writes.map(() => null);
      for (const row of r.rows) out[row.i - 1] = Number(row.head);
      return out;
    },
  };
  return seam;
}
