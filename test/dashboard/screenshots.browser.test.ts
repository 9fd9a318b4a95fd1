import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, expect, it } from '@jest/globals';

// The docs' dashboard screenshots are made by scripts/dashboard-screenshots.ts (a real SQLite store, the
// standalone dashboard, real Chromium). This test runs it into a scratch folder, so a page that stops
// answering or an image the docs show but the script no longer makes fails here; `npm run screenshots`
// writes the same images into docs/img.

const ROOT = resolve(import.meta.dirname, '../..');
const out = mkdtempSync(join(tmpdir(), 'alkstore-screens-out-'));

afterAll(() => rmSync(out, { recursive: true, force: true }));

/** Width and height from a PNG's IHDR chunk; throws when the bytes are not a PNG. */
function pngSize(bytes: Buffer): { width: number; height: number } {
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  if (!bytes.subarray(0, 8).equals(signature) || bytes.toString('latin1', 12, 16) !== 'IHDR')
    throw new Error('not a PNG');
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

/** The dashboard images a folder holds. */
const dashboardImages = (dir: string): string[] =>
  readdirSync(dir)
    .filter((f) => /^dashboard(-[a-z-]+)?\.png$/.test(f))
    .sort();

/** The dashboard images README.md and docs/*.md show. */
function imagesTheDocsShow(): string[] {
  const pages = [join(ROOT, 'README.md'), ...readdirSync(join(ROOT, 'docs')).map((f) => join(ROOT, 'docs', f))];
  const names = new Set<string>();
  for (const page of pages.filter((p) => p.endsWith('.md')))
    for (const m of readFileSync(page, 'utf8').matchAll(/img\/(dashboard(?:-[a-z-]+)?\.png)/g)) names.add(m[1]!);
  return [...names].sort();
}

it('the screenshot script makes every dashboard image the docs show, from real pages in Chromium', async () => {
  const log = await new Promise<string>((done, fail) =>
    execFile(
      join(ROOT, 'node_modules/.bin/tsx'),
      ['scripts/dashboard-screenshots.ts', '--minutes', '0', '--out', out],
      { cwd: ROOT, timeout: 240_000, maxBuffer: 8 << 20 },
      (err, stdout, stderr) => (err ? fail(new Error(`${err.message}\n${stdout}\n${stderr}`)) : done(stdout)),
    ),
  );
  const made = dashboardImages(out);
  // Every image is named in the script's log with the page it shows.
  for (const name of made) expect(log).toContain(name);
  // Exactly the set docs/img holds, so docs/img has no image the script cannot make again, and none missing.
  expect(made).toEqual(dashboardImages(join(ROOT, 'docs/img')));
  for (const shown of imagesTheDocsShow()) expect(made).toContain(shown);
  for (const name of made) {
    const path = join(out, name);
    expect({ name, width: pngSize(readFileSync(path)).width }).toEqual({ name, width: 1280 });
    expect({ name, small: statSync(path).size <= 128 * 1024 }).toEqual({ name, small: true });
  }
}, 300_000);
