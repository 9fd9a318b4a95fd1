import { describe, expect, it } from '@jest/globals';
import type { Job, StoreLogger } from '../../lib/contract/types.js';
import { WORKER_EVENT_NAMES, WorkerEvents } from '../../lib/worker/worker-events.js';
import { expectInvalidArgument, thrown } from '../helpers/typed-errors.js';

const silent: StoreLogger = { log: () => undefined, warn: () => undefined, error: () => undefined };

describe('WorkerEvents.on: bad input', () => {
  it.each([['complete'], ['Completed'], [''], [42], [null]])(
    'refuses the event %p with an InvalidArgument naming event, registering nothing',
    (event) => {
      const events = new WorkerEvents(silent, 'w');
      const e = expectInvalidArgument(
        thrown(() => events.on(event as never, () => undefined)),
        'event',
        WORKER_EVENT_NAMES.map((n) => n),
      );
      // The list of valid names helps with a typo; the given value itself is not echoed.
      if (typeof event === 'string' && event !== '') expect(e.message).not.toContain(`"${event}"`);
      expect(events.listening).toBe(false);
    },
  );

  it('refuses a listener that is not a function with an InvalidArgument naming listener, registering nothing', () => {
    const events = new WorkerEvents(silent, 'w');
    expectInvalidArgument(
      thrown(() => events.on('dead', 'log it' as never)),
      'listener',
      ['function', 'string'],
    );
    expectInvalidArgument(
      thrown(() => events.on('completed', undefined as never)),
      'listener',
      ['function'],
    );
    expect(events.listening).toBe(false);
  });

  it('still registers a known event with a function', () => {
    const events = new WorkerEvents(silent, 'w');
    const seen: string[] = [];
    events
      .on('drained', () => void seen.push('drained'))
      .on('completed', (job: Job) => void seen.push(`completed ${job.id}`));
    expect(events.listening).toBe(true);
    events.drained();
    events.completed({ id: 7 } as Job, 1);
    expect(seen).toEqual(['drained', 'completed 7']);
  });
});
