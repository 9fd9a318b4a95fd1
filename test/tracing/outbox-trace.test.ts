import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { context, propagation, SpanKind, trace, type Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type ReadableSpan } from '@opentelemetry/sdk-trace';
import {
  Body,
  Controller,
  Injectable,
  Post,
  type INestApplication,
  type MiddlewareConsumer,
  Module,
  type NestModule,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import type { Job } from '../../lib/contract/types.js';
import { AlkstoreModule, OutboxHandler } from '../../lib/nest/index.js';
import { correlationHeaders, correlationIdOf, currentCorrelationId } from '../../lib/tracing/index.js';
import { waitFor } from '../helpers/engines.js';
import { MemoryLogger, nestEngines, type NestDb } from '../nest/nest-fixtures.js';
import { Store } from '../../lib/index.js';

const exporter = new InMemorySpanExporter();
const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
const tracer = provider.getTracer('test');
const delivered: { job: Job; correlation: string | undefined }[] = [];

/** The parts of Express's request and response the middleware reads. */
interface HttpRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
}
interface HttpResponse {
  on(event: 'finish', listener: () => void): void;
}

/** Stands in for HTTP server instrumentation: a SERVER span, child of the caller's `traceparent`. */
function httpSpan(req: HttpRequest, res: HttpResponse, next: () => void): void {
  const parent = propagation.extract(context.active(), req.headers);
  const span = tracer.startSpan(`${req.method} ${req.path}`, { kind: SpanKind.SERVER }, parent);
  res.on('finish', () => span.end());
  context.with(trace.setSpan(parent, span), next);
}

@Controller('orders')
class OrdersController {
  constructor(private readonly store: Store) {}

  @Post()
  async create(@Body() body: { sku: string }): Promise<{ id: number }> {
    // Stands in for database instrumentation: the transaction that commits the order and its outbox message.
    return tracer.startActiveSpan('outbox commit', async (span: Span) => {
      try {
        const id = await this.store.withTx((tx) =>
          tx.outboxEnqueue('trace-orders', body, { headers: correlationHeaders('order-42') }),
        );
        return { id };
      } finally {
        span.end();
      }
    });
  }
}

@Injectable()
class Publisher {
  @OutboxHandler('trace-orders')
  async publish(job: Job): Promise<void> {
    // Work inside the handler joins the delivery span.
    tracer.startSpan('broker publish').end();
    delivered.push({ job, correlation: currentCorrelationId() });
  }
}

@Module({ controllers: [OrdersController], providers: [Publisher] })
class OrdersModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(httpSpan).forRoutes(OrdersController);
  }
}

function byName(spans: ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((s) => s.name === name);
  expect(found).toHaveLength(1);
  return found[0]!;
}

for (const engine of nestEngines()) {
  describe(`tracing across the outbox (${engine.name})`, () => {
    let db: NestDb;
    let app: INestApplication;

    beforeAll(async () => {
      trace.setGlobalTracerProvider(provider);
      context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
      propagation.setGlobalPropagator(new W3CTraceContextPropagator());
      db = await engine.create();
      const moduleRef = await Test.createTestingModule({
        imports: [
          AlkstoreModule.forRoot(db.moduleOptions({ logger: new MemoryLogger(), idlePollIntervalMs: 100 })),
          OrdersModule,
        ],
      }).compile();
      app = moduleRef.createNestApplication({ logger: false });
      await app.init();
    });

    afterAll(async () => {
      await app?.close();
      await db?.destroy();
      exporter.reset();
      trace.disable();
      context.disable();
      propagation.disable();
    });

    it('one trace spans the HTTP request, the outbox commit and the delivery, and the correlation id travels with the message', async () => {
      exporter.reset();
      delivered.length = 0;
      const client = tracer.startSpan('client call', { kind: SpanKind.CLIENT });
      const carrier: Record<string, string> = {};
      propagation.inject(trace.setSpan(context.active(), client), carrier);
      const res = await request(app.getHttpServer()).post('/orders').set(carrier).send({ sku: 'A-1' }).expect(201);
      client.end();
      await waitFor('the message was delivered', () => delivered.length === 1);
      await waitFor('the delivery span ended', () =>
        exporter.getFinishedSpans().some((s) => s.name === 'outbox trace-orders process'),
      );

      const spans = exporter.getFinishedSpans();
      const server = byName(spans, 'POST /orders');
      const commit = byName(spans, 'outbox commit');
      const delivery = byName(spans, 'outbox trace-orders process');
      const publish = byName(spans, 'broker publish');
      const traceId = client.spanContext().traceId;
      for (const s of [server, commit, delivery, publish]) expect(s.spanContext().traceId).toBe(traceId);
      expect(server.parentSpanContext?.spanId).toBe(client.spanContext().spanId);
      expect(commit.parentSpanContext?.spanId).toBe(server.spanContext().spanId);
      expect(delivery.parentSpanContext?.spanId).toBe(commit.spanContext().spanId);
      expect(delivery.kind).toBe(SpanKind.CONSUMER);
      expect(delivery.attributes['messaging.message.id']).toBe(String((res.body as { id: number }).id));
      expect(publish.parentSpanContext?.spanId).toBe(delivery.spanContext().spanId);

      const job = delivered[0]!.job;
      expect(job.headers.traceparent).toMatch(new RegExp(`^00-${traceId}-${commit.spanContext().spanId}-01$`));
      expect(correlationIdOf(job)).toBe('order-42');
      expect(delivered[0]!.correlation).toBe('order-42');
    });

    it('injects nothing when no span is active', async () => {
      const q = app.get(Store).queue('trace-none');
      const id = await q.enqueue({ n: 1 });
      const job = await q.claimOne('t');
      expect(job?.id).toBe(id);
      expect(job?.headers).toEqual({});
      await job?.ack();
    });
  });
}
