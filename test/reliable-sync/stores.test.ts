import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { Closed, Codec, Database, InvalidName, InvalidOption } from '../../lib/contract/errors.js';
import {
  InMemoryOutboxStore,
  PostgresOutboxStore,
  ReliableOutbox,
  SqliteOutboxStore,
} from '../../lib/reliable-sync/index.js';
import { PG_URL, describePg, dropPgSchemas } from '../helpers/engines.js';
import { expectInvalidArgument, refusal, thrown } from '../helpers/typed-errors.js';
import { expectCursorRaceKeepsMax } from './fixtures.js';

const root = mkdtempSync(join(tmpdir(), 'alkstore-rsync-stores-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const text = (s: string): Uint8Array => new Uint8Array(Buffer.from(s));

describe('ReliableOutbox argument checks', () => {
  it('refuses epochs that are not non-negative safe integers with an InvalidArgument naming epoch', async () => {
    const outbox = await ReliableOutbox.open(new InMemoryOutboxStore());
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, Number.MAX_SAFE_INTEGER + 1]) {
      expectInvalidArgument(await refusal(() => outbox.append(bad, text('x'))), 'epoch', ['[0, 9007199254740991]']);
      expectInvalidArgument(await refusal(() => outbox.ackThrough(bad)), 'epoch', ['[0, 9007199254740991]']);
      expectInvalidArgument(await refusal(() => outbox.replayFrom(bad)), 'replay start', ['[0, 9007199254740991]']);
    }
    expectInvalidArgument(await refusal(() => outbox.append('1' as unknown as number, text('x'))), 'epoch', [
      'got a string',
    ]);
    expect(outbox.cursor).toBe(0);
    expect(outbox.retainedEpochs()).toEqual([]);
  });

  it('refuses an epoch at or below the cursor, and one appended before with other bytes, with an InvalidArgument naming epoch; the store keeps what it had', async () => {
    const store = new InMemoryOutboxStore();
    const outbox = await ReliableOutbox.open(store);
    await outbox.append(1, text('f1'));
    await outbox.append(2, text('f2'));
    await outbox.ackThrough(1);
    const below = expectInvalidArgument(await refusal(() => outbox.append(1, text('again'))), 'epoch');
    expect(below.message).toBe('epoch 1 is at or below the acknowledgment cursor 1; append epochs above it');
    const other = expectInvalidArgument(await refusal(() => outbox.append(2, text('other'))), 'epoch');
    expect(other.message).toBe('epoch 2 is already appended with different bytes; an epoch names one frame');
    expect((await store.scanAfter(0)).map((r) => [r.epoch, Buffer.from(r.frame).toString()])).toEqual([[2, 'f2']]);
    expect(outbox.retainedEpochs()).toEqual([2]);
  });

  it('refuses a firstPending count that is not a non-negative safe integer', async () => {
    const outbox = await ReliableOutbox.open(new InMemoryOutboxStore());
    await outbox.append(1, text('f1'));
    for (const bad of [-1, 1.5, Number.NaN, '2']) {
      expectInvalidArgument(
        thrown(() => outbox.firstPending(bad as number)),
        'count',
        ['[0, 9007199254740991]'],
      );
    }
    expect(outbox.firstPending(Number.MAX_SAFE_INTEGER).map((r) => r.epoch)).toEqual([1]);
  });

  it('refuses to open over something that is not an OutboxStore, naming the missing method', async () => {
    expectInvalidArgument(await refusal(() => ReliableOutbox.open(null as never)), 'store.put', [
      'function',
      'undefined',
    ]);
    const partial = { ...new InMemoryOutboxStore(), put: async () => undefined } as never;
    expectInvalidArgument(await refusal(() => ReliableOutbox.open(partial)), 'store.deleteThrough', ['function']);
  });

  it('refuses a frame that is not a Uint8Array with a Codec error', async () => {
    const outbox = await ReliableOutbox.open(new InMemoryOutboxStore());
    await expect(outbox.append(1, 'x' as unknown as Uint8Array)).rejects.toThrow(Codec);
  });

  it('keeps its own copy of a frame: mutating the caller buffer later changes nothing', async () => {
    const store = new InMemoryOutboxStore();
    const outbox = await ReliableOutbox.open(store);
    const buf = text('abc');
    await outbox.append(1, buf);
    buf[0] = 0x7a;
    expect(Buffer.from((await outbox.replayFrom())[0].frame).toString()).toBe('abc');
  });

  it('pending views are ascending whatever the append order, and shrink from the bottom on ack', async () => {
    const outbox = await ReliableOutbox.open(new InMemoryOutboxStore());
    for (const e of [5, 1, 9, 3, 7]) await outbox.append(e, text(`f${e}`));
    expect(outbox.retainedEpochs()).toEqual([1, 3, 5, 7, 9]);
    expect(outbox.firstPending(2).map((r) => r.epoch)).toEqual([1, 3]);
    await outbox.ackThrough(4);
    expect(outbox.pending().map((r) => [r.epoch, Buffer.from(r.frame).toString()])).toEqual([
      [5, 'f5'],
      [7, 'f7'],
      [9, 'f9'],
    ]);
    expect(outbox.firstPending(0)).toEqual([]);
  });

  it('a store whose cursor is not a safe integer is refused at open', async () => {
    const store = new InMemoryOutboxStore();
    store.loadCursor = async () => -3;
    await expect(ReliableOutbox.open(store)).rejects.toThrow(
      /stored cursor must be an integer in \[0, 9007199254740991\]/,
    );
  });
});

describe('SqliteOutboxStore', () => {
  it('keys rows by (outbox_key, epoch) and keeps one cursor row per key', async () => {
    const path = join(root, 'layout.db');
    const a = await SqliteOutboxStore.open({ path, key: 'doc-a' });
    const b = await SqliteOutboxStore.open({ path, key: 'doc-b' });
    await a.put(1, text('a1'));
    await b.put(1, text('b1'));
    await a.saveCursor(4);
    await a.saveCursor(2);
    await a.close();
    await b.close();
    const db = new BetterSqlite3(path, { readonly: true });
    try {
      expect(db.prepare('SELECT outbox_key, epoch FROM alkstore_sync_frame ORDER BY outbox_key').all()).toEqual([
        { outbox_key: 'doc-a', epoch: 1 },
        { outbox_key: 'doc-b', epoch: 1 },
      ]);
      expect(db.prepare('SELECT outbox_key, cursor FROM alkstore_sync_cursor').all()).toEqual([
        { outbox_key: 'doc-a', cursor: 4 },
      ]);
    } finally {
      db.close();
    }
  });

  it('processes saving cursors concurrently on one file keep the maximum', async () => {
    await expectCursorRaceKeepsMax(join(root, 'multi-process.db'));
  }, 60_000);

  it('uses a caller-owned connection without closing it', async () => {
    const db = new BetterSqlite3(join(root, 'owned.db'));
    const store = await SqliteOutboxStore.open({ database: db, tablePrefix: 'my_sync' });
    await store.put(1, text('x'));
    await store.close();
    expect(db.open).toBe(true);
    expect(db.prepare('SELECT count(*) AS n FROM my_sync_frame').get()).toEqual({ n: 1 });
    db.close();
    await expect(store.loadCursor()).rejects.toThrow(Closed);
  });

  it('refuses bad options before opening anything', async () => {
    await expect(SqliteOutboxStore.open({})).rejects.toThrow(InvalidOption);
    await expect(SqliteOutboxStore.open({ path: join(root, 'x.db'), key: '' })).rejects.toThrow(InvalidName);
    await expect(SqliteOutboxStore.open({ path: join(root, 'x.db'), tablePrefix: 'x; DROP TABLE y' })).rejects.toThrow(
      InvalidOption,
    );
  });

  it('wraps a driver failure in Database, naming the operation', async () => {
    await expect(SqliteOutboxStore.open({ path: join(root, 'missing-dir', 'x.db') })).rejects.toThrow(Database);
  });
});

describePg('PostgresOutboxStore', () => {
  const schema = `rsync_stores_${process.pid}_${Date.now().toString(36)}`;
  afterAll(async () => {
    await dropPgSchemas(schema);
  });

  it('concurrent opens on a fresh schema all succeed', async () => {
    const stores = await Promise.all(
      [1, 2, 3, 4].map((i) =>
        PostgresOutboxStore.open({ connectionString: PG_URL, schema, tablePrefix: 'race', key: `k${i}` }),
      ),
    );
    for (const s of stores) await s.close();
  });

  it('concurrent cursor saves from independent pools keep the maximum', async () => {
    const stores = await Promise.all(
      [1, 2, 3, 4].map(() => PostgresOutboxStore.open({ connectionString: PG_URL, schema, key: 'shared' })),
    );
    const values = Array.from({ length: 40 }, (_, i) => (i * 37) % 101);
    await Promise.all(values.map((v, i) => stores[i % stores.length].saveCursor(v)));
    for (const s of stores) expect(await s.loadCursor()).toBe(Math.max(...values));
    for (const s of stores) await s.close();
  });

  it('uses a caller-owned pool without ending it, and keys rows by (outbox_key, epoch)', async () => {
    const pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
    try {
      const a = await PostgresOutboxStore.open({ pool, schema, key: 'doc-a' });
      const b = await PostgresOutboxStore.open({ pool, schema, key: 'doc-b' });
      await a.put(3, text('a3'));
      await b.put(3, text('b3'));
      await b.saveCursor(1);
      await a.close();
      await b.close();
      const rows = await pool.query(
        `SELECT outbox_key, epoch::int AS epoch, convert_from(frame, 'UTF8') AS frame FROM "${schema}".alkstore_sync_frame ORDER BY outbox_key`,
      );
      expect(rows.rows).toEqual([
        { outbox_key: 'doc-a', epoch: 3, frame: 'a3' },
        { outbox_key: 'doc-b', epoch: 3, frame: 'b3' },
      ]);
      await expect(a.loadCursor()).rejects.toThrow(Closed);
    } finally {
      await pool.end();
    }
  });

  it('refuses a schema that is not a plain identifier', async () => {
    await expect(PostgresOutboxStore.open({ connectionString: PG_URL, schema: 'a"b' })).rejects.toThrow(InvalidOption);
  });
});

describe('optional peers', () => {
  it('the in-memory and file journal stores load neither better-sqlite3 nor pg', () => {
    const script = `
      import Module from 'node:module';
      const loaded = () => [...new Set(Object.keys(Module._cache)
        .filter((k) => /node_modules[\\\\/](better-sqlite3|pg)[\\\\/]/.test(k))
        .map((k) => (k.includes('better-sqlite3') ? 'better-sqlite3' : 'pg')))];
      const rs = await import(${JSON.stringify(join(process.cwd(), 'lib/reliable-sync/index.ts'))});
      const o = await rs.ReliableOutbox.open(new rs.InMemoryOutboxStore());
      await o.append(1, new Uint8Array([1]));
      const f = await rs.FileJournalOutboxStore.open({ directory: ${JSON.stringify(join(root, 'lazy'))} });
      await f.put(1, new Uint8Array([1]));
      await f.close();
      const before = loaded();
      const s = await rs.SqliteOutboxStore.open({ path: ':memory:' });
      await s.close();
      console.log(JSON.stringify({ before, after: loaded() }));
    `;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: process.cwd(),
      encoding: 'utf8',
    });
    // The positive control (after) proves the probe can see a loaded driver.
    expect(JSON.parse(out.trim().split('\n').pop()!)).toEqual({ before: [], after: ['better-sqlite3'] });
  }, 60_000);

  it('a missing driver package is a MissingPeer error naming the package to install', () => {
    const hook = `export async function resolve(s, c, n) {
      if (s === 'pg' || s === 'better-sqlite3') { const e = new Error('Cannot find package ' + s); e.code = 'ERR_MODULE_NOT_FOUND'; throw e; }
      return n(s, c);
    }`;
    const script = `
      import { register } from 'node:module';
      register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hook)}));
      const rs = await import(${JSON.stringify(join(process.cwd(), 'lib/reliable-sync/index.ts'))});
      const out = {};
      const opens = [
        ['pg', () => rs.PostgresOutboxStore.open({ connectionString: 'postgres://127.0.0.1:1/none' })],
        ['better-sqlite3', () => rs.SqliteOutboxStore.open({ path: ':memory:' })],
      ];
      for (const [name, open] of opens) {
        try { const s = await open(); await s.close(); out[name] = 'opened'; } catch (e) { out[name] = { name: e.name, code: e.code, message: e.message }; }
      }
      out.nodeSqlite = await import('node:sqlite').then(() => true, () => false);
      console.log(JSON.stringify(out));
    `;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: process.cwd(),
      encoding: 'utf8',
    });
    const result = JSON.parse(out.trim().split('\n').pop()!) as Record<
      string,
      { name: string; code: string; message: string }
    > & { nodeSqlite: boolean };
    expect(result.pg.name).toBe('MissingPeer');
    expect(result.pg.code).toBe('MISSING_PEER');
    expect(result.pg.message).toContain('npm install pg');
    if (result.nodeSqlite) {
      // driver 'auto' (the default) falls back to Node's built-in node:sqlite: no package is missing.
      expect(result['better-sqlite3']).toBe('opened');
    } else {
      expect(result['better-sqlite3'].name).toBe('MissingPeer');
      expect(result['better-sqlite3'].message).toContain('npm install better-sqlite3');
      expect(result['better-sqlite3'].message).toContain('Node 22.13+');
    }
  }, 60_000);
});
