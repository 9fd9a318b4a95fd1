import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { InvalidOption } from '../../lib/contract/errors.js';
import { MissingPeer } from '../../lib/internal/load-peer.js';
import { ReliableOutbox, SqliteOutboxStore } from '../../lib/reliable-sync/index.js';
import { hasBetterSqlite3, hasNodeSqlite } from '../helpers/sqlite-drivers.js';
import {
  expectCursorRaceKeepsMax,
  loadVectors,
  runScenario,
  show,
  sqliteKind,
  type ProtocolVectors,
} from './fixtures.js';
import { outboxProperties } from './property-suite.js';

/**
 * The reliable-sync SQLite store on Node's built-in node:sqlite (no native addon). On a Node without
 * it (20) these blocks are skipped, their names say so; CI's Node 24 job runs this file.
 */
const NO_NODE_SQLITE = `(skipped: Node ${process.version} has no node:sqlite; Node 22.13+ / 24 has)`;
const NO_BOTH = hasNodeSqlite
  ? `(skipped: better-sqlite3's addon does not load on Node ${process.version})`
  : NO_NODE_SQLITE;
const onNodeSqlite = (hasNodeSqlite ? describe : describe.skip) as typeof describe;
const withBoth = hasNodeSqlite && hasBetterSqlite3 ? it : it.skip;

const root = mkdtempSync(join(tmpdir(), 'alkstore-rsync-node-sqlite-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const bytes = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'utf8'));

const vectors = loadVectors<ProtocolVectors>('outbox_store_protocol.json');

onNodeSqlite(
  `outbox_store_protocol.json on the SQLite store, driver node:sqlite ${hasNodeSqlite ? '' : NO_NODE_SQLITE}`,
  () => {
    const kind = sqliteKind('node:sqlite');
    afterAll(() => kind.cleanup());
    for (const scenario of vectors.scenarios) {
      it(scenario.name, async () => {
        await runScenario(await kind.location(), scenario);
      });
    }
  },
);

outboxProperties(
  {
    name: `SQLite file, driver node:sqlite ${hasNodeSqlite ? '' : NO_NODE_SQLITE}`,
    open: (key) => SqliteOutboxStore.open({ path: join(root, 'prop.db'), key, driver: 'node:sqlite' }),
  },
  100,
  onNodeSqlite,
);

onNodeSqlite(`SqliteOutboxStore on node:sqlite ${hasNodeSqlite ? '' : NO_NODE_SQLITE}`, () => {
  it('processes saving cursors concurrently on one file keep the maximum', async () => {
    await expectCursorRaceKeepsMax(join(root, 'multi-process.db'), 'node:sqlite');
  }, 60_000);

  withBoth(
    `one file through both drivers: frames and the cursor written by one are read by the other ${hasNodeSqlite && hasBetterSqlite3 ? '' : NO_BOTH}`,
    async () => {
      const path = join(root, 'both.db');
      const viaBetter = await SqliteOutboxStore.open({ path, key: 'doc', driver: 'better-sqlite3' });
      const viaNode = await SqliteOutboxStore.open({ path, key: 'doc', driver: 'node:sqlite' });
      try {
        const outbox = await ReliableOutbox.open(viaBetter);
        await outbox.append(1, bytes('one'));
        await outbox.append(2, new Uint8Array([0, 255, 7]));
        await viaNode.put(3, bytes('three'));
        await outbox.ackThrough(1);
        await viaNode.saveCursor(0);
        const replayed = await ReliableOutbox.open(viaNode);
        expect(replayed.cursor).toBe(1);
        expect(show(await replayed.replayFrom(0))).toEqual([
          { epoch: 2, hex: '00ff07' },
          { epoch: 3, hex: Buffer.from('three').toString('hex') },
        ]);
        expect(show(await viaBetter.scanAfter(0))).toEqual(show(await viaNode.scanAfter(0)));
      } finally {
        await viaNode.close();
        await viaBetter.close();
      }
    },
  );
});

describe('SqliteOutboxStore driver option, bad input (every Node)', () => {
  it('refuses an unknown driver before the file is created, naming the option and the choices', async () => {
    const path = join(root, 'refused.db');
    const err = await SqliteOutboxStore.open({ path, driver: 'sqlite3' as 'node:sqlite' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidOption);
    expect((err as Error).message).toMatch(/driver.*"auto", "better-sqlite3", "node:sqlite"/);
    expect(existsSync(path)).toBe(false);
  });

  it('refuses driver together with a database you pass, and a database that is not a better-sqlite3 connection', async () => {
    await expect(SqliteOutboxStore.open({ database: {} as never, driver: 'node:sqlite' })).rejects.toThrow(
      /driver applies only with `path`/,
    );
    await expect(SqliteOutboxStore.open({ database: { prepare() {} } as never })).rejects.toThrow(
      /database must be an open better-sqlite3 connection.*driver: 'node:sqlite'/,
    );
  });

  (hasNodeSqlite ? it.skip : it)(
    `on a Node without node:sqlite, driver 'node:sqlite' is MissingPeer naming both ways out ${hasNodeSqlite ? `(skipped: Node ${process.version} has node:sqlite)` : ''}`,
    async () => {
      const path = join(root, 'none.db');
      const err = await SqliteOutboxStore.open({ path, driver: 'node:sqlite' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MissingPeer);
      expect((err as Error).message).toMatch(/npm install better-sqlite3/);
      expect((err as Error).message).toMatch(/Node 22\.13\+/);
      expect(existsSync(path)).toBe(false);
    },
  );
});
