import { streamWakeChannel } from '../../contract/names.js';
import { StoreStream, type StreamDriver } from '../shared/stream.js';
import type { SqliteCore } from './context.js';
import { toStreamEvent, type EventRow } from './rows.js';
import { GET_OFFSET, INSERT_EVENT, NEXT_SEQ, READ_SINCE, SAVE_OFFSET, TRIM } from './stream.sql.js';
import type { WriteCtx } from './writer.js';

/** Appends one event in the current write transaction; its wake goes out on commit. */
export function publishEvent(ctx: WriteCtx, stream: string, key: string | null, payloadText: string): number {
  const seq = ctx.conn.pluck(NEXT_SEQ).get(stream) as number;
  ctx.conn.stmt(INSERT_EVENT).run(stream, seq, key, payloadText, ctx.now);
  ctx.wake(streamWakeChannel(stream));
  return seq;
}

/** Offsets start at 1, so saving 0 (or less) never raises the stored value. */
export function saveConsumerOffset(ctx: WriteCtx, stream: string, consumer: string, offset: number): boolean {
  if (offset <= 0) return false;
  return ctx.conn.stmt(SAVE_OFFSET).run(stream, consumer, offset).changes > 0;
}

/** Streams on SQLite: writes through the store's writer, reads on its read connection (stream.sql.ts). */
export function sqliteStreamDriver(core: SqliteCore, guard: () => void): StreamDriver {
  return {
    guard,
    get maxPayloadBytes() {
      return core.maxPayloadBytes;
    },
    publish: (stream, key, text) =>
      core.write(key === null ? 'publish' : 'publishWithKey', (ctx) => publishEvent(ctx, stream, key, text)),
    async readSince(stream, after, limit) {
      const rows = await core.read(
        'readSince',
        (conn) => conn.stmt(READ_SINCE).all(stream, after, limit) as EventRow[],
      );
      return rows.map((r) => toStreamEvent(stream, r));
    },
    // One read: the offset and the events from it come from one snapshot.
    async readFromConsumer(stream, consumer, limit) {
      const rows = await core.read('readFromConsumer', (conn) => {
        const from = (conn.pluck(GET_OFFSET).get(stream, consumer) as number | undefined) ?? 0;
        return conn.stmt(READ_SINCE).all(stream, from, limit) as EventRow[];
      });
      return rows.map((r) => toStreamEvent(stream, r));
    },
    async getOffset(stream, consumer) {
      return (
        (await core.read('getOffset', (conn) => conn.pluck(GET_OFFSET).get(stream, consumer) as number | undefined)) ??
        0
      );
    },
    saveOffset: (stream, consumer, offset) =>
      core.write('saveOffset', (ctx) => saveConsumerOffset(ctx, stream, consumer, offset)),
    // No wake: trimming adds nothing to read.
    trimTo: (stream, horizon) => core.write('trimTo', (ctx) => ctx.conn.stmt(TRIM).run(stream, horizon).changes),
    listen: (channel) => core.wakes(channel),
    pollFallbackMs: undefined,
  };
}

/** A stream handle over {@link sqliteStreamDriver} (the admin's audit log). */
export class SqliteStream extends StoreStream {
  constructor(core: SqliteCore, name: string) {
    super(
      sqliteStreamDriver(core, () => undefined),
      name,
    );
  }
}
