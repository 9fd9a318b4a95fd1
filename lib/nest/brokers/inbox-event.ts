import { AsyncLocalStorage } from 'node:async_hooks';
import {
  applyDecorators,
  createParamDecorator,
  Inject,
  Injectable,
  Optional,
  SetMetadata,
  UseInterceptors,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { from, lastValueFrom, type Observable } from 'rxjs';
import { InvalidOption, PermanentError } from '../../contract/errors.js';
import { readEnvelope } from '../../contract/envelope.js';
import { validateName } from '../../contract/names.js';
import type { TxOps } from '../../contract/types.js';
import { InboxRunner, type InboxMessage } from '../../inbox/inbox-message.js';
import { Store } from '../store.token.js';
import { nestStoreLogger } from '../utils/nest-logger.js';
import { ALKSTORE_BROKERS_OPTIONS, INBOX_EVENT_METADATA } from './brokers.constants.js';
import type { AlkstoreBrokersOptions, InboxTransactionKind } from './brokers-options.interface.js';
import { checkTransactionKind, inboxTransaction } from './inbox-transaction.js';

/** Options of `@InboxEvent(inbox, options)`. */
export interface InboxEventOptions {
  /**
   * `'transport'` (default): the transport acknowledges as it always does. `'after-commit'`: RabbitMQ
   * (`Transport.RMQ` with `noAck: false`): the message is acked after the inbox transaction committed,
   * rejected without requeue (to the queue's dead-letter exchange) once the inbox gave up on it, and
   * requeued after a failure below that.
   */
  readonly ack?: 'transport' | 'after-commit';
  /**
   * The message id (the inbox key) from the event's data and transport context. Default, the first
   * found of: the RabbitMQ `messageId` property, the NATS header `Nats-Msg-Id` (or `message-id`), and
   * `data.messageId` (what `ClientProxyPublisher` emits).
   */
  readonly messageId?: (data: unknown, context: unknown) => string | undefined;
  /** The transaction the claim and the method share (default `'store'`); see `InboxTransactionKind`. */
  readonly transaction?: InboxTransactionKind;
}

interface InboxEventMetadata {
  readonly inbox: string;
  readonly options: InboxEventOptions;
}

interface InboxScope {
  readonly tx: TxOps;
  readonly handle: unknown;
}

const scope = new AsyncLocalStorage<InboxScope>();

function current(what: string): InboxScope {
  const s = scope.getStore();
  if (!s)
    throw new InvalidOption(
      what,
      'is only available in a method decorated with @InboxEvent(inbox), inside its inbox transaction',
    );
  return s;
}

/** The inbox transaction of an `@InboxEvent` method (parameter decorator): write the effect through it. */
export const InboxTx = createParamDecorator(
  (_data: unknown, _ctx: ExecutionContext): TxOps => current('@InboxTx()').tx,
);

/** The ORM's transaction of an `@InboxEvent({ transaction: 'orm' })` method: the `EntityManager`, Prisma's `tx`, … */
export const InboxTxHandle = createParamDecorator(
  (_data: unknown, _ctx: ExecutionContext): unknown => current('@InboxTxHandle()').handle,
);

/**
 * Makes an `@EventPattern` handler of any Nest microservices transport
 * effectively-once: the event's message id is claimed in the inbox `inbox`
 * and the method runs inside that transaction (take it with `@InboxTx()`);
 * an id already done is skipped (the method is not called). With
 * `ack: 'after-commit'` on RabbitMQ the broker is acked only after the commit.
 * Other transports (TCP, Redis pub/sub, core NATS) do not redeliver: the
 * inbox then absorbs duplicates the producer sent, such as an outbox
 * republish.
 *
 * ```ts
 * @EventPattern('orders.order.placed')
 * @InboxEvent('billing', { ack: 'after-commit' })
 * async placed(@Payload() event: OutboxEvent<Order>, @InboxTx() tx: TxOps) { await tx.enqueue('invoices', event.payload); }
 * ```
 */
export function InboxEvent(inbox: string, options: InboxEventOptions = {}): MethodDecorator {
  validateName('inbox', inbox);
  if (options === null || typeof options !== 'object')
    throw new InvalidOption('@InboxEvent options', 'must be an object');
  if (options.ack !== undefined && options.ack !== 'transport' && options.ack !== 'after-commit')
    throw new InvalidOption(
      '@InboxEvent ack',
      `must be 'transport' or 'after-commit', got ${JSON.stringify(options.ack)}`,
    );
  if (options.messageId !== undefined && typeof options.messageId !== 'function')
    throw new InvalidOption('@InboxEvent messageId', 'must be a function (data, context) => string');
  checkTransactionKind('@InboxEvent', options.transaction);
  const meta: InboxEventMetadata = { inbox, options };
  return applyDecorators(SetMetadata(INBOX_EVENT_METADATA, meta), UseInterceptors(InboxEventInterceptor));
}

/** The RabbitMQ context's channel and message (structural: `@nestjs/microservices` is not imported). */
interface RmqLike {
  getChannelRef(): { ack(m: unknown): void; nack(m: unknown, allUpTo: boolean, requeue: boolean): void };
  getMessage(): { properties?: { messageId?: unknown; headers?: Record<string, unknown> } };
}
interface NatsLike {
  getHeaders(): { get(k: string): string } | undefined;
}

function isRmq(ctx: unknown): ctx is RmqLike {
  return (
    typeof (ctx as Partial<RmqLike> | null)?.getChannelRef === 'function' &&
    typeof (ctx as Partial<RmqLike>).getMessage === 'function'
  );
}
function isNats(ctx: unknown): ctx is NatsLike {
  return (
    typeof (ctx as Partial<NatsLike> | null)?.getHeaders === 'function' &&
    typeof (ctx as { getSubject?: unknown }).getSubject === 'function'
  );
}

function defaultMessageId(data: unknown, ctx: unknown): string | undefined {
  if (isRmq(ctx)) {
    const id = ctx.getMessage()?.properties?.messageId;
    if (typeof id === 'string' && id !== '') return id;
  }
  if (isNats(ctx)) {
    const h = ctx.getHeaders();
    const id = h?.get('Nats-Msg-Id') || h?.get('message-id');
    if (id) return id;
  }
  const fromData = (data as { messageId?: unknown } | null)?.messageId;
  return typeof fromData === 'string' && fromData !== '' ? fromData : undefined;
}

function headersOf(data: unknown, ctx: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  const fromData = (data as { headers?: unknown } | null)?.headers;
  if (fromData && typeof fromData === 'object')
    for (const [k, v] of Object.entries(fromData)) if (typeof v === 'string') out[k] = v;
  if (isRmq(ctx))
    for (const [k, v] of Object.entries(ctx.getMessage()?.properties?.headers ?? {}))
      if (typeof v === 'string') out[k] = v;
  return out;
}

/** Runs an `@InboxEvent` method inside its inbox transaction (see {@link InboxEvent}). */
@Injectable()
export class InboxEventInterceptor implements NestInterceptor {
  private readonly runners = new Map<string, InboxRunner<unknown>>();
  private readonly logger = nestStoreLogger();

  constructor(
    private readonly store: Store,
    private readonly moduleRef: ModuleRef,
    @Optional() @Inject(ALKSTORE_BROKERS_OPTIONS) private readonly brokers?: AlkstoreBrokersOptions,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const meta = Reflect.getMetadata(INBOX_EVENT_METADATA, context.getHandler()) as InboxEventMetadata | undefined;
    if (!meta || context.getType() !== 'rpc') return next.handle();
    const rpc = context.switchToRpc();
    return from(
      this.run(meta, rpc.getData(), rpc.getContext(), next, `${context.getClass().name}.${context.getHandler().name}`),
    );
  }

  private runner(meta: InboxEventMetadata): InboxRunner<unknown> {
    const key = `${meta.options.transaction ?? 'store'}:${meta.inbox}`;
    let r = this.runners.get(key);
    if (!r) {
      const tx = inboxTransaction(meta.options.transaction ?? 'store', this.moduleRef);
      r = new InboxRunner({
        store: this.store,
        inbox: this.store.inbox(meta.inbox, this.brokers?.inboxes?.[meta.inbox]),
        handler: async () => undefined,
        transaction: tx,
        logger: this.logger,
      });
      this.runners.set(key, r);
    }
    return r;
  }

  private async run(
    meta: InboxEventMetadata,
    data: unknown,
    ctx: unknown,
    next: CallHandler,
    label: string,
  ): Promise<unknown> {
    const afterCommit = meta.options.ack === 'after-commit';
    if (afterCommit && !isRmq(ctx))
      throw new InvalidOption(
        `@InboxEvent ack of ${label}`,
        "is 'after-commit', which needs the RabbitMQ transport (Transport.RMQ with noAck: false)",
      );
    const rmq = afterCommit ? (ctx as RmqLike) : null;
    const messageId = (meta.options.messageId ?? defaultMessageId)(data, ctx);
    if (typeof messageId !== 'string' || messageId === '') {
      this.logger.warn(
        `${label}: an event without a message id cannot be deduplicated by inbox ${JSON.stringify(meta.inbox)}${rmq ? '; rejected (dead-lettered)' : ''}`,
      );
      rmq?.getChannelRef().nack(rmq.getMessage(), false, false);
      throw new PermanentError(`@InboxEvent ${label}: the event has no message id (set the messageId option)`);
    }
    const message: InboxMessage<unknown> = {
      messageId,
      // What ClientProxyPublisher emits ({ messageId, payload, headers }) is unwrapped; anything else is the payload.
      payload:
        data !== null && typeof data === 'object' && 'messageId' in data && 'payload' in data
          ? (data as { payload: unknown }).payload
          : data,
      envelope: readEnvelope(messageId, headersOf(data, ctx)),
      destination: isRmq(ctx)
        ? String((ctx.getMessage() as { fields?: { routingKey?: unknown } }).fields?.routingKey ?? '')
        : '',
      deliveryCount: 1,
    };
    let result: unknown;
    const r = await this.runner(meta).processWith(message, async (tx, _m, handle) => {
      result = await scope.run({ tx, handle }, () => lastValueFrom(next.handle(), { defaultValue: undefined }));
    });
    if (rmq) {
      const m = rmq.getMessage();
      if (r.outcome === 'ack') rmq.getChannelRef().ack(m);
      else rmq.getChannelRef().nack(m, false, r.outcome === 'retry');
    }
    // The method's own error (or the claim's): Nest logs it as it logs any failed event handler.
    if (r.cause !== undefined) throw r.cause;
    return result;
  }
}
