import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { describe, expect, it } from '@jest/globals';
import { InvalidOption } from '../../lib/contract/errors.js';
import { engineOfUrl, openStore, sqlitePathOfUrl } from '../../lib/open-store.js';

const MARKER = 'pw-MARKER-5e1c';

describe('store URLs (no I/O)', () => {
  it.each([
    ['sqlite:./data/app.db', 'sqlite'],
    ['sqlite::memory:', 'sqlite'],
    ['SQLite:./x.db', 'sqlite'],
    ['./data/app.db', 'sqlite'],
    ['/var/lib/app.db', 'sqlite'],
    ['data/app.db', 'sqlite'],
    [':memory:', 'sqlite'],
    ['C:\\data\\app.db', 'sqlite'],
    ['postgres://user@host/db', 'postgres'],
    ['postgresql://user:pw@host:5432/db', 'postgres'],
    ['POSTGRES://user@host/db', 'postgres'],
  ])('accepts %s as %s', (url, engine) => {
    expect(engineOfUrl(url)).toBe(engine);
  });

  it('reads the SQLite path out of each SQLite form', () => {
    expect(sqlitePathOfUrl('sqlite:./data/app.db')).toBe('./data/app.db');
    expect(sqlitePathOfUrl('sqlite::memory:')).toBe(':memory:');
    expect(sqlitePathOfUrl('./data/app.db')).toBe('./data/app.db');
  });

  it.each([
    [`postgress://alice:${MARKER}@db.example/app`, 'postgress:'],
    [`postgresql:alice:${MARKER}@db.example`, 'postgresql:'],
    [`mysql://alice:${MARKER}@db.example/app`, 'mysql:'],
    [`file:///tmp/${MARKER}.db`, 'file:'],
    [`redis://:${MARKER}@cache:6379`, 'redis:'],
  ])('refuses %s with InvalidOption naming the scheme only, before writing anything', async (url, scheme) => {
    const dir = mkdtempSync(join(tmpdir(), 'alkstore-url-'));
    const cwd = process.cwd();
    process.chdir(dir);
    let caught: unknown;
    try {
      await openStore({ url });
    } catch (err) {
      caught = err;
    } finally {
      process.chdir(cwd);
    }
    try {
      expect(caught).toBeInstanceOf(InvalidOption);
      const err = caught as InvalidOption;
      expect(err.field).toBe('url');
      expect(err.message).toContain(`"${scheme}`);
      expect(inspect(err, { depth: 10 })).not.toContain(MARKER);
      expect(inspect(err, { depth: 10 })).not.toContain('alice');
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a postgres URL that does not parse (bad port) before any connection, without the password', async () => {
    const err = await openStore({ url: `postgres://alice:${MARKER}@127.0.0.1:99999/db` }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidOption);
    expect(inspect(err, { depth: 10 })).not.toContain(MARKER);
  });

  it('refuses an empty or non-string url', async () => {
    await expect(openStore({ url: '' })).rejects.toBeInstanceOf(InvalidOption);
    await expect(openStore({ url: '   ' })).rejects.toBeInstanceOf(InvalidOption);
    await expect(openStore({ url: 42 as unknown as string })).rejects.toBeInstanceOf(InvalidOption);
    expect(existsSync('42')).toBe(false);
  });
});

describe('secret scrubbing at the engine boundary', () => {
  it('masks a password in message, stack, string fields, cause and AggregateError members', async () => {
    const { scrubSecrets, urlSecrets } = await import('../../lib/internal/secrets.js');
    const url = `postgres://alice:${encodeURIComponent(`${MARKER}@x`)}@db/app`;
    const inner = Object.assign(new Error(`could not connect with ${url}`), { connectionString: url, password: `${MARKER}@x` });
    const err = new Error(`open failed: ${MARKER}@x`, { cause: new AggregateError([inner], 'all attempts failed') });
    scrubSecrets(err, urlSecrets(url));
    const text = inspect(err, { depth: 10, showHidden: true });
    expect(text).not.toContain(MARKER);
    expect(text).toContain('***');
  });

  it('masks log lines and logged errors', async () => {
    const { scrubbingLogger } = await import('../../lib/internal/secrets.js');
    const lines: string[] = [];
    const logger = scrubbingLogger(
      { log: (m) => void lines.push(m), warn: (m) => void lines.push(m), error: (m, e) => void lines.push(m, inspect(e)) },
      [MARKER],
    );
    logger.log(`a ${MARKER}`);
    logger.warn(`b ${MARKER}`);
    logger.error(`c ${MARKER}`, new Error(`d ${MARKER}`));
    expect(lines.join('\n')).not.toContain(MARKER);
    expect(lines).toHaveLength(4);
  });
});
