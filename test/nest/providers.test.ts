import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { InvalidName, ReservedName } from '../../lib/contract/errors.js';
import type { Job, Outbox, Queue } from '../../lib/contract/types.js';
import {
  AlkstoreModule,
  defineOutbox,
  defineQueue,
  getQueueToken,
  InjectOutbox,
  InjectQueue,
  OutboxHandler,
  QueueHandler,
  Scheduled,
  type OutboxOf,
  type QueueOf,
} from '../../lib/nest/index.js';
import { waitFor } from '../helpers/engines.js';
import { nestEngines, type NestDb } from './nest-fixtures.js';

interface Email {
  to: string;
}
const EMAILS = defineQueue<Email>('prov-emails', { maxAttempts: 9 });
const ORDERS = defineOutbox<{ orderId: number }>('prov-orders');

const received: { emails: string[]; orders: number[] } = { emails: [], orders: [] };

@Injectable()
class Handlers {
  @QueueHandler(EMAILS)
  async send(job: Job<Email>): Promise<void> {
    received.emails.push(job.payload.to);
  }

  @OutboxHandler(ORDERS)
  async deliver(job: Job<{ orderId: number }>): Promise<void> {
    received.orders.push(job.payload.orderId);
  }

  @Scheduled('prov-report', '@every 1h')
  async report(): Promise<void> {}
}

/** Injects only handles no forFeature registered: forRoot must provide them. */
@Injectable()
class Producer {
  constructor(
    @InjectQueue(EMAILS) readonly emails: QueueOf<typeof EMAILS>,
    @InjectOutbox(ORDERS) readonly orders: OutboxOf<typeof ORDERS>,
    @InjectQueue('scheduled:prov-report') readonly reports: Queue,
    @InjectQueue('prov-listed') readonly listed: Queue,
    @InjectOutbox('prov-listed-outbox') readonly listedOutbox: Outbox,
  ) {}
}

@Injectable()
class FeatureUser {
  constructor(
    @InjectQueue('prov-feature') readonly feature: Queue,
    @InjectQueue(EMAILS) readonly emails: Queue<Email>,
  ) {}
}

@Module({
  imports: [AlkstoreModule.forFeature({ queues: ['prov-feature', EMAILS] })],
  providers: [FeatureUser],
  exports: [FeatureUser],
})
class FeatureModule {}

for (const engine of nestEngines()) {
  describe(`queue and outbox providers (${engine.name})`, () => {
    let db: NestDb;
    beforeAll(async () => {
      db = await engine.create();
    });
    afterAll(async () => {
      await db.destroy();
    });

    it('forRoot provides a handle for every handled queue and outbox and every listed one, without forFeature', async () => {
      const app = await Test.createTestingModule({
        imports: [
          AlkstoreModule.forRoot({
            ...db.moduleOptions({ idlePollIntervalMs: 500 }),
            queues: [{ name: 'prov-listed', opts: { maxAttempts: 4 } }],
            outboxes: ['prov-listed-outbox'],
          }),
        ],
        providers: [Handlers, Producer],
      }).compile();
      await app.init();
      try {
        const p = app.get(Producer);
        expect([p.emails.name, p.orders.name, p.reports.name, p.listed.name, p.listedOutbox.name]).toEqual([
          'prov-emails',
          'prov-orders',
          'scheduled:prov-report',
          'prov-listed',
          'prov-listed-outbox',
        ]);
        // The handle carries the options the ref / the list declared.
        expect(p.emails.opts.maxAttempts).toBe(9);
        expect(p.listed.opts.maxAttempts).toBe(4);

        await p.emails.enqueue({ to: 'ada@example.com' });
        await p.orders.enqueue({ orderId: 7 });
        await waitFor(
          'both handlers to run',
          () => received.emails.includes('ada@example.com') && received.orders.includes(7),
          20_000,
        );
      } finally {
        await app.close();
      }
    });

    it('forFeature keeps working next to forRoot, and the handled queue is worked once', async () => {
      const app = await Test.createTestingModule({
        imports: [AlkstoreModule.forRoot(db.moduleOptions({ idlePollIntervalMs: 500 })), FeatureModule],
        providers: [Handlers],
      }).compile();
      await app.init();
      try {
        const user = app.get(FeatureUser);
        expect(user.feature.name).toBe('prov-feature');
        expect(user.emails.opts.maxAttempts).toBe(9);
        // Both the global handle and the feature's handle feed the one handler.
        received.emails = [];
        await user.emails.enqueue({ to: 'feature@example.com' });
        await app.get<Queue<Email>>(getQueueToken(EMAILS), { strict: false }).enqueue({ to: 'root@example.com' });
        await waitFor('both jobs', () => received.emails.length >= 2, 20_000);
        expect(received.emails.sort()).toEqual(['feature@example.com', 'root@example.com']);
      } finally {
        await app.close();
      }
    });

    it('forRootAsync takes queues and outboxes next to its factory', async () => {
      const app = await Test.createTestingModule({
        imports: [
          AlkstoreModule.forRootAsync({
            useFactory: () => db.moduleOptions(),
            queues: ['prov-listed'],
            outboxes: ['prov-listed-outbox'],
          }),
        ],
        providers: [Handlers, Producer],
      }).compile();
      await app.init();
      try {
        expect(app.get<Queue>(getQueueToken('prov-listed'), { strict: false }).name).toBe('prov-listed');
        expect(app.get(Producer).listedOutbox.name).toBe('prov-listed-outbox');
      } finally {
        await app.close();
      }
    });
  });
}

describe('listed handle names are checked when the module is declared', () => {
  it('refuses an empty or reserved queue or outbox name with a typed error naming it', () => {
    expect(() => AlkstoreModule.forRoot({ url: 'sqlite::memory:', queues: [''] })).toThrow(InvalidName);
    expect(() => AlkstoreModule.forRoot({ url: 'sqlite::memory:', outboxes: ['__alkstore_x'] })).toThrow(ReservedName);
    expect(() =>
      AlkstoreModule.forRootAsync({ useFactory: () => ({ url: 'sqlite::memory:' }), queues: [{ name: ' ' }] }),
    ).toThrow(/queue/);
    expect(() => AlkstoreModule.forFeature({ queues: [{ name: '__alkstore_q' }] })).toThrow(/__alkstore_q/);
  });
});
