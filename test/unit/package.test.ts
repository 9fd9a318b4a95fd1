import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from '@jest/globals';

interface PackageJson {
  exports: Record<string, string | { types: string; default: string }>;
  typesVersions: Record<string, Record<string, string[]>>;
  files: string[];
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
  devDependencies: Record<string, string>;
  scripts: Record<string, string>;
}

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as PackageJson;

function installedVersion(name: string): string {
  return (JSON.parse(readFileSync(join('node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
}

/** The majors (or 0.minors) a caret range, or a `||` list of caret ranges, allows. */
function caretMajors(range: string): string[] {
  return range.split('||').map((part) => {
    const m = /^\^(\d+)\.(\d+)/.exec(part.trim());
    if (!m) throw new Error(`peer range ${range} is not a caret range`);
    return m[1] === '0' ? `0.${m[2]}` : m[1];
  });
}

function majorOf(version: string): string {
  const [major, minor] = version.split('.');
  return major === '0' ? `0.${minor}` : major;
}

describe('package.json', () => {
  it('every optional peer is at the major the repo installs and tests', () => {
    const mismatched = Object.entries(pkg.peerDependencies)
      .map(([name, range]) => ({ name, range, installed: installedVersion(name) }))
      .filter(({ range, installed }) => !caretMajors(range).includes(majorOf(installed)))
      .map(({ name, range, installed }) => `${name}: peer ${range}, installed ${installed}`);
    expect(mismatched).toEqual([]);
  });

  it('every peer is optional and listed in devDependencies', () => {
    for (const name of Object.keys(pkg.peerDependencies)) {
      expect({ name, optional: pkg.peerDependenciesMeta[name]?.optional }).toEqual({ name, optional: true });
      expect({ name, dev: name in pkg.devDependencies }).toEqual({ name, dev: true });
    }
  });

  it('typesVersions maps every exported subpath to its types (node10 resolution)', () => {
    const mapped = pkg.typesVersions['*'];
    for (const [key, target] of Object.entries(pkg.exports)) {
      if (key === '.' || typeof target === 'string') continue;
      expect({ subpath: key, types: mapped[key.slice(2)] }).toEqual({
        subpath: key,
        types: [target.types.replace(/^\.\//, '')],
      });
    }
  });

  it('every export points into the shipped build, built from a shipped source file', () => {
    for (const [key, target] of Object.entries(pkg.exports)) {
      if (typeof target === 'string') continue;
      expect({ key, shipped: pkg.files.some((f) => target.default.startsWith(`./${f}/`)) }).toEqual({
        key,
        shipped: true,
      });
      const source = target.default.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts');
      expect({ key, source: existsSync(source) }).toEqual({ key, source: true });
    }
  });

  it('ships LICENSE and the docs, no source maps or sources (the tarball stays under 1 MB), and builds before packing', () => {
    expect(pkg.files).toEqual(expect.arrayContaining(['dist/lib', 'docs/*.md', 'README.md', 'LICENSE']));
    expect(pkg.files).not.toContain('lib');
    const build = JSON.parse(readFileSync('tsconfig.build.json', 'utf8')) as {
      compilerOptions: Record<string, unknown>;
    };
    expect(build.compilerOptions).toMatchObject({ sourceMap: false, declarationMap: false });
    expect(readFileSync('LICENSE', 'utf8')).toContain('MIT License');
    expect(pkg.scripts.prepack).toContain('tsc -p tsconfig.build.json');
  });

  it('every relative link in README.md and docs/*.md names a shipped file, or an image kept in the repository', () => {
    const docs = [
      'README.md',
      ...readdirSync('docs')
        .filter((f) => f.endsWith('.md'))
        .map((f) => `docs/${f}`),
    ];
    const broken: string[] = [];
    for (const md of docs) {
      for (const m of readFileSync(md, 'utf8').matchAll(/\]\(([^)\s]+)\)/g)) {
        const href = m[1]!;
        if (/^[a-z]+:/i.test(href) || href.startsWith('#')) continue;
        const target = join(dirname(md), href.split('#')[0]!);
        // docs/*.md ships the docs' Markdown; docs/img stays in the repository (linked, not shipped).
        const shipped =
          target.startsWith('docs/img/') ||
          pkg.files.some((f) =>
            f.endsWith('/*.md')
              ? dirname(target) === f.slice(0, -'/*.md'.length) && target.endsWith('.md')
              : target === f || target.startsWith(`${f}/`),
          );
        if (!existsSync(target) || !shipped) broken.push(`${md}: ${href}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('has no duplicate keys among the peers (JSON.parse would hide them)', () => {
    const text = readFileSync('package.json', 'utf8');
    for (const block of ['peerDependencies', 'peerDependenciesMeta']) {
      const start = text.indexOf(`"${block}": {`);
      const body = text.slice(start, text.indexOf('\n  }', start));
      const keys = [...body.matchAll(/^ {4}"([^"]+)":/gm)].map((m) => m[1]!);
      expect({ block, keys }).toEqual({ block, keys: [...new Set(keys)] });
    }
  });

  it("README's entry point list names every exported subpath", () => {
    const readme = readFileSync('README.md', 'utf8');
    const list = readme.slice(readme.indexOf('Entry points:'), readme.indexOf('\n\n', readme.indexOf('Entry points:')));
    const missing = Object.keys(pkg.exports)
      .filter((k) => k !== './package.json')
      .map((k) => (k === '.' ? 'nestjs-alkstore' : `nestjs-alkstore/${k.slice(2)}`))
      .filter((specifier) => !list.includes(`\`${specifier}\``));
    expect(missing).toEqual([]);
  });
});
