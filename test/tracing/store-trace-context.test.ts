import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { context, type Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { TracerProvider } from '@opentelemetry/sdk-trace';
import type { Store } from '../../lib/contract/types.js';
import { openStore } from '../../lib/open-store.js';
import { PG_AVAILABLE, PG_URL } from '../helpers/engines.js';

const tracer = new TracerProvider().getTracer('test');
const silent = { log: () => undefined, warn: () => undefined, error: () => undefined };

/** One open store per engine URL; PostgreSQL in a schema of its own. */
const targets = [
  { name: 'sqlite', url: () => `sqlite:${join(dir, 'trace.db')}` },
  ...(PG_AVAILABLE ? [{ name: 'postgres', url: () => PG_URL, schema: `trace_ctx_${process.pid}` }] : []),
];
let dir = '';

describe('openStore: the trace context is a per-store option, not a process-wide hook', () => {
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'alkstore-trace-'));
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  });
  afterAll(() => {
    context.disable();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const t of targets) {
    it(`[${t.name}] a store with tracing carries traceparent; one opened with tracing: false in the same process does not`, async () => {
      const base = { url: t.url(), logger: silent, ...('schema' in t ? { schema: t.schema } : {}) };
      const traced: Store = await openStore(base);
      const untraced: Store = await openStore({ ...base, tracing: false });
      try {
        const q = `trace_${Date.now().toString(36)}`;
        const traceId = await tracer.startActiveSpan('request', async (span: Span) => {
          try {
            await traced.queue(q).enqueue('traced');
            await untraced.queue(q).enqueue('untraced');
            return span.spanContext().traceId;
          } finally {
            span.end();
          }
        });
        const jobs = await traced.queue(q).claimBatch(10, 'reader');
        const byPayload = new Map(jobs.map((j) => [j.payloadAs<string>(), j.headers]));
        expect(byPayload.get('traced')?.traceparent).toContain(traceId);
        expect(byPayload.get('untraced')).toEqual({});
      } finally {
        await untraced.close();
        await traced.close();
        if ('schema' in t) {
          const pg = (await import('pg')).default;
          const c = new pg.Client({ connectionString: PG_URL });
          await c.connect();
          await c.query(`DROP SCHEMA IF EXISTS "${t.schema}" CASCADE`);
          await c.end();
        }
      }
    }, 60_000);
  }

  it('refuses a tracing option that is not a boolean before any I/O, naming it', async () => {
    await expect(openStore({ url: 'sqlite::memory:', tracing: 'yes' as never })).rejects.toMatchObject({
      code: 'INVALID_OPTION',
      field: 'tracing',
    });
  });
});
