import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { InvalidOption } from '../../lib/contract/errors.js';
import { openSqliteStore } from '../../lib/engines/sqlite/index.js';
import { MissingPeer } from '../../lib/internal/load-peer.js';
import { hasBetterSqlite3, hasNodeSqlite } from '../helpers/sqlite-drivers.js';

/** The SQLite engine's driver choice (engine-only): better-sqlite3, or Node's built-in node:sqlite with no native addon. */
describe('sqlite driver option (engine-only)', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'alkstore-driver-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses an unknown driver before touching the file, naming the option and the choices', async () => {
    const path = join(dir, 'refused.db');
    const err = await openSqliteStore({ path, driver: 'sqlite3' as 'node:sqlite' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidOption);
    expect((err as Error).message).toMatch(/driver.*"auto", "better-sqlite3", "node:sqlite"/);
    expect(existsSync(path)).toBe(false);
  });

  (hasNodeSqlite ? it.skip : it)(
    'on a Node without node:sqlite, asking for it is MissingPeer naming both ways out',
    async () => {
      const err = await openSqliteStore({ path: join(dir, 'none.db'), driver: 'node:sqlite' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MissingPeer);
      expect((err as Error).message).toMatch(/npm install better-sqlite3/);
      expect((err as Error).message).toMatch(/Node 22\.13\+/);
    },
  );

  (hasNodeSqlite ? it : it.skip)(
    'node:sqlite runs the store: enqueue, claim, ack, a stream, a lock and a transaction',
    async () => {
      const store = await openSqliteStore({ path: join(dir, 'node.db'), driver: 'node:sqlite' });
      try {
        const q = store.queue('q');
        const id = await q.enqueue({ n: 1 }, { priority: 2 });
        const job = (await q.claimOne('w'))!;
        expect(job).toMatchObject({ id, payload: { n: 1 }, priority: 2 });
        expect(await job.ack()).toBe(true);
        expect(await store.stream('s').publish('e')).toBe(1);
        expect((await store.stream('s').readSince(0)).map((e) => e.payload)).toEqual(['e']);
        expect(await store.tryLock('l', 'o', 10_000)).not.toBeNull();
        await store.withTx(async (tx) => {
          await tx.enqueue('q', 'in tx');
        });
        expect(await q.stats()).toMatchObject({ pending: 1 });
      } finally {
        await store.close();
      }
    },
  );

  (hasNodeSqlite && hasBetterSqlite3 ? it : it.skip)(
    'a file written through one driver is read through the other',
    async () => {
      const path = join(dir, 'shared.db');
      const a = await openSqliteStore({ path, driver: 'better-sqlite3' });
      const b = await openSqliteStore({ path, driver: 'node:sqlite' });
      try {
        const id = await a.queue('shared').enqueue({ from: 'better-sqlite3' });
        const job = (await b.queue('shared').claimOne('w'))!;
        expect(job).toMatchObject({ id, payload: { from: 'better-sqlite3' } });
        expect(await job.ack()).toBe(true);
        expect(await a.queue('shared').getJob(id)).toBeNull();
      } finally {
        await b.close();
        await a.close();
      }
    },
  );
});
