import { decodePayload } from '../../contract/codec.js';
import { streamWakeChannel } from '../../contract/names.js';
import { limitInput, requireOffset, validateKey } from '../../contract/validate.js';
import type { EventReceiver, Stream, StreamEvent, WakeReceiver } from '../../contract/types.js';
import { StreamSubscription, type SubscriptionSource } from '../../internal/event-receiver.js';
import { publishEvent, saveConsumerOffset, type PgContext } from './context.js';
import { num } from './executor.js';
import type { EventRow } from './stream.sql.js';

/** A stream handle; the name is validated by the store. */
export class PostgresStream implements Stream, SubscriptionSource {
  constructor(
    private readonly ctx: PgContext,
    readonly name: string,
  ) {}

  get pollFallbackMs(): number | undefined {
    return this.ctx.pollFallbackMs;
  }

  async publish(payload: unknown): Promise<number> {
    this.ctx.guard();
    return publishEvent(this.ctx, this.ctx.exec, this.name, null, payload);
  }

  async publishWithKey(key: string, payload: unknown): Promise<number> {
    this.ctx.guard();
    validateKey('key', key);
    return publishEvent(this.ctx, this.ctx.exec, this.name, key, payload);
  }

  async readSince(offset: number, limit?: number): Promise<StreamEvent[]> {
    this.ctx.guard();
    const from = requireOffset('offset', offset);
    const n = limitInput(limit);
    const r = await this.ctx.exec.run<EventRow>(this.ctx.sql.stream.readSince, [this.name, from, n]);
    return r.rows.map((row) => ({
      offset: num(row.seq),
      stream: this.name,
      key: row.key,
      payload: decodePayload(row.payload, `payload of event ${row.seq} on stream ${JSON.stringify(this.name)}`),
      createdAt: num(row.created_at),
    }));
  }

  async readFromConsumer(consumer: string, limit?: number): Promise<StreamEvent[]> {
    this.ctx.guard();
    validateKey('consumer', consumer);
    limitInput(limit);
    return this.readSince(await this.getOffset(consumer), limit);
  }

  subscribe(consumer: string): EventReceiver {
    this.ctx.guard();
    validateKey('consumer', consumer);
    return new StreamSubscription(this.name, consumer, this);
  }

  async saveOffset(consumer: string, offset: number): Promise<boolean> {
    this.ctx.guard();
    return saveConsumerOffset(this.ctx, this.ctx.exec, this.name, consumer, offset);
  }

  async getOffset(consumer: string): Promise<number> {
    this.ctx.guard();
    validateKey('consumer', consumer);
    const r = await this.ctx.exec.run<{ saved: string }>(this.ctx.sql.stream.getOffset, [this.name, consumer]);
    return r.rows[0] ? num(r.rows[0].saved) : 0;
  }

  async trimTo(horizon: number): Promise<number> {
    this.ctx.guard();
    const h = requireOffset('horizon', horizon);
    const r = await this.ctx.exec.run(this.ctx.sql.stream.trimTo, [this.name, h]);
    return r.rowCount;
  }

  listen(): WakeReceiver {
    return this.ctx.hub.listen(streamWakeChannel(this.name));
  }
}
