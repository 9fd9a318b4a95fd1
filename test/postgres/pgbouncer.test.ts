// PostgreSQL only: the store behind a real PgBouncer in transaction mode (each
// transaction may run on a different server connection). The shared contract
// modules for queues, the outbox dispatcher, locks, streams and the scheduler
// run through it twice: with wakes from a LISTEN connection past the pooler
// (`listenUrl`) and with wakes from polling. Then every server connection is
// inspected for session state left behind, and a LISTEN target that is
// itself the pooler is refused at open, before any write.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { InvalidOption } from '../../lib/contract/errors.js';
import type { Store } from '../../lib/contract/types.js';
import { openPostgresStore, type PostgresStoreOptions } from '../../lib/engines/postgres/index.js';
import { openStore } from '../../lib/open-store.js';
import { outboxContract } from '../contract/outbox.contract.js';
import { lockContract } from '../contract/locks.contract.js';
import { queueContract } from '../contract/queues.contract.js';
import { schedulerContract } from '../contract/scheduler.contract.js';
import { streamContract } from '../contract/streams.contract.js';
import { expectError } from '../contract/harness.js';
import { dropPgSchemas, type EngineDb, type EngineFixture, PG_AVAILABLE, PG_URL, waitFor } from '../helpers/engines.js';
import { pgbouncerMissing, serverSessionResidue, startPgBouncer, type RunningPgBouncer } from '../helpers/pgbouncer.js';
import { freshSchema, recordingLogger, withClient } from './pg-helpers.js';

/** Asserts `fn` fails with InvalidOption for `option` (the message starts `option <name> …`). */
async function expectOptionError(fn: () => unknown, option: string): Promise<InvalidOption> {
  const err = await expectError(fn, InvalidOption);
  expect(err.field).toBe(option);
  expect(err.message.startsWith(`option ${option} `)).toBe(true);
  return err;
}

const missing = pgbouncerMissing();
if (missing !== null && PG_AVAILABLE) {
  if (process.env.CI === 'true') throw new Error(`CI=true and ${missing}`);
  console.log(`alkstore: ${missing}; the PgBouncer suite is skipped`);
}
const describeBouncer: typeof describe = (
  PG_AVAILABLE && missing === null ? describe : describe.skip
) as typeof describe;

let bouncer: RunningPgBouncer | undefined;
let starting: Promise<RunningPgBouncer> | undefined;
const running = (): Promise<RunningPgBouncer> => (starting ??= startPgBouncer(3).then((b) => (bouncer = b)));

/** A contract fixture whose stores connect through the pooler (`pooler: 'transaction'`). */
function behindBouncer(name: string, extra: Partial<PostgresStoreOptions>): EngineFixture {
  return {
    name,
    kind: 'postgres',
    async create(): Promise<EngineDb> {
      const b = await running();
      const schema = freshSchema('pgb');
      const stores: Store[] = [];
      return {
        location: schema,
        async open(more) {
          const s = await openPostgresStore({
            connectionString: b.url,
            pooler: 'transaction',
            schema,
            poolSize: 4,
            ...extra,
            ...more,
          });
          stores.push(s);
          return s;
        },
        async destroy() {
          for (const s of stores) await s.close();
          await dropPgSchemas(schema);
        },
      };
    },
  };
}

const viaListenUrl = behindBouncer('postgres behind PgBouncer (transaction mode), wakes from listenUrl', {
  listenUrl: PG_URL,
});
const viaPolling = behindBouncer('postgres behind PgBouncer (transaction mode), wakes from polling', {
  wakeFallbackMs: 250,
});

describeBouncer('behind PgBouncer in transaction mode', () => {
  afterAll(async () => {
    await bouncer?.stop();
  }, 30_000);

  for (const engine of [viaListenUrl, viaPolling]) {
    describe(engine.name, () => {
      describe('queues (enqueue, claim, ack)', () => queueContract(engine));
      describe('outbox dispatcher', () => outboxContract(engine));
      describe('locks', () => lockContract(engine));
      describe('streams', () => streamContract(engine));
      describe('scheduler leadership', () => schedulerContract(engine));
    });
  }

  describe('session state', () => {
    it('leaves no session state on any server connection: no LISTEN, named prepared statements, SET, session advisory locks or temp tables', async () => {
      const b = await running();
      const schema = freshSchema('pgb_residue');
      const stores = [
        await openPostgresStore({
          connectionString: b.url,
          pooler: 'transaction',
          schema,
          poolSize: 4,
          listenUrl: PG_URL,
        }),
        await openPostgresStore({
          connectionString: b.url,
          pooler: 'transaction',
          schema,
          poolSize: 4,
          wakeFallbackMs: 25,
        }),
      ];
      try {
        const [a, other] = stores as [Store, Store];
        // Work from both stores, several connections at once, so the pool's server connections are all used.
        const q = a.queue('residue');
        await Promise.all(Array.from({ length: 12 }, (_, i) => q.enqueue({ i })));
        const seen = new Set<number>();
        await waitFor('every job claimed and acked', async () => {
          const jobs = await other.queue('residue').claimBatch(4, 'w');
          for (const j of jobs) {
            await j.ack();
            seen.add((j.payload as { i: number }).i);
          }
          return seen.size === 12;
        });
        await a.outbox('residue-out').enqueue({ n: 1 });
        const lock = await a.tryLock('residue-lock', 'me', 5_000);
        expect(lock).not.toBeNull();
        await lock?.release();
        await a.stream('residue-stream').publish({ n: 1 });
        await a.withTx(async (tx) => {
          await tx.enqueue('residue', { in: 'tx' });
          await tx.notify('residue-channel', 'x');
        });
        await a.schedule('residue-schedule', '@every 1h', 'residue', null);
      } finally {
        for (const s of stores) await s.close();
        await dropPgSchemas(schema);
      }
      const residue = await serverSessionResidue(b);
      expect(new Set(residue.map((r) => r.backendPid)).size).toBe(b.poolSize);
      for (const r of residue) {
        expect({
          pid: r.backendPid,
          listening: r.listening,
          preparedStatements: r.preparedStatements,
          sessionSettings: r.sessionSettings,
          advisoryLocks: r.advisoryLocks,
          tempTables: r.tempTables,
        }).toEqual({
          pid: r.backendPid,
          listening: [],
          preparedStatements: [],
          sessionSettings: [],
          advisoryLocks: 0,
          tempTables: 0,
        });
      }
    }, 60_000);

    it('(the check itself) sees each kind of session state a client leaves on a server connection', async () => {
      const own = await startPgBouncer(1);
      try {
        const c = new pg.Client({ connectionString: own.url });
        await c.connect();
        await c.query("SET work_mem = '8MB'");
        await c.query('SELECT pg_advisory_lock(42)');
        await c.query('LISTEN residue_probe');
        await c.query('CREATE TEMP TABLE residue_probe (x int)');
        await c.query({ name: 'residue_probe', text: 'SELECT 1' });
        await c.end();
        const [r] = await serverSessionResidue(own);
        expect(r).toMatchObject({
          listening: ['residue_probe'],
          preparedStatements: ['residue_probe'],
          sessionSettings: ['work_mem'],
          advisoryLocks: 1,
          tempTables: 1,
        });
      } finally {
        await own.stop();
      }
    }, 30_000);
  });

  describe('startup', () => {
    let b: RunningPgBouncer;
    beforeAll(async () => {
      b = await running();
    }, 30_000);

    async function schemaExists(schema: string): Promise<boolean> {
      return withClient(
        async (c) => (await c.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema])).rowCount === 1,
      );
    }

    it('states where wakes come from in one log line: LISTEN on listenUrl (host, port and database, no user)', async () => {
      const schema = freshSchema('pgb_log');
      const logger = recordingLogger();
      const s = await openPostgresStore({
        connectionString: b.url,
        pooler: 'transaction',
        listenUrl: PG_URL,
        schema,
        logger,
      });
      await s.close();
      await dropPgSchemas(schema);
      const target = new URL(PG_URL);
      expect(logger.lines.filter((l) => l.includes('wakes come from'))).toEqual([
        `alkstore postgres: wakes come from LISTEN on ${target.hostname}:${target.port}${target.pathname} (listenUrl)`,
      ]);
    });

    it('states polling in one log line when there is no listenUrl behind a transaction-mode pooler', async () => {
      const schema = freshSchema('pgb_log');
      const logger = recordingLogger();
      const s = await openStore({ url: b.url, pooler: 'transaction', schema, wakeFallbackMs: 250, logger });
      await s.close();
      await dropPgSchemas(schema);
      expect(logger.lines.filter((l) => l.includes('wakes come from'))).toEqual([
        'alkstore postgres: behind a transaction-mode pooler with no listenUrl; wakes come from polling every 250 ms',
      ]);
    });

    it('refuses a listenUrl that goes through the transaction-mode pooler with InvalidOption naming listenUrl, before any write', async () => {
      const schema = freshSchema('pgb_bad');
      const err = await expectOptionError(
        () => openPostgresStore({ connectionString: b.url, pooler: 'transaction', listenUrl: b.url, schema }),
        'listenUrl',
      );
      expect(err.message).toContain('transaction-mode connection pooler');
      expect(await schemaExists(schema)).toBe(false);
    });

    it('refuses a pooler URL used for LISTEN without pooler: "transaction" with InvalidOption naming connectionString and the fix, before any write', async () => {
      const schema = freshSchema('pgb_bad');
      const err = await expectOptionError(
        () => openPostgresStore({ connectionString: b.url, schema }),
        'connectionString',
      );
      expect(err.message).toContain('pooler: "transaction"');
      expect(err.message).toContain('listenUrl');
      expect(await schemaExists(schema)).toBe(false);
    });

    it('refuses a caller pool through the pooler without pooler: "transaction" with InvalidOption naming pool', async () => {
      const schema = freshSchema('pgb_bad');
      const pool = new pg.Pool({ connectionString: b.url, max: 2 });
      try {
        await expectOptionError(() => openPostgresStore({ pool, schema }), 'pool');
      } finally {
        await pool.end();
      }
      expect(await schemaExists(schema)).toBe(false);
    });
  });
});

describe('pooler options (no server needed)', () => {
  it('refuses an unknown pooler mode, a listenUrl that is not a postgres URL, and listenUrl with listen: false, before any I/O', async () => {
    const url = 'postgres://nobody@127.0.0.1:1/none';
    await expectOptionError(() => openPostgresStore({ connectionString: url, pooler: 'statement' as never }), 'pooler');
    await expectOptionError(() => openPostgresStore({ connectionString: url, listenUrl: 'mysql://x' }), 'listenUrl');
    await expectOptionError(
      () => openPostgresStore({ connectionString: url, listenUrl: url, listen: false }),
      'listenUrl',
    );
  });

  it('refuses pooler and listenUrl on a SQLite store: they name PostgreSQL connections', async () => {
    await expectOptionError(() => openStore({ url: 'sqlite::memory:', pooler: 'transaction' }), 'pooler');
    await expectOptionError(() => openStore({ url: 'sqlite::memory:', listenUrl: PG_URL }), 'listenUrl');
  });
});
