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
      expect(raw.prepare("SELECT value FROM __alkstore_meta WHERE key = 'schema_version'").pluck().get()).toBe(SCHEMA_VERSION);
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
      raw.exec("DROP TABLE __alkstore_queue_latency; DELETE FROM __alkstore_meta WHERE key = 'migration:13'; UPDATE __alkstore_meta SET value = 10 WHERE key = 'schema_version'");
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
});
