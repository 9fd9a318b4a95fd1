import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { AlkstoreModule, QueueHandler } from '../../lib/nest/index.js';
import { waitFor } from '../helpers/engines.js';
import { MemoryLogger, nestEngines, type NestDb } from './nest-fixtures.js';
import { Store } from '../../lib/index.js';

@Injectable()
class Mailer {
  @QueueHandler('retention-mail')
  async send(): Promise<void> {}
}

for (const engine of nestEngines()) {
  describe(`automatic retention (${engine.name})`, () => {
    let db: NestDb;
    let app: TestingModule | null = null;
    const logger = new MemoryLogger();

    beforeAll(async () => {
      db = await engine.create();
    });

    afterAll(async () => {
      await app?.close();
      await db?.destroy();
    });

    it('moves an expired job to dead, deletes a dead letter past its retention and prunes old receipts, with no user code', async () => {
      // Written before the application starts, by another process say: a job that expires before it is
      // ever due, and a dead letter kept for 1 ms.
      const seed = await Test.createTestingModule({
        imports: [AlkstoreModule.forRoot(db.moduleOptions({ workers: 'off', logger }))],
      }).compile();
      await seed.init();
      const seedStore = seed.get(Store);
      const expiring = await seedStore
        .queue('retention-mail')
        .enqueue({ to: 'a' }, { delayMs: 3_600_000, expiresInMs: 1 });
      const deadQ = seedStore.queue('retention-mail', { deadLetterRetentionMs: 1 });
      const doomed = await deadQ.enqueue({ to: 'b' });
      const claimed = await deadQ.claimOne('seed');
      expect(claimed?.id).toBe(doomed);
      expect(await claimed!.fail(new Error('bounced'))).toBe(true);
      expect((await deadQ.getJob(doomed))?.state).toBe('dead');
      // A queue no handler of this application works: known only from the database.
      const orphanQ = seedStore.queue('retention-orphan', { deadLetterRetentionMs: 1 });
      const orphan = await orphanQ.enqueue({ to: 'c' });
      expect(await (await orphanQ.claimOne('seed'))!.fail(new Error('bounced'))).toBe(true);
      // A delivered outbox message's receipt.
      const outbox = seedStore.outbox('retention-out');
      const sent = await outbox.enqueue({ to: 'd' });
      expect(await outbox.runOnce('seed', async () => undefined)).toBe(true);
      await outbox.recordReceipts([{ messageId: sent, receipt: { broker: 'test' } }]);
      await seed.close();

      app = await Test.createTestingModule({
        imports: [
          AlkstoreModule.forRoot(db.moduleOptions({ logger, retention: { intervalMs: 100, receiptRetentionMs: 0 } })),
        ],
        providers: [Mailer],
      }).compile();
      await app.init();
      const q = app.get(Store).queue('retention-mail');
      await waitFor('the expired job is dead', async () => (await q.getJob(expiring))?.state === 'dead');
      await waitFor('the old dead letter is gone', async () => (await q.getJob(doomed)) === null);
      await waitFor(
        'the dead letter of a queue without a handler is gone too',
        async () => (await app!.get(Store).queue('retention-orphan').getJob(orphan)) === null,
      );
      // The line is logged once the retention pass's result is back, just after its commit: wait for it.
      await waitFor('the queue retention line', () => logger.has(/retention: queue "retention-mail": /));
      await waitFor(
        'the receipt past receiptRetentionMs is gone',
        async () => (await app!.get(Store).outbox('retention-out').receipt(sent)) === null,
      );
      await waitFor('the receipts retention line', () =>
        logger.has(/retention: outbox receipts: 1 row\(s\) past retention deleted/),
      );
    });

    it('refuses a bad retention period at boot, naming the field', async () => {
      await expect(
        Test.createTestingModule({
          imports: [AlkstoreModule.forRoot(db.moduleOptions({ workers: 'off', retention: { inboxRetentionMs: -1 } }))],
        }).compile(),
      ).rejects.toThrow(/retention\.inboxRetentionMs/);
    });
  });
}
