import { afterAll } from '@jest/globals';
import pg from 'pg';
import { PostgresOutboxStore } from '../../lib/reliable-sync/index.js';
import { PG_AVAILABLE, PG_URL, describePg } from '../helpers/engines.js';
import { outboxProperties } from './property-suite.js';

const schema = `rsync_props_${process.pid}_${Date.now().toString(36)}`;
// One pool for every handle: atomicity comes from the SQL upsert, not from separate connections.
const pool = PG_AVAILABLE ? new pg.Pool({ connectionString: PG_URL, max: 4 }) : null;

afterAll(async () => {
  if (!pool) return;
  try {
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await pool.end();
  }
});

outboxProperties(
  { name: 'PostgreSQL', open: (key) => PostgresOutboxStore.open({ pool: pool!, schema, key }) },
  40,
  describePg,
);
