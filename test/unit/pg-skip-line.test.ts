import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { PG_URL, describePg } from '../helpers/engines.js';
// @ts-expect-error: a plain JavaScript helper shared with global-setup.js
import { probePostgres } from '../helpers/pg-diagnose.js';

type Problem = { reason: string; why: string; fix: string } | null;
const probe = probePostgres as (url: string, timeoutMs?: number) => Promise<Problem>;

/** Runs global-setup.js in a child process with the given URL; returns its output and whether it failed. */
function runGlobalSetup(url: string, required: boolean): { out: string; failed: boolean } {
  const script = `const m = await import(${JSON.stringify(join(process.cwd(), 'test/helpers/global-setup.js'))}); await m.default();`;
  try {
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, ALKSTORE_PG_URL: url, ALKSTORE_REQUIRE_PG: required ? '1' : '0' },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return { out, failed: false };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    return { out: `${e.stdout ?? ''}${e.stderr ?? ''}`, failed: true };
  }
}

describe('the PostgreSQL skip line', () => {
  it('says the server is down and how to start it when nothing listens', async () => {
    const problem = await probe('postgres://postgres@127.0.0.1:1/test');
    expect(problem?.reason).toBe('server-down');
    expect(problem?.fix).toContain('createdb');
  });

  it('prints one line with the reason when not required, and fails with the same reason when required', () => {
    const url = 'postgres://postgres:hunter2@127.0.0.1:1/test';
    const skipped = runGlobalSetup(url, false);
    expect(skipped.failed).toBe(false);
    expect(skipped.out.trim().split('\n')).toHaveLength(1);
    expect(skipped.out).toContain('no PostgreSQL server answers at 127.0.0.1:1');
    expect(skipped.out).not.toContain('hunter2');
    const required = runGlobalSetup(url, true);
    expect(required.failed).toBe(true);
    expect(required.out).toContain('ALKSTORE_REQUIRE_PG=1');
    expect(required.out).toContain('no PostgreSQL server answers at 127.0.0.1:1');
  }, 30_000);
});

describePg('the PostgreSQL skip line against a running server (engine-only)', () => {
  it('names a missing database and the createdb command', async () => {
    const url = new URL(PG_URL);
    url.pathname = '/alkstore_no_such_db';
    const problem = await probe(url.toString());
    expect(problem?.reason).toBe('database-missing');
    expect(problem?.why).toContain('"alkstore_no_such_db" does not exist');
    expect(problem?.fix).toMatch(/^createdb -h \S+ -p \d+ -U \S+ alkstore_no_such_db$/);
  });

  it('names an authentication failure', async () => {
    const url = new URL(PG_URL);
    url.username = 'alkstore_no_such_role';
    const problem = await probe(url.toString());
    expect(problem?.reason).toBe('authentication');
    expect(problem?.why).toContain('alkstore_no_such_role');
  });

  it('is silent when the server and database are there', async () => {
    expect(await probe(PG_URL)).toBeNull();
  });
});
