import { afterAll, describe, expect, it } from '@jest/globals';
import { describePg } from '../helpers/engines.js';
import {
  journalKind,
  loadVectors,
  memoryKind,
  postgresKind,
  runScenario,
  sqliteKind,
  type ProtocolVectors,
  type StoreKind,
} from './fixtures.js';

const vectors = loadVectors<ProtocolVectors>('outbox_store_protocol.json');

function suite(make: () => StoreKind, name: string, block: typeof describe = describe): void {
  block(`outbox_store_protocol.json on the ${name} store`, () => {
    const kind = make();
    afterAll(() => kind.cleanup());

    it('reads a vector file of the documented format', () => {
      expect(vectors.format).toBe('alkstore.reliable-sync.outbox-store-protocol/1');
      expect(vectors.scenarios.length).toBeGreaterThan(0);
    });

    for (const scenario of vectors.scenarios) {
      it(scenario.name, async () => {
        await runScenario(await kind.location(), scenario);
      });
    }
  });
}

suite(memoryKind, 'in-memory');
suite(sqliteKind, 'SQLite file');
suite(() => journalKind(), 'file journal (fsync always)');
suite(() => journalKind({ fsync: 'interval', fsyncIntervalMs: 5 }), 'file journal (fsync interval)');
suite(() => journalKind({ fsync: 'never', compactThresholdBytes: 64 }), 'file journal (compacting at 64 bytes)');
suite(() => postgresKind('proto'), 'PostgreSQL', describePg);
