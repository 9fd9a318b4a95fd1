import { NOW_MS, type SchemaSql, type Sql } from './schema-sql.js';

/** Rows one retention statement deletes at most: a first prune of a long history is many short transactions. */
export const RETENTION_BATCH = 10_000;

/** Statements of the retention runner's store-wide deletes (lib/internal/retention-runner.ts) for one schema. */
export function retentionSql(s: SchemaSql) {
  const q = s.q;
  // One index seek per distinct value of `col` in `table` under `cond` (a loose index scan over an
  // index that leads with `col`; `cond` matches the index's predicate).
  const loose = (table: string, col: string, cond = 'true') => `(WITH RECURSIVE r AS (
      SELECT (SELECT t.${col} FROM ${table} t WHERE ${cond} ORDER BY t.${col} LIMIT 1) AS v
      UNION ALL
      SELECT (SELECT t.${col} FROM ${table} t WHERE ${cond} AND t.${col} > r.v ORDER BY t.${col} LIMIT 1) FROM r WHERE r.v IS NOT NULL
    ) SELECT v FROM r WHERE v IS NOT NULL)`;
  return {
    /** → v: queues with expiring jobs, outcome records that expire, failed attempts, flow waits or unsettled edges. */
    sweepQueueNames: s.def(
      'r_sweep_queue_names',
      `${loose(`${q}.jobs`, 'queue', "t.expires_at IS NOT NULL AND t.state <> 'dead'")}
       UNION ${loose(`${q}.jobs`, 'queue', "t.ordering_key IS NOT NULL AND t.state IN ('pending', 'processing')")}
       UNION ${loose(`${q}.job_outcomes`, 'queue', 't.keep_until IS NOT NULL')}
       UNION ${loose(`${q}.job_attempts`, 'queue')}
       UNION SELECT DISTINCT queue FROM ${q}.job_waits
       UNION SELECT DISTINCT dep_queue FROM ${q}.job_deps WHERE NOT done`,
    ),
    /**
     * $1 age ms → n: receipts of every outbox delivered before now - $1, at most a batch. By key, not
     * by ctid: the table is partitioned, and a ctid names a row only within one partition.
     */
    pruneReceipts: s.def(
      'r_prune_all_receipts',
      `WITH o AS (SELECT v FROM ${loose(`${q}.outbox_receipts`, 'outbox')} x),
       old AS (SELECT o.v AS outbox, r.message_id FROM o, LATERAL (
         SELECT message_id FROM ${q}.outbox_receipts WHERE outbox = o.v AND delivered_at < ${NOW_MS} - $1::bigint LIMIT ${RETENTION_BATCH}) r
         LIMIT ${RETENTION_BATCH}),
       d AS (DELETE FROM ${q}.outbox_receipts x USING old WHERE x.outbox = old.outbox AND x.message_id = old.message_id RETURNING 1)
       SELECT count(*) AS n FROM d`,
    ),
    /** $1 age ms → n: receipts of the id ranges retired by dropping their partitions (an estimate from their statistics). */
    retireReceiptPartitions: s.def('r_retire_receipt_parts', `SELECT ${q}.retire_receipt_partitions($1::bigint) AS n`),
    /** → n: outcome records of the job id ranges retired by dropping their partitions (an estimate from their statistics). */
    retireOutcomePartitions: s.def('r_retire_outcome_parts', `SELECT ${q}.retire_outcome_partitions() AS n`),
    /** $1 inbox, $2 age ms → n: done entries done before now - $2, failed and dead ones received before it, at most a batch. */
    pruneInbox: s.def(
      'r_prune_inbox',
      `WITH t AS MATERIALIZED (SELECT ${NOW_MS} - $2::bigint AS cut),
       old AS ((SELECT i.ctid FROM ${q}.inbox i, t WHERE i.inbox = $1::text AND i.state = 'done' AND i.done_at < t.cut LIMIT ${RETENTION_BATCH})
         UNION ALL
         (SELECT i.ctid FROM ${q}.inbox i, t WHERE i.inbox = $1::text AND i.state <> 'done' AND i.received_at < t.cut LIMIT ${RETENTION_BATCH})),
       d AS (DELETE FROM ${q}.inbox WHERE ctid IN (SELECT ctid FROM old) RETURNING 1)
       SELECT count(*) AS n FROM d`,
    ),
    /** $1 age ms → the heartbeat rows of nodes silent for longer. */
    pruneNodes: s.def('r_prune_nodes', `DELETE FROM ${q}.nodes WHERE heartbeat_at < ${NOW_MS} - $1::bigint`),
    /** → n: locks past their expiry. */
    pruneLocks: s.def('r_prune_locks', `DELETE FROM ${q}.locks WHERE expires_at <= ${NOW_MS}`),
    /** $1 stream, $2 age ms → n: among the stream's oldest batch of events, those up to the last one published before now - $2. */
    trimByAge: s.def(
      'r_trim_by_age',
      `WITH first AS (SELECT seq, created_at FROM ${q}.stream_events WHERE stream = $1::text ORDER BY seq LIMIT ${RETENTION_BATCH}),
       h AS (SELECT max(seq) AS s FROM first WHERE created_at < ${NOW_MS} - $2::bigint),
       d AS (DELETE FROM ${q}.stream_events e USING h WHERE e.stream = $1::text AND e.seq <= h.s RETURNING 1)
       SELECT count(*) AS n FROM d`,
    ),
    /** $1 stream: waits for a publisher of it to commit (its head row) before the events are read. */
    lockHead: s.def('r_lock_head', `SELECT 1 FROM ${q}.stream_heads WHERE stream = $1::text FOR UPDATE`),
    /** $1 stream: the events, saved offsets and head. */
    dropStream: s.def(
      'r_drop_stream',
      `WITH e AS (DELETE FROM ${q}.stream_events WHERE stream = $1::text),
       o AS (DELETE FROM ${q}.stream_offsets WHERE stream = $1::text)
       DELETE FROM ${q}.stream_heads WHERE stream = $1::text`,
    ),
    /** $1 inbox, $2 message ids → n. */
    forgetIds: s.def('r_forget_ids', `DELETE FROM ${q}.inbox WHERE inbox = $1::text AND message_id = ANY($2::text[])`),
    /** $1 inbox, $2 owners → n: entries `<owner>#<what>`, `what` without `#` (a walk of the inbox's rows). */
    forgetGuards: s.def(
      'r_forget_guards',
      `DELETE FROM ${q}.inbox i WHERE i.inbox = $1::text AND EXISTS (
         SELECT 1 FROM unnest($2::text[]) o(x)
         WHERE starts_with(i.message_id, o.x || '#') AND strpos(substr(i.message_id, length(o.x) + 2), '#') = 0)`,
    ),
  } satisfies Record<string, Sql>;
}

export type RetentionSql = ReturnType<typeof retentionSql>;
