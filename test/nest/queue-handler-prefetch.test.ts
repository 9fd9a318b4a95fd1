import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import type { Job } from '../../lib/contract/types.js';
import { AlkstoreModule, QueueHandler } from '../../lib/nest/index.js';
import { waitFor } from '../helpers/engines.js';
import { gate, nestEngines, type NestDb } from './nest-fixtures.js';
import { Store } from '../../lib/index.js';

const state = { gate: gate(), started: [] as number[] };

@Injectable()
class Prefetching {
  @QueueHandler('prefetch-queue', { concurrency: 2, prefetch: 3 })
  async process(job: Job): Promise<void> {
    state.started.push(job.id);
    await state.gate.promise;
  }
}

async function boot(db: NestDb): Promise<TestingModule> {
  const app = await Test.createTestingModule({
    imports: [AlkstoreModule.forRoot(db.moduleOptions({ drainTimeoutMs: 30_000, idlePollIntervalMs: 500 }))],
    providers: [Prefetching],
  }).compile();
  await app.init();
  return app;
}

for (const engine of nestEngines()) {
  describe(`@QueueHandler prefetch (${engine.name})`, () => {
    let db: NestDb;
    beforeAll(async () => {
      db = await engine.create();
    });
    afterAll(async () => {
      state.gate.open();
      await db.destroy();
    });

    it('holds concurrency + prefetch jobs, runs concurrency of them, and app.close() hands the buffered ones back at once', async () => {
      state.gate = gate();
      state.started = [];
      const app = await boot(db);
      const store = app.get(Store);
      const q = store.queue('prefetch-queue');
      const ids = await q.enqueueMany([1, 2, 3, 4, 5, 6]);
      let closing: Promise<void> | null = null;
      try {
        await waitFor(
          'two running, three buffered',
          async () => state.started.length === 2 && (await q.stats()).processing === 5,
          20_000,
        );
        expect(state.started).toEqual(ids.slice(0, 2));
        closing = app.close();
        // The two running handlers hold the close (30 s drain); the three buffered jobs are pending again already.
        await waitFor('buffered jobs released', async () => (await q.stats()).pending === 4, 20_000);
        expect(state.started).toHaveLength(2);
      } finally {
        state.gate.open();
        await (closing ?? app.close());
      }
      const second = await boot(db);
      try {
        const s = second.get(Store);
        await waitFor(
          'every job done by the second app',
          async () => {
            const st = await s.queue('prefetch-queue').stats();
            return st.pending === 0 && st.processing === 0;
          },
          20_000,
        );
      } finally {
        await second.close();
      }
      expect([...new Set(state.started)].sort((a, b) => a - b)).toEqual(ids);
    });
  });
}
