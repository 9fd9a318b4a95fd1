import 'reflect-metadata';
import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import type { Job } from '../../lib/contract/types.js';
import { AlkstoreModule, getQueueToken, QueueHandler } from '../../lib/nest/index.js';
import { waitFor } from '../helpers/engines.js';
import { MemoryLogger, nestEngines, type NestDb } from './nest-fixtures.js';
import { Store, type Queue } from '../../lib/index.js';

// docs/vocabulary.md in Nest: leaseMs (was visibilityTimeoutMs), workers as a mode, handles from the application's own discovery.

const leases = new Map<string, number>();

@Injectable()
class NewWords {
  @QueueHandler('vocab-new', { leaseMs: 4_321 })
  async work(job: Job): Promise<void> {
    leases.set('new', job.leaseMs);
  }
}

@Injectable()
class OldWords {
  @QueueHandler('vocab-old', { visibilityTimeoutMs: 5_432 } as never)
  async work(): Promise<void> {}
}

const ranOff: number[] = [];
@Injectable()
class OffWorker {
  @QueueHandler('vocab-off')
  async work(job: Job): Promise<void> {
    ranOff.push(job.id);
  }
}

@Injectable()
class AppAHandler {
  @QueueHandler('vocab-app-a', { maxAttempts: 7 })
  async work(): Promise<void> {}
}

@Injectable()
class AppBHandler {
  @QueueHandler('vocab-app-b', { maxAttempts: 2 })
  async work(): Promise<void> {}
}

const warnings: string[] = [];
const spy = jest.spyOn(process, 'emitWarning').mockImplementation((w: string | Error) => {
  warnings.push(String(w));
});

for (const engine of nestEngines()) {
  describe(`Nest vocabulary (${engine.name})`, () => {
    let db: NestDb;
    const apps: TestingModule[] = [];
    const boot = async (
      providers: (new () => object)[],
      extra: Parameters<NestDb['moduleOptions']>[0] = {},
    ): Promise<TestingModule> => {
      const app = await Test.createTestingModule({
        imports: [
          AlkstoreModule.forRoot(db.moduleOptions({ logger: new MemoryLogger(), idlePollIntervalMs: 100, ...extra })),
        ],
        providers,
      }).compile();
      apps.push(app);
      await app.init();
      return app;
    };

    beforeAll(async () => {
      db = await engine.create();
    });
    afterEach(async () => {
      for (const app of apps.splice(0)) await app.close();
    });
    afterAll(async () => {
      await db?.destroy();
    });

    it('@QueueHandler leaseMs is the lease of its claims', async () => {
      leases.clear();
      const app = await boot([NewWords]);
      await app.get(Store).queue('vocab-new').enqueue(1);
      await waitFor('the handler ran', () => leases.has('new'));
      expect(leases.get('new')).toBe(4_321);
    });

    it("0.2's visibilityTimeoutMs fails startup naming the method and leaseMs", async () => {
      const err = await boot([OldWords]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      expect((err as Error).message).toMatch(/OldWords\.work.*visibilityTimeoutMs.*use leaseMs/);
      expect(((err as Error).cause as { code?: string }).code).toBe('INVALID_OPTION');
    });

    it("workers: 'off' claims nothing; the 0.2 boolean false is InvalidOption naming 'off'; a wrong mode is InvalidOption naming workers", async () => {
      ranOff.length = 0;
      const off = await boot([OffWorker], { workers: 'off' });
      const id = await off.get(Store).queue('vocab-off').enqueue(1);
      await off.close();
      apps.splice(apps.indexOf(off), 1);
      expect(ranOff).toEqual([]);
      const legacy = await boot([OffWorker], { workers: false as never }).catch((e: unknown) => e);
      expect(legacy).toMatchObject({ code: 'INVALID_OPTION' });
      expect((legacy as Error).message).toContain("workers: 'off'");
      const bad = await boot([OffWorker], { workers: 'sometimes' as never }).catch((e: unknown) => e);
      expect(bad).toMatchObject({ code: 'INVALID_OPTION', field: 'workers' });
      await boot([OffWorker], { workers: 'auto' });
      await waitFor('the job ran once workers are on', () => ranOff.includes(id));
    });

    it("two applications in one process make their handles from their own handlers' options, never from the other's", async () => {
      const a = await boot([AppAHandler], { workers: 'off' });
      const b = await boot([AppBHandler], { workers: 'off' });
      expect(a.get<Queue>(getQueueToken('vocab-app-a')).opts.maxAttempts).toBe(7);
      expect(b.get<Queue>(getQueueToken('vocab-app-b')).opts.maxAttempts).toBe(2);
      // The other application's queue, seen from each store: the defaults, not the other's handler options.
      expect(a.get(Store).queue('vocab-app-b').opts.maxAttempts).toBe(3);
      expect(b.get(Store).queue('vocab-app-a').opts.maxAttempts).toBe(3);
      const id = await a.get(Store).queue('vocab-app-b').enqueue(1);
      expect((await a.get(Store).queue('vocab-app-b').getJob(id))?.maxAttempts).toBe(3);
    });
  });
}

afterAll(() => spy.mockRestore());
