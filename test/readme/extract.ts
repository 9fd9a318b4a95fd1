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

/** Every ```ts block of README.md and docs/*.md, in file order, indented ones (in list items) included. */
export function snippets(): Snippet[] {
  const files = [
    'README.md',
    ...readdirSync('docs')
      .filter((f) => f.endsWith('.md'))
      .sort()
      .map((f) => `docs/${f}`),
  ];
  const out: Snippet[] = [];
  for (const file of files) {
    const lines = readFileSync(file, 'utf8').split('\n');
    for (let i = 0; i < lines.length; i += 1) {
      // Fences may be indented (a block inside a list item): the body loses the fence's indentation.
      const open = /^( *)```(ts|typescript)\b(.*)$/.exec(lines[i]!);
      if (!open) continue;
      const indent = open[1]!;
      const start = i;
      const body: string[] = [];
      for (i += 1; i < lines.length && !/^ *```\s*$/.test(lines[i]!); i += 1)
        body.push(lines[i]!.startsWith(indent) ? lines[i]!.slice(indent.length) : lines[i]!.trimStart());
      out.push({
        file,
        line: start + 1,
        flags: open[3]!.trim().split(/\s+/).filter(Boolean),
        code: `${body.join('\n')}\n`,
      });
    }
  }
  return out;
}

/** The package's entry points as `specifier → source file` (from package.json `exports`). */
export function entryPointSources(): Map<string, string> {
  const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as {
    exports: Record<string, string | { default: string }>;
  };
  const map = new Map<string, string>();
  for (const [key, target] of Object.entries(pkg.exports)) {
    if (typeof target === 'string') continue;
    const specifier = key === '.' ? 'nestjs-alkstore' : `nestjs-alkstore/${key.slice(2)}`;
    map.set(specifier, target.default.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts'));
  }
  return map;
}
