import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { describe, expect, it } from '@jest/globals';
import { InvalidOption } from '../../lib/contract/errors.js';
import { engineOfUrl, openStore, sqlitePathOfUrl } from '../../lib/open-store.js';
import { loadVectors } from './vectors.js';

interface UrlVectors {
  marker: string;
  accepted: { url: string; engine: 'sqlite' | 'postgres'; sqlitePath?: string }[];
  refused: { url: string; scheme: string | null }[];
}
const v = loadVectors<UrlVectors>('store-urls.json');

describe('store URLs (conformance/contract/store-urls.json, no I/O)', () => {
  it.each(v.accepted.map((a) => [a.url, a] as const))('accepts %s', (_url, a) => {
    expect(engineOfUrl(a.url)).toBe(a.engine);
    if (a.sqlitePath !== undefined) expect(sqlitePathOfUrl(a.url)).toBe(a.sqlitePath);
  });

  it.each(v.refused.map((r) => [JSON.stringify(r.url), r] as const))(
    'refuses %s with InvalidOption naming the scheme only, before writing anything',
    async (_url, r) => {
      const dir = mkdtempSync(join(tmpdir(), 'alkstore-url-'));
      const cwd = process.cwd();
      process.chdir(dir);
      let caught: unknown;
      try {
        await openStore({ url: r.url });
      } catch (err) {
        caught = err;
      } finally {
        process.chdir(cwd);
      }
      try {
        expect(caught).toBeInstanceOf(InvalidOption);
        const err = caught as InvalidOption;
        expect(err.field).toBe('url');
        if (r.scheme !== null) expect(err.message).toContain(`"${r.scheme}`);
        expect(inspect(err, { depth: 10 })).not.toContain(v.marker);
        expect(inspect(err, { depth: 10 })).not.toContain('alice');
        expect(readdirSync(dir)).toEqual([]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it('refuses a non-string url', async () => {
    await expect(openStore({ url: 42 as unknown as string })).rejects.toBeInstanceOf(InvalidOption);
    await expect(openStore(null as unknown as { url: string })).rejects.toBeInstanceOf(InvalidOption);
    expect(existsSync('42')).toBe(false);
  });
});

describe('secret scrubbing at the engine boundary', () => {
  it('masks a password in message, stack, string fields, cause and AggregateError members', async () => {
    const { scrubSecrets, urlSecrets } = await import('../../lib/internal/secrets.js');
    const url = `postgres://alice:${encodeURIComponent(`${v.marker}@x`)}@db/app`;
    const inner = Object.assign(new Error(`could not connect with ${url}`), {
      connectionString: url,
      password: `${v.marker}@x`,
    });
    const err = new Error(`open failed: ${v.marker}@x`, { cause: new AggregateError([inner], 'all attempts failed') });
    scrubSecrets(err, urlSecrets(url));
    const text = inspect(err, { depth: 10, showHidden: true });
    expect(text).not.toContain(v.marker);
    expect(text).toContain('***');
  });

  it('masks log lines and logged errors', async () => {
    const { scrubbingLogger } = await import('../../lib/internal/secrets.js');
    const lines: string[] = [];
    const logger = scrubbingLogger(
      {
        log: (m) => void lines.push(m),
        warn: (m) => void lines.push(m),
        error: (m, e) => void lines.push(m, inspect(e)),
      },
      [v.marker],
    );
    logger.log(`a ${v.marker}`);
    logger.warn(`b ${v.marker}`);
    logger.error(`c ${v.marker}`, new Error(`d ${v.marker}`));
    expect(lines.join('\n')).not.toContain(v.marker);
    expect(lines).toHaveLength(4);
  });
});
