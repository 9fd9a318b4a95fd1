// Writes a types-check project for each module resolution mode (nodenext,
// bundler, node10) into the consumer app: one file importing every entry
// point of the installed nestjs-alkstore. A subpath whose types do not resolve is
// TS2307 under that mode.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const app = process.argv[2];
const pkg = JSON.parse(readFileSync(join(app, 'node_modules/nestjs-alkstore/package.json'), 'utf8'));
const specifiers = Object.keys(pkg.exports)
  .filter((k) => k !== './package.json')
  .map((k) => (k === '.' ? 'nestjs-alkstore' : `nestjs-alkstore/${k.slice(2)}`));

const lines = specifiers.map((s, i) => `import * as m${i} from '${s}';`);
lines.push(`export const entryPoints: Record<string, string[]> = {`);
specifiers.forEach((s, i) => lines.push(`  '${s}': Object.keys(m${i}),`));
lines.push('};');
// A few typed uses, so a resolved-but-empty declaration would not pass either.
lines.push(
  `import { openStore, type Job } from 'nestjs-alkstore';`,
  `import { AlkstoreModule, type AlkstoreModuleOptions } from 'nestjs-alkstore/nest';`,
  `export const options: AlkstoreModuleOptions = { url: 'sqlite::memory:' };`,
  `export const mod = AlkstoreModule.forRoot(options);`,
  `export const open: (o: { url: string }) => Promise<{ close(): Promise<void> }> = openStore;`,
  `export type Payload = Job<{ n: number }>['payload']['n'];`,
);

const modes = {
  nodenext: { module: 'nodenext', moduleResolution: 'nodenext' },
  bundler: { module: 'esnext', moduleResolution: 'bundler' },
  node10: { module: 'commonjs', moduleResolution: 'node10' },
};
for (const [mode, opts] of Object.entries(modes)) {
  const dir = join(app, `types-${mode}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'entry-points.ts'), `${lines.join('\n')}\n`);
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify(
      {
        compilerOptions: {
          ...opts,
          target: 'ES2022',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          experimentalDecorators: true,
          esModuleInterop: true,
          types: ['node'],
          typeRoots: ['../node_modules/@types'],
        },
        files: ['entry-points.ts'],
      },
      null,
      2,
    ),
  );
}
console.log(`types check: ${specifiers.length} entry points x ${Object.keys(modes).join(', ')}`);
