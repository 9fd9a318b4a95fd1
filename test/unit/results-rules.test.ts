import { describe, expect, it } from '@jest/globals';
import { MAX_PROGRESS_BYTES, PROGRESS_INTERVAL_MS, ProgressThrottle } from '../../lib/contract/results.js';
import { vectors } from '../contract/results-fixtures.js';

describe('progress rules (conformance/contract/results.json)', () => {
  it('pins the limit and the interval the code uses', () => {
    expect(MAX_PROGRESS_BYTES).toBe(vectors.progressLimit.maxBytes);
    expect(PROGRESS_INTERVAL_MS).toBe(vectors.progressThrottle.intervalMs);
  });

  it("throttles one job's writes as the vector steps say", () => {
    const t = new ProgressThrottle(vectors.progressThrottle.intervalMs);
    for (const step of vectors.progressThrottle.steps) {
      if ('take' in step) {
        const text = t.take(step.take);
        expect([step, text === null ? null : JSON.parse(text)]).toEqual([step, step.written]);
      } else {
        expect([step, t.offer(JSON.stringify(step.value), step.at)]).toEqual([step, step.expect]);
        if (step.dueAt !== undefined) expect([step, t.dueAt()]).toEqual([step, step.dueAt]);
      }
    }
  });
});
