import { spawnSync } from 'node:child_process';
import { describe, expect, it } from '@jest/globals';
import { processGone, processStart } from '../../lib/engines/sqlite/liveness.js';

// SQLite's dead worker detection judges a row's process by its pid and start time (lib/engines/sqlite/liveness.ts).
describe('SQLite dead worker detection: judging a process', () => {
  it('a live process is never gone; its start time is what the row recorded', () => {
    const started = processStart(process.pid);
    expect(processGone(process.pid, started)).toBe(false);
    // Unknown start time (no /proc): the pid alone, and it runs.
    expect(processGone(process.pid, '')).toBe(false);
  });

  it('a process that exited is gone', () => {
    const child = spawnSync(process.execPath, ['-e', '0']);
    expect(child.pid).toBeGreaterThan(0);
    expect(processGone(child.pid!, '')).toBe(true);
  });

  it('a pid now held by a process that started at another time is gone (a reused pid)', () => {
    if (processStart(process.pid) === '') return; // no /proc here: the pid alone is checked (never early)
    expect(processGone(process.pid, '1')).toBe(true);
  });
});
