import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// The import graph of lib/, read from the source: layers only point down, and no value-level cycle.

const LIB = resolve(dirname(fileURLToPath(import.meta.url)), '../../lib');

/** Bottom first: a file may import from its own layer and those below, never from one above. */
const LAYERS: readonly (readonly string[])[] = [['contract'], ['internal'], ['engines', 'worker', 'outbox'], ['nest']];

interface Edge {
  readonly from: string;
  readonly to: string;
  /** `import type` / `export type`, or every named binding marked `type`: erased at run time. */
  readonly typeOnly: boolean;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

// Static imports and re-exports only: `import('…')` loads lazily and cannot close a cycle at load time.
const STATIC = /^\s*(import|export)\s+(type\s+)?([^'";]*?)\s*from\s*['"](\.[^'"]+)['"]/gm;
const SIDE_EFFECT = /^\s*import\s+['"](\.[^'"]+)['"]/gm;

function edgesOf(file: string): Edge[] {
  const text = readFileSync(file, 'utf8');
  const edges: Edge[] = [];
  const target = (spec: string): string => relative(LIB, resolve(dirname(file), spec.replace(/\.js$/, '.ts')));
  for (const m of text.matchAll(STATIC)) {
    const clause = m[3] ?? '';
    const named = /^\{([^}]*)\}$/.exec(clause.trim());
    const allTypeNamed =
      named !== null &&
      named[1]!
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
        .every((s) => s.startsWith('type '));
    edges.push({ from: relative(LIB, file), to: target(m[4]!), typeOnly: m[2] !== undefined || allTypeNamed });
  }
  for (const m of text.matchAll(SIDE_EFFECT))
    edges.push({ from: relative(LIB, file), to: target(m[1]!), typeOnly: false });
  return edges;
}

function layerOf(path: string): number {
  const top = path.split('/')[0]!;
  return LAYERS.findIndex((names) => names.includes(top));
}

const edges = sourceFiles(LIB).flatMap(edgesOf);

describe('lib/ import graph', () => {
  it('reads a graph (the parser finds the imports it checks)', () => {
    expect(edges.length).toBeGreaterThan(300);
    expect(edges.some((e) => e.from === 'contract/index.ts' && e.to === 'contract/errors.ts')).toBe(true);
  });

  it('points only down the layers contract → internal → engines/worker/outbox → nest (type imports included)', () => {
    const upward = edges.filter((e) => {
      const from = layerOf(e.from);
      const to = layerOf(e.to);
      return from >= 0 && to >= 0 && to > from;
    });
    expect(upward.map((e) => `${e.from} → ${e.to}`)).toEqual([]);
  });

  it('has no cycle of value imports', () => {
    const next = new Map<string, string[]>();
    for (const e of edges) if (!e.typeOnly) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const stack: string[] = [];
    const visit = (node: string): void => {
      state.set(node, 'open');
      stack.push(node);
      for (const to of next.get(node) ?? []) {
        if (state.get(to) === 'open') cycles.push([...stack.slice(stack.indexOf(to)), to].join(' → '));
        else if (!state.has(to)) visit(to);
      }
      stack.pop();
      state.set(node, 'done');
    };
    for (const node of next.keys()) if (!state.has(node)) visit(node);
    expect(cycles).toEqual([]);
  });
});
