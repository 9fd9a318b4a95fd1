// Checks an extracted alkstore tarball (the `package/` directory; the .tgz itself as a second
// argument for its size, at most 1 MB): the built
// entry points exist, LICENSE ships, every relative link in the shipped
// Markdown resolves to a shipped file (images under docs/img excepted: they stay in the repository), and every source map points only at
// shipped files; no source maps or TypeScript sources ship. Prints what it checked; exits 1 listing every problem.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const pkgDir = resolve(process.argv[2] ?? '.');
const problems = [];
const files = [];
(function walk(dir) {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) walk(path);
    else files.push(path);
  }
})(pkgDir);
const rel = (p) => relative(pkgDir, p);

const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
for (const f of ['LICENSE', 'README.md', 'package.json'])
  if (!existsSync(join(pkgDir, f))) problems.push(`missing ${f}`);
if (!/MIT License/.test(readFileSync(join(pkgDir, 'LICENSE'), 'utf8'))) problems.push('LICENSE is not the MIT license');

let targets = 0;
for (const [subpath, target] of Object.entries(pkg.exports)) {
  for (const file of typeof target === 'string' ? [target] : Object.values(target)) {
    targets += 1;
    if (!existsSync(join(pkgDir, file)))
      problems.push(`exports["${subpath}"] names ${file}, which is not in the tarball`);
  }
}
for (const [subpath, [file]] of Object.entries(pkg.typesVersions?.['*'] ?? {})) {
  if (!existsSync(join(pkgDir, file)))
    problems.push(`typesVersions["${subpath}"] names ${file}, which is not in the tarball`);
}

let links = 0;
for (const md of files.filter((f) => f.endsWith('.md'))) {
  const text = readFileSync(md, 'utf8');
  for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    const href = m[1];
    if (/^[a-z]+:/i.test(href) || href.startsWith('#')) continue;
    links += 1;
    const target = resolve(dirname(md), href.split('#')[0]);
    // Images stay in the repository (docs/img is left out of `files` to keep the tarball small).
    if (rel(target).startsWith('docs/img/')) continue;
    if (!existsSync(target)) problems.push(`${rel(md)} links to ${href}, which is not in the tarball`);
  }
}

let maps = 0;
for (const map of files.filter((f) => f.endsWith('.map'))) {
  maps += 1;
  const { sources = [] } = JSON.parse(readFileSync(map, 'utf8'));
  for (const s of sources) {
    const target = resolve(dirname(map), s);
    if (!existsSync(target)) problems.push(`${rel(map)} points at ${s}, which is not in the tarball`);
  }
}
const stray = files
  .map(rel)
  .filter((f) => /(^|\/)(test|sample|bench)\//.test(f) || f.endsWith('.test.ts') || f.endsWith('.test.js'));
for (const f of stray) problems.push(`ships a test/sample/bench file: ${f}`);
// No source maps and no TypeScript sources: they were two thirds of the tarball.
if (maps > 0) problems.push(`ships ${maps} source maps (tsconfig.build.json turns them off)`);
for (const f of files.map(rel).filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')))
  problems.push(`ships a TypeScript source: ${f}`);
const size = statSync(process.argv[3] ?? join(pkgDir, 'package.json')).size;
if (process.argv[3] && size > 1_000_000) problems.push(`the tarball is ${size} bytes, above 1 MB`);

console.log(
  `tarball: ${files.length} files, ${targets} export targets, ${links} relative Markdown links, ${maps} source maps checked`,
);
if (problems.length > 0) {
  console.error(problems.map((p) => `  - ${p}`).join('\n'));
  process.exit(1);
}
