import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { contractEngines, dropPgSchemas, PG_AVAILABLE, PG_URL } from '../helpers/engines.js';

const ROOT = resolve(import.meta.dirname, '../..');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** The CLI entry bundled once for this file (esbuild, as tsx uses): a child process then starts in a fraction of tsx's time. */
let entry = '';
beforeAll(async () => {
  const outDir = join(ROOT, '.tmp', `cli-${process.pid}`);
  mkdirSync(outDir, { recursive: true });
  entry = join(outDir, 'alkstore.mjs');
  const esbuild = await import('esbuild');
  await esbuild.build({
    entryPoints: [join(ROOT, 'lib/cli/main.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    outfile: entry,
    logLevel: 'error',
  });
}, 60_000);
afterAll(() => rmSync(join(ROOT, '.tmp', `cli-${process.pid}`), { recursive: true, force: true }));

/** Runs `alkstore …` as a child process. */
function cli(args: string[], env: Record<string, string> = {}, cwd = ROOT): Promise<Run> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [entry, ...args],
      { cwd, env: { ...process.env, ...env, NODE_OPTIONS: '' }, timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        done({ code, stdout, stderr });
      },
    );
  });
}

/** Makes `n` dead jobs on `queue`. */
async function deadJobs(store: Store, queue: string, n: number): Promise<number[]> {
  const q = store.queue(queue, { maxAttempts: 1 });
  const ids = await q.enqueueMany(Array.from({ length: n }, (_, i) => ({ i })));
  for (const job of await q.claimBatch(n, 'w')) await job.fail(new Error('smtp 550'));
  return ids;
}

for (const engine of contractEngines()) {
  describe(`alkstore CLI as a child process [${engine.name}]`, () => {
    let dir = '';
    let schema = '';
    let url = '';
    let extra: string[] = [];
    let store: Store;

    beforeAll(async () => {
      if (engine.kind === 'sqlite') {
        dir = mkdtempSync(join(tmpdir(), 'alkstore-cli-'));
        url = `sqlite:${join(dir, 'ops.db')}`;
      } else {
        schema = `cli_${process.pid}_${Date.now().toString(36)}`;
        url = PG_URL;
        extra = ['--schema', schema];
      }
      const migrated = await cli(['migrate', '--url', url, ...extra]);
      expect(migrated).toMatchObject({ code: 0 });
      const { openStore } = await import('../../lib/open-store.js');
      store = await openStore({ url, schema: schema || undefined, migrate: false });
    }, 60_000);

    afterAll(async () => {
      await store?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
      if (schema) await dropPgSchemas(schema);
    }, 60_000);

    it('workflows list filters runs by status and name, cancel ends a running run, retry re-drives a failed one, exit 3 for none', async () => {
      const { createWorkflows, defineWorkflow } = await import('../../lib/workflows/index.js');
      const parked = defineWorkflow('cli-parked', { run: async (_i: null, ctx) => ctx.waitForSignal('go') });
      const broken = defineWorkflow('cli-broken', {
        run: async () => {
          throw new Error('nope');
        },
      });
      const w = createWorkflows(store, { workflows: [parked, broken], namespace: 'cli-wf', idlePollIntervalMs: 50 });
      try {
        await w.start(parked, null, { id: 'cli-run-1' });
        await w.start(broken, null, { id: 'cli-run-2' });
        await w.waitForResult('cli-run-2', { timeoutMs: 20_000 }).catch(() => undefined);
        const ns = ['--namespace', 'cli-wf', '--url', url, ...extra];
        const all = await cli(['workflows', 'list', ...ns]);
        expect(all.code).toBe(0);
        expect(all.stdout).toMatch(/^cli-run-1\s+cli-parked\s+1\s+running/m);
        expect(all.stdout).toMatch(/^cli-run-2\s+cli-broken\s+1\s+failed/m);
        const failed = JSON.parse((await cli(['workflows', 'list', '--status', 'failed', '--json', ...ns])).stdout) as {
          id: string;
        }[];
        expect(failed.map((r) => r.id)).toEqual(['cli-run-2']);
        const byName = JSON.parse(
          (await cli(['workflows', 'list', '--name', 'cli-parked', '--json', ...ns])).stdout,
        ) as { id: string }[];
        expect(byName.map((r) => r.id)).toEqual(['cli-run-1']);
        expect((await cli(['workflows', 'list', '--status', 'sleeping', ...ns])).code).toBe(2);
        const cancel = await cli(['workflows', 'cancel', 'cli-run-1', ...ns]);
        expect(cancel).toMatchObject({ code: 0 });
        expect(cancel.stdout).toContain('cancelled workflow run cli-run-1');
        expect((await w.getStatus('cli-run-1'))!.state).toBe('cancelled');
        expect((await cli(['workflows', 'cancel', 'cli-run-1', ...ns])).code).toBe(3);
        expect((await cli(['workflows', 'cancel', 'no-such-run', ...ns])).code).toBe(3);
        const retry = await cli(['workflows', 'retry', 'cli-run-2', '--json', ...ns]);
        expect(JSON.parse(retry.stdout)).toEqual({ id: 'cli-run-2', retried: true });
        expect((await cli(['workflows', 'retry', 'cli-run-1', ...ns])).code).toBe(3);
      } finally {
        await w.close();
      }
    });

    it('prints stats as a table and as JSON', async () => {
      await store.queue('mail').enqueueMany([1, 2]);
      await store.queue('mail').enqueue(3, { delayMs: 3_600_000 });
      await deadJobs(store, 'billing', 2);
      const human = await cli(['stats', '--url', url, ...extra]);
      expect(human.code).toBe(0);
      expect(human.stdout).toMatch(/^queue\s+pending\s+processing\s+scheduled\s+dead/m);
      expect(human.stdout).toMatch(/^mail\s+3\s+0\s+1\s+0/m);
      const json = await cli(['stats', '--json', '--url', url, ...extra]);
      const rows = JSON.parse(json.stdout) as { name: string; pending: number; dead: number; scheduled: number }[];
      expect(rows.find((r) => r.name === 'billing')).toMatchObject({ pending: 0, dead: 2 });
      expect(rows.find((r) => r.name === 'mail')).toMatchObject({ pending: 3, scheduled: 1 });
    });

    it('lists, redrives and purges dead letters, with exit 3 when nothing matched', async () => {
      const [a, b, c] = await deadJobs(store, 'hooks', 3);
      const list = await cli(['dead', 'list', '--queue', 'hooks', '--url', url, ...extra]);
      expect(list.code).toBe(0);
      expect(list.stdout).toContain('smtp 550');
      expect(list.stdout).toMatch(new RegExp(`^\\s*${a}\\s+1\\s`, 'm'));
      const redrive = await cli(['dead', 'redrive', '--queue', 'hooks', '--id', String(a), '--url', url, ...extra]);
      expect(redrive).toMatchObject({ code: 0 });
      expect(await store.queue('hooks').getJob(a!)).toMatchObject({ state: 'pending', attempts: 0 });
      const again = await cli(['dead', 'redrive', '--queue', 'hooks', '--id', String(a), '--url', url, ...extra]);
      expect(again.code).toBe(3);
      const purge = await cli(['dead', 'purge', '--queue', 'hooks', '--all', '--json', '--url', url, ...extra]);
      expect(JSON.parse(purge.stdout)).toEqual({ purged: 2 });
      expect(await store.queue('hooks').getJob(b!)).toBeNull();
      expect(await store.queue('hooks').getJob(c!)).toBeNull();
    });

    it('dead redrive redrives past a held unique key, names the job left dead and exits 4', async () => {
      const q = store.queue('held', { maxAttempts: 1 });
      const held = await q.enqueue({ k: 1 }, { uniqueKey: 'k' });
      const free = await q.enqueue({ k: 2 });
      for (const job of await q.claimBatch(2, 'w')) await job.fail(new Error('x'));
      await q.enqueue({ holder: true }, { uniqueKey: 'k' });
      const human = await cli(['dead', 'redrive', '--queue', 'held', '--id', String(held), '--url', url, ...extra]);
      expect(human.code).toBe(4);
      expect(human.stdout).toContain(
        `redrove 0 dead jobs of queue "held"; 1 stayed dead, their unique key held by a live job: ${held}`,
      );
      const json = await cli(['dead', 'redrive', '--queue', 'held', '--all', '--json', '--url', url, ...extra]);
      expect(json.code).toBe(4);
      expect(JSON.parse(json.stdout)).toEqual({ redriven: 1, conflicts: 1, conflictIds: [held] });
      expect(await q.getJob(free)).toMatchObject({ state: 'pending' });
    });

    it('lists and triggers schedules', async () => {
      await store.schedule('nightly', '@every 1d', 'reports', { kind: 'nightly' });
      const list = await cli(['schedules', 'list', '--url', url, ...extra]);
      expect(list.code).toBe(0);
      expect(list.stdout).toMatch(/^leader: none/m);
      expect(list.stdout).toMatch(/^nightly\s+@every 1d\s+UTC\s+reports/m);
      const trig = await cli(['schedules', 'trigger', 'nightly', '--json', '--url', url, ...extra]);
      expect(trig.code).toBe(0);
      const { jobId } = JSON.parse(trig.stdout) as { jobId: number };
      expect(await store.queue('reports').getJob(jobId)).toMatchObject({
        state: 'pending',
        payload: { kind: 'nightly' },
      });
      expect((await cli(['schedules', 'trigger', 'weekly', '--url', url, ...extra])).code).toBe(3);
      expect((await cli(['schedules', 'pause', 'nightly', '--url', url, ...extra])).code).toBe(0);
      expect((await store.getSchedule('nightly'))?.paused).toBe(true);
    });

    it('pauses and resumes a queue on every replica', async () => {
      const q = store.queue('paused-q');
      await q.enqueue({ n: 1 });
      const run = await cli(['queue', 'pause', 'paused-q', '--url', url, ...extra]);
      expect(run.code).toBe(0);
      expect((await q.settings()).paused).toBe(true);
      expect((await cli(['queue', 'resume', 'paused-q', '--url', url, ...extra])).code).toBe(0);
      expect((await q.settings()).paused).toBe(false);
    });

    it('queue pause refuses a queue it does not know (exit 3, nothing created) unless --force', async () => {
      const typo = await cli(['queue', 'pause', 'nosuchqueue', '--url', url, ...extra]);
      expect(typo.code).toBe(3);
      expect(typo.stderr).toContain('no queue "nosuchqueue"');
      expect(typo.stderr).toContain('--force');
      expect(await store.admin().queueNames()).not.toContain('nosuchqueue');
      const forced = await cli(['queue', 'pause', 'before-first-job', '--force', '--url', url, ...extra]);
      expect(forced.code).toBe(0);
      expect((await store.queue('before-first-job').settings()).paused).toBe(true);
    });

    it('dead commands name an unknown queue or outbox and exit 3', async () => {
      const run = await cli(['dead', 'list', '--queue', 'nosuch', '--url', url, ...extra]);
      expect(run.code).toBe(3);
      expect(run.stderr).toContain('no queue "nosuch"');
      const box = await cli(['dead', 'purge', '--outbox', 'nosuch-box', '--all', '--url', url, ...extra]);
      expect(box.code).toBe(3);
      expect(box.stderr).toContain('no outbox "nosuch-box"');
    });

    it("--outbox reaches an outbox's dead letters without the reserved queue name", async () => {
      const outbox = store.outbox('order-created', { maxAttempts: 1 });
      const id = await outbox.enqueue({ orderId: 7 });
      for (const job of await outbox.queue.claimBatch(1, 'w')) await job.fail(new Error('broker said no'));
      const list = await cli(['dead', 'list', '--outbox', 'order-created', '--url', url, ...extra]);
      expect(list.code).toBe(0);
      expect(list.stdout).toContain('broker said no');
      expect(list.stdout).toContain('{"orderId":7}');
      const redrive = await cli([
        'dead',
        'redrive',
        '--outbox',
        'order-created',
        '--id',
        String(id),
        '--url',
        url,
        ...extra,
      ]);
      expect(redrive).toMatchObject({ code: 0 });
      expect(redrive.stdout).toContain('redrove 1 dead job of outbox "order-created"');
      expect(await outbox.queue.getJob(id)).toMatchObject({ state: 'pending' });
      const both = await cli(['dead', 'list', '--outbox', 'order-created', '--queue', 'x', '--url', url, ...extra]);
      expect(both.code).toBe(2);
    });

    it('dead purge and redrive --dry-run say what they would change and change nothing', async () => {
      const [a] = await deadJobs(store, 'dry', 2);
      const dry = await cli(['dead', 'purge', '--queue', 'dry', '--all', '--dry-run', '--url', url, ...extra]);
      expect(dry.code).toBe(0);
      expect(dry.stdout).toContain('would purge 2 dead jobs of queue "dry"; nothing changed');
      const one = await cli([
        'dead',
        'redrive',
        '--queue',
        'dry',
        '--id',
        String(a),
        '--dry-run',
        '--json',
        '--url',
        url,
        ...extra,
      ]);
      expect(JSON.parse(one.stdout)).toEqual({ dryRun: true, wouldRedrive: 1, ids: [a] });
      expect((await store.queue('dry').stats()).dead).toBe(2);
    });

    it('on a terminal, dead purge asks first: "n" changes nothing, "y" (or --yes) purges', async () => {
      await deadJobs(store, 'tty', 2);
      const no = await onTerminal(['dead', 'purge', '--queue', 'tty', '--all', '--url', url, ...extra], 'n\n');
      expect(no.output).toContain('purge 2 dead jobs of queue "tty" (deleted for good)? [y/N]');
      expect(no.output).toContain('not confirmed: nothing changed');
      expect(no.code).toBe(1);
      expect((await store.queue('tty').stats()).dead).toBe(2);
      const yes = await onTerminal(['dead', 'purge', '--queue', 'tty', '--all', '--url', url, ...extra], 'y\n');
      expect(yes.code).toBe(0);
      expect(yes.output).toContain('purged 2 dead jobs of queue "tty"');
      expect((await store.queue('tty').stats()).dead).toBe(0);
      await deadJobs(store, 'tty', 1);
      const skip = await onTerminal(['dead', 'purge', '--queue', 'tty', '--all', '--yes', '--url', url, ...extra], '');
      expect(skip.output).not.toContain('[y/N]');
      expect(skip.code).toBe(0);
    });
  });
}

/** Runs `alkstore …` on a pseudo-terminal (util-linux `script`), typing `input`. */
function onTerminal(args: string[], input: string): Promise<{ code: number; output: string }> {
  const quoted = [process.execPath, entry, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
  return new Promise((done) => {
    const child = spawn('script', ['-qec', quoted, '/dev/null'], {
      cwd: ROOT,
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => {
      output += d.toString();
      if (input && output.includes('[y/N]')) {
        child.stdin.write(input);
        input = '';
      }
    });
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('close', (code) => done({ code: code ?? 1, output }));
  });
}

describe('alkstore CLI on an empty database', () => {
  it('migrate says what it applied, then that nothing was needed (SQLite)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'alkstore-cli-'));
    try {
      const u = `sqlite:${join(dir, 'fresh.db')}`;
      const first = await cli(['migrate', '--url', u]);
      expect(first.code).toBe(0);
      expect(first.stdout).toMatch(/created the alkstore tables \(schema version \d+\)/);
      expect(first.stdout).toMatch(/^applied 1 step; schema version (\d+) \(sqlite\)$/m);
      const version = /schema version (\d+) \(sqlite\)/.exec(first.stdout)![1];
      expect(first.stdout).toContain(`created the alkstore tables (schema version ${version})`);
      expect(first.stdout).toMatch(
        /number their schemas separately: this build has PostgreSQL version \d+, SQLite version \d+/,
      );
      const again = await cli(['migrate', '--url', u]);
      expect(again.stdout).toContain(
        `applied 0 steps; schema version ${version} (sqlite): up to date, nothing applied`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  (PG_AVAILABLE ? it : it.skip)(
    'migrate says which migrations it applied, then that nothing was needed (PostgreSQL)',
    async () => {
      const schema = `cli_fresh_${process.pid}_${Date.now().toString(36)}`;
      try {
        const first = await cli(['migrate', '--url', PG_URL, '--schema', schema, '--json']);
        expect(first.code).toBe(0);
        const applied = (JSON.parse(first.stdout) as { applied: string[] }).applied;
        expect(applied.length).toBeGreaterThan(1);
        expect(applied[0]).toMatch(/^applied migration 1 \(.+\) to schema/);
        const version = (JSON.parse(first.stdout) as { schemaVersion: number }).schemaVersion;
        expect(version).toBe(Number(/applied migration (\d+)/.exec(applied.at(-1)!)![1]));
        const again = await cli(['migrate', '--url', PG_URL, '--schema', schema]);
        expect(again.stdout).toContain(
          `applied 0 steps; schema version ${version} (postgres, schema ${schema}): up to date`,
        );
      } finally {
        await dropPgSchemas(schema);
      }
    },
  );

  (PG_AVAILABLE ? it : it.skip)(
    'an unmigrated PostgreSQL schema is explained as `alkstore migrate` (engine-only: SQLite creates its tables)',
    async () => {
      const run = await cli(['stats', '--url', PG_URL, '--schema', `cli_never_${process.pid}`]);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain('has no alkstore tables');
      expect(run.stderr).toContain('run `alkstore migrate` with the same --url and --schema');
      expect(run.stderr).not.toContain('postgresMigrationSql');
    },
  );

  (PG_AVAILABLE ? it : it.skip)(
    'a PostgreSQL database that does not exist (SQLSTATE 3D000) says createdb',
    async () => {
      const base = new URL(PG_URL);
      base.pathname = '/no_such_db_cli';
      const run = await cli(['stats', '--url', base.toString()]);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(
        `createdb -h ${base.hostname}${base.port ? ` -p ${base.port}` : ''}${base.username ? ` -U ${base.username}` : ''} no_such_db_cli`,
      );
    },
  );
});

describe('alkstore CLI errors', () => {
  it('--version prints the package version', async () => {
    const run = await cli(['--version']);
    expect(run.code).toBe(0);
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(run.stdout.trim()).toBe(`alkstore ${pkg.version}`);
    expect((await cli(['-v'])).stdout.trim()).toBe(`alkstore ${pkg.version}`);
  });

  it('migrate --print needs no --url with --engine', async () => {
    const pg = await cli(['migrate', '--print', '--engine', 'postgres', '--schema', 'ops_print'], { ALKSTORE_URL: '' });
    expect(pg.code).toBe(0);
    expect(pg.stdout).toContain('CREATE TABLE "ops_print".jobs');
    const lite = await cli(['migrate', '--print', '--engine', 'sqlite'], { ALKSTORE_URL: '' });
    expect(lite.stdout).toContain('CREATE TABLE IF NOT EXISTS __alkstore_jobs');
    const none = await cli(['migrate', '--print'], { ALKSTORE_URL: '' });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('--engine sqlite|postgres');
  });

  it('a malformed --schema exits 2 before any connection', async () => {
    const run = await cli(['stats', '--url', 'postgres://nobody@127.0.0.1:1/none', '--schema', 'bad-name!']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--schema "bad-name!"');
    expect(run.stderr).not.toContain('cannot open');
  });

  it('prints the migration SQL without touching a database', async () => {
    const pg = await cli([
      'migrate',
      '--print',
      '--url',
      'postgres://nobody@127.0.0.1:1/none',
      '--schema',
      'ops_print',
    ]);
    expect(pg.code).toBe(0);
    expect(pg.stdout).toContain('CREATE TABLE "ops_print".jobs');
    const lite = await cli(['migrate', '--print', '--url', 'sqlite:/nonexistent/dir/x.db']);
    expect(lite.stdout).toContain('CREATE TABLE IF NOT EXISTS __alkstore_jobs');
  });

  it('exits 2 on usage errors, with the usage text', async () => {
    const unknown = await cli(['frobnicate', '--url', 'sqlite:x.db']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('Usage: alkstore');
    expect((await cli(['dead', 'redrive', '--queue', 'q', '--url', 'sqlite:x.db'])).code).toBe(2);
    expect((await cli(['stats'], { ALKSTORE_URL: '' })).code).toBe(2);
  });

  it('never prints the password of a bad URL or an unreachable database', async () => {
    const bad = await cli(['stats', '--url', 'mysql://root:hunter2pw@db.example/app']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('unsupported scheme "mysql:"');
    expect(bad.stderr + bad.stdout).not.toContain('hunter2pw');
    const down = await cli(['stats', '--url', 'postgres://postgres:hunter2pw@127.0.0.1:1/test']);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/cannot open the database/);
    expect(down.stderr + down.stdout).not.toContain('hunter2pw');
    if (PG_AVAILABLE) {
      const wrongDb = await cli(['stats', '--url', `${PG_URL.replace(/\/[^/]*$/, '')}/no_such_db_ops`]);
      expect(wrongDb.code).toBe(1);
      expect(wrongDb.stderr).toMatch(/no_such_db_ops/);
    }
  });

  it('migrate creates a SQLite file in a directory that does not exist yet (sqlite:./newdir/x.db)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'alkstore-cli-'));
    try {
      const run = await cli(['migrate', '--url', 'sqlite:./newdir/deeper/x.db'], {}, dir);
      expect(run).toMatchObject({ code: 0, stderr: '' });
      expect(existsSync(join(dir, 'newdir', 'deeper', 'x.db'))).toBe(true);
      const stats = await cli(['stats', '--url', 'sqlite:./newdir/deeper/x.db'], {}, dir);
      expect(stats.code).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a sqlite:// URL with a user, password or host before creating anything', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'alkstore-cli-'));
    try {
      for (const url of ['sqlite://u:hunter2pw@host/x.db', 'sqlite://host/x.db']) {
        const run = await cli(['migrate', '--url', url], {}, dir);
        expect(run.code).toBe(2);
        expect(run.stderr).toContain('after "sqlite://"');
        expect(run.stderr + run.stdout).not.toContain('hunter2pw');
        expect(readdirSync(dir)).toEqual([]);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a missing SQLite file instead of creating it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'alkstore-cli-'));
    try {
      const run = await cli(['stats', '--url', `sqlite:${join(dir, 'absent.db')}`]);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain('no SQLite database at');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
