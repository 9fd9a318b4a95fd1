import { NOW_MS, type SchemaSql, type Sql } from './schema-sql.js';

/** Inbox and delivery-receipt statements for one schema. */
export function inboxSql(s: SchemaSql) {
  const inbox = `${s.q}.inbox`;
  const receipts = `${s.q}.outbox_receipts`;
  return {
    /**
     * $1 inbox, $2 message id → r: 'claimed' | 'duplicate' | 'dead'. Insert-first on the primary key:
     * a concurrent claim of the same id waits for this transaction, then sees the committed row. A row
     * left `failed` by earlier attempts is taken over. No row back means the conflicting row committed
     * after this statement's snapshot: a duplicate.
     */
    claim: s.def(
      'i_claim',
      `WITH t AS MATERIALIZED (SELECT ${NOW_MS} AS ms),
       ins AS (
         INSERT INTO ${inbox} AS i (inbox, message_id, state, attempts, received_at, done_at)
         SELECT $1::text, $2::text, 'done', 1, t.ms, t.ms FROM t
         ON CONFLICT (inbox, message_id) DO UPDATE SET state = 'done', attempts = i.attempts + 1, done_at = EXCLUDED.done_at, last_error = NULL
           WHERE i.state = 'failed'
         RETURNING 1
       )
       SELECT 'claimed'::text AS r FROM ins
       UNION ALL
       SELECT CASE WHEN i.state = 'dead' THEN 'dead' ELSE 'duplicate' END FROM ${inbox} i
       WHERE i.inbox = $1::text AND i.message_id = $2::text AND NOT EXISTS (SELECT 1 FROM ins)`,
    ),
    /** $1 inbox, $2 message id, $3 error text, $4 max attempts → state of a row still failing; none when done or dead. */
    fail: s.def(
      'i_fail',
      `INSERT INTO ${inbox} AS i (inbox, message_id, state, attempts, received_at, last_error)
       SELECT $1::text, $2::text, CASE WHEN 1 >= $4::int THEN 'dead' ELSE 'failed' END, 1, ${NOW_MS}, $3::text
       ON CONFLICT (inbox, message_id) DO UPDATE SET attempts = i.attempts + 1, last_error = EXCLUDED.last_error,
         state = CASE WHEN i.attempts + 1 >= $4::int THEN 'dead' ELSE 'failed' END
         WHERE i.state = 'failed'
       RETURNING i.state`,
    ),
    /** $1 inbox, $2 message id. */
    get: s.def(
      'i_get',
      `SELECT inbox, message_id, state, attempts, received_at, done_at, last_error FROM ${inbox} WHERE inbox = $1::text AND message_id = $2::text`,
    ),
    /** $1 inbox, $2 age ms: done entries older than it. */
    prune: s.def(
      'i_prune',
      `DELETE FROM ${inbox} WHERE inbox = $1::text AND state = 'done' AND done_at < ${NOW_MS} - $2::bigint`,
    ),
    /** $1 outbox, $2 message ids, $3 receipt texts: upsert. */
    putReceipts: s.def(
      'r_put',
      `INSERT INTO ${receipts} (outbox, message_id, receipt, delivered_at)
       SELECT $1::text, u.id, u.r::json, ${NOW_MS} FROM unnest($2::bigint[], $3::text[]) AS u(id, r)
       ON CONFLICT (outbox, message_id) DO UPDATE SET receipt = EXCLUDED.receipt, delivered_at = EXCLUDED.delivered_at`,
    ),
    /** $1 outbox, $2 message id. */
    getReceipt: s.def(
      'r_get',
      `SELECT receipt::text AS receipt, delivered_at FROM ${receipts} WHERE outbox = $1::text AND message_id = $2::bigint`,
    ),
    /** $1 outbox, $2 age ms. */
    pruneReceipts: s.def(
      'r_prune',
      `DELETE FROM ${receipts} WHERE outbox = $1::text AND delivered_at < ${NOW_MS} - $2::bigint`,
    ),
  } satisfies Record<string, Sql>;
}
