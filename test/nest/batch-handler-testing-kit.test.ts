import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import type { Job } from '../../lib/contract/types.js';
import { QueueHandler } from '../../lib/nest/index.js';
import {
  AlkstoreTesting,
  createTestDatabase,
  type AlkstoreTestDatabase,
  type AlkstoreTestingModule,
} from '../../lib/nest/testing/index.js';
import { MemoryLogger } from './nest-fixtures.js';

const seen: number[][] = [];

@Injectable()
class Importer {
  @QueueHandler('kit-batch', { batchSize: 10 })
  async import(jobs: Job<number>[]): Promise<unknown[]> {
    seen.push(jobs.map((j) => j.payload));
    return jobs.map((j) => (j.payload === 2 ? new Error('row 2 is malformed') : null));
  }
}

describe('the testing kit runs batch handlers (sqlite)', () => {
  let db: AlkstoreTestDatabase;
  let t: AlkstoreTestingModule;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await AlkstoreTesting.createTestingModule({
      database: db,
      providers: [Importer],
      alkstore: { logger: new MemoryLogger() },
    });
  });

  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('calls a batch handler with Job[] and applies its per-job outcome', async () => {
    await t.kit.store.queue('kit-batch').enqueueMany([1, 2, 3]);
    const result = await t.kit.drain();
    expect(seen.every((batch) => Array.isArray(batch))).toBe(true);
    expect(seen.flat().sort()).toEqual([1, 2, 3]);
    expect(result).toMatchObject({ succeeded: 2, retried: 1, dead: 0 });
    expect(result.failures.map((f) => (f.error as Error).message)).toEqual(['row 2 is malformed']);
  });
});
