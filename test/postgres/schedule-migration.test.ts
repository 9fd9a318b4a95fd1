import { afterAll, expect, it } from '@jest/globals';
import { POSTGRES_MIGRATIONS, openPostgresStore } from '../../lib/engines/postgres/index.js';
import { PG_URL, describePg } from '../helpers/engines.js';
import { dropSchema, freshSchema, withClient } from './pg-helpers.js';

const schema = freshSchema('sched5');
afterAll(async () => {
  await dropSchema(schema);
});

describePg('postgres migration 5 (engine-only)', () => {
  it('gives schedules of a schema at version 4 a zone, catch-up, owner and paused flag, keeping their next fire', async () => {
    await withClient(async (c) => {
      await c.query(`CREATE SCHEMA "${schema}"`);
      await c.query(
        `CREATE TABLE "${schema}".migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      for (const m of POSTGRES_MIGRATIONS.filter((x) => x.version < 5)) {
        await c.query(m.sql(`"${schema}"`));
        await c.query(`INSERT INTO "${schema}".migrations (version, name) VALUES ($1, $2)`, [m.version, m.name]);
      }
      await c.query(
        `INSERT INTO "${schema}".schedules (name, spec, interval_ms, queue, payload, next_fire_at) VALUES ('legacy', '@every 1h', 3600000, 'q', '{"v":1}', 1234567)`,
      );
    });
    const store = await openPostgresStore({ connectionString: PG_URL, schema });
    try {
      expect(await store.getSchedule('legacy')).toMatchObject({
        spec: '@every 1h',
        intervalMs: 3_600_000,
        nextFireAt: 1_234_567,
        payload: { v: 1 },
        timeZone: 'UTC',
        catchUp: 'all',
        owner: null,
        paused: false,
      });
      const cron = await store.schedule('nightly', '0 3 * * *', 'q', null, {
        timeZone: 'Europe/Berlin',
        catchUp: 'latest',
      });
      expect(cron).toMatchObject({ intervalMs: null, timeZone: 'Europe/Berlin', catchUp: 'latest' });
    } finally {
      await store.close();
    }
  });
});
