import { describe, expect, it, jest } from '@jest/globals';
import { newRunId } from '../../lib/workflows/run-id.js';

// Generated run ids are UUIDs v7, ascending in the order they were made, so the rows of runs started
// together sit side by side in the indexes their steps write.
const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('newRunId', () => {
  it('makes UUIDs v7 whose first 48 bits are the time in ms', () => {
    const before = Date.now();
    const id = newRunId();
    const after = Date.now();
    expect(id).toMatch(V7);
    const ms = parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(after + 1);
  });

  it('ascends and never repeats, past 4,096 ids in one millisecond', () => {
    const now = jest.spyOn(Date, 'now').mockReturnValue(Date.now() + 60_000);
    try {
      const ids = Array.from({ length: 10_000 }, () => newRunId());
      for (const id of ids) expect(id).toMatch(V7);
      expect(new Set(ids).size).toBe(ids.length);
      expect([...ids].sort()).toEqual(ids);
    } finally {
      now.mockRestore();
    }
  });

  it('keeps ascending when the clock steps back', () => {
    const t = Date.now() + 120_000;
    const now = jest.spyOn(Date, 'now').mockReturnValue(t);
    try {
      const a = newRunId();
      now.mockReturnValue(t - 5_000);
      const b = newRunId();
      expect(b > a).toBe(true);
    } finally {
      now.mockRestore();
    }
  });
});
