import { readFileSync, readdirSync } from 'node:fs';

/** One fenced TypeScript block of a Markdown file. */
export interface Snippet {
  /** `README.md` or `docs/x.md`. */
  readonly file: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  /** Words after `ts` in the info string, e.g. `['fragment']`. */
  readonly flags: readonly string[];
  readonly code: string;
}

/** Every ```ts block of README.md and docs/*.md, in file order. */
export function snippets(): Snippet[] {
  const files = ['README.md', ...readdirSync('docs').filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
  const out: Snippet[] = [];
  for (const file of files) {
    const lines = readFileSync(file, 'utf8').split('\n');
    for (let i = 0; i < lines.length; i += 1) {
      const open = /^```(ts|typescript)\b(.*)$/.exec(lines[i]!);
      if (!open) continue;
      const start = i;
      const body: string[] = [];
      for (i += 1; i < lines.length && !lines[i]!.startsWith('```'); i += 1) body.push(lines[i]!);
      out.push({ file, line: start + 1, flags: open[2]!.trim().split(/\s+/).filter(Boolean), code: `${body.join('\n')}\n` });
    }
  }
  return out;
}

/** The package's entry points as `specifier → source file` (from package.json `exports`). */
export function entryPointSources(): Map<string, string> {
  const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { exports: Record<string, string | { default: string }> };
  const map = new Map<string, string>();
  for (const [key, target] of Object.entries(pkg.exports)) {
    if (typeof target === 'string') continue;
    const specifier = key === '.' ? 'alkstore' : `alkstore/${key.slice(2)}`;
    map.set(specifier, target.default.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts'));
  }
  return map;
}
