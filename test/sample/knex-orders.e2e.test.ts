import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { runKnexSample } from '../../sample/knex-orders.js';
import { dropPgSchemas, PG_AVAILABLE, PG_URL } from '../helpers/engines.js';

/** The knex sample (no Nest, no TypeORM): orders and their outbox messages commit together through openKnex. */
describe('knex sample', () => {
  it('on a SQLite file: every placed order is delivered once, the rolled-back one never', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'alkstore-knex-sample-'));
    try {
      const r = await runKnexSample(`sqlite:${join(dir, 'app.db')}`, 5);
      expect(r.placed).toHaveLength(5);
      expect(r.rolledBack).toBe(1);
      expect(r.delivered).toEqual([...r.placed].sort((a, b) => a - b));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  (PG_AVAILABLE ? it : it.skip)('on PostgreSQL: the same', async () => {
    const schema = `knex_sample_${process.pid}_${Date.now().toString(36)}`;
    try {
      const r = await runKnexSample(PG_URL, 5, { schema });
      expect(r.rolledBack).toBe(1);
      expect(r.delivered).toEqual([...r.placed].sort((a, b) => a - b));
    } finally {
      await dropPgSchemas(schema);
    }
  });
});
