import { afterAll, expect, it, jest } from '@jest/globals';
import { InvalidOption } from '../../lib/contract/errors.js';
import type { EngineFixture } from '../helpers/engines.js';
import { expectError, uid, useEnv } from './harness.js';

/** docs/vocabulary.md on the Store API: `leaseMs` (queue, job and claim options), `visibilityTimeoutMs` deprecated. */
// One spy for the file: deprecation warnings are once per process, so the first engine's run sees them.
const warnings: string[] = [];
let spied = false;
function spyOnWarnings(): void {
  if (spied) return;
  spied = true;
  const spy = jest.spyOn(process, 'emitWarning').mockImplementation((w: string | Error) => {
    warnings.push(String(w));
  });
  afterAll(() => spy.mockRestore());
}

export function vocabularyContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  spyOnWarnings();

  it("leaseMs on the queue is the lease its jobs' claims get; on a job and on a claim it overrides it", async () => {
    const q = env.store.queue(uid('lease'), { leaseMs: 7_000 });
    expect(q.opts.leaseMs).toBe(7_000);
    await q.enqueue('queue');
    await q.enqueue('job', { leaseMs: 8_000 });
    const byPayload = new Map((await q.claimBatch(10, 'w')).map((j) => [j.payloadAs<string>(), j.leaseMs]));
    expect(byPayload).toEqual(new Map([['queue', 7_000], ['job', 8_000]]));
    await q.enqueue('claim');
    expect((await q.claimOne('w', { leaseMs: 9_000 }))?.leaseMs).toBe(9_000);
  });

  it('the deprecated visibilityTimeoutMs does the same on queue, job and claim options, with one warning per place and process', async () => {
    const q = env.store.queue(uid('lease'), { visibilityTimeoutMs: 7_000 });
    expect(q.opts.leaseMs).toBe(7_000);
    await q.enqueue('job', { visibilityTimeoutMs: 8_000 });
    expect((await q.claimOne('w'))?.leaseMs).toBe(8_000);
    await q.enqueue('claim');
    expect((await q.claimOne('w', { visibilityTimeoutMs: 9_000 }))?.leaseMs).toBe(9_000);
    for (const where of ['queue', 'claim']) {
      expect(warnings.filter((w) => w.includes(`alkstore: ${where} option visibilityTimeoutMs`) && w.includes('leaseMs'))).toHaveLength(1);
    }
  });

  it('leaseMs and visibilityTimeoutMs with different values are InvalidOption naming both, before any write', async () => {
    const name = uid('lease');
    expect((await expectError(() => env.store.queue(name, { leaseMs: 1_000, visibilityTimeoutMs: 2_000 }), InvalidOption)).message).toMatch(/leaseMs.*visibilityTimeoutMs/);
    const q = env.store.queue(name);
    const err = await expectError(() => q.enqueue('x', { leaseMs: 1_000, visibilityTimeoutMs: 2_000 }), InvalidOption);
    expect(err.field).toBe('leaseMs');
    expect((await q.stats()).pending).toBe(0);
    await expectError(() => q.claimOne('w', { leaseMs: 1_000, visibilityTimeoutMs: 2_000 }), InvalidOption);
  });
}
