import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Database, PayloadTooLarge } from '../../lib/contract/errors.js';
import { LISTENER_RECONNECTED_CHANNEL } from '../../lib/contract/names.js';
import type { Store, StoreLogger, Wake, WakeReceiver } from '../../lib/contract/types.js';
import { openPostgresStore } from '../../lib/engines/postgres/index.js';
import { openStore } from '../../lib/open-store.js';
import { type EngineDb, PG_URL, describePg, postgres, waitFor } from '../helpers/engines.js';
import { recordingLogger, withClient } from './pg-helpers.js';

/** Receives until a wake on `channel` arrives (other wakes are legal and skipped), or fails at the deadline. */
async function recvUntil(r: WakeReceiver, channel: string, timeoutMs = 15_000): Promise<Wake> {
  const deadline = AbortSignal.timeout(timeoutMs);
  for (;;) {
    const w = await r.recv(deadline);
    if (w === null) throw new Error(`no wake on ${JSON.stringify(channel)} within ${timeoutMs} ms`);
    if (w.channel === channel) return w;
  }
}

describePg('postgres listener', () => {
  let db: EngineDb;
  let store: Store;
  let other: Store;
  beforeAll(async () => {
    db = await postgres.create();
    store = await db.open();
    other = await db.open();
  });
  afterAll(async () => {
    await db.destroy();
  });

  describe('reconnect', () => {
    it('after pg_terminate_backend on the listening backend, receivers get the reserved wake and later notifies still arrive', async () => {
      const r = store.listen('orders');
      const idle = store.listen('idle-channel');
      const terminated = await withClient((c) =>
        c.query('SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1', [
          `alkstore-listener:${db.location}`.slice(0, 63),
        ]),
      );
      // Both stores of this schema listen: both backends are terminated.
      expect(terminated.rowCount).toBe(2);
      await recvUntil(r, LISTENER_RECONNECTED_CHANNEL);
      await recvUntil(idle, LISTENER_RECONNECTED_CHANNEL);
      // Notifications flow again over the new connection, to old and new receivers.
      const fresh = store.listen('after-reconnect');
      await waitFor('the notify to reach the old receiver', async () => {
        await other.notify('orders');
        const w = await r.recv(AbortSignal.timeout(500));
        return w?.channel === 'orders';
      });
      await other.notify('after-reconnect');
      expect((await recvUntil(fresh, 'after-reconnect')).channel).toBe('after-reconnect');
      r.close();
      idle.close();
      fresh.close();
    });

    it('a stream subscriber keeps reading across a listener reconnect', async () => {
      const stream = store.stream('reconnect-stream');
      const sub = stream.subscribe('c1');
      await other.stream('reconnect-stream').publish({ n: 1 });
      expect((await sub.next(AbortSignal.timeout(15_000)))?.payload).toEqual({ n: 1 });
      await withClient((c) =>
        c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [
          `alkstore-listener:${db.location}`.slice(0, 63),
        ]),
      );
      await other.stream('reconnect-stream').publish({ n: 2 });
      expect((await sub.next(AbortSignal.timeout(15_000)))?.payload).toEqual({ n: 2 });
      sub.close();
    });
  });

  describe('notify payload limit (8000 bytes, UTF-8)', () => {
    it('accepts exactly 8000 bytes and delivers the wake', async () => {
      const r = other.listen('limit-ok');
      await store.notify('limit-ok', 'a'.repeat(8000));
      expect((await recvUntil(r, 'limit-ok')).channel).toBe('limit-ok');
      r.close();
    });

    it('refuses 8001 bytes with PayloadTooLarge naming the channel, size and limit', async () => {
      const err = await store.notify('limit-big', 'a'.repeat(8001)).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(PayloadTooLarge);
      expect(err).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', channel: 'limit-big', bytes: 8001, limit: 8000 });
      expect((err as Error).message).toContain('limit-big');
    });

    it('counts multibyte characters in bytes, not characters', async () => {
      await expect(store.notify('limit-mb', 'é'.repeat(4000))).resolves.toBeUndefined(); // 8000 bytes
      await expect(store.notify('limit-mb', `${'é'.repeat(4000)}a`)).rejects.toBeInstanceOf(PayloadTooLarge); // 8001 bytes
      const euro = '€'.repeat(2667); // 2667 characters, 8001 bytes
      await expect(store.notify('limit-mb', euro)).rejects.toMatchObject({ bytes: 8001 });
      await expect(store.notify('limit-mb', '😀'.repeat(2001))).rejects.toMatchObject({ bytes: 8004 });
    });

    it('refuses before the round trip: the transaction stays usable and commits', async () => {
      const q = `limit-tx-${Date.now()}`;
      await store.withTx(async (tx) => {
        await expect(tx.notify('limit-tx', 'x'.repeat(9000))).rejects.toBeInstanceOf(PayloadTooLarge);
        // Had the payload reached PostgreSQL, the transaction would be aborted and this would fail.
        await tx.enqueue(q, { after: 'refusal' });
      });
      expect((await store.queue(q).claimOne('w'))?.payload).toEqual({ after: 'refusal' });
    });

    it('a transactional notify fires on commit only', async () => {
      const r = other.listen('tx-notify');
      await store.withTx(async (tx) => tx.notify('tx-notify', 'x'.repeat(8000)));
      expect((await recvUntil(r, 'tx-notify')).channel).toBe('tx-notify');
      r.close();
    });

    it('delivers a wake on a channel name of the longest legal size (255 UTF-8 bytes)', async () => {
      const long = `long-${'名'.repeat(83)}x`; // 5 + 249 + 1 = 255 bytes
      expect(Buffer.byteLength(long, 'utf8')).toBe(255);
      const r = other.listen(long);
      await store.notify(long);
      expect((await recvUntil(r, long)).channel).toBe(long);
      r.close();
    });
  });
});

describePg('postgres without LISTEN (listen: false, as behind a transaction-mode pooler)', () => {
  let db: EngineDb;
  let writer: Store;
  let polling: Store;
  const logger = recordingLogger();
  beforeAll(async () => {
    db = await postgres.create();
    writer = await db.open();
    polling = await openPostgresStore({
      connectionString: PG_URL,
      schema: db.location,
      listen: false,
      wakeFallbackMs: 50,
      logger,
    });
  });
  afterAll(async () => {
    await polling.close();
    await db.destroy();
  });

  it('says so once through the logger', () => {
    expect(logger.lines.filter((l) => /LISTEN/.test(l))).toHaveLength(1);
  });

  it('a stream subscriber still sees events published by another store', async () => {
    const sub = polling.stream('poll-s').subscribe('c');
    await writer.stream('poll-s').publish({ n: 1 });
    await writer.stream('poll-s').publishWithKey('k', { n: 2 });
    expect((await sub.next(AbortSignal.timeout(15_000)))?.offset).toBe(1);
    expect((await sub.next(AbortSignal.timeout(15_000)))?.key).toBe('k');
    sub.close();
  });

  it('a queue wake receiver is woken by polling, and the worker finds the job', async () => {
    const q = polling.queue('poll-q');
    const wakes = q.listen();
    await writer.queue('poll-q').enqueue({ job: 1 });
    await recvUntil(wakes, wakes.channel);
    expect((await q.claimOne('w'))?.payload).toEqual({ job: 1 });
    wakes.close();
  });
});

describePg('postgres store on a database that does not exist (engine only: SQLite creates its file)', () => {
  const missing = `no_such_db_${process.pid}`;
  const url = new URL(PG_URL);
  url.pathname = `/${missing}`;
  const createdb = `createdb -h ${url.hostname}${url.port ? ` -p ${url.port}` : ''}${url.username ? ` -U ${url.username}` : ''} ${missing}`;

  it('fails the open with a Database error naming createdb, before any LISTEN line', async () => {
    for (const open of [
      (logger: StoreLogger) => openPostgresStore({ connectionString: url.toString(), logger }),
      (logger: StoreLogger) => openStore({ url: url.toString(), logger }),
    ]) {
      const logger = recordingLogger();
      const err = await open(logger).then(
        () => null,
        (e: unknown) => e,
      );
      expect(logger.lines).toEqual([]);
      expect(err).toBeInstanceOf(Database);
      expect((err as Database).message).toContain(`database "${missing}" does not exist`);
      expect((err as Database).message).toContain(`create it with \`${createdb}\``);
    }
  });

  it('names createdb from a caller pool too', async () => {
    const pg = (await import('pg')).default;
    const pool = new pg.Pool({
      host: url.hostname,
      port: Number(url.port || 5432),
      user: 'postgres',
      database: missing,
    });
    try {
      const logger = recordingLogger();
      await expect(openPostgresStore({ pool, logger })).rejects.toThrow(
        `create it with \`createdb -h ${url.hostname} -p ${url.port || 5432} -U postgres ${missing}\``,
      );
      expect(logger.lines).toEqual([]);
    } finally {
      await pool.end();
    }
  });
});

describe('postgres store options', () => {
  it('needs exactly one of connectionString and pool', async () => {
    await expect(openPostgresStore({})).rejects.toMatchObject({ code: 'INVALID_OPTION' });
    await expect(openPostgresStore({ connectionString: PG_URL, poolSize: 0 })).rejects.toBeInstanceOf(RangeError);
    await expect(openPostgresStore({ connectionString: PG_URL, wakeFallbackMs: -1 })).rejects.toBeInstanceOf(
      RangeError,
    );
  });
});
