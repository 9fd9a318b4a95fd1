import 'reflect-metadata';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { InvalidOption, PermanentError } from '../../lib/contract/errors.js';
import type { Job } from '../../lib/contract/types.js';
import {
  defineOutbox,
  defineQueue,
  InjectOutbox,
  InjectQueue,
  OutboxHandler,
  QueueHandler,
  Scheduled,
  type OutboxOf,
  type QueueOf,
} from '../../lib/nest/index.js';
import {
  AlkstoreTesting,
  createTestDatabase,
  DrainLimit,
  type AlkstoreTestDatabase,
  type AlkstoreTestingModule,
} from '../../lib/nest/testing/index.js';
import { PG_AVAILABLE, PG_URL } from '../helpers/engines.js';

const SIGNUPS = defineOutbox<{ user: string }>('kit-signups');
const WELCOME = defineQueue<{ to: string }>('kit-welcome', { maxAttempts: 2, backoffBaseMs: 60_000 });
const FLAKY = defineQueue<{ n: number }>('kit-flaky', { maxAttempts: 3, backoffBaseMs: 60_000 });
const LOOP = defineQueue<{ n: number }>('kit-loop');

const log: string[] = [];

@Injectable()
class Handlers {
  constructor(
    @InjectQueue(WELCOME) private readonly welcome: QueueOf<typeof WELCOME>,
    @InjectQueue(LOOP) private readonly loop: QueueOf<typeof LOOP>,
  ) {}

  @OutboxHandler(SIGNUPS)
  async signup(job: Job<{ user: string }>): Promise<void> {
    log.push(`signup ${job.payload.user}`);
    await this.welcome.enqueue({ to: job.payload.user });
  }

  @QueueHandler(WELCOME)
  async sendWelcome(job: Job<{ to: string }>): Promise<void> {
    if (job.payload.to === 'nobody') throw new PermanentError('no such mailbox');
    log.push(`welcome ${job.payload.to}`);
  }

  @QueueHandler(FLAKY)
  async flaky(job: Job<{ n: number }>): Promise<void> {
    throw new Error(`flaky ${job.payload.n}`);
  }

  @QueueHandler(LOOP)
  async again(job: Job<{ n: number }>): Promise<void> {
    await this.loop.enqueue({ n: job.payload.n + 1 });
  }

  @Scheduled('kit-report', '@every 1h')
  async report(): Promise<void> {
    log.push('report');
  }
}

@Injectable()
class Producer {
  constructor(@InjectOutbox(SIGNUPS) readonly signups: OutboxOf<typeof SIGNUPS>) {}
}

const targets = PG_AVAILABLE ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const);

for (const engine of targets) {
  describe(`alkstore/testing (${engine})`, () => {
    let db: AlkstoreTestDatabase;
    let t: AlkstoreTestingModule;

    beforeAll(async () => {
      db = await createTestDatabase(engine === 'postgres' ? { postgresUrl: PG_URL } : {});
      t = await AlkstoreTesting.createTestingModule({ database: db, providers: [Handlers, Producer] });
    });
    afterAll(async () => {
      await t?.close();
      await db?.drop();
    });

    it('runs nothing on its own: what is enqueued waits, listed by enqueued() / outboxed()', async () => {
      log.length = 0;
      await t.module.get(Producer).signups.enqueue({ user: 'ada' });
      await t.kit.store.queue(WELCOME.name).enqueue({ to: 'grace' });
      expect(await t.kit.outboxed(SIGNUPS)).toEqual([{ user: 'ada' }]);
      expect(await t.kit.enqueued(WELCOME)).toEqual([{ to: 'grace' }]);
      expect(log).toEqual([]);
    });

    it('drain() runs everything until the queues are empty, jobs enqueued by handlers included', async () => {
      const result = await t.kit.drain();
      expect(result).toMatchObject({ succeeded: 3, retried: 0, dead: 0, failures: [] });
      expect(log.sort()).toEqual(['signup ada', 'welcome ada', 'welcome grace']);
      expect(await t.kit.outboxed(SIGNUPS)).toEqual([]);
      expect(await t.kit.enqueued(WELCOME)).toEqual([]);
    });

    it('counts a retried job and a dead-lettered one, without rethrowing', async () => {
      const flakyId = await t.kit.store.queue(FLAKY.name).enqueue({ n: 1 });
      const deadId = await t.kit.store.queue(WELCOME.name).enqueue({ to: 'nobody' });
      const result = await t.kit.drain({ only: [FLAKY, WELCOME] });
      expect(result).toMatchObject({ succeeded: 0, retried: 1, dead: 1 });
      expect(result.failures.map((f) => [f.queue, f.jobId])).toEqual(
        expect.arrayContaining([
          ['kit-flaky', flakyId],
          ['kit-welcome', deadId],
        ]),
      );
      expect((await t.kit.store.queue(WELCOME.name).getJob(deadId))?.state).toBe('dead');
      // Waiting for its backoff: still enqueued, not run again by this drain.
      expect(await t.kit.enqueued(FLAKY)).toEqual([{ n: 1 }]);
      await t.kit.store.queue(FLAKY.name).cancel(flakyId);
    });

    it('fires a schedule on demand; drain() runs it', async () => {
      log.length = 0;
      await t.kit.triggerSchedule('kit-report');
      expect(await t.kit.enqueued('scheduled:kit-report')).toEqual([null]);
      expect(await t.kit.drain({ only: ['scheduled:kit-report'] })).toMatchObject({ succeeded: 1 });
      expect(log).toEqual(['report']);
    });

    it('stops a handler that keeps enqueueing at maxJobs, and refuses unknown names', async () => {
      await t.kit.store.queue(LOOP.name).enqueue({ n: 0 });
      await expect(t.kit.drain({ only: [LOOP], maxJobs: 5 })).rejects.toBeInstanceOf(DrainLimit);
      // The job left over is back to pending, not stuck in processing.
      expect(await t.kit.enqueued(LOOP)).toEqual([{ n: 5 }]);
      await expect(t.kit.drain({ only: ['no-such-queue'] })).rejects.toThrow(/no-such-queue/);
      await expect(t.kit.drain({ maxJobs: 0 })).rejects.toThrow(/maxJobs/);
      await expect(t.kit.triggerSchedule('no-such-schedule')).rejects.toThrow(/no-such-schedule/);
    });
  });
}

describe('createTestDatabase', () => {
  it('SQLite: a file in its own folder, removed by drop()', async () => {
    const db = await createTestDatabase();
    expect(db.url).toBe(`sqlite:${db.path!}`);
    expect(await db.appSchema()).toBeUndefined();
    const t = await AlkstoreTesting.createTestingModule({ database: db });
    await t.close();
    expect(existsSync(db.path!)).toBe(true);
    await db.drop();
    expect(existsSync(db.path!)).toBe(false);
  });

  it('refuses a postgres engine without a postgres URL, naming the option', async () => {
    await expect(createTestDatabase({ engine: 'postgres' })).rejects.toBeInstanceOf(InvalidOption);
    await expect(createTestDatabase({ engine: 'postgres', postgresUrl: 'mysql://x' })).rejects.toThrow(/postgresUrl/);
  });
});
