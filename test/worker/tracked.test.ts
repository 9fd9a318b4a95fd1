import { describe, expect, it } from '@jest/globals';
import type { Job } from '../../lib/contract/types.js';
import { Tracked, TrackedSet } from '../../lib/worker/tracked.js';

// The worker core's per-job record and the set that holds them (lib/worker/tracked.ts).

const job = (id: number): Job => ({ id }) as unknown as Job;

describe('Tracked', () => {
  it('keeps its state and each flag apart, and is due at half its lease in whole ms, never later', () => {
    const t = new Tracked(job(1), 1001, 10.7);
    expect([t.state, t.leaseLost, t.cancelled, t.renewing]).toEqual(['buffered', false, false, false]);
    t.cancelled = true;
    t.state = 'running';
    t.renewing = true;
    expect([t.state, t.leaseLost, t.cancelled, t.renewing]).toEqual(['running', false, true, true]);
    t.renewing = false;
    t.leaseLost = true;
    t.state = 'finished';
    expect([t.state, t.leaseLost, t.cancelled, t.renewing]).toEqual(['finished', true, true, false]);
    expect(t.dueAt).toBe(511);
    expect(t.halfLease).toBe(500);
    expect(new Tracked(job(2), 1, 0).halfLease).toBe(1);
  });
});

describe('TrackedSet', () => {
  it('adds each record once, deletes in any order (false for one it does not hold) and iterates what it holds', () => {
    const set = new TrackedSet();
    const ts = [1, 2, 3, 4, 5].map((id) => new Tracked(job(id), 1000, 0));
    for (const t of ts) set.add(t);
    set.add(ts[0]!);
    expect(set.size).toBe(5);
    expect(set.delete(ts[1]!)).toBe(true);
    expect(set.delete(ts[1]!)).toBe(false);
    expect(set.delete(ts[4]!)).toBe(true);
    expect(set.delete(new Tracked(job(9), 1000, 0))).toBe(false);
    expect([...set].map((t) => t.job.id).sort()).toEqual([1, 3, 4]);
    for (const t of [...set]) expect(set.delete(t)).toBe(true);
    expect([set.size, [...set]]).toEqual([0, []]);
    set.add(ts[1]!);
    expect([...set]).toEqual([ts[1]]);
  });
});
