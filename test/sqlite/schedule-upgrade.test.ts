import { describe, expect, it } from '@jest/globals';
import Database from 'better-sqlite3';
import { SCHEMA_VERSION } from '../../lib/engines/sqlite/migrations.js';
import { sqliteFile } from '../helpers/engines.js';

describe('SQLite step 5 (engine-only): a file from before cron schedules', () => {
  it('gains zone, catch-up, owner and paused columns; its schedules keep their next fire and take cron specs', async () => {
    const old = await sqliteFile.create();
    try {
      const s1 = await old.open();
      const before = await s1.schedule('legacy', '@every 1h', 'q', { v: 1 }, { startAt: 1_234_567 });
      await s1.close();
      // What a build without step 5 left: the schedules table without the four columns, and no record of the step.
      const raw = new Database(old.location);
      for (const c of ['time_zone', 'catch_up', 'owner', 'paused'])
        raw.exec(`ALTER TABLE __alkstore_schedules DROP COLUMN ${c}`);
      raw.exec("DELETE FROM __alkstore_meta WHERE key = 'migration:5'");
      raw.exec("UPDATE __alkstore_meta SET value = 4 WHERE key = 'schema_version'");
      raw.close();
      const s2 = await old.open();
      try {
        expect(await s2.getSchedule('legacy')).toEqual({
          ...before,
          timeZone: 'UTC',
          catchUp: 'all',
          owner: null,
          paused: false,
        });
        const cron = await s2.schedule('nightly', '0 3 * * *', 'q', null, {
          timeZone: 'Europe/Berlin',
          catchUp: 'none',
          owner: 'app',
        });
        expect(cron).toMatchObject({ intervalMs: null, timeZone: 'Europe/Berlin', catchUp: 'none', owner: 'app' });
        expect(await s2.pauseSchedule('legacy')).toBe(true);
        expect((await s2.getSchedule('legacy'))!.paused).toBe(true);
      } finally {
        await s2.close();
      }
      const check = new Database(old.location, { readonly: true });
      expect(check.prepare("SELECT value FROM __alkstore_meta WHERE key = 'schema_version'").pluck().get()).toBe(
        SCHEMA_VERSION,
      );
      check.close();
    } finally {
      await old.destroy();
    }
  });
});
