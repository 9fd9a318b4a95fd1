// The package's public surface: exactly eight entry points, one per audience, and no name exported from two.
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import ts from 'typescript';

/** Subpath → source module, the whole public surface. */
const ENTRIES: Record<string, string> = {
  '.': 'lib/index.ts',
  './nest': 'lib/nest/index.ts',
  './testing': 'lib/nest/testing/index.ts',
  './workflows': 'lib/workflows/index.ts',
  './dashboard': 'lib/dashboard/index.ts',
  './brokers': 'lib/entry/brokers.ts',
  './observability': 'lib/entry/observability.ts',
  './extend': 'lib/entry/extend.ts',
};

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as {
  name: string;
  bin: Record<string, string>;
  exports: Record<string, string | { types: string; default: string }>;
  typesVersions: Record<string, Record<string, string[]>>;
};

let cached: Map<string, string[]> | null = null;

/** Every name (value or type) each entry exports, read by the compiler. */
function exportedNames(): Map<string, string[]> {
  if (cached) return cached;
  const config = ts.getParsedCommandLineOfConfigFile(
    'tsconfig.json',
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
  )!;
  const files = Object.values(ENTRIES).map((f) => resolve(f));
  const program = ts.createProgram(files, { ...config.options, noEmit: true });
  const checker = program.getTypeChecker();
  const names = new Map<string, string[]>();
  for (const [subpath, file] of Object.entries(ENTRIES)) {
    const module = checker.getSymbolAtLocation(program.getSourceFile(resolve(file))!)!;
    names.set(
      subpath,
      checker.getExportsOfModule(module).map((s) => s.name),
    );
  }
  cached = names;
  return names;
}

describe('entry points', () => {
  it('the package is nestjs-alkstore and its CLI binary is still alkstore', () => {
    expect(pkg.name).toBe('nestjs-alkstore');
    expect(Object.keys(pkg.bin)).toEqual(['alkstore']);
  });

  it('package.json exports exactly the eight entries (and ./package.json), in the dist shape of their sources', () => {
    expect(Object.keys(pkg.exports).sort()).toEqual([...Object.keys(ENTRIES), './package.json'].sort());
    expect(pkg.exports['./package.json']).toBe('./package.json');
    for (const [subpath, source] of Object.entries(ENTRIES)) {
      const built = `./dist/${source.replace(/\.ts$/, '')}`;
      expect({ subpath, target: pkg.exports[subpath] }).toEqual({
        subpath,
        target: { types: `${built}.d.ts`, default: `${built}.js` },
      });
      expect({ source, exists: existsSync(source) }).toEqual({ source, exists: true });
      if (subpath !== '.')
        expect({ subpath, types: pkg.typesVersions['*']![subpath.slice(2)] }).toEqual({
          subpath,
          types: [`${built.slice(2)}.d.ts`],
        });
    }
    expect(Object.keys(pkg.typesVersions['*']!).length).toBe(Object.keys(ENTRIES).length - 1);
  });

  it('no name is exported from two entries', () => {
    const owners = new Map<string, string[]>();
    for (const [subpath, names] of exportedNames())
      for (const name of names) owners.set(name, [...(owners.get(name) ?? []), subpath]);
    const twice = [...owners]
      .filter(([, where]) => where.length > 1)
      .map(([name, where]) => `${name}: ${where.join(', ')}`);
    expect(twice).toEqual([]);
  }, 120_000);

  it('every entry loads, and each runtime export is one the compiler lists', async () => {
    const names = exportedNames();
    for (const [subpath, source] of Object.entries(ENTRIES)) {
      const loaded = (await import(pathToFileURL(resolve(source)).href)) as Record<string, unknown>;
      const listed = new Set(names.get(subpath));
      const unlisted = Object.keys(loaded).filter((k) => !listed.has(k));
      expect({ subpath, unlisted }).toEqual({ subpath, unlisted: [] });
      expect(Object.keys(loaded).length).toBeGreaterThan(0);
    }
  }, 120_000);

  it('the extension authors entry says it is unstable', () => {
    expect(readFileSync(ENTRIES['./extend']!, 'utf8')).toMatch(/\*\*Unstable\*\*/);
  });
});
