import { afterAll, describe, expect, it } from '@jest/globals';
import { AlkstoreError, InvalidOption } from '../../lib/contract/errors.js';
import {
  POSTGRES_MIGRATIONS,
  POSTGRES_SCHEMA_VERSION,
  openPostgresStore,
  postgresMigrationSql,
} from '../../lib/engines/postgres/index.js';
import { PG_URL, describePg } from '../helpers/engines.js';
import { dropSchema, freshSchema, recordingLogger, withClient } from './pg-helpers.js';

const created: string[] = [];
function schemaFor(prefix: string): string {
  const s = freshSchema(prefix);
  created.push(s);
  return s;
}

afterAll(async () => {
  for (const s of created) await dropSchema(s);
});

describePg('postgres migrations', () => {
  it('five stores booting at once on a fresh schema migrate exactly once', async () => {
    const schema = schemaFor('boot');
    const loggers = Array.from({ length: 5 }, () => recordingLogger());
    const stores = await Promise.all(
      loggers.map((logger) => openPostgresStore({ connectionString: PG_URL, schema, poolSize: 2, logger })),
    );
    try {
      const applied = loggers.flatMap((l) => l.lines.filter((line) => line.includes('applied migration')));
      expect(applied).toHaveLength(POSTGRES_MIGRATIONS.length);
      const rows = await withClient((c) =>
        c.query<{ version: number }>(`SELECT version FROM "${schema}".migrations ORDER BY version`),
      );
      expect(rows.rows.map((r) => r.version)).toEqual(POSTGRES_MIGRATIONS.map((m) => m.version));
      // Every store works on the migrated schema.
      const id = await stores[0]!.queue('q').enqueue({ ok: true });
      const job = await stores[4]!.queue('q').claimOne('w');
      expect(job?.id).toBe(id);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it('migration 4 counts the jobs a schema at version 2 already holds, and keeps counting', async () => {
    const schema = schemaFor('counts');
    await withClient(async (c) => {
      await c.query(`CREATE SCHEMA "${schema}"`);
      await c.query(
        `CREATE TABLE "${schema}".migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      for (const m of POSTGRES_MIGRATIONS.filter((x) => x.version <= 2)) {
        await c.query(m.sql(`"${schema}"`));
        await c.query(`INSERT INTO "${schema}".migrations (version, name) VALUES ($1, $2)`, [m.version, m.name]);
      }
      const cols = 'queue, state, payload, max_attempts, visibility_timeout_ms, backoff_base_ms, run_at, enqueued_at';
      await c.query(
        `INSERT INTO "${schema}".jobs (${cols}) SELECT 'old', 'pending', '1', 3, 1000, 1000, 0, 0 FROM generate_series(1, 3)`,
      );
      await c.query(
        `INSERT INTO "${schema}".jobs (${cols}) VALUES ('old', 'dead', '1', 3, 1000, 1000, 0, 0), ('old', 'pending', '1', 3, 1000, 1000, 9e15, 0)`,
      );
    });
    const store = await openPostgresStore({ connectionString: PG_URL, schema });
    try {
      expect(await store.queue('old').stats()).toMatchObject({ pending: 4, processing: 0, dead: 1, scheduled: 1 });
      expect((await store.queue('old').claimOne('w'))!.payload).toBe(1);
      expect(await store.queue('old').stats()).toMatchObject({ pending: 3, processing: 1, dead: 1, scheduled: 1 });
    } finally {
      await store.close();
    }
  });

  it('migrations 26 and 27 keep the outcome records and receipts a schema at version 25 holds, in place', async () => {
    const schema = schemaFor('parts');
    const s = `"${schema}"`;
    await withClient(async (c) => {
      await c.query(`CREATE SCHEMA ${s}`);
      await c.query(
        `CREATE TABLE ${s}.migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      for (const m of POSTGRES_MIGRATIONS.filter((x) => x.version <= 25)) {
        await c.query(m.sql(s));
        await c.query(`INSERT INTO ${s}.migrations (version, name) VALUES ($1, $2)`, [m.version, m.name]);
      }
      await c.query(`SELECT setval(pg_get_serial_sequence('${s}.jobs', 'id'), 6500000)`);
      // Ranges retention made at 4M and 5M, the second dropped since: a receipt of it delivered late sits in the default partition.
      await c.query(`INSERT INTO ${s}.range_partitions (parent, lo, hi) VALUES ('outbox_receipts', 4000000, 5000000)`);
      await c.query(
        `INSERT INTO ${s}.outbox_receipts (outbox, message_id, receipt, delivered_at) VALUES ('o', 7, '{"n":7}', 1), ('o', 5000001, '{"late":true}', 1)`,
      );
      await c.query(
        `INSERT INTO ${s}.job_outcomes (id, queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms,
           backoff_base_ms, run_at, enqueued_at, result, finished_at, keep_until)
         VALUES (11, 'old', 'completed', '1', 0, 1, 3, 1000, 1000, 0, 0, '"kept"', 0, NULL)`,
      );
    });
    const store = await openPostgresStore({ connectionString: PG_URL, schema });
    try {
      expect((await store.queue('old').getJob(11))?.result).toBe('kept');
      expect((await store.outbox('o').receipt(7))?.receipt).toEqual({ n: 7 });
      expect((await store.outbox('o').receipt(5000001))?.receipt).toEqual({ late: true });
      const where = await withClient(async (c) =>
        (
          await c.query<{ t: string; id: string }>(
            `SELECT tableoid::regclass::text AS t, message_id AS id FROM ${s}.outbox_receipts UNION ALL
               SELECT tableoid::regclass::text, id FROM ${s}.job_outcomes ORDER BY 2`,
          )
        ).rows.map((r) => r.t.replace(/^.*\./, '')),
      );
      expect(where).toEqual(['outbox_receipts_legacy', 'job_outcomes_legacy', 'outbox_receipts_default']);
    } finally {
      await store.close();
    }
  });

  it('reopening a migrated schema applies nothing', async () => {
    const schema = schemaFor('reopen');
    await (await openPostgresStore({ connectionString: PG_URL, schema })).close();
    const logger = recordingLogger();
    const again = await openPostgresStore({ connectionString: PG_URL, schema, logger });
    await again.close();
    expect(logger.lines.filter((l) => l.includes('applied migration'))).toEqual([]);
  });

  it('migrate: false on an unmigrated schema fails with a clear error naming the schema', async () => {
    const schema = schemaFor('nomig');
    const err = await openPostgresStore({ connectionString: PG_URL, schema, migrate: false }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(InvalidOption);
    expect((err as AlkstoreError).code).toBe('INVALID_OPTION');
    expect((err as Error).message).toContain(schema);
    expect((err as Error).message).toMatch(/migrate: true|postgresMigrationSql/);
    // Nothing was created behind the caller's back.
    const found = await withClient((c) => c.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]));
    expect(found.rowCount).toBe(0);
  });

  it('migrate: false opens a schema migrated by hand with postgresMigrationSql()', async () => {
    const schema = schemaFor('byhand');
    await withClient((c) => c.query(postgresMigrationSql(schema)));
    const store = await openPostgresStore({ connectionString: PG_URL, schema, migrate: false });
    try {
      expect(await store.stream('s').publish('x')).toBe(1);
      const v = await withClient((c) => c.query<{ v: number }>(`SELECT max(version) AS v FROM "${schema}".migrations`));
      expect(v.rows[0]!.v).toBe(POSTGRES_SCHEMA_VERSION);
    } finally {
      await store.close();
    }
  });

  it('migrate: false refuses a schema at an older version', async () => {
    const schema = schemaFor('old');
    await withClient(async (c) => {
      await c.query(`CREATE SCHEMA "${schema}"`);
      await c.query(
        `CREATE TABLE "${schema}".migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
    });
    await expect(openPostgresStore({ connectionString: PG_URL, schema, migrate: false })).rejects.toThrow(/version 0/);
  });

  it('refuses a schema name that is not an identifier, before connecting', async () => {
    for (const schema of ['', 'has space', 'x"; DROP TABLE y; --', '1abc', 'pg_mine', 'a'.repeat(64)]) {
      await expect(openPostgresStore({ connectionString: PG_URL, schema })).rejects.toBeInstanceOf(InvalidOption);
    }
  });

  it('keeps the case of a mixed-case schema (always quoted)', async () => {
    const schema = schemaFor('Mixed');
    const store = await openPostgresStore({ connectionString: PG_URL, schema });
    try {
      await store.queue('q').enqueue(1);
      const n = await withClient((c) => c.query(`SELECT count(*)::int AS n FROM "${schema}".jobs`));
      expect(n.rows[0].n).toBe(1);
    } finally {
      await store.close();
    }
  });
});

describe('postgres migration SQL', () => {
  it('is one script with every migration and its record', () => {
    const sql = postgresMigrationSql('app_jobs');
    expect(sql).toContain('CREATE SCHEMA IF NOT EXISTS "app_jobs"');
    for (const m of POSTGRES_MIGRATIONS) expect(sql).toContain(`VALUES (${m.version}, '${m.name}')`);
  });
});
