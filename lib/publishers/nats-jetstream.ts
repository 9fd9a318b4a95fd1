import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { ConnectionOptions, NatsConnection } from '@nats-io/transport-node';
import { InvalidOption, PublishFailed } from '../contract/errors.js';
import type { DeliveryReceipt } from '../contract/types.js';
import { loadPeer } from '../internal/load-peer.js';
import { awaitConfirm, encodeBody } from './confirm.js';
import { connectWithRetry, OutageLog } from './reconnect.js';
import type { OutboxMessage, Publisher, PublisherContext, PublisherHealth } from './publisher.js';
import { compileDestination, type Destination } from './subject.js';

/** Options of {@link NatsJetStreamPublisher}. */
export interface NatsJetStreamPublisherOptions {
  /** The stream the subjects land in: its `duplicate_window` is checked against the retry horizon at connect. */
  readonly stream: string;
  /** Subject: a template (`orders.{type}.{key}`, fields `{type} {version} {key} {outbox} {id} {header:<name>}`) or a function of the message. */
  readonly subject: Destination;
  /** Servers to connect to (default `127.0.0.1:4222`); ignored with `connection`. */
  readonly servers?: string | string[];
  /**
   * More connection options for `@nats-io/transport-node`'s `connect` (credentials, TLS, name). The
   * publisher's own connection sets `noAsyncTraces: true` (no stack captured per publish: a fifth of a
   * relay's CPU); give `noAsyncTraces: false` here to get the publish call site in NATS errors back.
   */
  readonly connectOptions?: Partial<ConnectionOptions>;
  /** A connection the caller owns (left open by `close`). */
  readonly connection?: NatsConnection;
  /** Pause between connection attempts at startup (default 1000 ms). */
  readonly reconnectWaitMs?: number;
}

interface Peers {
  connect: (opts: ConnectionOptions) => Promise<NatsConnection>;
  headers: typeof import('@nats-io/transport-node').headers;
  jetstream: typeof import('@nats-io/jetstream').jetstream;
  jetstreamManager: typeof import('@nats-io/jetstream').jetstreamManager;
}

async function loadNats(): Promise<Peers> {
  const purpose = 'for the NATS JetStream publisher';
  const t = await loadPeer('@nats-io/transport-node', () => import('@nats-io/transport-node'), purpose);
  const j = await loadPeer('@nats-io/jetstream', () => import('@nats-io/jetstream'), purpose);
  return { connect: t.connect, headers: t.headers, jetstream: j.jetstream, jetstreamManager: j.jetstreamManager };
}

/**
 * Publishes outbox messages to NATS JetStream (`@nats-io/jetstream` 3 over
 * `@nats-io/transport-node`, optional peers loaded on `connect`).
 *
 * - `msgID` is the message id (`OutboxMessage.id`, unique across stores), so
 *   the stream drops a republish within its `duplicate_window`; a PubAck with
 *   `duplicate: true` counts as success and as a broker duplicate. On a
 *   message's first attempt it means another producer used the same id: that
 *   is logged at warn, once per publisher (one outbox).
 * - Success only on a PubAck (the message is stored by the stream); the
 *   receipt is `{ broker, stream, seq, duplicate }`.
 * - At connect, a stream `duplicate_window` shorter than the dispatcher's
 *   retry horizon is refused naming both numbers.
 * - The envelope and every header travel as NATS headers.
 * - A payload above the server's `max_payload` is dead at once (permanent).
 */
export class NatsJetStreamPublisher implements Publisher {
  readonly broker = 'nats-jetstream';
  private readonly subjectOf: (m: OutboxMessage) => string;
  private peers: Peers | null = null;
  private nc: NatsConnection | null = null;
  private js: JetStreamClient | null = null;
  private ctx: PublisherContext | null = null;
  private status: PublisherHealth['status'] = 'degraded';
  private outage: OutageLog | null = null;
  private closed = false;
  private warnedForeignDuplicate = false;

  /** @throws InvalidOption naming the field (an unknown subject template field included), before any I/O */
  constructor(private readonly options: NatsJetStreamPublisherOptions) {
    if (options === null || typeof options !== 'object')
      throw new InvalidOption('options', 'must be an object { stream, subject, servers? }');
    if (typeof options.stream !== 'string' || options.stream.trim().length === 0)
      throw new InvalidOption('stream', 'must name the JetStream stream the subjects land in');
    this.subjectOf = compileDestination('subject', options.subject);
    if (
      options.reconnectWaitMs !== undefined &&
      (!Number.isInteger(options.reconnectWaitMs) || options.reconnectWaitMs < 1)
    )
      throw new InvalidOption('reconnectWaitMs', 'must be an integer ≥ 1');
  }

  async connect(ctx: PublisherContext, signal: AbortSignal): Promise<void> {
    this.ctx = ctx;
    this.peers ??= await loadNats();
    this.outage = new OutageLog(
      (m) => ctx.logger.warn(m),
      `NATS (${this.describeServers()}) for outbox ${JSON.stringify(ctx.outbox)}`,
    );
    const peers = this.peers;
    try {
      await connectWithRetry(
        async () => {
          this.nc =
            this.options.connection ??
            (await peers.connect({
              servers: this.options.servers ?? '127.0.0.1:4222',
              maxReconnectAttempts: -1,
              noAsyncTraces: true,
              ...this.options.connectOptions,
            }));
          this.watchStatus(this.nc);
          const jsm = await peers.jetstreamManager(this.nc);
          await this.checkWindow(jsm, ctx);
          this.js = peers.jetstream(this.nc);
          this.status = 'up';
        },
        {
          outage: this.outage,
          waitMs: this.options.reconnectWaitMs ?? 1000,
          signal,
          stopped: () => this.closed,
          cleanup: async () => {
            if (this.nc && !this.options.connection) await this.nc.close().catch(() => undefined);
            this.nc = null;
          },
        },
      );
    } catch (err) {
      await this.close();
      throw err;
    }
  }

  async publish(message: OutboxMessage, signal: AbortSignal): Promise<DeliveryReceipt> {
    const { js, nc, ctx, peers } = this;
    if (!js || !nc || !ctx || !peers) throw new PublishFailed('the NATS JetStream publisher is not connected');
    const body = encodeBody(message.payload, nc.info?.max_payload ?? 1024 * 1024, 'NATS', 'max_payload');
    const h = peers.headers();
    for (const [k, v] of Object.entries(message.headers)) h.set(k, v);
    const ack = js.publish(this.subjectOf(message), body, {
      msgID: message.id,
      headers: h,
      timeout: ctx.publishTimeoutMs + 1000,
    });
    const pa = await awaitConfirm(ack, signal, ctx.onLateConfirm);
    if (pa.duplicate) {
      ctx.onBrokerDuplicate();
      // A retry's duplicate is the dedup at work; on a first attempt the stream had the id from someone else.
      if (message.attempts === 1 && !this.warnedForeignDuplicate) {
        this.warnedForeignDuplicate = true;
        ctx.logger.warn(
          `outbox ${JSON.stringify(ctx.outbox)}: stream ${JSON.stringify(pa.stream)} already held message id ` +
            `${JSON.stringify(message.id)} on its first publish (PubAck duplicate: true, seq ${pa.seq}), so it ` +
            `kept that message and not this one: another producer used the same id (a copy of this database with ` +
            `the same store id, a publisher of your own), unless this message's own earlier publish landed while ` +
            `its confirm was lost in a broker outage or to a lost lease in its claim. See docs/brokers.md, ` +
            `Message ids. Logged once per outbox; the broker duplicates metric counts every one`,
        );
      }
    }
    return { broker: this.broker, stream: pa.stream, seq: pa.seq, duplicate: pa.duplicate };
  }

  health(): PublisherHealth {
    if (this.closed) return { status: 'down' };
    return this.status === 'up'
      ? { status: 'up' }
      : { status: this.status, ...(this.outage?.detail ? { detail: this.outage.detail } : {}) };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.status = 'down';
    const nc = this.nc;
    this.nc = null;
    this.js = null;
    if (nc && !this.options.connection) await nc.close().catch(() => undefined);
  }

  private async checkWindow(jsm: JetStreamManager, ctx: PublisherContext): Promise<void> {
    let windowNs: number;
    try {
      windowNs = (await jsm.streams.info(this.options.stream)).config.duplicate_window;
    } catch (err) {
      if (
        (err as { name?: string }).name === 'StreamNotFoundError' ||
        /stream not found/i.test(String((err as Error).message))
      ) {
        throw new InvalidOption(
          'stream',
          `names ${JSON.stringify(this.options.stream)}, which does not exist on the server; create it (with a ` +
            `duplicate_window of at least ${ctx.retryHorizonMs} ms) first`,
        );
      }
      throw err;
    }
    const windowMs = Math.floor(windowNs / 1e6);
    if (windowMs < ctx.retryHorizonMs) {
      throw new InvalidOption(
        'duplicate_window',
        `of stream ${JSON.stringify(this.options.stream)} is ${windowMs} ms, shorter than the retry horizon ` +
          `of outbox ${JSON.stringify(ctx.outbox)}: ${ctx.retryHorizonMs} ms (${ctx.horizonTerms}); raise ` +
          `the stream's duplicate_window to at least ${ctx.retryHorizonMs} ms or shorten those settings`,
      );
    }
  }

  private watchStatus(nc: NatsConnection): void {
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === 'disconnect' || s.type === 'reconnecting') {
          this.status = 'degraded';
          this.outage?.failed(new PublishFailed(`connection ${s.type}`));
        } else if (s.type === 'reconnect') {
          this.status = 'up';
          this.outage?.recovered();
        }
      }
    })().catch(() => undefined);
  }

  private describeServers(): string {
    const s = this.options.servers ?? '127.0.0.1:4222';
    return Array.isArray(s) ? s.join(',') : s;
  }
}
