import { describe, expect, it } from '@jest/globals';
import { InvalidOption } from '../../lib/contract/errors.js';
import type { StoreLogger } from '../../lib/contract/types.js';
import { openStore } from '../../lib/open-store.js';
import { contractEngines, waitFor, type EngineFixture } from '../helpers/engines.js';

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
    it('wakeFallbackMs is taken without a warning; the deprecated pollIntervalMs still works and warns once, naming the new name', async () => {
      const db = await urlOf(engine);
      const fresh = keepingLogger();
      const old = keepingLogger();
      const a = await openStore({ url: db.url, schema: db.schema, wakeFallbackMs: 20, logger: fresh });
      const b = await openStore({ url: db.url, schema: db.schema, pollIntervalMs: 20, logger: old });
      try {
        expect(fresh.warnings.filter((w) => w.includes('pollIntervalMs'))).toEqual([]);
        expect(old.warnings.filter((w) => w.includes('pollIntervalMs'))).toHaveLength(1);
        expect(old.warnings.find((w) => w.includes('pollIntervalMs'))).toContain('wakeFallbackMs');
        // The store opened with the old name still receives another store's commits.
        const wakes = b.listen('opt-ch');
        await a.notify('opt-ch');
        expect(await waitFor('the wake', () => wakes.recv(AbortSignal.timeout(10_000)))).toEqual({ channel: 'opt-ch' });
        wakes.close();
      } finally {
        await a.close();
        await b.close();
        await db.destroy();
      }
    });

    it('the old and the new name together must agree: otherwise InvalidOption naming both, before any I/O', async () => {
      const db = await urlOf(engine);
      try {
        const err = await openStore({ url: db.url, schema: db.schema, wakeFallbackMs: 20, pollIntervalMs: 30 }).catch(
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(InvalidOption);
        expect((err as Error).message).toMatch(/pollIntervalMs.*wakeFallbackMs/);
        const same = await openStore({
          url: db.url,
          schema: db.schema,
          wakeFallbackMs: 20,
          pollIntervalMs: 20,
          logger: keepingLogger(),
        });
        await same.close();
      } finally {
        await db.destroy();
      }
    });
  });
}
