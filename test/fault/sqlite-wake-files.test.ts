import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  unlinkSync,
  utimesSync,
  watch,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { openSqliteStore } from '../../lib/engines/sqlite/index.js';
import { WAKE_FILE_STALE_MS, WakeFile } from '../../lib/engines/sqlite/notify/poke.js';
import { waitFor } from '../helpers/engines.js';
import { spawnChild } from '../sqlite/helpers.js';
import { reportFigures } from './fault-helpers.js';

/** SQLite only: the wake files of `<database>-alkwake/` that crashed processes left are removed by the next opener. */
describe('sqlite wake files left by crashed processes', () => {
  let dir: string;
  let path: string;
  let wakeDir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'alk-wakefiles-'));
    path = join(dir, 'w.db');
    wakeDir = `${path}-alkwake`;
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const filesOf = (pid: number | undefined): string[] =>
    readdirSync(wakeDir).filter((f) => f.split('.')[1] === String(pid));

  it("removes the file of a SIGKILLed process's store when the next store opens the database", async () => {
    const child = spawnChild('notify-hold', path, 'ch');
    await child.waitFor('committed');
    expect(filesOf(child.proc.pid)).toHaveLength(1);
    child.proc.kill('SIGKILL');
    await child.exited;
    const left = filesOf(child.proc.pid).length;
    expect(left).toBe(1); // nothing removed it yet
    const store = await openSqliteStore({ path });
    try {
      expect(filesOf(child.proc.pid)).toEqual([]);
      expect(filesOf(process.pid)).toHaveLength(1); // its own
    } finally {
      await store.close();
    }
    expect(existsSync(wakeDir)).toBe(false);
    reportFigures('sqlite wake file of a SIGKILLed store', { leftByKill: left, leftAfterNextOpen: 0 });
  });

  it('keeps the file of a store whose process still runs', async () => {
    const child = spawnChild('notify-hold', path, 'ch');
    try {
      await child.waitFor('committed');
      const store = await openSqliteStore({ path });
      try {
        expect(filesOf(child.proc.pid)).toHaveLength(1);
      } finally {
        await store.close();
      }
    } finally {
      child.proc.kill('SIGKILL');
      await child.exited;
    }
  });

  it('removes any file not refreshed for ten minutes (another host, a reused pid, an older alkstore); keeps fresh ones', async () => {
    mkdirSync(wakeDir, { recursive: true });
    const aged = (Date.now() - WAKE_FILE_STALE_MS - 60_000) / 1000;
    const names = {
      otherHostOld: 'aaaaaaaaaaaa.4242.0badc0de',
      otherHostFresh: 'bbbbbbbbbbbb.4242.0badc0de',
      legacyOld: 'cccccccccccc.4242',
      livePidOld: `dddddddddddd.${process.pid}`,
    };
    for (const n of Object.values(names)) writeFileSync(join(wakeDir, n), '\u0001');
    for (const n of [names.otherHostOld, names.legacyOld, names.livePidOld]) utimesSync(join(wakeDir, n), aged, aged);
    const store = await openSqliteStore({ path });
    try {
      const left = readdirSync(wakeDir);
      expect(left).toContain(names.otherHostFresh);
      expect(left).not.toContain(names.otherHostOld);
      expect(left).not.toContain(names.legacyOld);
      expect(left).not.toContain(names.livePidOld);
    } finally {
      await store.close();
    }
  });

  it('skips its pokes again once the other stores have gone (at its next heartbeat)', async () => {
    const file = new WakeFile(wakeDir, 20);
    const seen: string[] = [];
    const w = watch(wakeDir, (_event, name) => seen.push(String(name)));
    try {
      writeFileSync(join(wakeDir, 'other-store'), '');
      await waitFor('pokes while another store is there', () => {
        file.poke();
        return seen.includes(file.fileName);
      });
      unlinkSync(join(wakeDir, 'other-store'));
      // A poke, then a marker file: the directory's events come in order, so a poke made is reported
      // before the marker. The marker ends the skipping again; it is removed before the next try.
      let k = 0;
      await waitFor(
        'a poke skipped',
        async () => {
          const marker = `marker-${k++}`;
          file.poke();
          const from = seen.length;
          writeFileSync(join(wakeDir, marker), '');
          await waitFor('the marker reported', () => seen.slice(from).includes(marker));
          const poked = seen.slice(from, from + seen.slice(from).indexOf(marker)).includes(file.fileName);
          unlinkSync(join(wakeDir, marker));
          return !poked;
        },
        10_000,
        50,
      );
    } finally {
      w.close();
      file.close();
    }
  });

  it('a live store puts its file back after someone removed it (at its next heartbeat)', async () => {
    const file = new WakeFile(wakeDir, 20);
    try {
      const own = join(wakeDir, file.fileName);
      expect(existsSync(own)).toBe(true);
      unlinkSync(own);
      await waitFor('the file back', () => existsSync(own), 5_000, 10);
    } finally {
      file.close();
    }
  });
});
