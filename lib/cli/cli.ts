import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { AlkstoreError } from '../contract/errors.js';
import { outboxQueueName } from '../contract/names.js';
import type { Store, StoreLogger } from '../contract/types.js';
import { validatePgSchema } from '../contract/validate.js';
import { queueRows, setPaused, type QueueRow } from '../dashboard/data.js';
import { POSTGRES_SCHEMA_VERSION } from '../engines/postgres/migrations.js';
import { SCHEMA_VERSION as SQLITE_SCHEMA_VERSION } from '../engines/sqlite/migrations.js';
import { engineOfUrl, sqlitePathOfUrl } from '../open-store.js';
import { deadCommand } from './dead.js';
import { openForCli, Outcome, UsageError } from './open-db.js';
import { redact } from './redact.js';
import { table } from './table.js';
import { packageVersion } from './version.js';

/** Exit codes of `alkstore`. */
export const EXIT = Object.freeze({
  /** Done. */
  ok: 0,
  /** The database could not be opened or an operation failed. */
  failed: 1,
  /** Bad command line: unknown command, missing or invalid option, malformed URL. */
  usage: 2,
  /** Nothing matched: no such schedule, the job is not dead, no such job. */
  notFound: 3,
  /** A redrive left some dead jobs dead: a live job holds their unique key (the rest were redriven). */
  conflict: 4,
});

export const USAGE = `Usage: alkstore <command> [options]

Commands:
  migrate                                         apply the engine schema and say what was applied
  migrate --print [--engine sqlite|postgres]      print the schema SQL (no database needed)
  stats                                           every queue: pending, processing, scheduled, dead, oldest ready, last hour
  dead list (--queue Q | --outbox O) [--limit N] [--cursor C]
                                                  dead letters of a queue or outbox (oldest first, keyset paged)
  dead redrive (--queue Q | --outbox O) (--id ID... | --all) [--dry-run] [--yes]
                                                  dead jobs back to pending, attempts reset
  dead purge (--queue Q | --outbox O) (--id ID... | --all) [--dry-run] [--yes]
                                                  delete dead jobs
  schedules list                                  schedules with spec, zone, next fire, and the leader
  schedules trigger NAME                          enqueue one job of a schedule now
  schedules pause NAME | schedules resume NAME    stop / restart a schedule's firing (every replica)
  queue pause NAME | queue resume NAME [--force]  stop / restart handing out a queue's jobs (every replica);
                                                  --force: a queue that has no jobs yet
  dashboard --token-env VAR [--port N] [--host H] serve the operator dashboard (see alkstore dashboard --help)
  workflows list [--status S] [--name W] [--namespace NS] [--limit N]
                                                  workflow runs (oldest start first); S: running, completed, failed, cancelled
  workflows show ID [--namespace NS]             a run: input, steps with timings and attempts, error with stack
  workflows cancel ID | workflows retry ID [--namespace NS]
                                                  cancel a running run (and its children) / re-drive a failed one

Options:
  --url URL       sqlite:<path>, a file path, postgres://… or postgresql://… (default: $ALKSTORE_URL)
  --schema NAME   PostgreSQL schema (default alkstore)
  --json          machine-readable output on stdout
  --dry-run       dead redrive / purge: say what would change, change nothing
  -y, --yes       dead redrive / purge: do not ask (on a terminal they ask first)
  -v, --version   the alkstore version
  -h, --help      this text

Exit codes: 0 done, 1 failed (database, or not confirmed), 2 usage, 3 nothing matched (no such queue, schedule, dead job or workflow run).`;

/** Where the CLI writes; tests pass their own. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  env: Readonly<Record<string, string | undefined>>;
  /**
   * Asks the operator a yes/no question; present only when the CLI runs on a
   * terminal (`bin` sets it when stdin and stdout are TTYs). Without it,
   * destructive commands act at once, as in scripts.
   */
  confirm?: (question: string) => Promise<boolean>;
}

/** One parsed command line. */
export interface Parsed {
  command: string[];
  url: string | undefined;
  schema: string | undefined;
  engine: 'sqlite' | 'postgres' | undefined;
  json: boolean;
  print: boolean;
  /** `--queue`, or the backing queue of `--outbox`. */
  queue: string | undefined;
  /** What the operator named: `queue "x"` or `outbox "y"`. */
  queueLabel: string;
  ids: number[];
  all: boolean;
  limit: number;
  cursor: string | undefined;
  dryRun: boolean;
  yes: boolean;
  force: boolean;
  /** `workflows`: `--status`, `--name`, `--namespace`. */
  status: string | undefined;
  workflowName: string | undefined;
  namespace: string | undefined;
  help: boolean;
  version: boolean;
}

/**
 * The commands and their subcommands (`null`: none). `takesName`: the
 * subcommands that need a NAME argument. A new command adds a row here and a
 * case in `runCommand` (or its own module, as `dead` does).
 */
export const COMMANDS: Readonly<Record<string, { subs: readonly string[] | null; takesName?: readonly string[] }>> = {
  migrate: { subs: null },
  stats: { subs: null },
  dead: { subs: ['list', 'redrive', 'purge'] },
  schedules: { subs: ['list', 'trigger', 'pause', 'resume'], takesName: ['trigger', 'pause', 'resume'] },
  queue: { subs: ['pause', 'resume'], takesName: ['pause', 'resume'] },
  workflows: { subs: ['list', 'show', 'cancel', 'retry'], takesName: ['show', 'cancel', 'retry'] },
};

function parse(argv: readonly string[], env: CliIo['env']): Parsed {
  let values;
  let positionals;
  try {
    ({ values, positionals } = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        url: { type: 'string' },
        schema: { type: 'string' },
        json: { type: 'boolean' },
        print: { type: 'boolean' },
        engine: { type: 'string' },
        queue: { type: 'string' },
        outbox: { type: 'string' },
        id: { type: 'string', multiple: true },
        all: { type: 'boolean' },
        limit: { type: 'string' },
        cursor: { type: 'string' },
        'dry-run': { type: 'boolean' },
        yes: { type: 'boolean', short: 'y' },
        force: { type: 'boolean' },
        status: { type: 'string' },
        name: { type: 'string' },
        namespace: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    }));
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  const ids = (values.id ?? []).map((text) => {
    if (!/^\d{1,16}$/.test(text) || !Number.isSafeInteger(Number(text)))
      throw new UsageError(`--id must be a job id (a positive integer), got ${JSON.stringify(text)}`);
    return Number(text);
  });
  const limitText = values.limit ?? '50';
  const limit = Number(limitText);
  if (!/^\d+$/.test(limitText) || limit < 1 || limit > 1000)
    throw new UsageError(`--limit must be an integer in 1..1000, got ${JSON.stringify(limitText)}`);
  if (values.schema !== undefined) {
    try {
      validatePgSchema('--schema', values.schema);
    } catch (err) {
      throw new UsageError(
        `--schema ${JSON.stringify(values.schema)}: ${err instanceof AlkstoreError ? err.message.replace(/^option --schema /, '') : String(err)}`,
      );
    }
  }
  if (values.engine !== undefined && values.engine !== 'sqlite' && values.engine !== 'postgres') {
    throw new UsageError(`--engine must be sqlite or postgres, got ${JSON.stringify(values.engine)}`);
  }
  if (values.queue !== undefined && values.outbox !== undefined)
    throw new UsageError('--queue and --outbox are exclusive: name one');
  for (const [flag, v] of [
    ['--queue', values.queue],
    ['--outbox', values.outbox],
  ] as const) {
    if (v !== undefined && v.trim().length === 0) throw new UsageError(`${flag} needs a name`);
  }
  return {
    command: positionals,
    url: values.url ?? (env.ALKSTORE_URL || undefined),
    schema: values.schema,
    engine: values.engine as 'sqlite' | 'postgres' | undefined,
    json: values.json === true,
    print: values.print === true,
    queue: values.outbox !== undefined ? outboxQueueOf(values.outbox) : values.queue,
    queueLabel:
      values.outbox !== undefined ? `outbox ${JSON.stringify(values.outbox)}` : `queue ${JSON.stringify(values.queue)}`,
    ids,
    all: values.all === true,
    limit,
    cursor: values.cursor,
    dryRun: values['dry-run'] === true,
    yes: values.yes === true,
    force: values.force === true,
    status: values.status,
    workflowName: values.name,
    namespace: values.namespace,
    help: values.help === true,
    version: values.version === true,
  };
}

function outboxQueueOf(outbox: string): string {
  try {
    return outboxQueueName(outbox);
  } catch (err) {
    throw new UsageError(`--outbox: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Runs one command; resolves to the process exit code. Never prints the URL's password. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  if (argv[0] === 'dashboard') return (await import('./dashboard-command.js')).runDashboardCommand(argv.slice(1), io);
  let p: Parsed | undefined;
  try {
    p = parse(argv, io.env);
    if (p.version) {
      io.out(p.json ? JSON.stringify({ version: packageVersion() }) : `alkstore ${packageVersion()}`);
      return EXIT.ok;
    }
    if (p.help || p.command.length === 0) {
      io.out(USAGE);
      return p.help ? EXIT.ok : EXIT.usage;
    }
    return await dispatch(p, io);
  } catch (err) {
    const url = p?.url;
    if (err instanceof UsageError) {
      io.err(`alkstore: ${redact(err.message, url)}\n\n${USAGE}`);
      return EXIT.usage;
    }
    if (err instanceof Outcome) {
      io.err(`alkstore: ${redact(err.message, url)}`);
      return err.code;
    }
    const message = err instanceof Error ? err.message : String(err);
    io.err(`alkstore: ${redact(message, url)}`);
    return err instanceof AlkstoreError && err.code === 'INVALID_OPTION' && /url/.test(message)
      ? EXIT.usage
      : EXIT.failed;
  }
}

async function dispatch(p: Parsed, io: CliIo): Promise<number> {
  const [cmd, sub, arg, ...extra] = p.command;
  const spec = COMMANDS[cmd!];
  if (spec === undefined || !Object.hasOwn(COMMANDS, cmd!))
    throw new UsageError(`unknown command ${JSON.stringify(cmd)}`);
  const subs = spec.subs;
  if (subs && !subs.includes(sub ?? '')) throw new UsageError(`${cmd} needs one of: ${subs.join(', ')}`);
  const wantsArg = spec.takesName?.includes(sub ?? '') ?? false;
  if (wantsArg && !arg) throw new UsageError(`${cmd} ${sub} needs a name`);
  if ((!subs && sub !== undefined) || (!wantsArg && arg !== undefined) || extra.length > 0)
    throw new UsageError(`unexpected argument ${JSON.stringify(subs ? (wantsArg ? extra[0] : arg) : sub)}`);
  if (cmd === 'dead' && !p.queue) throw new UsageError(`dead ${sub} needs --queue or --outbox`);
  if (cmd === 'dead' && sub !== 'list' && p.all === p.ids.length > 0)
    throw new UsageError(`dead ${sub} needs either --id (one or more) or --all`);
  if (cmd === 'migrate' && p.print && (p.url === undefined || p.engine !== undefined)) return printSchema(p, io);
  if (!p.url)
    throw new UsageError(
      `--url is required (or set ALKSTORE_URL)${cmd === 'migrate' ? '; `migrate --print --engine sqlite|postgres` needs none' : ''}`,
    );
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]+):/.exec(p.url)?.[1]?.toLowerCase();
  if (scheme !== undefined && !['sqlite', 'postgres', 'postgresql'].includes(scheme)) {
    throw new UsageError(
      `--url has the unsupported scheme "${scheme.slice(0, 32)}:"; use sqlite:<path>, a file path, or postgres://user@host:5432/db`,
    );
  }
  const engine = engineOfUrl(p.url);
  if (cmd === 'migrate' && p.print) return printSchema({ ...p, engine }, io);
  if (engine === 'sqlite' && cmd !== 'migrate') {
    const path = sqlitePathOfUrl(p.url);
    if (path !== ':memory:' && !existsSync(path))
      throw new Outcome(
        EXIT.failed,
        `no SQLite database at ${JSON.stringify(path)} (create it with: alkstore migrate --url ${p.url})`,
      );
  }
  const applied: string[] = [];
  const logger: StoreLogger = {
    log: (m) => applied.push(m),
    warn: (m) => io.err(redact(m, p.url)),
    error: (m) => io.err(redact(m, p.url)),
  };
  const store = await openForCli(p.url, p.schema, cmd === 'migrate', logger);
  try {
    if (cmd === 'migrate') return migrated(store, p, io, applied);
    return await runCommand(store, p, io, cmd!, sub, arg);
  } finally {
    await store.close();
  }
}

async function printSchema(p: Parsed, io: CliIo): Promise<number> {
  if (p.engine === undefined) throw new UsageError('migrate --print needs --engine sqlite|postgres (or --url)');
  if (p.url !== undefined && engineOfUrl(p.url) !== p.engine)
    throw new UsageError(`--engine ${p.engine} does not match the engine of --url`);
  io.out(
    p.engine === 'postgres'
      ? (await import('../engines/postgres/index.js')).postgresMigrationSql(p.schema ?? 'alkstore')
      : (await import('../engines/sqlite/index.js')).sqliteSchemaSql(),
  );
  return EXIT.ok;
}

/**
 * `migrate`: what the open applied (the engines log each step), then "applied N steps; schema version V".
 * The engines number their schemas separately: PostgreSQL counts its numbered migrations, SQLite the
 * steps of its `__alkstore_*` tables (a new file gets every step at once, one "created the tables").
 */
function migrated(store: Store, p: Parsed, io: CliIo, logLines: readonly string[]): number {
  const steps = logLines
    .filter((m) => /\b(applied migration|created the alkstore tables)\b/.test(m))
    .map((m) => m.replace(/^alkstore (postgres|sqlite): /, ''));
  const version = store.engine === 'postgres' ? POSTGRES_SCHEMA_VERSION : SQLITE_SCHEMA_VERSION;
  const where = `${store.engine}${store.engine === 'postgres' ? `, schema ${p.schema ?? 'alkstore'}` : ''}`;
  const summary = `applied ${steps.length} step${steps.length === 1 ? '' : 's'}; schema version ${version} (${where})`;
  const numbering =
    '(PostgreSQL and SQLite number their schemas separately: this build has ' +
    `PostgreSQL version ${POSTGRES_SCHEMA_VERSION}, SQLite version ${SQLITE_SCHEMA_VERSION})`;
  const human =
    steps.length === 0
      ? `${summary}: up to date, nothing applied\n${numbering}`
      : `${steps.join('\n')}\n${summary}\n${numbering}`;
  io.out(
    p.json
      ? JSON.stringify({ engine: store.engine, migrated: true, applied: steps, schemaVersion: version }, null, 2)
      : human,
  );
  return EXIT.ok;
}

/** A queue the store knows (it has or had jobs, counters or settings), else exit 3 naming it. */
export async function requireKnownQueue(store: Store, name: string, label: string): Promise<void> {
  const names = await store.admin().queueNames();
  if (names.includes(name)) return;
  const shown = names.filter((n) => !n.startsWith('__alkstore_')).slice(0, 10);
  throw new Outcome(
    EXIT.notFound,
    `no ${label}: it has no jobs and no settings in this database${shown.length ? ` (queues: ${shown.join(', ')})` : ''}`,
  );
}

function iso(ms: number | null): string {
  return ms === null ? '-' : new Date(ms).toISOString().replace('.000Z', 'Z');
}

function age(ms: number): string {
  if (ms <= 0) return '-';
  if (ms < 120_000) return `${Math.round(ms / 1000)}s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)}m`;
  return `${Math.round(ms / 3_600_000)}h`;
}

async function runCommand(
  store: Store,
  p: Parsed,
  io: CliIo,
  cmd: string,
  sub: string | undefined,
  arg: string | undefined,
): Promise<number> {
  const emit = (json: unknown, human: string) => io.out(p.json ? JSON.stringify(json, null, 2) : human);
  switch (cmd) {
    case 'stats': {
      const { rows } = await queueRows(store, await store.now());
      const shown: QueueRow[] = p.queue ? rows.filter((r) => r.name === p.queue) : rows;
      emit(
        shown,
        shown.length === 0
          ? 'no queues'
          : table(
              ['queue', 'pending', 'processing', 'scheduled', 'dead', 'oldest ready', 'done 1h', 'failed 1h', 'state'],
              shown.map((r) => [
                r.name,
                r.pending,
                r.processing,
                r.scheduled,
                r.dead,
                age(r.oldestReadyAgeMs),
                r.completedLastHour,
                r.failedLastHour,
                r.paused ? 'paused' : 'active',
              ]),
            ),
      );
      return EXIT.ok;
    }
    case 'dead': {
      await requireKnownQueue(store, p.queue!, p.queueLabel);
      return deadCommand(store, p, io, sub as 'list' | 'redrive' | 'purge', { iso, emit });
    }
    case 'schedules': {
      if (sub === 'list') {
        const listing = await store.listSchedules();
        emit(
          listing,
          `leader: ${
            listing.leader
              ? `${listing.leader.owner} (lock until ${iso(listing.leader.expiresAt)})`
              : 'none (no runner holds the scheduler lock)'
          }\n${table(
            ['name', 'spec', 'zone', 'queue', 'next fire', 'state'],
            listing.schedules.map((s) => [
              s.name,
              s.spec,
              s.timeZone,
              s.queue,
              iso(s.nextFireAt),
              s.paused ? 'paused' : '',
            ]),
          )}`,
        );
        return EXIT.ok;
      }
      if (sub === 'pause' || sub === 'resume') {
        const found = sub === 'pause' ? await store.pauseSchedule(arg!) : await store.resumeSchedule(arg!);
        if (!found) throw new Outcome(EXIT.notFound, `no schedule named ${JSON.stringify(arg)}`);
        emit({ schedule: arg, paused: sub === 'pause' }, `${sub === 'pause' ? 'paused' : 'resumed'} schedule ${arg}`);
        return EXIT.ok;
      }
      const id = await store.triggerSchedule(arg!);
      if (id === null) throw new Outcome(EXIT.notFound, `no schedule named ${JSON.stringify(arg)}`);
      emit({ schedule: arg, jobId: id }, `triggered ${arg}: job ${id}`);
      return EXIT.ok;
    }
    case 'workflows':
      return (await import('./workflows-command.js')).workflowsCommand(
        store,
        p,
        sub as 'list' | 'show' | 'cancel' | 'retry',
        arg,
        { iso, emit, exit: EXIT },
      );
    case 'queue': {
      // A typo would otherwise create (and pause) a queue nobody works; --force pauses one before its first job.
      if (!p.force) {
        try {
          await requireKnownQueue(store, arg!, `queue ${JSON.stringify(arg)}`);
        } catch (err) {
          if (err instanceof Outcome)
            throw new Outcome(
              err.code,
              `${err.message}; check the name, or pass --force to ${sub} it before its first job`,
            );
          throw err;
        }
      }
      await setPaused(store, arg!, sub === 'pause');
      emit({ queue: arg, paused: sub === 'pause' }, `${sub === 'pause' ? 'paused' : 'resumed'} ${arg}`);
      return EXIT.ok;
    }
  }
  throw new UsageError(`unknown command ${JSON.stringify(cmd)}`);
}
