import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The version in alkstore's own package.json (found upward from this file: `lib/cli` in the sources, `dist/lib/cli` in the tarball). */
export function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'nestjs-alkstore' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // not here: look one level up
    }
    dir = dirname(dir);
  }
  return 'unknown';
}
