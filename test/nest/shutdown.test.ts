import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import type { Job } from '../../lib/contract/types.js';
import { AlkstoreModule, OutboxHandler, QueueHandler } from '../../lib/nest/index.js';
import { waitFor } from '../helpers/engines.js';
import { gate, nestEngines, type NestDb } from './nest-fixtures.js';
import { Store } from '../../lib/index.js';

/** While `blocking`, handlers start and then hang until the gate opens (a delivery caught by shutdown). */
const state = { blocking: true, gate: gate(), started: [] as number[], done: [] as number[] };

@Injectable()
class SlowDelivery {
  // A short lease so a row abandoned by the drain comes back quickly; renewed while in flight.
  @OutboxHandler('slow-outbox', { leaseMs: 2_000, publishTimeoutMs: 1_500, storeTimeoutMs: 1_000 })
  async deliver(job: Job): Promise<void> {
    await this.work(job);
  }

  @QueueHandler('slow-queue')
  async process(job: Job): Promise<void> {
    await this.work(job);
  }

  private async work(job: Job): Promise<void> {
    state.started.push(job.id);
    if (state.blocking) await state.gate.promise;
    state.done.push(job.id);
  }
}

async function boot(db: NestDb): Promise<TestingModule> {
  const app = await Test.createTestingModule({
    imports: [AlkstoreModule.forRoot(db.moduleOptions({ drainTimeoutMs: 300, idlePollIntervalMs: 500 }))],
    providers: [SlowDelivery],
  }).compile();
  await app.init();
  return app;
}

for (const engine of nestEngines()) {
  describe(`graceful shutdown (${engine.name})`, () => {
    let db: NestDb;
    beforeAll(async () => {
      db = await engine.create();
    });
    afterAll(async () => {
      state.gate.open();
      await db.destroy();
    });

    it('app.close() in the middle of a delivery loses nothing: another app delivers it', async () => {
      state.blocking = true;
      state.gate = gate();
      state.started = [];
      state.done = [];
      const first = await boot(db);
      const store = first.get(Store);
      const outboxJob = await store.outboxEnqueue('slow-outbox', { n: 1 });
      const queueJob = await store.queue('slow-queue').enqueue({ n: 2 });
      await waitFor(
        'both handlers to start',
        () => state.started.includes(outboxJob) && state.started.includes(queueJob),
        20_000,
      );

      // Returns after the 300 ms drain even though both handlers still hang.
      await first.close();
      expect(state.done).toEqual([]);

      state.blocking = false;
      const second = await boot(db);
      try {
        await waitFor(
          'both jobs to complete in the second app',
          () => state.done.includes(outboxJob) && state.done.includes(queueJob),
          30_000,
        );
        const s = second.get(Store);
        await waitFor(
          'both rows to be acked',
          async () =>
            (await s.outbox('slow-outbox').queue.getJob(outboxJob)) === null &&
            (await s.queue('slow-queue').getJob(queueJob)) === null,
          20_000,
        );
      } finally {
        state.gate.open();
        await second.close();
      }
    });

    it('app.close() waits for a handler that finishes within the drain timeout', async () => {
      state.blocking = true;
      state.gate = gate();
      state.started = [];
      state.done = [];
      const app = await boot(db);
      const store = app.get(Store);
      const id = await store.queue('slow-queue').enqueue({ n: 3 });
      await waitFor('the handler to start', () => state.started.includes(id), 20_000);
      const closing = app.close();
      setTimeout(() => state.gate.open(), 50);
      await closing;
      expect(state.done).toEqual([id]);
    });
  });
}
