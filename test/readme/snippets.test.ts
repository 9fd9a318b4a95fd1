// Every ```ts block of README.md and docs/*.md type-checks against the
// sources, so the examples cannot rot.
//
// Block kinds, by the words after `ts` in the fence's info string:
//  - ```ts            a complete module: compiled as printed. Names that are
//                     the reader's own (an entity, a transport) are `declare`
//                     lines in the block itself, so a pasted block says what
//                     it needs; nothing is declared globally for the docs.
//  - ```ts fragment   a piece of a module that shows no imports: compiled after
//                     a prelude importing the public names (PRELUDE below).
//  - ```ts member     a class member (a decorated method): compiled inside a
//                     class body, after the prelude.
//  - ```ts main       a `main.ts` that imports the module block before it as
//                     `./app.module.js`: compiled next to that block.
//  - ```ts skip <reason>  not compiled; the reason is required and printed.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import ts from 'typescript';
import { entryPointSources, snippets, type Snippet } from './extract.js';

const PRELUDE = `import { Injectable, Module, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { FileJournalOutboxStore, openStore, openTypeOrm, ReliableOutbox, Store, SyncDriver, type Job, type Outbox, type Queue } from 'nestjs-alkstore';
import { AlkstoreModule, InjectOutbox, InjectQueue, InjectReliableOutbox, OutboxHandler, QueueHandler, ReliableSyncModule, Scheduled } from 'nestjs-alkstore/nest';
`;

const outDir = join(process.cwd(), '.tmp', `snippets-${process.pid}`);
afterAll(() => rmSync(outDir, { recursive: true, force: true }));

function sourceOf(s: Snippet): string | null {
  if (s.flags[0] === 'skip') return null;
  const kind = s.flags[0] ?? 'module';
  if (kind === 'module') return `${s.code}export {};\n`;
  if (kind === 'fragment') return `${PRELUDE}${s.code}export {};\n`;
  if (kind === 'member') return `${PRELUDE}@Injectable()\nexport class Snippet {\n${s.code}}\n`;
  if (kind === 'main') return `${s.code}export {};\n`;
  throw new Error(`${s.file}:${s.line}: unknown snippet kind "${kind}" (use fragment, member or skip <reason>)`);
}

describe('documentation snippets', () => {
  const all = snippets();

  it('there are snippets to check, and every skip says why', () => {
    expect(all.length).toBeGreaterThan(15);
    const skips = all.filter((s) => s.flags[0] === 'skip');
    for (const s of skips)
      expect({ at: `${s.file}:${s.line}`, reason: s.flags.slice(1).join(' ').length > 10 }).toEqual({
        at: `${s.file}:${s.line}`,
        reason: true,
      });
    expect(skips.length).toBeLessThanOrEqual(2);
  });

  it('every ts fence is extracted, indented ones (inside list items) included', () => {
    const fences: string[] = [];
    for (const file of [
      'README.md',
      ...readdirSync('docs')
        .filter((f) => f.endsWith('.md'))
        .map((f) => `docs/${f}`),
    ]) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (/^\s*```(ts|typescript)\b/.test(line)) fences.push(`${file}:${i + 1}`);
        });
    }
    expect(all.map((s) => `${s.file}:${s.line}`).sort()).toEqual(fences.sort());
    expect(
      all.some(
        (s) => s.file === 'docs/README.md' && s.code.startsWith("import type { Queue } from 'nestjs-alkstore';"),
      ),
    ).toBe(true);
  });

  it('every ts block in README.md and docs/*.md type-checks', () => {
    mkdirSync(outDir, { recursive: true });
    const files = new Map<string, Snippet>();
    all.forEach((s, i) => {
      const source = sourceOf(s);
      if (source === null) return;
      let file = join(outDir, `${s.file.replace(/[/.]/g, '_')}_${s.line}_${i}.ts`);
      if (s.flags[0] === 'main') {
        const module = all[i - 1];
        if (!module || module.file !== s.file || (module.flags[0] ?? 'module') !== 'module')
          throw new Error(`${s.file}:${s.line}: a main block follows the module block it imports`);
        const dir = join(outDir, `${s.file.replace(/[/.]/g, '_')}_${s.line}_main`);
        mkdirSync(dir, { recursive: true });
        writeFileSync(join(dir, 'app.module.ts'), sourceOf(module)!);
        file = join(dir, 'main.ts');
      }
      writeFileSync(file, source);
      files.set(file, s);
    });
    const paths: Record<string, string[]> = {};
    for (const [specifier, source] of entryPointSources()) paths[specifier] = [join(process.cwd(), source)];
    const config = ts.getParsedCommandLineOfConfigFile(
      'tsconfig.json',
      {},
      { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
    )!;
    const options: ts.CompilerOptions = {
      ...config.options,
      noEmit: true,
      paths,
      noUnusedLocals: false,
      noUnusedParameters: false,
    };
    const program = ts.createProgram([...files.keys(), join(process.cwd(), 'test/readme/vitest-shim.d.ts')], options);
    const problems = ts
      .getPreEmitDiagnostics(program)
      .filter((d) => d.file && files.has(d.file.fileName))
      .map((d) => {
        const s = files.get(d.file!.fileName)!;
        const { line } = d.file!.getLineAndCharacterOfPosition(d.start ?? 0);
        const prelude =
          s.flags[0] === 'fragment' || s.flags[0] === 'member'
            ? PRELUDE.split('\n').length - 1 + (s.flags[0] === 'member' ? 2 : 0)
            : 0;
        return `${s.file}:${s.line + 1 + line - prelude}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
      });
    const outside = ts.getPreEmitDiagnostics(program).filter((d) => !d.file || !files.has(d.file.fileName));
    expect(problems).toEqual([]);
    expect(
      outside.map(
        (d) =>
          `${d.file ? relative(process.cwd(), d.file.fileName) : ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`,
      ),
    ).toEqual([]);
  }, 120_000);
});
