import { describe, expect, it } from '@jest/globals';
import { InvalidOption } from '../../lib/contract/errors.js';
import type { StoreLogger } from '../../lib/contract/types.js';
import { openStore } from '../../lib/open-store.js';
import { contractEngines, type EngineFixture } from '../helpers/engines.js';

/** The store options declared once (lib/engines/shared/options.ts), on both engines. */
function keepingLogger(): StoreLogger & { warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, log: () => undefined, warn: (m) => void warnings.push(m), error: () => undefined };
}

async function urlOf(engine: EngineFixture): Promise<{ url: string; schema?: string; destroy(): Promise<void> }> {
  const db = await engine.create();
  const url =
    engine.kind === 'sqlite'
      ? `sqlite:${db.location}`
      : (process.env.ALKSTORE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test');
  return { url, schema: engine.kind === 'postgres' ? db.location : undefined, destroy: () => db.destroy() };
}

for (const engine of contractEngines()) {
  describe(`store options [${engine.name}]`, () => {
    it('wakeFallbackMs is taken without a warning; the 0.2 name pollIntervalMs is InvalidOption naming it, before any I/O', async () => {
      const db = await urlOf(engine);
      const fresh = keepingLogger();
      try {
        const a = await openStore({ url: db.url, schema: db.schema, wakeFallbackMs: 20, logger: fresh });
        await a.close();
        expect(fresh.warnings.filter((w) => w.includes('wakeFallbackMs'))).toEqual([]);
        const old = { url: db.url, schema: db.schema, pollIntervalMs: 20 } as Parameters<typeof openStore>[0];
        const err = await openStore(old).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(InvalidOption);
        expect((err as InvalidOption).field).toBe('pollIntervalMs');
        expect((err as Error).message).toMatch(/renamed.*wakeFallbackMs/);
      } finally {
        await db.destroy();
      }
    });
  });
}
