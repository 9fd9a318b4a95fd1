import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, Scope, type Type } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { JobCancelled, PermanentError } from '../../lib/contract/errors.js';
import type { Job } from '../../lib/contract/types.js';
import { AlkstoreModule, OutboxHandler, QueueHandler, Scheduled } from '../../lib/nest/index.js';
import { waitFor } from '../helpers/engines.js';
import { MemoryLogger, nestEngines, type NestDb } from './nest-fixtures.js';
import { Store } from '../../lib/index.js';

function fresh() {
  return {
    flaky: [] as number[],
    permanent: [] as number[],
    parallel: new Set<number>(),
    maxParallel: 0,
    outboxFailures: 0,
    requestScoped: 0,
  };
}
let seen = fresh();
let running = 0;
const signals = new Map<number, AbortSignal>();

@Injectable()
class Workers {
  @QueueHandler('flaky')
  async flaky(job: Job): Promise<void> {
    seen.flaky.push(job.attempts);
    if (job.attempts === 1) throw new Error('first attempt fails');
  }

  @QueueHandler('permanent')
  async permanent(job: Job): Promise<void> {
    seen.permanent.push(job.id);
    throw new PermanentError('cannot ever work');
  }

  @QueueHandler('parallel', { concurrency: 3 })
  async parallel(job: Job): Promise<void> {
    running += 1;
    seen.maxParallel = Math.max(seen.maxParallel, running);
    await new Promise((r) => setTimeout(r, 150));
    running -= 1;
    seen.parallel.add(job.id);
  }

  @QueueHandler('with-signal', { concurrency: 2 })
  async withSignal(job: Job, signal: AbortSignal): Promise<void> {
    signals.set(job.id, signal);
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
  }

  @OutboxHandler('broken-outbox', { backoffBaseMs: 10, maxBackoffMs: 20 })
  async broken(): Promise<void> {
    seen.outboxFailures += 1;
    throw new Error('webhook down');
  }
}

@Injectable({ scope: Scope.REQUEST })
class PerRequest {
  @QueueHandler('per-request')
  async work(): Promise<void> {
    seen.requestScoped += 1;
  }
}

for (const engine of nestEngines()) {
  describe(`handlers (${engine.name})`, () => {
    let db: NestDb;
    let app: TestingModule;
    const logger = new MemoryLogger();

    beforeAll(async () => {
      seen = fresh();
      // Job ids restart at 1 on each engine: the previous engine's (aborted) signals must not answer for this one's.
      signals.clear();
      db = await engine.create();
      app = await Test.createTestingModule({
        imports: [AlkstoreModule.forRoot(db.moduleOptions({ logger, idlePollIntervalMs: 500 }))],
        providers: [Workers, PerRequest],
      }).compile();
      await app.init();
    });
    afterAll(async () => {
      await app?.close();
      await db.destroy();
    });

    it("a @QueueHandler method that takes a signal gets one per job: a cancel aborts that job's only", async () => {
      const store = app.get(Store);
      const queue = store.queue('with-signal');
      const [a, b] = await queue.enqueueMany([1, 2]);
      await waitFor('both running', () => signals.has(a!) && signals.has(b!));
      expect(signals.get(a!)).not.toBe(signals.get(b!));
      expect(await queue.cancel(a!)).toBe(true);
      await waitFor('the cancelled one aborted', () => signals.get(a!)!.aborted, 10_000);
      expect(signals.get(a!)!.reason).toBeInstanceOf(JobCancelled);
      expect(signals.get(b!)!.aborted).toBe(false);
      expect(await queue.cancel(b!)).toBe(true);
      await waitFor('the other aborted', () => signals.get(b!)!.aborted, 10_000);
    });

    it('a throwing @QueueHandler is logged with class and method, retried, and the app keeps working', async () => {
      const store = app.get(Store);
      const queue = store.queue('flaky', { backoffBaseMs: 10 });
      const id = await queue.enqueue({ n: 1 });
      await waitFor('the retry to succeed', async () => (await queue.getJob(id)) === null, 20_000).catch(
        async (err) => {
          throw new Error(
            `${String(err)}; job: ${JSON.stringify(await queue.getJob(id))}; seen: ${JSON.stringify(seen.flaky)}; log:\n${logger.lines.join('\n')}`,
          );
        },
      );
      expect(seen.flaky).toEqual([1, 2]);
      expect(logger.has(/Workers\.flaky failed on job \d+.*first attempt fails/)).toBe(true);
      // Still alive: a later job runs too.
      const next = await queue.enqueue({ n: 2 });
      await waitFor('a later job', async () => (await queue.getJob(next)) === null, 20_000);
    });

    it('a PermanentError dead-letters the job at once', async () => {
      const queue = app.get(Store).queue('permanent');
      const id = await queue.enqueue({});
      const dead = await waitFor('the dead letter', async () => {
        const job = await queue.getJob(id);
        return job?.state === 'dead' ? job : null;
      });
      expect(dead.attempts).toBe(1);
      expect(dead.lastError).toMatch(/cannot ever work/);
      expect(seen.permanent).toEqual([id]);
    });

    it('runs up to `concurrency` jobs at once', async () => {
      const queue = app.get(Store).queue('parallel');
      const ids = await queue.enqueueMany([1, 2, 3, 4, 5, 6]);
      await waitFor('all six jobs', () => ids.every((id) => seen.parallel.has(id)), 20_000);
      expect(seen.maxParallel).toBeGreaterThan(1);
      expect(seen.maxParallel).toBeLessThanOrEqual(3);
    });

    it('a throwing @OutboxHandler is logged with class and method and retried, never crashing the app', async () => {
      const store = app.get(Store);
      await store.outboxEnqueue('broken-outbox', { n: 1 });
      await waitFor('two failed deliveries', () => seen.outboxFailures >= 2, 20_000);
      expect(logger.has(/Workers\.broken failed on job \d+.*webhook down/)).toBe(true);
      expect(store.closed).toBe(false);
    });

    it('skips handlers on request-scoped providers, with a warning naming them', async () => {
      expect(logger.has(/warn PerRequest\.work is skipped/)).toBe(true);
      const queue = app.get(Store).queue('per-request');
      const id = await queue.enqueue({});
      // Proof by contrast: a working handler drains its queue meanwhile.
      const control = await app.get(Store).queue('flaky', { backoffBaseMs: 10 }).enqueue({ n: 3 });
      await waitFor(
        'the control job',
        async () => (await app.get(Store).queue('flaky').getJob(control)) === null,
        20_000,
      );
      expect((await queue.getJob(id))?.state).toBe('pending');
      expect(seen.requestScoped).toBe(0);
    });
  });
}

describe('duplicate handler names fail at startup, naming both methods', () => {
  let db: NestDb;
  beforeAll(async () => {
    db = await nestEngines()[0].create();
  });
  afterAll(async () => {
    await db.destroy();
  });

  async function boot(...providers: Type[]): Promise<unknown> {
    const app = await Test.createTestingModule({
      imports: [AlkstoreModule.forRoot(db.moduleOptions())],
      providers,
    }).compile();
    try {
      await app.init();
      return null;
    } catch (err) {
      return err;
    } finally {
      await app.close();
    }
  }

  it('two @OutboxHandler for one outbox', async () => {
    @Injectable()
    class DeliverA {
      @OutboxHandler('orders')
      one(): void {}
    }
    @Injectable()
    class DeliverB {
      @OutboxHandler('orders')
      two(): void {}
    }
    const err = await boot(DeliverA, DeliverB);
    expect(String(err)).toMatch(/outbox "orders".*DeliverA\.one.*DeliverB\.two/);
  });

  it('two @QueueHandler on one queue', async () => {
    @Injectable()
    class WorkA {
      @QueueHandler('mail')
      send(): void {}
    }
    @Injectable()
    class WorkB {
      @QueueHandler('mail')
      sendToo(): void {}
    }
    const err = await boot(WorkA, WorkB);
    expect(String(err)).toMatch(/queue "mail".*WorkA\.send.*WorkB\.sendToo/);
  });

  it('two @Scheduled with one name', async () => {
    @Injectable()
    class Nightly {
      @Scheduled('cleanup', '@every 1h')
      clean(): void {}

      @Scheduled('cleanup', '@every 2h')
      cleanAgain(): void {}
    }
    const err = await boot(Nightly);
    expect(String(err)).toMatch(/schedule "cleanup".*Nightly\.clean.*Nightly\.cleanAgain/);
  });

  it('an invalid spec or a reserved name, naming the method', async () => {
    @Injectable()
    class BadSpec {
      @Scheduled('hourly', '61 * * * *')
      run(): void {}
    }
    expect(String(await boot(BadSpec))).toMatch(/BadSpec\.run.*"61 \* \* \* \*"/);
    @Injectable()
    class Reserved {
      @QueueHandler('__alkstore_mine')
      run(): void {}
    }
    expect(String(await boot(Reserved))).toMatch(/Reserved\.run.*reserved prefix/);
  });
});
