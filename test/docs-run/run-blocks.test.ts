// The docs' examples run as printed, from the package a user installs: `npm pack`, one scratch app
// (its own package.json) that installs the tarball and the peers the blocks import, then every
// runnable block (every whole-program block of README.md and docs/brokers.md, the first block of
// every other docs page) written to a file and run with a time limit, one page's blocks in order in
// one directory. A block followed by a ```text prints block must print those lines (`…` matches
// anything); once it has, a program that keeps running (a Nest app) is stopped with SIGTERM. A block
// without one must exit 0. Plain blocks run with tsx (`npx -y tsx file.mts`, as the docs say); a
// `main` block and the module before it are compiled with tsc (Nest needs emitDecoratorMetadata).
// Brokers: NATS :4222, RabbitMQ :5672, Mosquitto :1883, Redis :6379 (CI starts them);
// PostgreSQL at 127.0.0.1:5432/test for the blocks that use it.
import { execFile, spawn } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { firstBlockProblems, printed, runnableBlocks, type RunnableBlock } from './blocks.js';

const root = process.cwd();
// ALKSTORE_DOCS_RUN_KEEP=1 keeps the scratch directory; ALKSTORE_DOCS_RUN_WORK=<that directory> reuses
// its tarball and installed app (no pack, no install: for editing the docs), writing the blocks anew.
const REUSE = process.env.ALKSTORE_DOCS_RUN_WORK;
const work = REUSE ?? mkdtempSync(join(tmpdir(), 'alkstore-docs-run-'));
const app = join(work, 'app');
const KEEP = process.env.ALKSTORE_DOCS_RUN_KEEP === '1' || REUSE !== undefined;
const BLOCK_TIMEOUT_MS = 60_000;

/** What the blocks import, at the versions this checkout tested (so the install hits npm's cache). */
const PEERS = [
  'better-sqlite3',
  'pg',
  '@nestjs/common',
  '@nestjs/core',
  '@nestjs/microservices',
  '@nestjs/typeorm',
  'reflect-metadata',
  'rxjs',
  'typeorm',
  'croner',
  'prom-client',
  'amqplib',
  'mqtt',
  'ioredis',
  '@nats-io/jetstream',
  '@nats-io/transport-node',
  'amqp-connection-manager',
  'tsx',
  'typescript',
  '@types/node',
];

function version(name: string): string {
  return (JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as { version: string })
    .version;
}

function sh(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      cmd,
      args,
      { cwd, env: { ...process.env, NODE_OPTIONS: '', ...env }, maxBuffer: 64 * 1024 * 1024, timeout: 400_000 },
      (err, stdout, stderr) =>
        err ? reject(new Error(`${cmd} ${args.join(' ')}: ${err.message}\n${stdout}\n${stderr}`)) : resolve(stdout),
    );
  });
}

const blocks = runnableBlocks();
const slug = (file: string): string => file.replace(/[/.]/g, '_');
const pageDir = (b: RunnableBlock): string => join(app, 'blocks', slug(b.file));
const line = (b: RunnableBlock): string => b.at.slice(b.at.lastIndexOf(':') + 1);
let packed: { filename: string; size: number } | undefined;
let tscErrors = '';

beforeAll(async () => {
  if (REUSE !== undefined) {
    const filename = readdirSync(work).find((f) => f.endsWith('.tgz'))!;
    packed = { filename, size: statSync(join(work, filename)).size };
    rmSync(join(app, 'blocks'), { recursive: true, force: true });
    rmSync(join(app, 'dist'), { recursive: true, force: true });
  } else await packAndInstall();
  writeBlocks();
  // tsc emits even when it reports errors (test/readme/snippets.test.ts is where they fail): a block
  // that does not compile fails when it runs, with these errors shown.
  if (blocks.some((b) => b.module !== undefined))
    await sh(join(app, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.nest.json'], app).catch((err: Error) => {
      tscErrors = err.message;
    });
}, 900_000);

async function packAndInstall(): Promise<void> {
  const out = await sh('npm', ['pack', '--json', '--pack-destination', work], root);
  packed = (JSON.parse(out.slice(out.indexOf('['))) as { filename: string; size: number }[])[0]!;
  mkdirSync(app, { recursive: true });
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'docs-run', private: true, type: 'module' }, null, 2),
  );
  writeFileSync(
    join(app, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'nodenext',
        moduleResolution: 'nodenext',
        strict: true,
        experimentalDecorators: true,
        emitDecoratorMetadata: true,
        skipLibCheck: true,
        types: ['node'],
        outDir: 'dist',
        rootDir: '.',
      },
    }),
  );
  // tsc compiles the Nest pairs only; tsx (the plain blocks) reads the compiler options above.
  writeFileSync(
    join(app, 'tsconfig.nest.json'),
    JSON.stringify({ extends: './tsconfig.json', include: ['blocks/**/nest-*/*.ts'] }),
  );
  // better-sqlite3's install script looks for a local prebuild first: offer the one this checkout built.
  const env: NodeJS.ProcessEnv = {};
  const prebuilt = join(root, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node');
  if (existsSync(prebuilt)) {
    const dir = join(work, 'prebuilds');
    mkdirSync(join(dir, 'build/Release'), { recursive: true });
    cpSync(prebuilt, join(dir, 'build/Release/better_sqlite3.node'));
    const abi = `${process.versions.modules}-${process.platform}-${process.arch}`;
    await sh(
      'tar',
      ['-czf', join(dir, `better-sqlite3-v${version('better-sqlite3')}-node-v${abi}.tar.gz`), 'build'],
      dir,
    );
    env.npm_config_better_sqlite3_local_prebuilds = dir;
  }
  await sh(
    'npm',
    [
      'install',
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      join(work, packed.filename),
      ...PEERS.map((p) => `${p}@${version(p)}`),
    ],
    app,
    env,
  );
}

/** Writes every block; a Nest module block and its main.ts go to a nest-<line> directory for tsc. */
function writeBlocks(): void {
  for (const b of blocks) {
    const dir = pageDir(b);
    mkdirSync(dir, { recursive: true });
    if (b.module !== undefined) {
      const nestDir = join(dir, `nest-${line(b)}`);
      mkdirSync(nestDir, { recursive: true });
      writeFileSync(join(nestDir, 'app.module.ts'), b.module);
      writeFileSync(join(nestDir, 'main.ts'), b.code);
    } else writeFileSync(join(dir, `block-${line(b)}.mts`), b.code);
  }
}

afterAll(() => {
  if (KEEP) console.log(`docs-run: keeping ${work}`);
  else rmSync(work, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  stoppedAfterPrints: boolean;
  timedOut: boolean;
}

function runBlock(b: RunnableBlock): Promise<Run> {
  const dir = pageDir(b);
  const args =
    b.module !== undefined
      ? [join(app, 'dist/blocks', slug(b.file), `nest-${line(b)}`, 'main.js')]
      : ['--import', 'tsx', join(dir, `block-${line(b)}.mts`)];
  return new Promise((resolve) => {
    const env: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: '' };
    delete env.DATABASE_URL;
    const child = spawn(process.execPath, args, { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const run: Run = { code: null, signal: null, stdout: '', stderr: '', stoppedAfterPrints: false, timedOut: false };
    const timer = setTimeout(() => {
      run.timedOut = true;
      child.kill('SIGKILL');
    }, BLOCK_TIMEOUT_MS);
    child.stdout.on('data', (d: Buffer) => {
      run.stdout += d.toString();
      if (b.prints && !run.stoppedAfterPrints && printed(run.stdout, b.prints).ok) {
        run.stoppedAfterPrints = true;
        child.kill('SIGTERM');
      }
    });
    child.stderr.on('data', (d: Buffer) => (run.stderr += d.toString()));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ ...run, code, signal });
    });
  });
}

describe('the docs run as printed, from the packed tarball', () => {
  it('the tarball npm would publish is at most 1 MB (npm pack --dry-run --json)', async () => {
    expect(packed!.size).toBeLessThanOrEqual(1_000_000);
    // The build is there from the pack above: the dry run needs no second build.
    const out = await sh('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], root);
    const dry = (JSON.parse(out.slice(out.indexOf('['))) as { size: number; files: { path: string }[] }[])[0]!;
    expect(dry.size).toBeLessThanOrEqual(1_000_000);
    expect(dry.files.filter((f) => f.path.startsWith('docs/img/') || f.path.endsWith('.map'))).toEqual([]);
  }, 60_000);

  it('the first block of every docs page is a whole program', () => {
    expect(firstBlockProblems()).toEqual([]);
  });

  it.each(blocks.map((b) => [b.at, b] as const))(
    '%s',
    async (_at, b) => {
      const run = await runBlock(b);
      const compiled = b.module !== undefined && tscErrors ? `\n--- tsc\n${tscErrors}` : '';
      const shown = `exit ${run.code ?? run.signal}${run.timedOut ? ` (killed after ${BLOCK_TIMEOUT_MS} ms)` : ''}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}${compiled}`;
      const ok = b.prints
        ? printed(run.stdout, b.prints).ok && (run.stoppedAfterPrints || run.code === 0)
        : run.code === 0 && !run.timedOut;
      const missing = b.prints ? printed(run.stdout, b.prints).missing : undefined;
      expect({ at: b.at, ok, missing, shown: ok ? '' : shown }).toEqual({
        at: b.at,
        ok: true,
        missing: undefined,
        shown: '',
      });
    },
    BLOCK_TIMEOUT_MS + 30_000,
  );
});
