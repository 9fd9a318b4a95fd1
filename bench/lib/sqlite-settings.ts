import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './util.js';

/**
 * The `synchronous` pragma alkstore's SQLite engine uses, read from its source
 * so plainjob and the physical reference run with the same durability. Falls
 * back to NORMAL (plainjob's own default) when the engine does not set it.
 */
export function alkstoreSqliteSynchronous(): { value: string; source: string } {
  const dir = join(ROOT, 'lib', 'engines', 'sqlite');
  if (!existsSync(dir)) return { value: 'NORMAL', source: 'default (engine source not found)' };
  for (const f of readdirSync(dir)) {
    if (!f.endsWith('.ts')) continue;
    const text = readFileSync(join(dir, f), 'utf8');
    // The engine's default (`synchronous ?? 'full'`), else a literal pragma.
    const m =
      /synchronous\s*\?\?\s*['"](\w+)['"]/.exec(text) ?? /pragma\(\s*['"`]synchronous\s*=\s*(\w+)['"`]/i.exec(text);
    if (m) {
      const raw = m[1]!.toUpperCase();
      const named: Record<string, string> = { '0': 'OFF', '1': 'NORMAL', '2': 'FULL', '3': 'EXTRA' };
      return { value: named[raw] ?? raw, source: `lib/engines/sqlite/${f}` };
    }
  }
  return { value: 'NORMAL', source: 'default (engine sets no synchronous pragma; SQLite WAL default would be FULL)' };
}
