import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

// Node 20's AbortSignal.any holds its sources weakly: an AbortSignal.timeout given to it can be
// garbage-collected and never fire, so a wait on the composite sleeps forever. lib/ uses abortAfter
// (lib/internal/sleep.ts) instead. This reads every source file's syntax tree (comments are not code)
// and refuses an AbortSignal.timeout(…) passed to AbortSignal.any(…), directly or through a local name.

const LIB = resolve(dirname(fileURLToPath(import.meta.url)), '../../lib');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** `AbortSignal.<method>(…)`. */
function isAbortSignalCall(node: ts.Node, method: string): node is ts.CallExpression {
  if (!ts.isCallExpression(node)) return false;
  const callee = node.expression;
  return (
    ts.isPropertyAccessExpression(callee) &&
    ts.isIdentifier(callee.expression) &&
    callee.expression.text === 'AbortSignal' &&
    callee.name.text === method
  );
}

/** Each `AbortSignal.any(…)` in `text` that is given an `AbortSignal.timeout(…)`, as `file:line`. */
function timeoutsInAny(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  // Local names bound to an AbortSignal.timeout(…): `const t = AbortSignal.timeout(ms)`.
  const timeoutNames = new Set<string>();
  const collect = (node: ts.Node): void => {
    if (
      ts.isVariableDeclaration(node) &&
      ts.isIdentifier(node.name) &&
      node.initializer &&
      isAbortSignalCall(node.initializer, 'timeout')
    )
      timeoutNames.add(node.name.text);
    ts.forEachChild(node, collect);
  };
  collect(source);
  const holdsTimeout = (node: ts.Node): boolean =>
    isAbortSignalCall(node, 'timeout') ||
    (ts.isIdentifier(node) && timeoutNames.has(node.text)) ||
    (ts.forEachChild(node, (c) => (holdsTimeout(c) ? true : undefined)) ?? false);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (isAbortSignalCall(node, 'any') && node.arguments.some(holdsTimeout)) {
      const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
      found.push(`${file}:${line + 1}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('AbortSignal.timeout inside AbortSignal.any', () => {
  it('the check finds the pattern, directly, spread or through a name, and not in comments', () => {
    expect(timeoutsInAny('a.ts', 'const s = AbortSignal.any([stop, AbortSignal.timeout(5)]);')).toEqual(['a.ts:1']);
    expect(timeoutsInAny('b.ts', 'const t = AbortSignal.timeout(5);\nf(AbortSignal.any([...xs, t]));')).toEqual([
      'b.ts:2',
    ]);
    expect(timeoutsInAny('c.ts', '// AbortSignal.any([s, AbortSignal.timeout(5)])\nconst x = 1;')).toEqual([]);
    expect(timeoutsInAny('d.ts', 'await rx.recv(AbortSignal.timeout(5));\nAbortSignal.any([a, b]);')).toEqual([]);
  });

  it('occurs nowhere in lib/', () => {
    const found = sourceFiles(LIB).flatMap((f) => timeoutsInAny(relative(LIB, f), readFileSync(f, 'utf8')));
    expect(found).toEqual([]);
  });
});
