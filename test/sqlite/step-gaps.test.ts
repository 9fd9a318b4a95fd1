import { describe, expect, it } from '@jest/globals';
import Database from 'better-sqlite3';
import { SCHEMA_VERSION } from '../../lib/engines/sqlite/migrations.js';
import { sqliteFile } from '../helpers/engines.js';

describe('SQLite numbered steps (engine-only): gaps', () => {
  it('runs a step a file lacks even when its version is already past that step', async () => {
    const db = await sqliteFile.create();
    try {
      const s1 = await db.open();
      await s1.close();
      // A file migrated by a build that did not have step 6 yet, although its version is 6.
      const raw = new Database(db.location);
      raw.exec("DROP TABLE __alkstore_queue_minutes; DELETE FROM __alkstore_meta WHERE key = 'migration:6'");
      expect(raw.prepare("SELECT value FROM __alkstore_meta WHERE key = 'schema_version'").pluck().get()).toBe(
        SCHEMA_VERSION,
      );
      raw.close();
      const s2 = await db.open();
      const q = s2.queue('gap');
      await q.enqueue(1);
      const job = await q.claimOne('w');
      await job!.ack();
      const points = await s2.admin().throughput('gap', 0);
      expect(points.reduce((a, p) => a + p.completed, 0)).toBe(1);
      await s2.close();
    } finally {
      await db.destroy();
    }
  });

  it('step 13 gives a file at version 10 the latency table, and the flush fills it', async () => {
    const db = await sqliteFile.create();
    try {
      const s1 = await db.open();
      await s1.close();
      const raw = new Database(db.location);
      raw.exec(
        "DROP TABLE __alkstore_queue_latency; DELETE FROM __alkstore_meta WHERE key = 'migration:13'; UPDATE __alkstore_meta SET value = 10 WHERE key = 'schema_version'",
      );
      raw.close();
      const s2 = await db.open();
      const q = s2.queue('lat');
      await q.enqueue(1);
      const job = await q.claimOne('w');
      await job!.ack();
      const points = await s2.admin().throughput('lat', 0);
      expect(points.reduce((a, p) => a + p.run.count, 0)).toBe(1);
      await s2.close();
    } finally {
      await db.destroy();
    }
  });

  it('step 17 gives a file from before batch counting the precounted column and the insert trigger that skips it, and counts stay exact', async () => {
    const db = await sqliteFile.create();
    try {
      const s1 = await db.open();
      await s1.queue('pc').enqueueMany([1, 2, 3]);
      await s1.close();
      // What a build before step 17 left: the insert trigger counts every row, and the column is not there.
      const raw = new Database(db.location);
      raw.exec(`DROP TRIGGER __alkstore_jobs_count_insert;
        ALTER TABLE __alkstore_jobs DROP COLUMN precounted;
        CREATE TRIGGER __alkstore_jobs_count_insert AFTER INSERT ON __alkstore_jobs BEGIN
          INSERT INTO __alkstore_queue_counts (queue, state, due_bucket, n) VALUES (NEW.queue, NEW.state, 0, 1)
            ON CONFLICT (queue, state, due_bucket) DO UPDATE SET n = n + 1;
        END;
        DELETE FROM __alkstore_meta WHERE key = 'migration:17';
        UPDATE __alkstore_meta SET value = 14 WHERE key = 'schema_version';`);
      raw.close();
      const s2 = await db.open();
      try {
        const q = s2.queue('pc');
        await q.enqueueMany([4, 5, 6, 7]);
        await q.enqueue(8);
        await q.enqueueMany(['a', 'b'], { delayMs: 600_000 });
        expect(await q.stats()).toMatchObject({ pending: 10, scheduled: 2 });
      } finally {
        await s2.close();
      }
      const check = new Database(db.location, { readonly: true });
      // The batches' rows carry the mark; the single enqueue's row does not, and the trigger counted it.
      expect(check.prepare('SELECT payload, precounted FROM __alkstore_jobs ORDER BY id').all()).toEqual(
        ['1', '2', '3', '4', '5', '6', '7', '8', '"a"', '"b"'].map((payload, i) => ({
          payload,
          precounted: i < 3 || i === 7 ? null : 1,
        })),
      );
      expect(check.prepare("SELECT value FROM __alkstore_meta WHERE key = 'schema_version'").pluck().get()).toBe(
        SCHEMA_VERSION,
      );
      check.close();
    } finally {
      await db.destroy();
    }
  });

  it('step 23 gives a file from before it the index of full rate windows, and its limited claim skips a full key', async () => {
    const db = await sqliteFile.create();
    try {
      const s1 = await db.open();
      const q1 = s1.queue('rs', { limitKeys: { rateLimitKey: 'payload.k' } });
      await q1.setLimits({ keyRateLimit: { max: 1, perMs: 3_600_000 } });
      await q1.enqueueMany(Array.from({ length: 600 }, (_, n) => ({ k: 'hot', n })));
      await q1.enqueue({ k: 'cold' });
      await s1.close();
      const raw = new Database(db.location);
      raw.exec(`DROP INDEX __alkstore_key_rate_windows_window;
        DELETE FROM __alkstore_meta WHERE key = 'migration:23';
        UPDATE __alkstore_meta SET value = 17 WHERE key = 'schema_version';`);
      raw.close();
      const s2 = await db.open();
      try {
        const q = s2.queue('rs');
        expect((await q.claimBatch(1, 'w')).map((j) => j.payload)).toEqual([{ k: 'hot', n: 0 }]);
        expect((await q.claimBatch(1, 'w')).map((j) => j.payload)).toEqual([{ k: 'cold' }]);
      } finally {
        await s2.close();
      }
      const check = new Database(db.location, { readonly: true });
      expect(
        check
          .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND name = '__alkstore_key_rate_windows_window'",
          )
          .pluck()
          .get(),
      ).toBe('__alkstore_key_rate_windows_window');
      expect(check.prepare("SELECT value FROM __alkstore_meta WHERE key = 'migration:23'").pluck().get()).toBe(23);
      expect(check.prepare("SELECT value FROM __alkstore_meta WHERE key = 'schema_version'").pluck().get()).toBe(
        SCHEMA_VERSION,
      );
      check.close();
    } finally {
      await db.destroy();
    }
  });
});
