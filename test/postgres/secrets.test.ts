// Engine-only (PostgreSQL): no error, cause, stack or log line carries the
// password of a URL or a DataSource, through every failure we can provoke.
import { inspect } from 'node:util';
import { afterAll, expect, it } from '@jest/globals';
import { Module, type LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DataSource } from 'typeorm';
import type { StoreLogger } from '../../lib/contract/types.js';
import { openPostgresStore } from '../../lib/engines/postgres/index.js';
import { AlkstoreModule, type AlkstoreModuleOptions } from '../../lib/nest/index.js';
import { openStoreFromOptions } from '../../lib/nest/alkstore.store-factory.js';
import { openStore } from '../../lib/open-store.js';
import { PG_URL, describePg, waitFor } from '../helpers/engines.js';
import { dropSchema, freshSchema, withClient } from './pg-helpers.js';

const MARKER = 'Sekr3t-MARKER-pw-91d4';
const ENCODED = encodeURIComponent(`${MARKER}/@:`); // a password that needs percent-encoding
const base = new URL(PG_URL);
const host = base.hostname;
const port = base.port || '5432';
const db = base.pathname.slice(1);

function capture(): StoreLogger & { text(): string } {
  const out: string[] = [];
  return {
    log: (m) => void out.push(m),
    warn: (m) => void out.push(m),
    error: (m, e) => void out.push(m, inspect(e, { depth: 10 })),
    text: () => out.join('\n'),
  };
}

function expectClean(what: unknown, ...extra: string[]): void {
  const text = [
    inspect(what, { depth: 12, showHidden: true }),
    String((what as Error | undefined)?.stack),
    ...extra,
  ].join('\n');
  expect(text).not.toContain(MARKER);
  expect(text).not.toContain(ENCODED);
}

async function failure(open: () => Promise<unknown>): Promise<unknown> {
  try {
    const s = (await open()) as { close?: () => Promise<void> };
    await s.close?.();
  } catch (err) {
    return err;
  }
  throw new Error('expected the open to fail');
}

const schemas: string[] = [];
afterAll(async () => {
  for (const s of schemas) await dropSchema(s);
});

describePg('postgres: passwords never leak (engine-only)', () => {
  const cases: [string, string][] = [
    ['unknown host', `postgres://alice:${MARKER}@no-such-host.invalid:5432/app`],
    ['refused port', `postgres://alice:${MARKER}@127.0.0.1:1/app`],
    ['missing database', `postgres://postgres:${MARKER}@${host}:${port}/no_such_db_alkstore`],
    ['unknown role (authentication)', `postgres://no_such_role_alkstore:${MARKER}@${host}:${port}/${db}`],
    ['percent-encoded password, refused port', `postgresql://alice:${ENCODED}@127.0.0.1:1/app`],
    ['bad port', `postgres://alice:${MARKER}@${host}:99999/app`],
    ['typo in the scheme', `postgress://alice:${MARKER}@${host}/app`],
    ['scheme without //', `postgresql:alice:${MARKER}@${host}`],
  ];

  it.each(cases)('openStore: %s', async (_what, url) => {
    const logger = capture();
    const err = await failure(() => openStore({ url, logger }));
    expect(err).toBeInstanceOf(Error);
    expect((err as { code?: string }).code).toMatch(/^(DATABASE|INVALID_OPTION)$/);
    expectClean(err, logger.text());
  });

  it('openPostgresStore with a pool whose options carry the password', async () => {
    const pg = (await import('pg')).default;
    const pool = new pg.Pool({ host: '127.0.0.1', port: 1, user: 'alice', password: MARKER, database: 'app' });
    const logger = capture();
    const err = await failure(() => openPostgresStore({ pool, logger }));
    await pool.end();
    expectClean(err, logger.text());
  });

  it('a failed migration', async () => {
    const schema = freshSchema('secret_mig');
    schemas.push(schema);
    // A migrations table of the wrong shape makes the migration fail inside PostgreSQL.
    await withClient(async (c) => {
      await c.query(`CREATE SCHEMA "${schema}"`);
      await c.query(`CREATE TABLE "${schema}".migrations (version text)`);
      await c.query(`INSERT INTO "${schema}".migrations VALUES ('not a number')`);
    });
    const logger = capture();
    const url = `postgres://postgres:${MARKER}@${host}:${port}/${db}`; // trust auth ignores the password
    const err = await failure(() => openStore({ url, schema, logger }));
    expect((err as { code?: string }).code).toBe('DATABASE');
    expectClean(err, logger.text());
  });

  it('a schema check with migrate: false', async () => {
    const schema = freshSchema('secret_nomig');
    const err = await failure(() =>
      openStore({ url: `postgres://postgres:${MARKER}@${host}:${port}/${db}`, schema, migrate: false }),
    );
    expect((err as { code?: string }).code).toBe('INVALID_OPTION');
    expectClean(err);
  });

  it('log lines of a running store whose LISTEN connection is killed', async () => {
    const schema = freshSchema('secret_listen');
    schemas.push(schema);
    const logger = capture();
    const store = await openStore({ url: `postgres://postgres:${MARKER}@${host}:${port}/${db}`, schema, logger });
    try {
      await withClient((c) =>
        c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [
          `alkstore-listener:${schema}`.slice(0, 63),
        ]),
      );
      await waitFor('the listener to report the loss', () => /LISTEN|listen/.test(logger.text()));
    } finally {
      await store.close();
    }
    expectClean(undefined, logger.text());
  });

  it('a TypeORM DataSource with a password, through the Nest store factory', async () => {
    const ds = new DataSource({
      type: 'postgres',
      host: '127.0.0.1',
      port: 1,
      username: 'alice',
      password: MARKER,
      database: 'app',
    });
    const logger = capture();
    const err = await failure(() => openStoreFromOptions({ dataSource: ds }, logger));
    expectClean(err, logger.text());
  });

  it('the Nest bootstrap log when AlkstoreModule cannot connect', async () => {
    const lines: string[] = [];
    const nestLogger: LoggerService = {
      log: (...a: unknown[]) => void lines.push(inspect(a, { depth: 10 })),
      error: (...a: unknown[]) => void lines.push(inspect(a, { depth: 10 })),
      warn: (...a: unknown[]) => void lines.push(inspect(a, { depth: 10 })),
      debug: (...a: unknown[]) => void lines.push(inspect(a, { depth: 10 })),
      verbose: (...a: unknown[]) => void lines.push(inspect(a, { depth: 10 })),
    };
    const options: AlkstoreModuleOptions = { url: `postgres://alice:${MARKER}@127.0.0.1:1/app` };
    @Module({ imports: [AlkstoreModule.forRoot(options)] })
    class AppModule {}
    const err = await failure(() =>
      NestFactory.createApplicationContext(AppModule, { logger: nestLogger, abortOnError: false }),
    );
    expect(lines.length).toBeGreaterThan(0);
    expectClean(err, ...lines);
  });
});
