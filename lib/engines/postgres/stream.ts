import { decodePayload } from '../../contract/codec.js';
import type { StreamEvent } from '../../contract/types.js';
import { StoreStream, type StreamDriver } from '../shared/stream.js';
import { publishEventText, saveConsumerOffset, type PgContext } from './context.js';
import { num } from './connection.js';
import type { EventRow } from './stream.sql.js';

/** Streams on PostgreSQL: the statements of stream.sql.ts on the store's pool. */
export function postgresStreamDriver(ctx: PgContext): StreamDriver {
  const readSince = async (stream: string, after: number, limit: number): Promise<StreamEvent[]> => {
    const r = await ctx.exec.run<EventRow>(ctx.sql.stream.readSince, [stream, after, limit]);
    return r.rows.map((row) => ({
      offset: num(row.seq),
      stream,
      key: row.key,
      payload: decodePayload(row.payload, `payload of event ${row.seq} on stream ${JSON.stringify(stream)}`),
      createdAt: num(row.created_at),
    }));
  };
  const getOffset = async (stream: string, consumer: string): Promise<number> => {
    const r = await ctx.exec.run<{ saved: string }>(ctx.sql.stream.getOffset, [stream, consumer]);
    return r.rows[0] ? num(r.rows[0].saved) : 0;
  };
  return {
    guard: () => ctx.guard(),
    get maxPayloadBytes() {
      return ctx.maxPayloadBytes;
    },
    publish: (stream, key, text) => publishEventText(ctx, ctx.exec, stream, key, text),
    readSince,
    readFromConsumer: async (stream, consumer, limit) => readSince(stream, await getOffset(stream, consumer), limit),
    getOffset,
    saveOffset: (stream, consumer, offset) => saveConsumerOffset(ctx, ctx.exec, stream, consumer, offset),
    async trimTo(stream, horizon) {
      return (await ctx.exec.run(ctx.sql.stream.trimTo, [stream, horizon])).rowCount;
    },
    listen: (channel) => ctx.hub.listen(channel),
    get pollFallbackMs() {
      return ctx.pollFallbackMs;
    },
  };
}

/** A stream handle over {@link postgresStreamDriver} (the admin's audit log). */
export class PostgresStream extends StoreStream {
  constructor(ctx: PgContext, name: string) {
    super(postgresStreamDriver(ctx), name);
  }
}
