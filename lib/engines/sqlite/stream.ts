import { encodePayload } from '../../contract/codec.js';
import { streamWakeChannel } from '../../contract/names.js';
import { limitInput, requireOffset, validateKey } from '../../contract/validate.js';
import type { EventReceiver, Stream, StreamEvent } from '../../contract/types.js';
import { StreamSubscription } from '../../internal/event-receiver.js';
import type { SqliteCore } from './context.js';
import { toStreamEvent, type EventRow } from './rows.js';
import * as S from './stream.sql.js';

/** A stream handle on the SQLite engine. */
export class SqliteStream implements Stream {
  constructor(
    private readonly core: SqliteCore,
    readonly name: string,
  ) {}

  async publish(payload: unknown): Promise<number> {
    const text = encodePayload(payload, 'payload', this.core.maxPayloadBytes);
    return this.core.write('publish', (ctx) => S.publishEvent(ctx, this.name, null, text));
  }

  async publishWithKey(key: string, payload: unknown): Promise<number> {
    const k = validateKey('key', key);
    const text = encodePayload(payload, 'payload', this.core.maxPayloadBytes);
    return this.core.write('publishWithKey', (ctx) => S.publishEvent(ctx, this.name, k, text));
  }

  async readSince(offset: number, limit?: number): Promise<StreamEvent[]> {
    const from = requireOffset('offset', offset);
    const n = limitInput(limit);
    const rows = await this.core.read('readSince', (conn) => conn.stmt(S.READ_SINCE).all(this.name, from, n) as EventRow[]);
    return rows.map((r) => toStreamEvent(this.name, r));
  }

  async readFromConsumer(consumer: string, limit?: number): Promise<StreamEvent[]> {
    const c = validateKey('consumer', consumer);
    const n = limitInput(limit);
    const rows = await this.core.read('readFromConsumer', (conn) => {
      const from = (conn.pluck(S.GET_OFFSET).get(this.name, c) as number | undefined) ?? 0;
      return conn.stmt(S.READ_SINCE).all(this.name, from, n) as EventRow[];
    });
    return rows.map((r) => toStreamEvent(this.name, r));
  }

  subscribe(consumer: string): EventReceiver {
    const c = validateKey('consumer', consumer);
    return new StreamSubscription(this.name, c, {
      readSince: (offset, limit) => this.readSince(offset, limit),
      getOffset: (cons) => this.getOffset(cons),
      saveOffset: (cons, offset) => this.saveOffset(cons, offset),
      listen: () => this.core.wakes(streamWakeChannel(this.name)),
    });
  }

  async saveOffset(consumer: string, offset: number): Promise<boolean> {
    const c = validateKey('consumer', consumer);
    const o = requireOffset('offset', offset);
    return this.core.write('saveOffset', (ctx) => S.saveConsumerOffset(ctx, this.name, c, o));
  }

  async getOffset(consumer: string): Promise<number> {
    const c = validateKey('consumer', consumer);
    const v = await this.core.read('getOffset', (conn) => conn.pluck(S.GET_OFFSET).get(this.name, c) as number | undefined);
    return v ?? 0;
  }

  async trimTo(horizon: number): Promise<number> {
    const h = requireOffset('horizon', horizon);
    // No wake: trimming adds nothing to read.
    return this.core.write('trimTo', (ctx) => ctx.conn.stmt(S.TRIM).run(this.name, h).changes);
  }
}
