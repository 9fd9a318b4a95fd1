import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import type { DataSource } from 'typeorm';
import { openTypeOrm } from '../../lib/adapters/typeorm.js';
import { InvalidOption } from '../../lib/contract/errors.js';
import type { Job } from '../../lib/contract/types.js';
import { AlkstoreModule, OutboxHandler } from '../../lib/nest/index.js';
import { waitFor } from '../helpers/engines.js';
import { nestEngines, Widget, type NestDb } from './nest-fixtures.js';
import { Store } from '../../lib/index.js';

const delivered: unknown[] = [];

@Injectable()
class WidgetEvents {
  @OutboxHandler('widget-events')
  async deliver(job: Job): Promise<void> {
    delivered.push(job.payload);
  }
}

for (const engine of nestEngines()) {
  describe(`TypeORM transactions (${engine.name})`, () => {
    let db: NestDb;
    let dataSource: DataSource;
    let app: TestingModule;

    beforeAll(async () => {
      db = await engine.create();
      dataSource = await db.dataSource();
      // A 30 s idle poll: a delivery within seconds can only come from the commit's wake.
      app = await Test.createTestingModule({
        imports: [
          AlkstoreModule.forRoot({ dataSource, schema: db.moduleOptions().schema, idlePollIntervalMs: 30_000 }),
        ],
        providers: [WidgetEvents],
      }).compile();
      await app.init();
    });
    afterAll(async () => {
      await app?.close();
      await db.destroy();
    });

    it('a rolled-back transaction leaves no row, job, event or notify behind', async () => {
      const store = app.get(Store);
      const wakes = store.listen('widget-changed');
      const marker = store.listen('marker');
      try {
        const attempt = store.joinTransaction(openTypeOrm(dataSource), async (tx, em) => {
          await em.save(em.create(Widget, { name: 'ghost' }));
          await tx.outboxEnqueue('ghost-outbox', { name: 'ghost' });
          await tx.enqueue('ghost-queue', { name: 'ghost' });
          await tx.publish('ghost-stream', { name: 'ghost' });
          await tx.notify('widget-changed');
          throw new Error('business rule failed');
        });
        await expect(attempt).rejects.toThrow('business rule failed');

        expect(await dataSource.getRepository(Widget).countBy({ name: 'ghost' })).toBe(0);
        expect(await store.outbox('ghost-outbox').queue.stats()).toMatchObject({ pending: 0, processing: 0, dead: 0 });
        expect(await store.queue('ghost-queue').stats()).toMatchObject({ pending: 0, processing: 0, dead: 0 });
        expect(await store.stream('ghost-stream').readSince(0)).toEqual([]);
        // A committed notify on another channel arrives; the rolled-back one never does.
        await store.notify('marker');
        expect(await marker.recv(AbortSignal.timeout(10_000))).toEqual({ channel: 'marker' });
        const ghost = new AbortController();
        ghost.abort();
        expect(await wakes.recv(ghost.signal)).toBeNull();
      } finally {
        wakes.close();
        marker.close();
      }
    });

    it('a committed outbox message is delivered by its wake, without waiting for the idle poll', async () => {
      const store = app.get(Store);
      // First message: lets the dispatcher finish its start-up claim and go idle.
      await store.joinTransaction(openTypeOrm(dataSource), async (tx, em) => {
        const w = await em.save(em.create(Widget, { name: 'first' }));
        await tx.outboxEnqueue('widget-events', { widget: w.id, name: 'first' });
      });
      await waitFor(
        'the first delivery',
        () => delivered.some((p) => (p as { name: string }).name === 'first'),
        20_000,
      );
      // Setup, not proof: give the loop time to fall back to its (30 s) idle wait.
      await new Promise((r) => setTimeout(r, 500));

      const id = await store.joinTransaction(openTypeOrm(dataSource), async (tx, em) => {
        const w = await em.save(em.create(Widget, { name: 'second' }));
        await tx.outboxEnqueue('widget-events', { widget: w.id, name: 'second' });
        return w.id;
      });
      // Far below the 30 s poll: only the commit's wake can deliver it in time.
      await waitFor('the second delivery', () => delivered.some((p) => (p as { widget: number }).widget === id), 8_000);
      expect(await dataSource.getRepository(Widget).countBy({ name: 'second' })).toBe(1);
    });

    it('refuses to join an EntityManager outside a transaction (on SQLite, any manager: the DataSource opens it)', async () => {
      const store = app.get(Store);
      const attempt = (async () => store.joinTransaction(openTypeOrm(dataSource.manager), async () => 1))();
      await expect(attempt).rejects.toThrow(InvalidOption);
      await expect(
        (async () => store.joinTransaction(openTypeOrm(dataSource.manager), async () => 1))(),
      ).rejects.toThrow(engine.kind === 'sqlite' ? /pass the DataSource itself/ : /has no active transaction/);
    });
  });
}
