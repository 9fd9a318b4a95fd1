/**
 * SQL of streams (docs/semantics.md, Streams). Offsets come from a per-stream
 * head row, so they stay monotone after `trimTo` empties the stream; the single
 * writer assigns them in commit order.
 */
export const NEXT_SEQ = `INSERT INTO __alkstore_stream_heads (stream, last_seq) VALUES (?, 1)
  ON CONFLICT (stream) DO UPDATE SET last_seq = last_seq + 1 RETURNING last_seq`;
/** stream, seq, key, payload, created_at */
export const INSERT_EVENT =
  'INSERT INTO __alkstore_events (stream, seq, key, payload, created_at) VALUES (?, ?, ?, ?, ?)';
export const READ_SINCE =
  'SELECT seq, key, payload, created_at FROM __alkstore_events WHERE stream = ? AND seq > ? ORDER BY seq LIMIT ?';
export const TRIM = 'DELETE FROM __alkstore_events WHERE stream = ? AND seq <= ?';
/** Monotone upsert: `changes` is 1 only when the stored offset rose (or a first save). */
export const SAVE_OFFSET = `INSERT INTO __alkstore_offsets (stream, consumer, seq) VALUES (?, ?, ?)
  ON CONFLICT (stream, consumer) DO UPDATE SET seq = excluded.seq WHERE excluded.seq > __alkstore_offsets.seq`;
export const GET_OFFSET = 'SELECT seq FROM __alkstore_offsets WHERE stream = ? AND consumer = ?';
