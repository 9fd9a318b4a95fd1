/**
 * SQL of the consumer inbox and the outbox delivery receipts. The claim is
 * insert-first on the primary key; a row left `failed` by earlier attempts is
 * taken over. Params: inbox, message id, now, now.
 */
export const CLAIM_INBOX = `INSERT INTO __alkstore_inbox (inbox, message_id, state, attempts, received_at, done_at) VALUES (?, ?, 'done', 1, ?, ?)
  ON CONFLICT (inbox, message_id) DO UPDATE SET state = 'done', attempts = attempts + 1, done_at = excluded.done_at, last_error = NULL
  WHERE state = 'failed' RETURNING 1 AS claimed`;
/**
 * The common case of {@link CLAIM_INBOX}, a message seen for the first time: a plain insert (no RETURNING,
 * no upsert), 1 change when it claimed. With a row already there it changes nothing, and CLAIM_INBOX decides.
 * Params: inbox, message id, now, now.
 */
export const CLAIM_NEW_INBOX = `INSERT INTO __alkstore_inbox (inbox, message_id, state, attempts, received_at, done_at) VALUES (?, ?, 'done', 1, ?, ?)
  ON CONFLICT (inbox, message_id) DO NOTHING`;
/** inbox, message id, max attempts, now, error text, max attempts → the state of a row still failing; none when done or dead. */
export const FAIL_INBOX = `INSERT INTO __alkstore_inbox (inbox, message_id, state, attempts, received_at, last_error)
  VALUES (?, ?, CASE WHEN 1 >= ? THEN 'dead' ELSE 'failed' END, 1, ?, ?)
  ON CONFLICT (inbox, message_id) DO UPDATE SET attempts = attempts + 1, last_error = excluded.last_error,
    state = CASE WHEN attempts + 1 >= ? THEN 'dead' ELSE 'failed' END
  WHERE state = 'failed' RETURNING state`;
export const GET_INBOX =
  'SELECT inbox, message_id, state, attempts, received_at, done_at, last_error FROM __alkstore_inbox WHERE inbox = ? AND message_id = ?';
/** inbox, cutoff instant */
export const PRUNE_INBOX = "DELETE FROM __alkstore_inbox WHERE inbox = ? AND state = 'done' AND done_at < ?";
/** outbox, message id, receipt, now */
export const PUT_RECEIPT = `INSERT INTO __alkstore_outbox_receipts (outbox, message_id, receipt, delivered_at) VALUES (?, ?, ?, ?)
  ON CONFLICT (outbox, message_id) DO UPDATE SET receipt = excluded.receipt, delivered_at = excluded.delivered_at`;
export const GET_RECEIPT =
  'SELECT receipt, delivered_at FROM __alkstore_outbox_receipts WHERE outbox = ? AND message_id = ?';
/** outbox, cutoff instant */
export const PRUNE_RECEIPTS = 'DELETE FROM __alkstore_outbox_receipts WHERE outbox = ? AND delivered_at < ?';
