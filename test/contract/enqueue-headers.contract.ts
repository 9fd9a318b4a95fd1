import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { InvalidOption } from '../../lib/contract/errors.js';
import type { JobHeaders } from '../../lib/contract/job-extras.js';
import type { Store } from '../../lib/contract/types.js';
import type { EngineDb, EngineFixture } from '../helpers/engines.js';
import { expectError, uid } from './harness.js';

const tagged = (headers: JobHeaders | undefined): JobHeaders => ({ 'x-store': 'a', ...(headers ?? {}) });

/** Headers of every job of `queue`, by payload. */
async function headersByPayload(store: Store, queue: string, n: number): Promise<Map<string, JobHeaders>> {
  const out = new Map<string, JobHeaders>();
  for (const job of await store.queue(queue).claimBatch(n, 'reader')) out.set(job.payloadAs<string>(), job.headers);
  return out;
}

/** A store's `enqueueHeaders` hook (what `openStore` fills with the trace context) belongs to that store only. */
export function enqueueHeadersContract(engine: EngineFixture): void {
  let db: EngineDb;
  let withHook: Store;
  let without: Store;
  beforeAll(async () => {
    db = await engine.create();
    withHook = await db.open({ enqueueHeaders: tagged });
    without = await db.open();
  }, 60_000);
  afterAll(() => db.destroy(), 60_000);

  it("adds its headers to every enqueue path of its own store and to no other store's", async () => {
    const q = uid('eh');
    const outbox = uid('ehbox');
    for (const [store, who] of [
      [withHook, 'a'],
      [without, 'b'],
    ] as const) {
      await store.queue(q).enqueue(`${who}-enqueue`);
      await store.queue(q).enqueueMany([`${who}-many`]);
      await store.queue(q).enqueueBulk([{ payload: `${who}-bulk` }]);
      await store.withTx(async (tx) => {
        await tx.enqueue(q, `${who}-tx`);
        await tx.outboxEnqueue(outbox, `${who}-txbox`);
      });
      await store.outbox(outbox).enqueue(`${who}-box`);
    }
    const jobs = await headersByPayload(without, q, 100);
    for (const kind of ['enqueue', 'many', 'bulk', 'tx']) {
      expect(jobs.get(`a-${kind}`)).toEqual({ 'x-store': 'a' });
      expect(jobs.get(`b-${kind}`)).toEqual({});
    }
    const messages = await outboxHeaders(without, outbox);
    for (const kind of ['txbox', 'box']) {
      expect(messages.get(`a-${kind}`)).toEqual({ 'x-store': 'a' });
      expect(messages.get(`b-${kind}`)).toEqual({});
    }
  });

  it("keeps the caller's headers: a caller header of the same name wins", async () => {
    const q = uid('eh');
    await withHook.queue(q).enqueue('mine', { headers: { 'x-store': 'caller', other: '1' } });
    const [job] = await withHook.queue(q).claimBatch(1, 'reader');
    expect(job!.headers).toEqual({ 'x-store': 'caller', other: '1' });
  });

  it('a hook that throws or returns malformed headers does not fail the enqueue', async () => {
    const throwing = await db.open({
      enqueueHeaders: () => {
        throw new Error('boom');
      },
    });
    const malformed = await db.open({ enqueueHeaders: () => ({ bad: 1 }) as unknown as JobHeaders });
    const q = uid('eh');
    await throwing.queue(q).enqueue('t', { headers: { k: 'v' } });
    await malformed.queue(q).enqueue('m');
    const jobs = await headersByPayload(throwing, q, 10);
    expect(jobs.get('t')).toEqual({ k: 'v' });
    expect(jobs.get('m')).toEqual({});
  });

  it('refuses an enqueueHeaders that is not a function before opening, naming it', async () => {
    const err = await expectError(() => db.open({ enqueueHeaders: 'x' as never }), InvalidOption);
    expect(err.field).toBe('enqueueHeaders');
  });
}

/** An outbox's messages by payload, through a store's outbox claim. */
async function outboxHeaders(store: Store, outbox: string): Promise<Map<string, JobHeaders>> {
  const out = new Map<string, JobHeaders>();
  for (const job of await store.outbox(outbox).queue.claimBatch(100, 'reader'))
    out.set(job.payloadAs<string>(), job.headers);
  return out;
}
