import { NOW_MS, type SchemaSql, type Sql } from './schema-sql.js';

/** A stream event row; int8 columns are strings, payload is raw JSON text. */
export interface EventRow {
  seq: string;
  key: string | null;
  payload: string;
  created_at: string;
}

/** Stream statements for one schema. */
export function streamSql(s: SchemaSql) {
  return {
    /**
     * $1 stream, $2 key, $3 payload, $4 wake payload → offset. The counter row
     * stays locked until the publishing transaction ends, so a concurrent
     * publisher of the same stream waits and offsets follow commit order.
     */
    publish: s.def(
      's_publish',
      `WITH head AS (
         INSERT INTO ${s.q}.stream_heads AS h (stream, last_offset) VALUES ($1::text, 1)
         ON CONFLICT (stream) DO UPDATE SET last_offset = h.last_offset + 1
         RETURNING h.last_offset
       ),
       ins AS (
         INSERT INTO ${s.q}.stream_events (stream, seq, key, payload, created_at)
         SELECT $1::text, head.last_offset, $2::text, $3::text::json, ${NOW_MS} FROM head
         RETURNING seq
       )
       SELECT ins.seq FROM ins, (SELECT ${s.notify('$4')}) AS n`,
    ),
    /** publish for a caller-owned transaction (unnamed statements) through `publish_event` (migration 2). Same parameters. */
    publishCall: s.def(
      's_publish_call',
      `SELECT ${s.q}.publish_event($1::text, $2::text, $3::text, ${s.channel}, $4::text) AS seq`,
    ),
    /** $1 stream, $2 after offset, $3 limit. */
    readSince: s.def(
      's_read_since',
      `SELECT seq, key, payload::text AS payload, created_at FROM ${s.q}.stream_events
       WHERE stream = $1::text AND seq > $2::bigint ORDER BY seq LIMIT $3::int`,
    ),
    /** $1 stream, $2 consumer, $3 offset → a row when the stored offset increased. */
    saveOffset: s.def(
      's_save_offset',
      `INSERT INTO ${s.q}.stream_offsets AS o (stream, consumer, saved)
       SELECT $1::text, $2::text, $3::bigint WHERE $3::bigint > 0
       ON CONFLICT (stream, consumer) DO UPDATE SET saved = EXCLUDED.saved WHERE o.saved < EXCLUDED.saved
       RETURNING o.saved`,
    ),
    /** $1 stream, $2 consumer. */
    getOffset: s.def(
      's_get_offset',
      `SELECT saved FROM ${s.q}.stream_offsets WHERE stream = $1::text AND consumer = $2::text`,
    ),
    /** $1 stream, $2 horizon. */
    trimTo: s.def('s_trim', `DELETE FROM ${s.q}.stream_events WHERE stream = $1::text AND seq <= $2::bigint`),
  } satisfies Record<string, Sql>;
}

export type StreamSql = ReturnType<typeof streamSql>;
