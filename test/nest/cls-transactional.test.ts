import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { generatePrismaClient } from '../adapters/prisma-client.js';
import { PG_URL } from '../helpers/engines.js';
import { nestEngines, type NestDb } from './nest-fixtures.js';

/**
 * @nestjs-cls/transactional 3 is CommonJS and requires Nest 12's ESM packages, which Jest's module
 * runtime cannot load (require(esm)); so the app (test/nest/fixtures/cls-app.ts) is compiled with
 * tsc (decorator metadata) and run under plain Node, and this test reads what each scenario left.
 */
const ROOT = process.cwd();
const OUT = join(ROOT, '.tmp', `cls-${process.pid}`);
const prismaClients: Partial<Record<'postgresql' | 'sqlite', string>> = {};

/** Each ORM with its @nestjs-cls/transactional adapter: TypeORM's, Prisma's, Drizzle's (node-postgres) and, on SQLite, alkstore's DrizzleSqliteTransactionalAdapter. */
const ORMS = ['typeorm', 'prisma', 'drizzle'] as const;

interface Outcome {
  name: string;
  error: string | null;
  ids: number[];
  messages: number[];
}

beforeAll(() => {
  mkdirSync(OUT, { recursive: true });
  const config = join(OUT, 'tsconfig.json');
  writeFileSync(
    config,
    JSON.stringify({
      extends: join(ROOT, 'tsconfig.json'),
      compilerOptions: {
        noEmit: false,
        outDir: OUT,
        rootDir: ROOT,
        types: ['node'],
        declaration: false,
        sourceMap: false,
      },
      files: [join(ROOT, 'test/nest/fixtures/cls-app.ts')],
    }),
  );
  const r = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', config], {
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`compiling the cls app failed: ${r.stdout}${r.stderr}`);
  for (const provider of ['postgresql', 'sqlite'] as const)
    prismaClients[provider] = generatePrismaClient(provider, join(OUT, 'prisma'));
}, 300_000);
afterAll(() => rmSync(OUT, { recursive: true, force: true }));

for (const [orm, engine] of ORMS.flatMap((o) => nestEngines().map((e) => [o, e] as const))) {
  describe(`@nestjs-cls/transactional through AlkstoreTransactionalAdapter + AlkstoreClsTx, ${orm} (${engine.name})`, () => {
    let db: NestDb;
    let outcomes: Map<string, Outcome>;

    beforeAll(async () => {
      db = await engine.create();
      const o = db.moduleOptions();
      const r = spawnSync(process.execPath, [join(OUT, 'test/nest/fixtures/cls-app.js')], {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 120_000,
        env: {
          ...process.env,
          CLS_ORM: orm,
          CLS_URL: o.url!,
          CLS_SCHEMA: o.schema ?? '',
          CLS_PG_URL: PG_URL,
          CLS_TABLE: `cls_orders_${process.pid}_${orm}_${engine.kind}`,
          CLS_PRISMA_CLIENT: prismaClients[engine.kind === 'sqlite' ? 'sqlite' : 'postgresql'] ?? '',
        },
      });
      if (r.status !== 0) throw new Error(`the cls app failed (${r.status}): ${r.stderr}${r.stdout}`);
      outcomes = new Map(
        r.stdout
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as Outcome)
          .map((x) => [x.name, x]),
      );
    }, 180_000);
    afterAll(async () => {
      await db?.destroy();
    });

    it('@Transactional(): the row and the outbox message commit together; a throw rolls both back', () => {
      expect(outcomes.get('commit')).toEqual({ name: 'commit', error: null, ids: [1], messages: [1] });
      expect(outcomes.get('rollback')).toEqual({ name: 'rollback', error: 'Error: fail 2', ids: [1], messages: [] });
    });

    it('outside any @Transactional(), AlkstoreClsTx writes as the store does (committed at once)', () => {
      expect(outcomes.get('outside')).toMatchObject({ error: null, messages: [3] });
    });

    it('REQUIRED inside REQUIRED joins the outer transaction: the outer throw undoes every inner row and message', () => {
      expect(outcomes.get('required-in-required')).toEqual({
        name: 'required-in-required',
        error: 'Error: fail 10',
        ids: [1],
        messages: [],
      });
    });

    it('NESTED (savepoint) that fails is undone alone, its message too; the outer row and message commit', () => {
      expect(outcomes.get('nested')).toEqual({ name: 'nested', error: null, ids: [1, 20], messages: [20] });
    });

    it('MANDATORY outside a transaction is refused before any write', () => {
      expect(outcomes.get('mandatory-outside')).toMatchObject({
        error: expect.stringMatching(/^TransactionNotActiveError/),
        ids: [1, 20],
        messages: [],
      });
    });

    if (engine.kind === 'postgres') {
      it('PostgreSQL: NOT_SUPPORTED inside a failing transaction writes outside it (its message stays, the outer row does not)', () => {
        expect(outcomes.get('not-supported-inside')).toEqual({
          name: 'not-supported-inside',
          error: 'Error: fail 40',
          ids: [1, 20],
          messages: [41],
        });
      });
    } else {
      it('SQLite: NOT_SUPPORTED inside an open transaction is refused (TransactionInProgress: one writer), and the outer transaction rolls back whole', () => {
        expect(outcomes.get('not-supported-inside')).toMatchObject({
          error: expect.stringMatching(/^TransactionInProgress/),
          ids: [1, 20],
          messages: [],
        });
      });
    }

    it('the joined operations kept past the @Transactional() method refuse every write with a typed error after the commit, and write nothing', () => {
      expect(outcomes.get('kept-after-commit')).toMatchObject({
        error: expect.stringMatching(/^(InvalidOption|TransactionNotActive)\b.*/),
        ids: [1, 20, 50],
        messages: [50],
      });
    });

    it('concurrent @Transactional() calls (4 callers, half of them throwing after both writes) stay atomic: every committed row has its message, no rolled-back row has one', () => {
      const c = outcomes.get('concurrent')!;
      const even = Array.from({ length: 24 }, (_, i) => 100 + i).filter((i) => i % 2 === 0);
      expect(c.error).toBeNull();
      expect(c.ids.filter((i) => i >= 100)).toEqual(even);
      expect(c.messages).toEqual(even);
    });
  });
}
