import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { context, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import type { Store } from '../../lib/contract/types.js';
import { createWorkflows, defineWorkflow, runTraceIds } from '../../lib/workflows/index.js';
import { contractEngines, withEngineDb } from '../helpers/engines.js';

const exporter = new InMemorySpanExporter();
const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });

beforeAll(() => {
  trace.setGlobalTracerProvider(provider);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
});
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
});

for (const engine of contractEngines()) {
  describe(`workflow traces [${engine.name}]`, () => {
    let store!: Store;
    withEngineDb(engine, (_db, s) => {
      store = s;
    });

    it('one trace per run across passes: a span per step attempt, a failed attempt marked as an error', async () => {
      let failOnce = true;
      const wf = defineWorkflow('traced', {
        async run(_input: null, ctx) {
          await ctx.step('first', () => 1);
          await ctx.sleep(20);
          await ctx.step('flaky', () => {
            if (failOnce) {
              failOnce = false;
              throw new Error('try again');
            }
            return 2;
          });
          await ctx.transaction('book', async (tx) => tx.publish('traced-rows', { ok: true }));
          return 'ok';
        },
      });
      const ns = `trace-${engine.kind}-${process.pid}`;
      const w = createWorkflows(store, { workflows: [wf], namespace: ns, idlePollIntervalMs: 50, backoffBaseMs: 10 });
      try {
        exporter.reset();
        const { id } = await w.start(wf, null, { id: 'traced-1' });
        await w.waitForResult(id, { timeoutMs: 20_000 });
      } finally {
        await w.close();
      }
      const spans = exporter.getFinishedSpans().filter((s) => s.attributes['alkstore.workflow.run_id'] === 'traced-1');
      expect(spans.map((s) => s.name)).toEqual(['traced first', 'traced flaky', 'traced flaky', 'traced book']);
      const { traceId, spanId } = runTraceIds(ns, 'traced-1');
      expect(new Set(spans.map((s) => s.spanContext().traceId))).toEqual(new Set([traceId]));
      expect(spans.every((s) => s.parentSpanContext?.spanId === spanId)).toBe(true);
      expect(spans.map((s) => s.status.code)).toEqual([
        SpanStatusCode.UNSET,
        SpanStatusCode.ERROR,
        SpanStatusCode.UNSET,
        SpanStatusCode.UNSET,
      ]);
      expect(spans[2]!.attributes['alkstore.workflow.attempt']).toBe(2);
      expect(spans[3]!.attributes['alkstore.workflow.step_kind']).toBe('transaction');
    });
  });
}
