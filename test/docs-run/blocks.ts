import { readFileSync } from 'node:fs';
import { snippets, type Snippet } from '../readme/extract.js';

/** A block the docs promise runs as printed, with what it must print. */
export interface RunnableBlock {
  /** `README.md:57`: where the (main) block opens. */
  readonly at: string;
  readonly file: string;
  /** The block itself; for a `main` block, the module block before it is `module`. */
  readonly code: string;
  /** The `app.module.ts` a `main` block imports (the module block printed before it). */
  readonly module?: string;
  /** The lines of the ```text prints block after it (`…` matches anything), if there is one. */
  readonly prints: readonly string[] | null;
}

/** Files whose every runnable block runs, not only the first. */
const ALL_BLOCKS = new Set(['README.md', 'docs/brokers.md']);

/** The body of the ```text prints fence that follows the block opening at `line` (1-based), before any other fence. */
export function printsAfter(file: string, line: number): string[] | null {
  const lines = readFileSync(file, 'utf8').split('\n');
  let i = line; // lines[line - 1] is the opening fence
  while (i < lines.length && !/^ *```\s*$/.test(lines[i]!)) i += 1; // its closing fence
  for (i += 1; i < lines.length; i += 1) {
    const fence = /^ *```(\S*)\s*(.*)$/.exec(lines[i]!);
    if (!fence) continue;
    if (fence[1] !== 'text' || fence[2]!.trim() !== 'prints') return null;
    const body: string[] = [];
    for (i += 1; i < lines.length && !/^ *```\s*$/.test(lines[i]!); i += 1) body.push(lines[i]!.trim());
    return body.filter((l) => l.length > 0);
  }
  return null;
}

const kind = (s: Snippet): string => s.flags[0] ?? 'module';

/**
 * The blocks that run: every whole-program block (```ts, or ```ts main with the module before it)
 * of README.md and docs/brokers.md, and the first block of every other docs page. A block that
 * `declare`s names (the reader's store, entity or transport) is a fragment: it is compiled by
 * test/readme/snippets.test.ts, not run. A page whose first block is a fragment is reported by
 * `firstBlockProblems`.
 */
export function runnableBlocks(): RunnableBlock[] {
  const all = snippets();
  const out: RunnableBlock[] = [];
  const firstSeen = new Set<string>();
  all.forEach((s, i) => {
    const first = !firstSeen.has(s.file);
    firstSeen.add(s.file);
    if (!ALL_BLOCKS.has(s.file) && !first) return;
    // A block with `declare` lines names what the reader supplies: a fragment, compiled but not run.
    if (/^declare /m.test(s.code)) return;
    const k = kind(s);
    const next = all[i + 1];
    if (k === 'module' && next && next.file === s.file && kind(next) === 'main') {
      out.push({
        at: `${next.file}:${next.line}`,
        file: s.file,
        code: next.code,
        module: s.code,
        prints: printsAfter(s.file, next.line),
      });
      return;
    }
    if (k !== 'module') return;
    out.push({ at: `${s.file}:${s.line}`, file: s.file, code: s.code, prints: printsAfter(s.file, s.line) });
  });
  return out;
}

/** Docs pages whose first ```ts block is not a whole program. */
export function firstBlockProblems(): string[] {
  const seen = new Set<string>();
  const problems: string[] = [];
  for (const s of snippets()) {
    if (seen.has(s.file)) continue;
    seen.add(s.file);
    if (kind(s) !== 'module') problems.push(`${s.file}:${s.line}: the first block is \`ts ${s.flags.join(' ')}\``);
    else if (/^declare /m.test(s.code))
      problems.push(`${s.file}:${s.line}: the first block declares names it does not define`);
  }
  return problems;
}

/** Whether `raw` (colours removed) shows every `prints` line in order; `…` in a line matches any text (line breaks included). */
export function printed(raw: string, prints: readonly string[]): { ok: boolean; missing?: string } {
  // eslint-disable-next-line no-control-regex -- colours of Nest's logger
  const output = raw.replace(/\x1b\[[0-9;]*m/g, '');
  let from = 0;
  for (const line of prints) {
    const source = line
      .split('…')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('[\\s\\S]*?');
    const re = new RegExp(source, 'g');
    re.lastIndex = from;
    const m = re.exec(output);
    if (!m) return { ok: false, missing: line };
    from = m.index + m[0].length;
  }
  return { ok: true };
}
