import type { Redis, RedisOptions } from 'ioredis';
import { InvalidOption, PublishFailed } from '../contract/errors.js';
import type { DeliveryReceipt } from '../contract/types.js';
import { loadPeer } from '../internal/load-peer.js';
import { awaitConfirm, encodeBody } from './confirm.js';
import { connectWithRetry, OutageLog } from './reconnect.js';
import type { OutboxMessage, Publisher, PublisherContext, PublisherHealth } from './publisher.js';
import { compileDestination, type Destination } from './subject.js';

/** Options of {@link RedisStreamsPublisher}. */
export interface RedisStreamsPublisherOptions {
  /** Redis URL (default `redis://127.0.0.1:6379`); ignored with `client`. */
  readonly url?: string;
  readonly redisOptions?: RedisOptions;
  /** A client the caller owns (left open by `close`). */
  readonly client?: Redis;
  /** Stream key: a template (`orders:{type}`) or a function of the message. */
  readonly stream: Destination;
  /** `MAXLEN ~ n` trimming on every XADD (default: none). */
  readonly maxLen?: number;
  /**
   * Wait for the entry to reach the append-only file (`WAITAOF local replicas
   * timeout`) before counting the publish a success. Off by default: a plain
   * XADD reply only means the entry is in the server's memory. Needs
   * `appendonly yes` when `local` ≥ 1 (checked at connect).
   */
  readonly waitAof?: { readonly local: number; readonly replicas: number; readonly timeoutMs: number };
  /** Largest body (default 512 MiB, Redis's `proto-max-bulk-len`). */
  readonly maxMessageBytes?: number;
  /** Pause between connection attempts at startup (default 1000 ms). */
  readonly reconnectWaitMs?: number;
}

/**
 * Publishes outbox messages with `XADD` (ioredis, an optional peer loaded on
 * `connect`). Each entry has the fields `id` (the outbox id), `payload` (JSON)
 * and `headers` (JSON, the envelope included). Success on the XADD reply,
 * which confirms **memory only**; with `waitAof` it also waits for the AOF
 * fsync (`WAITAOF`). Redis 7 has no stream dedup, so a republish is a second
 * entry: consumers dedupe on `id` with an inbox. The receipt is
 * `{ broker, stream, entryId, aof }`.
 */
export class RedisStreamsPublisher implements Publisher {
  readonly broker = 'redis-streams';
  private readonly streamOf: (m: OutboxMessage) => string;
  private redis: Redis | null = null;
  private ctx: PublisherContext | null = null;
  private outage: OutageLog | null = null;
  private closed = false;

  /** @throws InvalidOption naming the field, before any I/O */
  constructor(private readonly options: RedisStreamsPublisherOptions) {
    if (options === null || typeof options !== 'object') throw new InvalidOption('options', 'must be an object { stream, url? }');
    this.streamOf = compileDestination('stream', options.stream);
    if (options.maxLen !== undefined && (!Number.isInteger(options.maxLen) || options.maxLen < 1)) throw new InvalidOption('maxLen', 'must be an integer ≥ 1');
    const w = options.waitAof;
    if (w !== undefined) {
      if (!Number.isInteger(w.local) || w.local < 0 || w.local > 1) throw new InvalidOption('waitAof.local', 'must be 0 or 1');
      if (!Number.isInteger(w.replicas) || w.replicas < 0) throw new InvalidOption('waitAof.replicas', 'must be an integer ≥ 0');
      if (!Number.isInteger(w.timeoutMs) || w.timeoutMs < 1) throw new InvalidOption('waitAof.timeoutMs', 'must be an integer ≥ 1');
      if (w.local === 0 && w.replicas === 0) throw new InvalidOption('waitAof', 'must wait for the local AOF or at least one replica');
    }
  }

  async connect(ctx: PublisherContext, signal: AbortSignal): Promise<void> {
    this.ctx = ctx;
    const mod = await loadPeer('ioredis', () => import('ioredis'), 'for the Redis Streams publisher');
    const RedisCtor = mod.Redis;
    this.outage = new OutageLog((m) => ctx.logger.warn(m), `Redis (${this.options.url ?? 'redis://127.0.0.1:6379'}) for outbox ${JSON.stringify(ctx.outbox)}`);
    let redis: Redis | null = null;
    try {
      await connectWithRetry(
        async () => {
          redis = this.options.client ?? new RedisCtor(this.options.url ?? 'redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: 1, ...this.options.redisOptions });
          redis.on('error', (err: Error) => this.outage?.failed(err));
          if (!this.options.client) await redis.connect();
          if (this.options.waitAof && this.options.waitAof.local > 0) {
            const [, value] = (await redis.config('GET', 'appendonly')) as [string, string];
            if (value !== 'yes') throw new InvalidOption('waitAof.local', `is 1 but the server has appendonly ${JSON.stringify(value)}; enable appendonly or wait for replicas only`);
          }
          this.redis = redis;
        },
        {
          outage: this.outage,
          waitMs: this.options.reconnectWaitMs ?? 1000,
          signal,
          stopped: () => this.closed,
          cleanup: () => {
            if (redis && !this.options.client) (redis as Redis).disconnect();
          },
        },
      );
    } catch (err) {
      this.closed = true;
      throw err;
    }
  }

  async publish(message: OutboxMessage, signal: AbortSignal): Promise<DeliveryReceipt> {
    const { redis, ctx } = this;
    if (!redis || !ctx) throw new PublishFailed('the Redis Streams publisher is not connected');
    const body = encodeBody(message.payload, this.options.maxMessageBytes ?? 512 * 1024 * 1024, 'Redis', 'maxMessageBytes');
    const stream = this.streamOf(message);
    const trim = this.options.maxLen === undefined ? [] : ['MAXLEN', '~', String(this.options.maxLen)];
    const w = this.options.waitAof;
    const run = async (): Promise<{ entryId: string; aof: boolean }> => {
      const entryId = await redis.xadd(stream, ...trim, '*', 'id', String(message.id), 'payload', body, 'headers', JSON.stringify(message.headers));
      if (!entryId) throw new PublishFailed(`XADD to ${JSON.stringify(stream)} returned no entry id`);
      if (w) {
        const [local, replicas] = (await redis.call('WAITAOF', String(w.local), String(w.replicas), String(w.timeoutMs))) as [number, number];
        if (local < w.local || replicas < w.replicas) throw new PublishFailed(`WAITAOF: the entry reached ${local} local and ${replicas} replica AOFs within ${w.timeoutMs} ms, fewer than ${w.local} and ${w.replicas}`);
      }
      return { entryId, aof: w !== undefined };
    };
    const r = await awaitConfirm(run(), signal, ctx.onLateConfirm);
    return { broker: this.broker, stream, entryId: r.entryId, aof: r.aof };
  }

  health(): PublisherHealth {
    if (this.closed) return { status: 'down' };
    if (this.redis?.status === 'ready') return { status: 'up' };
    return { status: 'degraded', ...(this.outage?.detail ? { detail: this.outage.detail } : {}) };
  }

  async close(): Promise<void> {
    this.closed = true;
    const r = this.redis;
    this.redis = null;
    if (r && !this.options.client) await r.quit().catch(() => r.disconnect());
  }
}
