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
  /**
   * Broker-side dedup with `XADD … IDMP <producerId> <message id>` (Redis 8.6+).
   * `'auto'` (default): probed once at connect and used when the server has
   * it; without it, the publisher says so once (log and health detail) and a
   * republish is a second entry, absorbed by the consumer's inbox only.
   * `'off'`: never used.
   */
  readonly idmp?: 'auto' | 'off';
  /** The IDMP producer id (default `alkstore:<outbox>`); the message ids are unique across stores whatever it is. */
  readonly producerId?: string;
}

/** What the Redis Streams publisher dedups with: `idmp` (XADD IDMP), `none` (the server has no IDMP, or `idmp: 'off'`), `unknown` before connect. */
export type RedisDedup = 'idmp' | 'none' | 'unknown';

/** Redis's IDMP-DURATION default (seconds), which a stream has until `XCFGSET` changes it. */
export const REDIS_IDMP_DEFAULT_DURATION_S = 100;

/** What the health detail and the startup log say when the server has no IDMP. */
export const REDIS_NO_DEDUP =
  'no broker-side dedup: this Redis has no XADD IDMP (Redis 8.6+), so a republish is a second entry, absorbed by the consumer inbox only';

/**
 * Whether the server accepts `XADD … IDMP`: a probe that never writes
 * (`NOMKSTREAM` on a key that does not exist). A server with IDMP answers
 * nil; an older one rejects the arguments (Redis 7: "Invalid stream ID").
 */
export async function probeRedisIdmp(redis: Pick<Redis, 'call'>): Promise<{ supported: boolean; reason: string }> {
  const key = `__alkstore:idmp-probe:${process.pid}:${Math.random().toString(36).slice(2)}`;
  try {
    await redis.call('XADD', key, 'NOMKSTREAM', 'IDMP', 'alkstore-probe', 'probe', '*', 'probe', '1');
    return { supported: true, reason: 'XADD IDMP accepted' };
  } catch (err) {
    return { supported: false, reason: err instanceof Error ? err.message : String(err) };
  }
}

/**
 * Refuses an IDMP window (the stream's IDMP-DURATION, seconds) shorter than
 * the dispatcher's retry horizon, naming both numbers and the fix.
 * @throws InvalidOption
 */
export function checkIdmpWindow(
  stream: string,
  durationS: number,
  ctx: Pick<PublisherContext, 'outbox' | 'retryHorizonMs' | 'horizonTerms'>,
): void {
  const windowMs = durationS * 1000;
  if (windowMs >= ctx.retryHorizonMs) return;
  const needS = Math.ceil(ctx.retryHorizonMs / 1000);
  throw new InvalidOption(
    'IDMP-DURATION',
    `of Redis stream ${JSON.stringify(stream)} is ${windowMs} ms, shorter than the retry horizon of outbox ` +
      `${JSON.stringify(ctx.outbox)}: ${ctx.retryHorizonMs} ms (${ctx.horizonTerms}); run XCFGSET ` +
      `${stream} IDMP-DURATION ${needS} (at most 86400), shorten those settings, or set idmp: 'off'`,
  );
}

/**
 * Publishes outbox messages with `XADD` (ioredis, an optional peer loaded on
 * `connect`). Each entry has the fields `id` (the message id, `OutboxMessage.id`), `payload` (JSON)
 * and `headers` (JSON, the envelope included). Success on the XADD reply,
 * which confirms **memory only**; with `waitAof` it also waits for the AOF
 * fsync (`WAITAOF`). Where the server has `XADD … IDMP` (Redis 8.6+, probed
 * once at connect) the message id is the idempotent id, so a republish within
 * the stream's IDMP window adds no second entry; a static stream's
 * IDMP-DURATION shorter than the retry horizon is refused at connect. Without
 * IDMP (Redis 7) a republish is a second entry: consumers dedupe on `id` with
 * an inbox, and the publisher says so in its startup log and health detail.
 * The receipt is `{ broker, stream, entryId, aof }`.
 */
export class RedisStreamsPublisher implements Publisher {
  readonly broker = 'redis-streams';
  private readonly streamOf: (m: OutboxMessage) => string;
  private redis: Redis | null = null;
  private ctx: PublisherContext | null = null;
  private outage: OutageLog | null = null;
  private closed = false;
  private idmp: RedisDedup = 'unknown';
  private producerId = '';

  /** @throws InvalidOption naming the field, before any I/O */
  constructor(private readonly options: RedisStreamsPublisherOptions) {
    if (options === null || typeof options !== 'object')
      throw new InvalidOption('options', 'must be an object { stream, url? }');
    this.streamOf = compileDestination('stream', options.stream);
    if (options.maxLen !== undefined && (!Number.isInteger(options.maxLen) || options.maxLen < 1))
      throw new InvalidOption('maxLen', 'must be an integer ≥ 1');
    const w = options.waitAof;
    if (w !== undefined) {
      if (!Number.isInteger(w.local) || w.local < 0 || w.local > 1)
        throw new InvalidOption('waitAof.local', 'must be 0 or 1');
      if (!Number.isInteger(w.replicas) || w.replicas < 0)
        throw new InvalidOption('waitAof.replicas', 'must be an integer ≥ 0');
      if (!Number.isInteger(w.timeoutMs) || w.timeoutMs < 1)
        throw new InvalidOption('waitAof.timeoutMs', 'must be an integer ≥ 1');
      if (w.local === 0 && w.replicas === 0)
        throw new InvalidOption('waitAof', 'must wait for the local AOF or at least one replica');
    }
    if (options.idmp !== undefined && options.idmp !== 'auto' && options.idmp !== 'off')
      throw new InvalidOption('idmp', `must be 'auto' or 'off', got ${JSON.stringify(options.idmp)}`);
    if (options.producerId !== undefined && (typeof options.producerId !== 'string' || options.producerId.length === 0))
      throw new InvalidOption('producerId', 'must be a non-empty string');
  }

  /** The broker-side dedup in use: known after `connect`. */
  get dedup(): RedisDedup {
    return this.idmp;
  }

  async connect(ctx: PublisherContext, signal: AbortSignal): Promise<void> {
    this.ctx = ctx;
    const mod = await loadPeer('ioredis', () => import('ioredis'), 'for the Redis Streams publisher');
    const RedisCtor = mod.Redis;
    this.outage = new OutageLog(
      (m) => ctx.logger.warn(m),
      `Redis (${this.options.url ?? 'redis://127.0.0.1:6379'}) for outbox ${JSON.stringify(ctx.outbox)}`,
    );
    let redis: Redis | null = null;
    try {
      await connectWithRetry(
        async () => {
          redis =
            this.options.client ??
            new RedisCtor(this.options.url ?? 'redis://127.0.0.1:6379', {
              lazyConnect: true,
              maxRetriesPerRequest: 1,
              ...this.options.redisOptions,
            });
          redis.on('error', (err: Error) => this.outage?.failed(err));
          if (!this.options.client) await redis.connect();
          if (this.options.waitAof && this.options.waitAof.local > 0) {
            const [, value] = (await redis.config('GET', 'appendonly')) as [string, string];
            if (value !== 'yes')
              throw new InvalidOption(
                'waitAof.local',
                `is 1 but the server has appendonly ${JSON.stringify(value)}; enable appendonly or wait for replicas only`,
              );
          }
          await this.detectIdmp(redis, ctx);
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
    const body = encodeBody(
      message.payload,
      this.options.maxMessageBytes ?? 512 * 1024 * 1024,
      'Redis',
      'maxMessageBytes',
    );
    const stream = this.streamOf(message);
    const trim = this.options.maxLen === undefined ? [] : ['MAXLEN', '~', String(this.options.maxLen)];
    const w = this.options.waitAof;
    const run = async (): Promise<{ entryId: string; aof: boolean }> => {
      const idmp = this.idmp === 'idmp' ? ['IDMP', this.producerId, message.id] : [];
      const entryId = (await redis.call(
        'XADD',
        stream,
        ...idmp,
        ...trim,
        '*',
        'id',
        message.id,
        'payload',
        body,
        'headers',
        JSON.stringify(message.headers),
      )) as string | null;
      if (!entryId) throw new PublishFailed(`XADD to ${JSON.stringify(stream)} returned no entry id`);
      if (w) {
        const [local, replicas] = (await redis.call(
          'WAITAOF',
          String(w.local),
          String(w.replicas),
          String(w.timeoutMs),
        )) as [number, number];
        if (local < w.local || replicas < w.replicas)
          throw new PublishFailed(
            `WAITAOF: the entry reached ${local} local and ${replicas} replica AOFs within ${w.timeoutMs} ms, fewer than ${w.local} and ${w.replicas}`,
          );
      }
      return { entryId, aof: w !== undefined };
    };
    const r = await awaitConfirm(run(), signal, ctx.onLateConfirm);
    return { broker: this.broker, stream, entryId: r.entryId, aof: r.aof };
  }

  health(): PublisherHealth {
    if (this.closed) return { status: 'down' };
    if (this.redis?.status === 'ready')
      return this.idmp === 'none' && this.options.idmp !== 'off'
        ? { status: 'up', detail: REDIS_NO_DEDUP }
        : { status: 'up' };
    return { status: 'degraded', ...(this.outage?.detail ? { detail: this.outage.detail } : {}) };
  }

  /** Probes IDMP once (cached for this connection) and, where it is used on a static stream, checks its window. */
  private async detectIdmp(redis: Redis, ctx: PublisherContext): Promise<void> {
    this.producerId = this.options.producerId ?? `alkstore:${ctx.outbox}`;
    if (this.options.idmp === 'off') {
      this.idmp = 'none';
      return;
    }
    const probe = await probeRedisIdmp(redis);
    if (!probe.supported) {
      this.idmp = 'none';
      ctx.logger.warn(
        `Redis Streams publisher of outbox ${JSON.stringify(ctx.outbox)}: ${REDIS_NO_DEDUP} (the probe said: ${probe.reason})`,
      );
      return;
    }
    this.idmp = 'idmp';
    if (typeof this.options.stream === 'string' && !this.options.stream.includes('{')) {
      checkIdmpWindow(this.options.stream, await idmpDuration(redis, this.options.stream), ctx);
      ctx.logger.log(
        `Redis Streams publisher of outbox ${JSON.stringify(ctx.outbox)}: XADD IDMP with producer id ${JSON.stringify(this.producerId)}`,
      );
    } else {
      ctx.logger.warn(
        `Redis Streams publisher of outbox ${JSON.stringify(ctx.outbox)}: XADD IDMP with producer id ` +
          `${JSON.stringify(this.producerId)}; the stream key is a template, so each stream's IDMP-DURATION ` +
          `(default ${REDIS_IDMP_DEFAULT_DURATION_S} s) is not checked against the retry horizon of ${ctx.retryHorizonMs} ms: set it with XCFGSET`,
      );
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const r = this.redis;
    this.redis = null;
    if (r && !this.options.client) await r.quit().catch(() => r.disconnect());
  }
}

/** A stream's IDMP-DURATION (seconds) from XINFO STREAM; Redis's default for a stream that does not exist yet or reports none. */
async function idmpDuration(redis: Redis, stream: string): Promise<number> {
  let info: unknown[];
  try {
    info = (await redis.call('XINFO', 'STREAM', stream)) as unknown[];
  } catch {
    // No such key yet: the first XADD creates it with the default.
    return REDIS_IDMP_DEFAULT_DURATION_S;
  }
  for (let i = 0; i + 1 < info.length; i += 2) if (String(info[i]) === 'idmp-duration') return Number(info[i + 1]);
  return REDIS_IDMP_DEFAULT_DURATION_S;
}
