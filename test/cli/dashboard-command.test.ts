import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { contractEngines, dropPgSchemas, PG_URL } from '../helpers/engines.js';

const ROOT = resolve(import.meta.dirname, '../..');
const TOKEN = 'standalone-token-0123456789';

/** The CLI entry bundled once for this file (as test/cli/cli.test.ts does). */
let entry = '';
const outDir = join(ROOT, '.tmp', `cli-dash-${process.pid}`);
beforeAll(async () => {
  mkdirSync(outDir, { recursive: true });
  entry = join(outDir, 'alkstore.mjs');
  const esbuild = await import('esbuild');
  await esbuild.build({
    entryPoints: [join(ROOT, 'lib/cli/main.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    outfile: entry,
    logLevel: 'error',
  });
}, 60_000);
afterAll(() => rmSync(outDir, { recursive: true, force: true }));

/** Starts `alkstore dashboard …`; resolves with the URL it printed. */
function serve(args: string[]): Promise<{ child: ChildProcess; url: string; exited: Promise<number | null> }> {
  const child = spawn(process.execPath, [entry, 'dashboard', ...args], {
    cwd: ROOT,
    env: { ...process.env, NODE_OPTIONS: '', DASH_TOKEN: TOKEN },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  return new Promise((done, fail) => {
    let out = '';
    let err = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /dashboard on (http:\/\/\S+)/.exec(out);
      if (m) done({ child, url: m[1]!, exited });
    });
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    void exited.then((code) => fail(new Error(`alkstore dashboard exited with ${code}: ${err}${out}`)));
  });
}

const basic = (user: string, token: string) => `Basic ${Buffer.from(`${user}:${token}`).toString('base64')}`;

for (const engine of contractEngines()) {
  describe(`alkstore dashboard, standalone [${engine.name}]`, () => {
    let dir = '';
    let schema = '';
    let url = '';
    let extra: string[] = [];
    let store: Store;

    beforeAll(async () => {
      const { openStore } = await import('../../lib/open-store.js');
      if (engine.kind === 'sqlite') {
        dir = mkdtempSync(join(tmpdir(), 'alkstore-dash-'));
        url = `sqlite:${join(dir, 'ops.db')}`;
      } else {
        schema = `dash_${process.pid}_${Date.now().toString(36)}`;
        url = PG_URL;
        extra = ['--schema', schema];
      }
      store = await openStore({ url, schema: schema || undefined });
    }, 60_000);
    afterAll(async () => {
      await store?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
      if (schema) await dropPgSchemas(schema);
    }, 60_000);

    it('serves the pages on 127.0.0.1 behind the token, acts with CSRF and confirmation, and stops on SIGTERM', async () => {
      const q = store.queue('standalone', { maxAttempts: 1 });
      const id = await q.enqueue({ orderId: 7 });
      const job = (await q.claimOne('w'))!;
      await job.fail(new Error('boom'));
      const {
        child,
        url: home,
        exited,
      } = await serve(['--url', url, ...extra, '--token-env', 'DASH_TOKEN', '--port', '0']);
      try {
        expect(home).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/alkstore$/);
        expect((await fetch(home)).status).toBe(401);
        expect((await fetch(home, { headers: { authorization: basic('op', 'wrong-token-0123456789') } })).status).toBe(
          401,
        );
        const auth = { authorization: basic('frank', TOKEN) };
        const page = await fetch(`${home}/queue?name=standalone&state=dead`, { headers: auth });
        expect(page.status).toBe(200);
        const text = await page.text();
        expect(text).toContain(`data-job="${id}"`);
        expect(page.headers.get('content-security-policy')).toMatch(/script-src 'nonce-/);
        const cookie = page.headers.get('set-cookie')!;
        expect(cookie).toMatch(/; Path=\/alkstore; HttpOnly; SameSite=Strict$/);
        const token = /<meta name="csrf-token" content="([^"]+)"\s*\/?>/.exec(text)![1]!;
        const form = (extraFields: Record<string, string>) =>
          fetch(`${home}/action`, {
            method: 'POST',
            redirect: 'manual',
            headers: { ...auth, cookie: cookie.split(';')[0]!, 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({
              csrf: token,
              action: 'redrive',
              queue: 'standalone',
              id: String(id),
              ...extraFields,
            }).toString(),
          });
        expect((await form({ csrf: 'forged' })).status).toBe(403);
        expect((await form({})).status).toBe(200);
        const done = await form({ confirm: 'yes' });
        expect(done.status).toBe(303);
        expect(await q.getJob(id)).toMatchObject({ state: 'pending', attempts: 0 });
        const log = await (await fetch(`${home}/audit`, { headers: auth })).text();
        expect(log).toContain('frank');
        expect(log).toContain('<td>redrive</td>');
        child.kill('SIGTERM');
        expect(await exited).toBe(0);
      } finally {
        child.kill('SIGKILL');
      }
    }, 60_000);

    it('refuses to start without a token of 16+ characters', async () => {
      await expect(serve(['--url', url, ...extra, '--token-env', 'NO_SUCH_VAR', '--port', '0'])).rejects.toThrow(
        /exited with 2.*at least 16 characters/s,
      );
      await expect(serve(['--url', url, ...extra, '--port', '0'])).rejects.toThrow(
        /exited with 2.*--token-env is required/s,
      );
    }, 60_000);
  });
}
