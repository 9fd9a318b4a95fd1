// The README's "Without Nest" quick start, run as printed in an empty
// directory (only its import is pointed at the sources), on both engines.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from '@jest/globals';
import { dropPgSchemas, PG_AVAILABLE, PG_URL } from '../helpers/engines.js';
import { snippets } from './extract.js';

// The temp directory has no node_modules: load tsx from this checkout.
const TSX = pathToFileURL(join(process.cwd(), 'node_modules/tsx/dist/loader.mjs')).href;
const dir = mkdtempSync(join(tmpdir(), 'alkstore-quick-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function quickStart(): string {
  const block = snippets().find(
    (s) => s.file === 'README.md' && s.code.includes("store.queue('emails'") && s.code.includes('openStore('),
  );
  if (!block) throw new Error('README.md has no "Without Nest" quick start');
  return block.code.replace("from 'nestjs-alkstore'", `from ${JSON.stringify(join(process.cwd(), 'lib/index.ts'))}`);
}

function run(file: string, env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      ['--import', TSX, file],
      { cwd: dir, env: { ...process.env, NODE_OPTIONS: '', ...env }, timeout: 60_000 },
      (err, stdout, stderr) => done({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

describe('the README quick start without Nest', () => {
  it('prints the job it sent and an empty queue (SQLite, in the working directory)', async () => {
    const file = join(dir, 'quick-start.mts');
    writeFileSync(file, quickStart());
    const out = await run(file, { DATABASE_URL: '' });
    expect(out).toMatchObject({ code: 0 });
    expect(out.stdout).toMatch(/^job \d+: sending an email to ada@example\.com$/m);
    expect(out.stdout).toMatch(/pending: 0,\s+processing: 0,\s+dead: 0/);
  }, 60_000);

  (PG_AVAILABLE ? it : it.skip)(
    'does the same on PostgreSQL with DATABASE_URL',
    async () => {
      const file = join(dir, 'quick-start-pg.mts');
      // The default schema would be shared with other runs: this one gets its own.
      const printed = quickStart();
      const ownSchema = printed.replace(
        "openStore({ url: process.env.DATABASE_URL || 'sqlite:./app.db' })",
        "openStore({ url: process.env.DATABASE_URL || 'sqlite:./app.db', schema: process.env.SCHEMA })",
      );
      expect(ownSchema).not.toBe(printed);
      writeFileSync(file, ownSchema);
      const schema = `quick_${process.pid}_${Date.now().toString(36)}`;
      try {
        const out = await run(file, { DATABASE_URL: PG_URL, SCHEMA: schema });
        expect(out).toMatchObject({ code: 0 });
        expect(out.stdout).toMatch(/^job \d+: sending an email to ada@example\.com$/m);
      } finally {
        await dropPgSchemas(schema);
      }
    },
    60_000,
  );
});
