import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The committed test schemas (model Order on table `orders`), one per provider. */
export type PrismaProvider = 'postgresql' | 'sqlite';

/**
 * Generates Prisma 7's client (prisma-client-js with the query compiler: no engine binary) offline
 * from test/adapters/prisma/<provider>.prisma into `outDir`/<provider> and returns its entry file.
 * Each test file generates into a directory of its own, so two files running at once never write
 * the same client.
 */
export function generatePrismaClient(provider: PrismaProvider, outDir: string): string {
  const root = process.cwd();
  const out = join(outDir, provider);
  mkdirSync(outDir, { recursive: true });
  const schema = join(outDir, `${provider}.prisma`);
  const source = readFileSync(join(root, `test/adapters/prisma/${provider}.prisma`), 'utf8');
  writeFileSync(schema, source.replace(/^(\s*output\s*=\s*).*$/m, `$1${JSON.stringify(out)}`));
  execFileSync(process.execPath, [join(root, 'node_modules/prisma/build/index.js'), 'generate', '--schema', schema], {
    env: {
      ...process.env,
      PRISMA_SCHEMA_ENGINE_BINARY: '/bin/true',
      PRISMA_ENGINES_CHECKSUM_IGNORE_MISSING: '1',
      PRISMA_HIDE_UPDATE_MESSAGE: '1',
    },
    stdio: 'pipe',
  });
  return join(out, 'index.js');
}
