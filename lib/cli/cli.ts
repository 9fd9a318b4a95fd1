import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { AlkstoreError } from '../contract/errors.js';
import type { Store, StoreLogger } from '../contract/types.js';
import { queueHandle, queueRows, setPaused, type QueueRow } from '../dashboard/data.js';
import { engineOfUrl, openStore, sqlitePathOfUrl } from '../open-store.js';
import { redact } from './redact.js';
import { table } from './table.js';

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
  migrate [--print]                               apply the engine schema, or print its SQL
  stats                                           every queue: pending, processing, scheduled, dead, oldest ready, last hour
  dead list --queue Q [--limit N] [--cursor C]    dead letters of a queue (oldest first, keyset paged)
  dead redrive --queue Q (--id ID... | --all)     dead jobs back to pending, attempts reset
  dead purge --queue Q (--id ID... | --all)       delete dead jobs
  schedules list                                  schedules with spec, zone, next fire, and the leader
  schedules trigger NAME                          enqueue one job of a schedule now
  schedules pause NAME | schedules resume NAME    stop / restart a schedule's firing (every replica)
  queue pause NAME | queue resume NAME            stop / restart handing out a queue's jobs (every replica)

Options:
  --url URL       sqlite:<path>, a file path, postgres://… or postgresql://… (default: $ALKSTORE_URL)
  --schema NAME   PostgreSQL schema (default alkstore)
  --json          machine-readable output on stdout
  -h, --help      this text

Exit codes: 0 done, 1 failed (database), 2 usage, 3 nothing matched.`;

/** Where the CLI writes; tests pass their own. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  env: Readonly<Record<string, string | undefined>>;
}

class UsageError extends Error {}
class Outcome extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

interface Parsed {
  command: string[];
  url: string | undefined;
  schema: string | undefined;
  json: boolean;
  print: boolean;
  queue: string | undefined;
  ids: number[];
  all: boolean;
  limit: number;
  cursor: string | undefined;
  help: boolean;
}

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
        queue: { type: 'string' },
        id: { type: 'string', multiple: true },
        all: { type: 'boolean' },
        limit: { type: 'string' },
        cursor: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  const ids = (values.id ?? []).map((text) => {
    if (!/^\d{1,16}$/.test(text) || !Number.isSafeInteger(Number(text))) throw new UsageError(`--id must be a job id (a positive integer), got ${JSON.stringify(text)}`);
    return Number(text);
  });
  const limitText = values.limit ?? '50';
  const limit = Number(limitText);
  if (!/^\d+$/.test(limitText) || limit < 1 || limit > 1000) throw new UsageError(`--limit must be an integer in 1..1000, got ${JSON.stringify(limitText)}`);
  return {
    command: positionals,
    url: values.url ?? env.ALKSTORE_URL,
    schema: values.schema,
    json: values.json === true,
    print: values.print === true,
    queue: values.queue,
    ids,
    all: values.all === true,
    limit,
    cursor: values.cursor,
    help: values.help === true,
  };
}

/** Runs one command; resolves to the process exit code. Never prints the URL's password. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let p: Parsed | undefined;
  try {
    p = parse(argv, io.env);
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
    return err instanceof AlkstoreError && err.code === 'INVALID_OPTION' && /url/.test(message) ? EXIT.usage : EXIT.failed;
  }
}

async function dispatch(p: Parsed, io: CliIo): Promise<number> {
  const [cmd, sub, arg, ...extra] = p.command;
  const known: Record<string, readonly string[] | null> = { migrate: null, stats: null, dead: ['list', 'redrive', 'purge'], schedules: ['list', 'trigger', 'pause', 'resume'], queue: ['pause', 'resume'] };
  if (!(cmd! in known)) throw new UsageError(`unknown command ${JSON.stringify(cmd)}`);
  const subs = known[cmd!];
  if (subs && !subs.includes(sub ?? '')) throw new UsageError(`${cmd} needs one of: ${subs.join(', ')}`);
  const wantsArg = (cmd === 'schedules' && sub !== 'list') || cmd === 'queue';
  if (wantsArg && !arg) throw new UsageError(`${cmd} ${sub} needs a name`);
  if ((!subs && sub !== undefined) || (!wantsArg && arg !== undefined) || extra.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(subs ? (wantsArg ? extra[0] : arg) : sub)}`);
  if (cmd === 'dead' && !p.queue) throw new UsageError(`dead ${sub} needs --queue`);
  if (cmd === 'dead' && sub !== 'list' && p.all === (p.ids.length > 0)) throw new UsageError(`dead ${sub} needs either --id (one or more) or --all`);
  if (!p.url) throw new UsageError('--url is required (or set ALKSTORE_URL)');
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]+):/.exec(p.url)?.[1]?.toLowerCase();
  if (scheme !== undefined && !['sqlite', 'postgres', 'postgresql'].includes(scheme)) {
    throw new UsageError(`--url has the unsupported scheme "${scheme.slice(0, 32)}:"; use sqlite:<path>, a file path, or postgres://user@host:5432/db`);
  }
  const engine = engineOfUrl(p.url);

  if (cmd === 'migrate' && p.print) {
    io.out(engine === 'postgres' ? (await import('../engines/postgres/index.js')).postgresMigrationSql(p.schema ?? 'alkstore') : (await import('../engines/sqlite/index.js')).sqliteSchemaSql());
    return EXIT.ok;
  }
  if (engine === 'sqlite' && cmd !== 'migrate') {
    const path = sqlitePathOfUrl(p.url);
    if (path !== ':memory:' && !existsSync(path)) throw new Outcome(EXIT.failed, `no SQLite database at ${JSON.stringify(path)} (create it with: alkstore migrate --url ${p.url})`);
  }
  const store = await open(p, io, cmd === 'migrate');
  try {
    return await runCommand(store, p, io, cmd!, sub, arg);
  } finally {
    await store.close();
  }
}

async function open(p: Parsed, io: CliIo, migrate: boolean): Promise<Store> {
  const logger: StoreLogger = { log: () => undefined, warn: (m) => io.err(redact(m, p.url)), error: (m) => io.err(redact(m, p.url)) };
  try {
    return await openStore({ url: p.url!, schema: p.schema, migrate, poolSize: 2, logger });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const hint = !migrate && err instanceof AlkstoreError && err.code === 'INVALID_OPTION' ? ' (run: alkstore migrate)' : '';
    if (err instanceof AlkstoreError && err.code === 'INVALID_OPTION' && /\burl\b/.test(message)) throw new UsageError(message);
    throw new Outcome(EXIT.failed, `cannot open the database: ${message}${hint}`);
  }
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

async function runCommand(store: Store, p: Parsed, io: CliIo, cmd: string, sub: string | undefined, arg: string | undefined): Promise<number> {
  const emit = (json: unknown, human: string) => io.out(p.json ? JSON.stringify(json, null, 2) : human);
  switch (cmd) {
    case 'migrate': {
      emit({ engine: store.engine, migrated: true }, `alkstore schema is up to date (${store.engine}${store.engine === 'postgres' ? `, schema ${p.schema ?? 'alkstore'}` : ''})`);
      return EXIT.ok;
    }
    case 'stats': {
      const { rows } = await queueRows(store, await store.now());
      const shown: QueueRow[] = p.queue ? rows.filter((r) => r.name === p.queue) : rows;
      emit(
        shown,
        shown.length === 0
          ? 'no queues'
          : table(
              ['queue', 'pending', 'processing', 'scheduled', 'dead', 'oldest ready', 'done 1h', 'failed 1h', 'state'],
              shown.map((r) => [r.name, r.pending, r.processing, r.scheduled, r.dead, age(r.oldestReadyAgeMs), r.completedLastHour, r.failedLastHour, r.paused ? 'paused' : 'active']),
            ),
      );
      return EXIT.ok;
    }
    case 'dead': {
      if (!p.queue) throw new UsageError(`dead ${sub} needs --queue`);
      const q = queueHandle(store, p.queue);
      if (sub === 'list') {
        const page = await store.admin().listJobs(p.queue, { state: 'dead', limit: p.limit, cursor: p.cursor });
        emit(
          page,
          `${table(
            ['id', 'attempts', 'died', 'last error', 'payload'],
            page.jobs.map((j) => [j.id, j.attempts, iso(j.diedAt), j.lastError ?? '', JSON.stringify(j.payload)]),
          )}${page.next ? `\nmore: --cursor ${page.next}` : ''}`,
        );
        return EXIT.ok;
      }
      if (sub === 'redrive') {
        const r = p.all ? await store.admin().retryAllDead(p.queue) : await q.retryDead(p.ids);
        const held = r.conflicts === 0 ? '' : `; ${r.conflicts} stayed dead, their unique key held by a live job: ${r.conflictIds.join(' ')}`;
        emit({ redriven: r.moved, conflicts: r.conflicts, conflictIds: r.conflictIds }, `redrove ${r.moved} dead job${r.moved === 1 ? '' : 's'} of ${p.queue}${held}`);
        if (r.conflicts > 0) return EXIT.conflict;
        return r.moved === 0 && !p.all ? EXIT.notFound : EXIT.ok;
      }
      const n = p.all ? await store.admin().purgeAllDead(p.queue) : await q.purgeDead(p.ids);
      emit({ purged: n }, `purged ${n} dead job${n === 1 ? '' : 's'} of ${p.queue}`);
      return n === 0 && !p.all ? EXIT.notFound : EXIT.ok;
    }
    case 'schedules': {
      if (sub === 'list') {
        const listing = await store.listSchedules();
        emit(
          listing,
          `leader: ${listing.leader ? `${listing.leader.owner} (lock until ${iso(listing.leader.expiresAt)})` : 'none (no runner holds the scheduler lock)'}\n${table(
            ['name', 'spec', 'zone', 'queue', 'next fire', 'state'],
            listing.schedules.map((s) => [s.name, s.spec, s.timeZone, s.queue, iso(s.nextFireAt), s.paused ? 'paused' : '']),
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
    case 'queue': {
      await setPaused(store, arg!, sub === 'pause');
      emit({ queue: arg, paused: sub === 'pause' }, `${sub === 'pause' ? 'paused' : 'resumed'} ${arg}`);
      return EXIT.ok;
    }
  }
  throw new UsageError(`unknown command ${JSON.stringify(cmd)}`);
}
