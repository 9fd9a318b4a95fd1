import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import type { Job } from '../../lib/contract/types.js';
import { AlkstoreModule, Scheduled } from '../../lib/nest/index.js';
import { describePg, waitFor } from '../helpers/engines.js';
import { nestPostgres, nestSqlite, type NestDb } from './nest-fixtures.js';
import { Store } from '../../lib/index.js';

/** Every run, by application and job id. */
const runs: { app: string; job: number }[] = [];

@Injectable()
class Ticker {
  static app = '';
  readonly app = Ticker.app;

  @Scheduled('tick', '@every 1s')
  async tick(job: Job): Promise<void> {
    runs.push({ app: this.app, job: job.id });
  }
}

async function bootApp(db: NestDb, name: string): Promise<TestingModule> {
  Ticker.app = name;
  const app = await Test.createTestingModule({
    imports: [AlkstoreModule.forRoot(db.moduleOptions({ idlePollIntervalMs: 500 }))],
    providers: [Ticker],
  }).compile();
  await app.init();
  return app;
}

describePg('@Scheduled across two application instances on one PostgreSQL database', () => {
  let db: NestDb;
  beforeAll(async () => {
    db = await nestPostgres.create();
  });
  afterAll(async () => {
    await db.destroy();
  });

  it('runs the method once per boundary, never twice', async () => {
    runs.length = 0;
    // An API-only instance (workers: 'off') registers the schedule first and checks the outcome last.
    const admin = await Test.createTestingModule({
      imports: [AlkstoreModule.forRoot(db.moduleOptions({ workers: 'off' }))],
    }).compile();
    await admin.init();
    try {
      const store = admin.get(Store);
      const first = await store.schedule('tick', '@every 1s', 'scheduled:tick', null, {
        startAt: (await store.now()) + 2_000,
      });
      const a = await bootApp(db, 'a');
      let b: TestingModule | undefined;
      try {
        b = await bootApp(db, 'b');
        await waitFor('three scheduled runs', () => runs.length >= 3, 30_000);
      } finally {
        await a.close();
        await b?.close();
      }
      const last = await store.getSchedule('tick');
      // Boundaries the leader fired while the apps ran; each became one job.
      const fired = (last!.nextFireAt - first.nextFireAt) / first.intervalMs!;
      const left = await store.queue('scheduled:tick').stats();
      const ids = runs.map((r) => r.job);
      expect(new Set(ids).size).toBe(ids.length);
      expect(runs.length + left.pending + left.processing + left.dead).toBe(fired);
      expect(runs.length).toBeGreaterThanOrEqual(3);
    } finally {
      await admin.close();
    }
  });
});

describe('@Scheduled on SQLite', () => {
  let db: NestDb;
  beforeAll(async () => {
    db = await nestSqlite.create();
  });
  afterAll(async () => {
    await db.destroy();
  });

  it('stores the schedule on its scheduled:<name> queue and runs the method at each boundary', async () => {
    runs.length = 0;
    const app = await bootApp(db, 'solo');
    try {
      const schedule = await app.get(Store).getSchedule('tick');
      expect(schedule).toMatchObject({ spec: '@every 1s', queue: 'scheduled:tick', intervalMs: 1000 });
      await waitFor('two scheduled runs', () => runs.length >= 2, 20_000);
      expect(new Set(runs.map((r) => r.job)).size).toBe(runs.length);
    } finally {
      await app.close();
    }
  });
});
