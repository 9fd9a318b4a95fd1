import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { waitFor } from '../helpers/engines.js';
import { spawnChild, spawnOpener, type Child } from './helpers.js';

// Engine-only (SQLite): several processes opening one file at the same instant. The first
// statement of a connection (PRAGMA synchronous) meets the lock of another process's
// journal_mode switch, schema creation or WAL recovery; it must wait for it, not fail.
const PROCESSES = 6;
const ROUNDS = 10;

describe('sqlite: processes opening one file at once', () => {
  let dir: string;
  let openers: Child[];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'alkstore-open-'));
    openers = Array.from({ length: PROCESSES }, () => spawnOpener());
    await Promise.all(openers.map((c) => c.waitFor('ready')));
  });
  afterAll(async () => {
    for (const c of openers) {
      c.proc.stdin!.end();
      await c.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  /** Tells every opener to open `path` at once; resolves with each one's answer. */
  async function openAll(path: string): Promise<Record<string, unknown>[]> {
    for (const c of openers) c.proc.stdin!.write(`${path}\n`);
    return Promise.all(
      openers.map((c) =>
        waitFor(
          `process ${c.proc.pid} opening ${path}`,
          () => c.messages.find((m) => m.opened === path || m.failed === path),
          60_000,
          10,
        ),
      ),
    );
  }

  it(`${PROCESSES} processes opening the same fresh file together all succeed (${ROUNDS} rounds)`, async () => {
    const failures: unknown[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const answers = await openAll(join(dir, `fresh-${round}.db`));
      failures.push(...answers.filter((a) => 'failed' in a));
    }
    expect(failures).toEqual([]);
  });

  it(`${PROCESSES} processes opening a file together right after its last writer was SIGKILLed all succeed (${ROUNDS} rounds)`, async () => {
    const failures: unknown[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // A writer commits 30 jobs (a WAL to recover) and is killed inside an open transaction,
      // leaving -wal and -shm behind; the first opener then runs WAL recovery under a lock.
      const path = join(dir, `killed-${round}.db`);
      const writer = spawnChild('crash', path, '30');
      await writer.waitFor('inTx');
      writer.proc.kill('SIGKILL');
      await writer.exited;
      const answers = await openAll(path);
      failures.push(...answers.filter((a) => 'failed' in a));
    }
    expect(failures).toEqual([]);
  }, 90_000); // ten writer processes started one after another, like the failover tests
});
