import { existsSync, mkdtempSync, readdirSync, rmSync, watch, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { sqliteFile, waitFor, type EngineDb } from '../helpers/engines.js';
import type { Store } from '../../lib/contract/types.js';
import { openSqliteStore } from '../../lib/engines/sqlite/index.js';
import { queueWakeChannel } from '../../lib/contract/names.js';
import { spawnChild } from './helpers.js';

describe('sqlite engine across processes (one file)', () => {
  let db: EngineDb;
  let store: Store;

  beforeAll(async () => {
    db = await sqliteFile.create();
    store = await db.open();
  });
  afterAll(async () => {
    await db.destroy();
  });

  it('hands every job to exactly one of two claiming processes and this one', async () => {
    const q = store.queue('shared');
    const ids = await q.enqueueMany(Array.from({ length: 600 }, (_, i) => i));
    const a = spawnChild('claim', db.location, 'shared');
    const b = spawnChild('claim', db.location, 'shared');
    await Promise.all([a.waitFor('ready'), b.waitFor('ready')]);
    const mine: number[] = [];
    for (;;) {
      const batch = await q.claimBatch(5, 'parent');
      if (batch.length === 0) break;
      for (const j of batch) mine.push(j.id);
      expect(await q.ackBatch(batch)).toBe(batch.length);
    }
    const fromA = (await a.waitFor('ids')).ids as number[];
    const fromB = (await b.waitFor('ids')).ids as number[];
    const all = [...mine, ...fromA, ...fromB];
    expect(new Set(all).size).toBe(all.length);
    expect([...all].sort((x, y) => x - y)).toEqual(ids);
    expect(await q.stats()).toMatchObject({ pending: 0, processing: 0, dead: 0 });
  });

  it('delivers a notify from this process to a listener in another process', async () => {
    const child = spawnChild('listen', db.location, 'xp-chan');
    await child.waitFor('ready');
    // The listener may attach an instant after "ready": notify until it wakes (wakes are hints, repeats are fine).
    const woke = child.waitFor('woke');
    let done = false;
    void woke.then(() => (done = true));
    await waitFor(
      'child wake',
      async () => {
        if (!done) await store.notify('xp-chan');
        return done;
      },
      20_000,
      50,
    );
    expect((await woke).woke).toBe('xp-chan');
  });

  it('wakes a listener here when another process enqueues or notifies', async () => {
    const r = store.listen('from-child');
    const child = spawnChild('notify', db.location, 'from-child');
    const wake = await r.recv(AbortSignal.timeout(20_000));
    expect(wake).toEqual({ channel: 'from-child' });
    await child.exited;
    r.close();
  });

  it("wakes a listener here at once on another process's commit, without waiting for its poll (the wake file)", async () => {
    // Polling every 10 minutes: only the child's poke in <database>-alkwake/ can deliver within the test's deadline.
    const slow = await openSqliteStore({ path: db.location, wakeFallbackMs: 600_000 });
    try {
      for (const mode of ['notify-hold', 'enqueue-hold'] as const) {
        const r = mode === 'notify-hold' ? slow.listen('poked') : slow.queue('poked').listen();
        // The child stays open after its commit: only its poke, not its close, can be what wakes.
        const child = spawnChild(mode, db.location, 'poked');
        try {
          expect(await r.recv(AbortSignal.timeout(20_000))).toEqual({ channel: r.channel });
        } finally {
          child.proc.kill('SIGKILL');
          await child.exited;
          r.close();
        }
      }
    } finally {
      await slow.close();
    }
  });

  it("hears another store's poke at once while it pokes for its own commits", async () => {
    const slow = await openSqliteStore({ path: db.location, wakeFallbackMs: 600_000 });
    try {
      const own = slow.queue('own-pokes').listen();
      const r = slow.listen('foreign-poke');
      for (let i = 0; i < 20; i++) {
        await slow.queue('own-pokes').enqueue({ i });
        await own.recv(AbortSignal.timeout(5_000)); // woken in-process, by its commit hook
      }
      // The store does not hear its own pokes (the wake directory's events name each store's
      // file), and the kernel merges repeated events of one file only, so the first foreign poke
      // is heard; one more try is allowed for a receiver still attaching.
      let sent = 0;
      let woke = false;
      void r.recv(AbortSignal.timeout(20_000)).then(
        () => (woke = true),
        () => undefined,
      );
      await waitFor(
        'the foreign poke to wake',
        async () => {
          if (!woke) {
            sent++;
            await store.notify('foreign-poke');
          }
          return woke;
        },
        20_000,
        50,
      );
      expect(sent).toBeLessThanOrEqual(2);
      own.close();
      r.close();
    } finally {
      await slow.close();
    }
  });

  it('skips its pokes while its file is the only one in the wake directory, and pokes once another appears', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'alk-alone-'));
    const path = join(dir, 'w.db');
    const alone = await openSqliteStore({ path });
    const wakeDir = `${path}-alkwake`;
    try {
      const [own] = readdirSync(wakeDir);
      const seen: string[] = [];
      const w = watch(wakeDir, (_event, file) => seen.push(String(file)));
      try {
        for (let i = 0; i < 20; i++) await alone.queue('alone').enqueue({ i });
        // Another store's file, as far as the store can tell. The directory's events come in order:
        // any poke of the enqueues above is reported before this file.
        writeFileSync(join(wakeDir, 'another-store'), '');
        await waitFor('the new file reported', () => seen.includes('another-store'));
        const at = seen.indexOf('another-store');
        expect(seen.slice(0, at).filter((f) => f === own)).toEqual([]);
        // With no commit of its own since: the poke for commits a store that just appeared may have missed.
        await waitFor("the store's poke", () => seen.slice(at).includes(own!));
        const before = seen.length;
        await alone.queue('alone').enqueue({ after: true });
        await waitFor('a poke per commit again', () => seen.slice(before).includes(own!));
      } finally {
        w.close();
      }
    } finally {
      await alone.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('wakes a listener of a process that opened after it, while it was alone on the file, at once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'alk-alone-'));
    const path = join(dir, 'w.db');
    const producer = await openSqliteStore({ path });
    try {
      await producer.queue('late').enqueue({ before: true });
      // The child polls every 10 minutes: only the producer's poke can wake it within the deadline.
      const child = spawnChild('queue-listen-slow', path, 'late');
      try {
        await child.waitFor('ready');
        await producer.queue('late').enqueue({ after: true });
        expect(await child.waitFor('woke', 20_000)).toEqual({ woke: queueWakeChannel('late') });
      } finally {
        child.proc.kill('SIGKILL');
        await child.exited;
      }
    } finally {
      await producer.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("removes its wake file on close, and the wake directory with the last store's", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'alk-wakedir-'));
    const path = join(dir, 'w.db');
    try {
      const a = await openSqliteStore({ path });
      const b = await openSqliteStore({ path });
      expect(readdirSync(`${path}-alkwake`)).toHaveLength(2);
      await a.close();
      expect(readdirSync(`${path}-alkwake`)).toHaveLength(1);
      await b.close();
      expect(existsSync(`${path}-alkwake`)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps every committed job when a process is killed inside a transaction', async () => {
    const child = spawnChild('crash', db.location, '25');
    await child.waitFor('inTx');
    child.proc.kill('SIGKILL');
    await child.exited;
    // The dead process's write lock is gone: this store writes at once, and a fresh open sees exactly the committed rows.
    const reopened = await openSqliteStore({ path: db.location });
    try {
      expect(await reopened.queue('crash').stats()).toMatchObject({ pending: 25, processing: 0 });
      expect(await reopened.stream('crash-stream').readSince(0)).toEqual([]);
      await reopened.queue('crash').enqueue('after the crash');
      expect((await reopened.queue('crash').stats()).pending).toBe(26);
    } finally {
      await reopened.close();
    }
  });
});
