import { afterAll, describe, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { forgetStoreIdentity, type EngineDb, type EngineFixture, type OpenExtra } from '../helpers/engines.js';
import { uid, within } from './harness.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/**
 * Outbox message ids (docs/brokers.md, Message ids): `[<messageIdPrefix>:]<storeId>:<rowId>`, where
 * the store id is a random UUID made with the store's tables, so no other store (another file, schema
 * or re-created database) produces the same id. Every test opens databases of its own.
 */
export function messageIdContract(engine: EngineFixture): void {
  const dbs: EngineDb[] = [];
  afterAll(async () => {
    for (const db of dbs) await within('destroying a database', 15_000, db.destroy());
  }, 60_000);
  const fresh = async (extra?: OpenExtra): Promise<{ db: EngineDb; store: Store }> => {
    const db = await engine.create();
    dbs.push(db);
    return { db, store: await db.open(extra) };
  };

  describe('message ids', () => {
    it('a store has a random UUID id, the same for every store opened on its database; another database has another', async () => {
      const a = await fresh();
      const b = await fresh();
      expect(a.store.storeId).toMatch(UUID);
      expect(b.store.storeId).toMatch(UUID);
      expect(b.store.storeId).not.toBe(a.store.storeId);
      const again = await a.db.open();
      expect(again.storeId).toBe(a.store.storeId);
      await again.close();
      await a.store.close();
      const reopened = await a.db.open();
      expect(reopened.storeId).toBe(a.store.storeId);
    });

    it('outbox.messageId is <storeId>:<rowId>, the same on every call; two stores with the same outbox and row id give different ids', async () => {
      const a = await fresh();
      const b = await fresh();
      const outbox = 'orders';
      const ia = await a.store.outboxEnqueue(outbox, { from: 'a' });
      const ib = await b.store.outboxEnqueue(outbox, { from: 'b' });
      // Fresh databases hand out the same first row ids: exactly the case the store id tells apart.
      expect(ib).toBe(ia);
      const ma = a.store.outbox(outbox).messageId(ia);
      expect(ma).toBe(`${a.store.storeId}:${ia}`);
      expect(a.store.outbox(outbox).messageId(ia)).toBe(ma);
      expect(b.store.outbox(outbox).messageId(ib)).not.toBe(ma);
      // Row ids are unique across a store's outboxes, so the outbox is not part of the id.
      expect(a.store.outbox('other').messageId(ia)).toBe(ma);
    });

    it('messageIdPrefix puts a readable prefix before the id; 64 characters of A-Z a-z 0-9 . _ - are accepted', async () => {
      const a = await fresh({ messageIdPrefix: 'orders-svc.v2_eu' });
      const id = await a.store.outboxEnqueue('ob', 1);
      expect(a.store.outbox('ob').messageId(id)).toBe(`orders-svc.v2_eu:${a.store.storeId}:${id}`);
      const long = 'x'.repeat(64);
      const b = await a.db.open({ messageIdPrefix: long });
      expect(b.outbox('ob').messageId(id)).toBe(`${long}:${a.store.storeId}:${id}`);
    });

    it('a row enqueued before the store had an id keeps its bare row id; later rows get <storeId>:<rowId>; a deleted id is made anew at the next open', async () => {
      const { db, store } = await fresh({ messageIdPrefix: 'svc' });
      const outbox = uid('legacy');
      const old = [await store.outboxEnqueue(outbox, 1), await store.outboxEnqueue(outbox, 2)];
      await store.close();
      await forgetStoreIdentity(engine.kind, db.location);
      const upgraded = await db.open({ messageIdPrefix: 'svc' });
      // Published before the upgrade as the bare row id: a republish after it carries the same id.
      for (const id of old) expect(upgraded.outbox(outbox).messageId(id)).toBe(String(id));
      const later = await upgraded.outboxEnqueue(outbox, 3);
      expect(upgraded.storeId).toMatch(UUID);
      expect(upgraded.outbox(outbox).messageId(later)).toBe(`svc:${upgraded.storeId}:${later}`);
      await upgraded.close();
      const reopened = await db.open({ messageIdPrefix: 'svc' });
      expect(reopened.storeId).toBe(upgraded.storeId);
      expect(reopened.outbox(outbox).messageId(old[1]!)).toBe(String(old[1]));
      await reopened.close();
      // A copy of the database that must not share its id: delete it, and the next open makes another.
      await forgetStoreIdentity(engine.kind, db.location, 'id');
      const copy = await db.open({ messageIdPrefix: 'svc' });
      expect(copy.storeId).toMatch(UUID);
      expect(copy.storeId).not.toBe(upgraded.storeId);
      expect(copy.outbox(outbox).messageId(old[0]!)).toBe(String(old[0]));
      expect(copy.outbox(outbox).messageId(later)).toBe(`svc:${copy.storeId}:${later}`);
    });
  });
}
