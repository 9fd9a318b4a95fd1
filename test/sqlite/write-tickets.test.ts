import { afterAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteStore } from '../../lib/engines/sqlite/index.js';
import { WriteTickets } from '../../lib/engines/sqlite/write-tickets.js';
import { waitFor } from '../helpers/engines.js';
import { openTx } from '../helpers/open-tx.js';

const root = mkdtempSync(join(tmpdir(), 'alk-tickets-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
function dbPath(): string {
  return join(root, `db${n++}.sqlite`);
}

describe('sqlite engine: write tickets (cross-process turn-taking on the write lock)', () => {
  it('a writer steps aside while another connection waits, and not once that ticket is withdrawn', () => {
    const path = dbPath();
    const busy = new WriteTickets(path);
    const waiter = new WriteTickets(path);
    expect(busy.shouldYield()).toBe(false);
    waiter.waiting();
    expect(readdirSync(`${path}-alkwait`)).toHaveLength(1);
    // The busy writer's cached "nobody waits" lasts at most a few ms; it must see the ticket after that.
    const seen = waitFor('the busy writer to see the ticket', () => busy.shouldYield(), 2_000, 1);
    return seen.then(() => {
      expect(waiter.shouldYield()).toBe(false); // a waiter never yields to newer or no tickets
      waiter.done();
      expect(readdirSync(`${path}-alkwait`)).toHaveLength(0);
      expect(busy.shouldYield()).toBe(false);
      busy.close();
      waiter.close();
      expect(existsSync(`${path}-alkwait`)).toBe(false);
    });
  });

  it('waiters queue in ticket order: the newer waiter yields to the older one only', () => {
    const path = dbPath();
    const first = new WriteTickets(path);
    const second = new WriteTickets(path);
    first.waiting();
    // Names start with the millisecond; make the second strictly newer.
    const t0 = Date.now();
    while (Date.now() === t0) {
      // spin to the next millisecond
    }
    second.waiting();
    expect(second.shouldYield()).toBe(true);
    expect(first.shouldYield()).toBe(false);
    first.done();
    expect(second.shouldYield()).toBe(false);
    second.close();
    first.close();
  });

  it('ignores and removes a ticket left by a process that died (not refreshed for over a second)', () => {
    const path = dbPath();
    const writer = new WriteTickets(path);
    const dir = `${path}-alkwait`;
    const stale = join(dir, `${String(Date.now() - 5_000).padStart(15, '0')}-deadbeef0000-0`);
    writeFileSync(stale, '');
    const old = (Date.now() - 5_000) / 1000;
    utimesSync(stale, old, old);
    expect(writer.shouldYield()).toBe(false);
    expect(existsSync(stale)).toBe(false);
    writer.close();
  });

  it('a store leaves no ticket behind after writes that waited for another connection, and writeFairness: false makes no directory', async () => {
    const path = dbPath();
    const a = await openSqliteStore({ path });
    const b = await openSqliteStore({ path });
    try {
      const tx = await openTx(a);
      await tx.enqueue('q', 1);
      const pending = b.queue('q').enqueue(2);
      await waitFor('b to queue a ticket', () => readdirSync(`${path}-alkwait`).length === 1, 5_000, 1);
      await tx.commit();
      await pending;
      expect(readdirSync(`${path}-alkwait`)).toHaveLength(0);
      expect((await a.queue('q').stats()).pending).toBe(2);
    } finally {
      await a.close();
      await b.close();
    }
    expect(existsSync(`${path}-alkwait`)).toBe(false);
    const plainPath = dbPath();
    const plain = await openSqliteStore({ path: plainPath, writeFairness: false });
    await plain.queue('q').enqueue(1);
    await plain.close();
    expect(existsSync(`${plainPath}-alkwait`)).toBe(false);
    await expect(openSqliteStore({ path: plainPath, writeFairness: 'yes' as unknown as boolean })).rejects.toThrow(
      /writeFairness/,
    );
  });
});
