import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import type { Job } from '../../lib/contract/types.js';
import { AlkstoreModule, QueueHandler } from '../../lib/nest/index.js';
import { waitFor } from '../helpers/engines.js';
import { MemoryLogger, nestEngines, type NestDb } from './nest-fixtures.js';
import { Store } from '../../lib/index.js';

// Renewed every half lease: a 2 s lease leaves a second of slack for a loaded machine's stalls (with 1 s,
// a renewal held up 500 ms by CI load let the intruder below claim the job once).
const LEASE_MS = 2_000;
const runs: number[] = [];
let release: (() => void) | null = null;

@Injectable()
class LongWork {
  /** Holds its job until the test lets go: far past its lease. */
  @QueueHandler('long-job', { leaseMs: LEASE_MS })
  async work(job: Job): Promise<void> {
    runs.push(job.id);
    await new Promise<void>((resolve) => (release = resolve));
  }
}

for (const engine of nestEngines()) {
  describe(`@QueueHandler lease renewal (${engine.name})`, () => {
    let db: NestDb;
    let app: TestingModule;

    beforeAll(async () => {
      runs.length = 0;
      db = await engine.create();
      app = await Test.createTestingModule({
        imports: [AlkstoreModule.forRoot(db.moduleOptions({ logger: new MemoryLogger(), idlePollIntervalMs: 100 }))],
        providers: [LongWork],
      }).compile();
      await app.init();
    });

    afterAll(async () => {
      release?.();
      await app?.close();
      await db?.destroy();
    });

    it('keeps a job whose handler outlives its lease: no other worker claims it, it runs once and is acked', async () => {
      const queue = app.get(Store).queue('long-job');
      const id = await queue.enqueue({ n: 1 });
      await waitFor('the handler started', () => runs.length === 1);
      const started = Date.now();
      // Another worker tries to claim for three leases: a lapsed claim would be handed out here.
      const stolen: number[] = [];
      while (Date.now() - started < 3 * LEASE_MS) {
        const job = await queue.claimOne('intruder', { leaseMs: 60_000 });
        if (job) stolen.push(job.id);
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(stolen).toEqual([]);
      expect((await queue.getJob(id))?.state).toBe('processing');
      release!();
      await waitFor('the job was acked', async () => (await queue.getJob(id)) === null);
      expect(runs).toEqual([id]);
    });
  });
}
