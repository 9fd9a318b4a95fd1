import { describe, expect, it } from '@jest/globals';
import { PayloadTooLarge } from '../../lib/contract/errors.js';
import type { Store, Wake, WakeReceiver } from '../../lib/contract/types.js';
import type { EngineFixture } from '../helpers/engines.js';
import { expectError, pause, uid, useEnv, waitFor, within } from './harness.js';
import { openTx } from '../helpers/open-tx.js';

/** A wake within a generous deadline, or a failure naming the channel. */
async function wakeSoon(r: WakeReceiver, timeoutMs = 10_000): Promise<Wake> {
  const w = await r.recv(AbortSignal.timeout(timeoutMs));
  if (w === null) throw new Error(`no wake on ${JSON.stringify(r.channel)} within ${timeoutMs} ms`);
  return w;
}

/** Resolves null when nothing arrives within `ms` (used for "must not wake" checks, after the fact). */
function quietFor(r: WakeReceiver, ms: number): Promise<Wake | null> {
  return r.recv(AbortSignal.timeout(ms));
}

/** Notify / listen (SPEC §7, seed 002 notify + verification backlog "wake semantics"). */
export function notifyContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  const store = (): Store => env.store;

  describe('notify / listen', () => {
    it('a wake arrives after a notify on the same store, carrying only the channel', async () => {
      const ch = uid('ch');
      const r = store().listen(ch);
      try {
        expect(r.channel).toBe(ch);
        expect(r.closed).toBe(false);
        await store().notify(ch, 'some payload that is never delivered');
        expect(await wakeSoon(r)).toEqual({ channel: ch });
      } finally {
        r.close();
      }
    });

    it('a wake arrives across two stores on one database', async () => {
      const ch = uid('ch-cross');
      const r = env.other.listen(ch);
      try {
        await store().notify(ch);
        expect(await wakeSoon(r)).toEqual({ channel: ch });
      } finally {
        r.close();
      }
    });

    it('every receiver of a channel is woken', async () => {
      const ch = uid('ch-fanout');
      const receivers = [store().listen(ch), store().listen(ch), env.other.listen(ch)];
      try {
        await env.other.notify(ch);
        for (const r of receivers) expect(await wakeSoon(r)).toEqual({ channel: ch });
      } finally {
        for (const r of receivers) r.close();
      }
    });

    it('listen starts from now: a notify before listen is not seen', async () => {
      const ch = uid('ch-before');
      await store().notify(ch);
      const r = store().listen(ch);
      try {
        expect(await quietFor(r, 400)).toBeNull();
        await store().notify(ch);
        expect(await wakeSoon(r)).toEqual({ channel: ch });
      } finally {
        r.close();
      }
    });

    it('a receiver is not woken by another channel', async () => {
      const ch = uid('ch-mine');
      const r = store().listen(ch);
      try {
        await store().notify(`${ch}-other`);
        await store().notify(ch.toUpperCase());
        expect(await quietFor(r, 400)).toBeNull();
      } finally {
        r.close();
      }
    });

    it('repeated notifies wake again (bursts may coalesce, never to zero)', async () => {
      const ch = uid('ch-burst');
      const r = store().listen(ch);
      try {
        for (let i = 0; i < 20; i++) await store().notify(ch, String(i));
        expect(await wakeSoon(r)).toEqual({ channel: ch });
        // Drain whatever the burst produced, then one more notify must wake again.
        while ((await quietFor(r, 200)) !== null) {
          /* coalesced or per-notify: both are legal */
        }
        await store().notify(ch);
        expect(await wakeSoon(r)).toEqual({ channel: ch });
      } finally {
        r.close();
      }
    });

    it('a transactional notify fires on commit and never on rollback', async () => {
      const ch = uid('ch-tx');
      const r = env.other.listen(ch);
      try {
        const rolled = await openTx(store());
        await rolled.notify(ch, 'dropped');
        expect(await quietFor(r, 300)).toBeNull();
        await rolled.rollback();
        expect(await quietFor(r, 400)).toBeNull();

        const committed = await openTx(store());
        await committed.notify(ch, 'kept');
        expect(await quietFor(r, 300)).toBeNull();
        await committed.commit();
        expect(await wakeSoon(r)).toEqual({ channel: ch });
      } finally {
        r.close();
      }
    });

    it('a closed receiver ends its async iteration and resolves a pending recv with null', async () => {
      const ch = uid('ch-close');
      const r = store().listen(ch);
      const got: Wake[] = [];
      const loop = (async () => {
        for await (const w of r) got.push(w);
      })();
      await store().notify(ch);
      await waitFor('a wake through async iteration', () => got.length >= 1);
      r.close();
      await within('async iteration after close', 5_000, loop);
      expect(r.closed).toBe(true);
      expect(await r.recv()).toBeNull();
      r.close();
    });

    it('recv(signal) resolves null when the signal aborts, and the receiver stays usable', async () => {
      const ch = uid('ch-abort');
      const r = store().listen(ch);
      try {
        expect(await r.recv(AbortSignal.abort())).toBeNull();
        expect(await r.recv(AbortSignal.timeout(50))).toBeNull();
        expect(r.closed).toBe(false);
        await store().notify(ch);
        expect(await wakeSoon(r)).toEqual({ channel: ch });
      } finally {
        r.close();
      }
    });

    it('a pending recv wakes on a notify that comes later', async () => {
      const ch = uid('ch-pending');
      const r = store().listen(ch);
      try {
        const pending = r.recv(AbortSignal.timeout(10_000));
        await pause(50);
        await env.other.notify(ch);
        expect(await pending).toEqual({ channel: ch });
      } finally {
        r.close();
      }
    });

    it('accepts a notify payload of 8000 bytes on every engine', async () => {
      await store().notify(uid('ch-8000'), 'x'.repeat(8000));
    });

    if (engine.kind === 'postgres') {
      it('refuses a payload over 8000 bytes with PayloadTooLarge naming the channel (PostgreSQL)', async () => {
        const ch = uid('ch-big');
        const err = await expectError(() => store().notify(ch, 'é'.repeat(4001)), PayloadTooLarge);
        expect(err.message).toContain(JSON.stringify(ch));
        expect(err.bytes).toBe(8002);
        expect(err.limit).toBe(8000);
      });
    } else {
      it('has no payload limit on SQLite', async () => {
        await store().notify(uid('ch-big'), 'x'.repeat(100_000));
      });
    }
  });
}
