import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from '@jest/globals';
import {
  AlkstoreError,
  Closed,
  Codec,
  InvalidArgument,
  InvalidFlow,
  InvalidName,
  InvalidOption,
  InvalidSpec,
  PayloadTooLarge,
  ReservedName,
} from '../../lib/contract/errors.js';
import type { QueryRunnerLike, Store, StoreLogger, TxOps } from '../../lib/contract/types.js';
import { openStore } from '../../lib/open-store.js';
import { sqliteOpener } from '../../lib/engines/sqlite/connection.js';
import { OutboxDispatcher } from '../../lib/outbox/outbox-dispatcher.js';
import { OutboxSettings } from '../../lib/outbox/outbox-settings.js';
import { FileJournalOutboxStore } from '../../lib/reliable-sync/file-journal-outbox-store.js';
import { InMemoryOutboxStore } from '../../lib/reliable-sync/in-memory-outbox-store.js';
import { PostgresOutboxStore } from '../../lib/reliable-sync/postgres-outbox-store.js';
import { SqliteOutboxStore } from '../../lib/reliable-sync/sqlite-outbox-store.js';
import { ReliableOutbox } from '../../lib/reliable-sync/reliable-outbox.js';
import { SyncDriver } from '../../lib/reliable-sync/sync-driver.js';
import { openStoreFromOptions } from '../../lib/nest/alkstore.store-factory.js';
import { PG_URL, sqliteDriverFromEnv, type EngineFixture } from '../helpers/engines.js';
import { loadVectors } from '../unit/vectors.js';
import { uid, useEnv, within } from './harness.js';
import { openTx } from '../helpers/open-tx.js';

/** conformance/contract/bad-input.json */
interface Vector {
  entry: string;
  args: unknown[];
  error: string;
  words: string[];
  engines?: ('sqlite' | 'postgres')[];
  note?: string;
}
interface Call {
  entry: string;
  args: unknown[];
  note?: string;
}
interface BadInputVectors {
  vectors: Vector[];
  accepted: Call[];
  closed: { afterStoreClose: Call[]; afterTxEnd: Call[] };
}

const file = loadVectors<BadInputVectors>('bad-input.json');

const ERRORS: Record<string, abstract new (...args: never[]) => Error> = {
  InvalidArgument,
  InvalidFlow,
  InvalidName,
  ReservedName,
  InvalidOption,
  InvalidSpec,
  Codec,
  Closed,
  PayloadTooLarge,
};

/**
 * Entries that may throw synchronously: they return a handle, not a promise.
 * Every other entry point must report a refusal as a rejected promise.
 */
const SYNC_ENTRIES = new Set([
  'store.listen',
  'store.stream',
  'store.queue',
  'store.outbox',
  'store.inbox',
  'stream.subscribe',
  'admin.auditLog',
  'queue.listen',
  'queue.listenCancels',
  'queue.listenProgress',
  'job.payloadAs',
  'dispatcher.new',
  'settings.create',
  'syncDriver.new',
  'store.admin',
  'reliable.firstPending',
  'outbox.messageId',
]);

const silent: StoreLogger = { log: () => undefined, warn: () => undefined, error: () => undefined };

/** Decodes the JSON stand-ins for values JSON cannot hold (see the file's `special`). */
function decode(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(decode);
  if (v === null || typeof v !== 'object') return v;
  const o = v as Record<string, unknown>;
  if (typeof o.$ === 'string') {
    switch (o.$) {
      case 'NaN':
        return Number.NaN;
      case 'Infinity':
        return Number.POSITIVE_INFINITY;
      case '-Infinity':
        return Number.NEGATIVE_INFINITY;
      case 'undefined':
        return undefined;
      case 'fn':
        return async () => undefined;
      case 'signal':
        return new AbortController().signal;
      case 'abortedSignal':
        return AbortSignal.abort();
      case 'bigint':
        return 1n;
      case 'bytes':
        return new Uint8Array([1, 2, 3]);
      case 'repeat':
        return String(o.s).repeat(Number(o.n));
      case 'array':
        return Array.from({ length: Number(o.n) }, () => decode(o.of));
      case 'nested': {
        let v: unknown[] = [];
        for (let i = 1; i < Number(o.n); i++) v = [v];
        return v;
      }
      default:
        throw new Error(`unknown special value ${String(o.$)}`);
    }
  }
  return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, decode(x)]));
}

/** A caller-owned transaction that must never see SQL: refused calls run none. */
function sentinelRunner(): {
  runner: { isTransactionActive: boolean; query: () => Promise<unknown> };
  used: () => boolean;
  arm: () => void;
} {
  let used = false;
  let armed = false;
  return {
    runner: {
      isTransactionActive: true,
      query: () => {
        // Joining may run SQL (SQLite takes the write lock); only what comes after counts.
        if (!armed) return Promise.resolve([]);
        used = true;
        return Promise.reject(new Error('alkstore ran SQL on the caller transaction for a refused call'));
      },
    },
    used: () => used,
    arm: () => {
      armed = true;
    },
  };
}

/**
 * alkstore joined to a caller's transaction over `runner` (through `joinTransaction`, the one
 * path both engines join by), kept open until `end()`.
 */
async function joinedOps(
  s: Store,
  sentinel: ReturnType<typeof sentinelRunner>,
): Promise<{ ops: TxOps; end: () => Promise<void> }> {
  let release!: () => void;
  const done = new Promise<void>((r) => (release = r));
  let ready!: (ops: TxOps) => void;
  const joined = new Promise<TxOps>((r) => (ready = r));
  const finished = s.joinTransaction<QueryRunnerLike, void>(
    (body) => body({ queryRunner: sentinel.runner, handle: sentinel.runner }),
    async (tx) => {
      sentinel.arm();
      ready(tx);
      await done;
    },
  );
  const ops = await Promise.race([
    joined,
    finished.then(() => Promise.reject(new Error('joinTransaction ended before its body ran'))),
  ]);
  return {
    ops,
    end: async () => {
      release();
      await finished;
    },
  };
}

/** What a vector is called on, and how to undo what setting it up did. */
interface Target {
  call(method: string, args: unknown[]): unknown;
  /** After the call, before the "nothing written" snapshot (a transaction commits here). */
  settle(): Promise<void>;
  cleanup(): Promise<void>;
}

function onObject(
  obj: object,
  settle: () => Promise<void> = async () => undefined,
  cleanup: () => Promise<void> = async () => undefined,
): Target {
  return {
    call: (method, args) => {
      const fn = (obj as Record<string, unknown>)[method];
      if (typeof fn !== 'function') throw new Error(`no method ${method} on ${obj.constructor.name}`);
      return (fn as (...a: unknown[]) => unknown).apply(obj, args);
    },
    settle,
    cleanup,
  };
}

export interface OpenTarget {
  url: string;
  schema?: string;
  sqlitePath?: string;
  done(): Promise<void>;
}

/**
 * Bad input (SPEC §3, §4; conformance/contract/bad-input.json): every vector
 * is refused with the named error before any I/O, the same on both engines,
 * and nothing is written.
 */
export function badInputContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  const store = (): Store => env.store;
  const vectors = file.vectors.filter((v) => !v.engines || v.engines.includes(engine.kind));

  /** A url to open a fresh store with: the engine's, on a schema or file nothing else uses. */
  function freshUrl(): OpenTarget {
    if (engine.kind === 'postgres') {
      const schema = `bad_open_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
      return { url: PG_URL, schema, done: async () => undefined };
    }
    const dir = mkdtempSync(join(tmpdir(), 'alkstore-bad-open-'));
    const sqlitePath = join(dir, 'never.db');
    return { url: `sqlite:${sqlitePath}`, sqlitePath, done: async () => rmSync(dir, { recursive: true, force: true }) };
  }

  async function target(kind: string): Promise<Target> {
    const s = store();
    switch (kind) {
      case 'store':
        return onObject(s);
      case 'queue':
        return onObject(s.queue(uid('bad-q')));
      case 'stream':
        return onObject(s.stream(uid('bad-s')));
      case 'outbox':
        return onObject(s.outbox(uid('bad-ob')));
      case 'tx': {
        const tx = await openTx(s);
        // Commit before the snapshot: anything a refused call wrote would then be visible.
        const end = async (): Promise<void> => {
          if (!tx.finished) await tx.commit();
        };
        return onObject(tx, end, end);
      }
      case 'ext': {
        const sentinel = sentinelRunner();
        const { ops, end } = await joinedOps(s, sentinel);
        return onObject(
          ops,
          async () => {
            if (sentinel.used()) throw new Error('a refused call ran SQL on the caller transaction');
          },
          end,
        );
      }
      case 'job': {
        const q = s.queue(uid('bad-job'));
        await q.enqueue('job');
        const job = (await q.claimOne('w'))!;
        return onObject(job, undefined, async () => void (await job.ack()));
      }
      case 'lock': {
        const lock = (await s.tryLock(uid('bad-lock'), 'o', 60_000))!;
        return onObject(lock, undefined, async () => void (await lock.release()));
      }
      case 'subscription': {
        const sub = s.stream(uid('bad-sub')).subscribe('c');
        return onObject(sub, undefined, async () => sub.close());
      }
      case 'receiver': {
        const r = s.listen(uid('bad-ch'));
        return onObject(r, undefined, async () => r.close());
      }
      case 'admin':
        return onObject(s.admin());
      case 'reliable': {
        const outbox = await ReliableOutbox.open(new InMemoryOutboxStore());
        return onObject(outbox);
      }
      default:
        throw new Error(`unknown handle kind ${kind}`);
    }
  }

  /**
   * Sets up the handle an entry is called on, runs `beforeCall` (the "nothing
   * written" snapshot), calls the entry with decoded args, and resolves to what
   * it threw or rejected with (`undefined` when it succeeded).
   */
  async function invoke(
    entry: string,
    rawArgs: unknown[],
    opened?: OpenTarget,
    beforeCall: () => Promise<void> = async () => undefined,
  ): Promise<{ error: unknown; sync: boolean; target?: Target }> {
    const args = decode(rawArgs) as unknown[];
    const [kind, method] = entry.split('.') as [string, string | undefined];
    const handleKinds = new Set([
      'store',
      'queue',
      'stream',
      'outbox',
      'tx',
      'ext',
      'job',
      'lock',
      'subscription',
      'receiver',
      'admin',
      'reliable',
    ]);
    const t: Target | undefined = handleKinds.has(kind) ? await target(kind) : undefined;
    await beforeCall();
    let result: unknown;
    try {
      switch (entry) {
        case 'openStore':
        case 'module.options': {
          const o = opened!;
          const base: Record<string, unknown> = { url: o.url, logger: silent };
          if (o.schema) base.schema = o.schema;
          const given = args[0];
          const options = given === null ? null : { ...base, ...(given as object) };
          result = entry === 'openStore' ? openStore(options as never) : openStoreFromOptions(options as never, silent);
          break;
        }
        case 'dispatcher.new':
          result = new OutboxDispatcher({
            store: store(),
            outbox: 'bad-dispatch',
            handler: async () => undefined,
            logger: silent,
            ...(args[0] as object),
          });
          break;
        case 'settings.create':
          result = OutboxSettings.create(args[0] as never);
          break;
        case 'journalStore.open':
        case 'sqliteOutboxStore.open':
        case 'postgresOutboxStore.open': {
          const dir = mkdtempSync(join(tmpdir(), 'alkstore-bad-rs-'));
          const given = args[0];
          const base: Record<string, unknown> =
            entry === 'journalStore.open'
              ? { directory: dir }
              : entry === 'sqliteOutboxStore.open'
                ? { path: join(dir, 'sync.db') }
                : { connectionString: PG_URL, schema: `bad_rs_${process.pid}` };
          const options = given === null ? null : { ...base, ...(given as object) };
          const open =
            entry === 'journalStore.open'
              ? FileJournalOutboxStore.open(options as never)
              : entry === 'sqliteOutboxStore.open'
                ? SqliteOutboxStore.open(options as never)
                : PostgresOutboxStore.open(options as never);
          result = open.finally(() => rmSync(dir, { recursive: true, force: true }));
          break;
        }
        case 'syncDriver.new':
          result = new SyncDriver(
            await ReliableOutbox.open(new InMemoryOutboxStore()),
            { send: async () => undefined },
            args[0] as never,
          );
          break;
        default:
          result = t!.call(method!, args);
      }
    } catch (err) {
      return { error: err, sync: true, target: t };
    }
    try {
      // A bad input that slips through may wait forever (a recv on a non-signal): bound it.
      const settled = await within(`${entry}`, 5_000, Promise.resolve(result));
      // An entry that unexpectedly accepted a bad value: release what it opened.
      if (
        settled &&
        typeof settled === 'object' &&
        'close' in settled &&
        typeof settled.close === 'function' &&
        entry !== 'store.withTx'
      ) {
        await (settled as { close(): unknown }).close();
      }
      return { error: undefined, sync: false, target: t };
    } catch (err) {
      return { error: err, sync: false, target: t };
    }
  }

  function problem(v: Vector, outcome: { error: unknown; sync: boolean }): string | null {
    const cls = ERRORS[v.error];
    if (!cls) return `unknown error class ${v.error}`;
    const { error, sync } = outcome;
    if (error === undefined) return `accepted; expected ${v.error}`;
    if (!(error instanceof cls))
      return `expected ${v.error}, got ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`;
    if (!(error instanceof AlkstoreError)) return `${v.error} is not an AlkstoreError`;
    const message = (error as Error).message.toLowerCase();
    const missing = v.words.filter((w) => !message.includes(w.toLowerCase()));
    if (missing.length > 0)
      return `message ${JSON.stringify((error as Error).message)} lacks ${JSON.stringify(missing)}`;
    if (sync && !SYNC_ENTRIES.has(v.entry)) return 'threw synchronously; an async entry point must reject';
    return null;
  }

  const label = (v: Vector | Call, args = JSON.stringify(v.args)): string =>
    `${v.entry}(${args.length > 120 ? `${args.slice(0, 120)}…` : args})`;

  describe('bad input', () => {
    it('every vector is refused with its error class, and the message names the input and the bound', async () => {
      const failures: string[] = [];
      for (const v of vectors) {
        const opened = v.entry === 'openStore' || v.entry === 'module.options' ? freshUrl() : undefined;
        const outcome = await invoke(v.entry, v.args, opened);
        const p = problem(v, outcome);
        if (p) failures.push(`${label(v)}: ${p}`);
        await outcome.target
          ?.cleanup()
          .catch((err: unknown) => failures.push(`${label(v)}: cleanup failed: ${String(err)}`));
        await opened?.done();
      }
      expectNone(failures);
    }, 120_000);

    it('a refused call writes nothing: every engine table is unchanged after it', async () => {
      const snap = await snapshotter(engine, env.db.location);
      try {
        const failures: string[] = [];
        for (const v of vectors) {
          const opened = v.entry === 'openStore' || v.entry === 'module.options' ? freshUrl() : undefined;
          let before = '';
          let systemBefore = '';
          const outcome = await invoke(v.entry, v.args, opened, async () => {
            before = await snap.take();
            systemBefore = opened ? await snap.system() : '';
          });
          try {
            await outcome.target?.settle();
            const after = await snap.take();
            if (after !== before) failures.push(`${label(v)}: the engine tables changed`);
            if (opened) {
              if (opened.sqlitePath && existsSync(opened.sqlitePath))
                failures.push(`${label(v)}: created the SQLite file`);
              if ((await snap.system()) !== systemBefore)
                failures.push(`${label(v)}: created tables in a system schema`);
            }
          } catch (err) {
            failures.push(`${label(v)}: ${(err as Error).message}`);
          } finally {
            await outcome.target
              ?.cleanup()
              .catch((err: unknown) => failures.push(`${label(v)}: cleanup failed: ${String(err)}`));
            await opened?.done();
          }
        }
        expectNone(failures);
      } finally {
        await snap.close();
      }
    }, 180_000);

    it('accepts the boundary values', async () => {
      const failures: string[] = [];
      for (const c of file.accepted) {
        const outcome = await invoke(c.entry, c.args);
        await outcome.target?.cleanup();
        if (outcome.error !== undefined) failures.push(`${label(c)} (${c.note ?? ''}): ${String(outcome.error)}`);
      }
      expectNone(failures);
    });
  });

  describe('closed', () => {
    it('after close, the store and every handle obtained before refuse with Closed', async () => {
      const s = await env.db.open();
      const q = s.queue(uid('closed-q'));
      await q.enqueue(1);
      const handles: Record<string, object> = {
        store: s,
        queue: q,
        stream: s.stream(uid('closed-s')),
        outbox: s.outbox(uid('closed-ob')),
        job: (await q.claimOne('w'))!,
        lock: (await s.tryLock(uid('closed-lock'), 'o', 60_000))!,
        subscription: s.stream(uid('closed-sub')).subscribe('c'),
        admin: s.admin(),
        tx: await openTx(s),
      };
      await s.close();
      const failures: string[] = [];
      for (const c of file.closed.afterStoreClose) {
        const [kind, method] = c.entry.split('.') as [string, string];
        let error: unknown;
        let sync = false;
        try {
          const r = onObject(handles[kind]!).call(method, decode(c.args) as unknown[]);
          try {
            await r;
          } catch (err) {
            error = err;
          }
        } catch (err) {
          error = err;
          sync = true;
        }
        if (!(error instanceof Closed))
          failures.push(`${label(c)}: expected Closed, got ${error === undefined ? 'success' : String(error)}`);
        else if (sync && !SYNC_ENTRIES.has(c.entry)) failures.push(`${label(c)}: threw synchronously`);
      }
      expectNone(failures);
    });

    it.each(['commit', 'rollback'] as const)('after %s, every transaction op refuses with Closed', async (end) => {
      const failures: string[] = [];
      for (const c of file.closed.afterTxEnd) {
        const tx = await openTx(store());
        await tx[end]();
        const method = c.entry.split('.')[1]!;
        let error: unknown;
        try {
          await onObject(tx).call(method, decode(c.args) as unknown[]);
        } catch (err) {
          error = err;
        }
        if (!(error instanceof Closed))
          failures.push(
            `${label(c)} after ${end}: expected Closed, got ${error === undefined ? 'success' : String(error)}`,
          );
      }
      expectNone(failures);
    });
  });
}

/** Fails listing every failure (jest's diff of a long array is truncated). */
function expectNone(failures: string[]): void {
  if (failures.length > 0) throw new Error(`${failures.length} failed:\n${failures.join('\n')}`);
}

/** Reads every engine table's full content, to prove a refused call wrote nothing. */
interface Snapshotter {
  take(): Promise<string>;
  /** Tables in the PostgreSQL system schemas a bad `schema` option names (empty on SQLite). */
  system(): Promise<string>;
  close(): Promise<void>;
}

/**
 * Tables left out of the snapshot: the per-minute throughput chart and the
 * wait/run latency histograms are written in the background (an outcome
 * counter flushes every few seconds after earlier acks), never by the call
 * under test.
 */
const BACKGROUND_TABLES = new Set([
  'queue_minutes',
  '__alkstore_queue_minutes',
  'queue_latency',
  '__alkstore_queue_latency',
]);

async function snapshotter(engine: EngineFixture, location: string): Promise<Snapshotter> {
  if (engine.kind === 'sqlite') {
    // The suite's own driver (better-sqlite3, or node:sqlite with ALKSTORE_SQLITE_DRIVER), read-only.
    const { open } = await sqliteOpener(sqliteDriverFromEnv().driver);
    const db = open(location, { readonly: true });
    return {
      take: async () => {
        const tables = db
          .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
          .pluck()
          .all() as string[];
        return tables
          .filter((t) => !BACKGROUND_TABLES.has(t))
          .map((t) => {
            const rows = (db.prepare(`SELECT * FROM "${t.replace(/"/g, '""')}"`).all() as unknown[])
              .map((r) => JSON.stringify(r))
              .sort();
            return `${t}:${rows.join('\n')}`;
          })
          .join('\n\n');
      },
      system: async () => '',
      close: async () => void db.close(),
    };
  }
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  // One statement reads every table of the engine schema: one round trip per snapshot.
  const tables = await client.query<{ t: string }>(
    "SELECT table_name AS t FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY 1",
    [location],
  );
  const parts = tables.rows
    .filter(({ t }) => !BACKGROUND_TABLES.has(t))
    .map(({ t }) => {
      const q = `"${location}"."${t.replace(/"/g, '""')}"`;
      return `'${t.replace(/'/g, "''")}:' || (SELECT coalesce(string_agg(x::text, E'\\n' ORDER BY x::text), '') FROM ${q} x)`;
    });
  const sql = `SELECT concat_ws(E'\\n\\n', ${parts.join(', ')}) AS snapshot`;
  return {
    take: async () => (await client.query<{ snapshot: string }>(sql)).rows[0]!.snapshot,
    system: async () => {
      const r = await client.query<{ t: string }>(
        "SELECT schemaname || '.' || tablename AS t FROM pg_tables WHERE schemaname IN ('information_schema', 'INFORMATION_SCHEMA', 'pg_catalog', 'pg_toast', 'pg_mine') ORDER BY 1",
      );
      return r.rows.map((x) => x.t).join(',');
    },
    close: () => client.end(),
  };
}

export { decode as decodeSpecial, SYNC_ENTRIES };

/**
 * Methods with nothing to validate: they take no argument, or accept any value
 * (`job.fail(error)` stores whatever was thrown). Each must still be covered by
 * a `closed` vector, except the pure accessors and the idempotent closes in
 * {@link NEVER_CLOSED}.
 */
const NO_INPUT: Record<string, string[]> = {
  store: ['now', 'close', 'listSchedules', 'admin'],
  queue: ['sweepExpired', 'stats', 'listen', 'listenCancels', 'listenProgress', 'pause', 'resume', 'settings'],
  job: ['ack', 'fail', 'release', 'payloadAs', 'childResults'],
  lock: ['release'],
  subscription: ['close'],
  receiver: ['close'],
  admin: ['queueNames', 'listener', 'auditLog', 'workers', 'nodes'],
};

/** Pure accessors and idempotent closes: they never refuse, not even after close. */
const NEVER_CLOSED = new Set([
  'store.close',
  'job.payloadAs',
  'subscription.close',
  'receiver.close',
  'admin.listener',
]);

/**
 * Engine internals: present on the runtime objects (TypeScript `private`, or
 * the seam between an engine's store and its handles) but not part of the
 * `Store`/`Queue`/`Stream`/`TxOps`/`Job`/`Lock` contract types, so a
 * caller of the public API cannot reach them.
 */
const INTERNAL: Record<string, string[]> = {
  store: [
    // SQLite: the SqliteCore seam and private helpers
    'write',
    'read',
    'wakes',
    'registeredQueueOpts',
    'random',
    'assertOpen',
    'lockInternal',
    'queueHandle',
    'runInTx',
    'openTxHandle',
    'writeLastOutcomes',
    // both: one scheduler tick, driven by runSchedules
    'fireDue',
    // both: the engine's driver of one queue, wrapped by queueHandle
    'queueDriver',
    // both: the retention runner's store-wide window sweep
    'sweepRateWindows',
    // both: the open hands the store its id from the meta table
    'setIdentity',
    'identityOrThrow',
    // PostgreSQL: listener callbacks and private helpers
    'attachListener',
    'dispatch',
    'wakeFor',
    'reconnected',
    'listenerHealth',
    'setPolling',
    'guard',
    'takeLock',
    'runTx',
    'connect',
    'inTransaction',
    'shutdown',
  ],
  // the outbox's one-write ack with receipts (outbox.ackDelivered validates its input) and private helpers
  queue: ['claim', 'ackDelivered', 'acked', 'stampOf'],
  // PostgreSQL: the SubscriptionSource seam of a stream handle
  stream: ['listen'],
  // the store's end-of-transaction callback is an instance field; withTx(fn) commits or rolls back
  // SQLite: the store opens the handle, and a lease renewal may revoke it
  tx: ['assertActive', 'run', 'abandon', 'check', 'end', 'onFinish', 'onEnd', 'open', 'revoke', 'commit', 'rollback'],
  // SQLite: the join checks the file and takes the write lock; multi-statement ops run in a savepoint
  ext: [
    'assertSameFile',
    'insertJob',
    'insertEvent',
    'answer',
    'guard',
    'now',
    'query',
    'check',
    'assertOpen',
    'atomically',
    'takeWriteLock',
  ],
  subscription: ['waitForWake', 'ended'],
  // the wake hub's delivery and unregister callbacks
  receiver: ['push', 'onClose'],
  job: [],
  lock: [],
  // the store's message id format, handed to the handle
  outbox: ['messageIdOf'],
  // PostgreSQL admin: private helpers and the store's callbacks
  admin: ['listenerState', 'nextPriority', 'now', 'writeOutcomes'],
};

function methodsOf(obj: object): string[] {
  const names = new Set<string>();
  for (let p: object | null = obj; p && p !== Object.prototype; p = Object.getPrototypeOf(p) as object | null) {
    for (const name of Object.getOwnPropertyNames(p)) {
      if (name === 'constructor') continue;
      const d = Object.getOwnPropertyDescriptor(p, name);
      if (d && !d.get && typeof d.value === 'function') names.add(name);
    }
  }
  return [...names].sort();
}

/**
 * Parity by construction: a public method without vectors fails here, so a
 * new entry point cannot skip the validation layer unnoticed.
 */
export function entryPointCoverageContract(engine: EngineFixture): void {
  const env = useEnv(engine);

  it('every public method of the store and its handles has bad-input vectors (or takes no input and has a closed vector)', async () => {
    const s = env.store;
    const q = s.queue(uid('cov-q'));
    await q.enqueue(1);
    const job = (await q.claimOne('w'))!;
    const lock = (await s.tryLock(uid('cov-lock'), 'o', 60_000))!;
    const sub = s.stream(uid('cov-sub')).subscribe('c');
    const receiver = s.listen(uid('cov-ch'));
    // Joined and ended before the held withTx: on SQLite both hold the write path. Only its methods are listed.
    const joined = await joinedOps(s, sentinelRunner());
    await joined.end();
    const tx = await openTx(s);
    const objects: Record<string, object> = {
      store: s,
      queue: q,
      stream: s.stream(uid('cov-s')),
      outbox: s.outbox(uid('cov-ob')),
      tx,
      ext: joined.ops,
      job,
      lock,
      subscription: sub,
      receiver,
      admin: s.admin(),
    };
    const withVectors = new Set(file.vectors.map((v) => v.entry));
    const closedVectors = new Set([...file.closed.afterStoreClose, ...file.closed.afterTxEnd].map((c) => c.entry));
    const missing: string[] = [];
    try {
      for (const [kind, obj] of Object.entries(objects)) {
        for (const method of methodsOf(obj)) {
          const entry = `${kind}.${method}`;
          if (withVectors.has(entry) || (INTERNAL[kind] ?? []).includes(method)) continue;
          if ((NO_INPUT[kind] ?? []).includes(method)) {
            if (!closedVectors.has(entry) && !NEVER_CLOSED.has(entry))
              missing.push(`${entry}: takes no input but has no closed vector`);
            continue;
          }
          missing.push(`${entry}: no vector in conformance/contract/bad-input.json`);
        }
      }
    } finally {
      await tx.rollback();
      await job.ack();
      await lock.release();
      sub.close();
      receiver.close();
    }
    expectNone(missing);
  });
}
