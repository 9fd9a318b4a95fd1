import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { contractEngines, waitFor, withEngineDb, type EngineDb } from '../helpers/engines.js';
import { numbersOf, spawnStoreChild } from '../helpers/store-child.js';

const CHILD = fileURLToPath(new URL('./fixtures/results-child.ts', import.meta.url));

for (const engine of contractEngines()) {
  describe(`results and cancel across processes [${engine.name}]`, () => {
    let db!: EngineDb;
    let store!: Store;
    withEngineDb(engine, (d, s) => {
      db = d;
      store = s;
    });

    it('4 worker processes, one SIGKILLed mid-run: cancelled handlers abort and never run again, no committed result is lost', async () => {
      const name = 'probe';
      const q = store.queue(name, { leaseMs: 4000 });
      const slow = await q.enqueueMany(
        Array.from({ length: 8 }, (_, i) => ({ n: i, slow: true })),
        { priority: 10 },
      );
      const fast = await q.enqueueMany(Array.from({ length: 400 }, (_, i) => ({ n: i })));
      const children = Array.from({ length: 4 }, () => spawnStoreChild(CHILD, engine, db, [name], 'results'));
      try {
        await Promise.all(children.map((c) => c.ready));
        for (const c of children) c.send();
        // Every slow job runs somewhere (8 of the 12 slots), while fast jobs flow through the rest.
        await waitFor(
          'every slow job started',
          () => children.flatMap((c) => numbersOf(c.events, 'start')).length >= slow.length,
          60_000,
          20,
        );
        const victim = children.reduce((a, b) =>
          numbersOf(b.events, 'start').length > numbersOf(a.events, 'start').length ? b : a,
        );
        const victimStarts = numbersOf(victim.events, 'start');
        victim.proc.kill('SIGKILL');
        await victim.exited;
        for (const id of slow) expect(await q.cancel(id)).toBe(true);
        const survivors = children.filter((c) => c !== victim);
        const survivorStarts = survivors.flatMap((c) => numbersOf(c.events, 'start'));
        // Each surviving worker's cancelled handler sees its signal abort with JobCancelled.
        await waitFor(
          "the survivors' cancelled handlers aborted",
          () =>
            survivorStarts.every((id) =>
              survivors.some((c) => c.events.some((e) => e.aborted === id && e.reason === 'JobCancelled')),
            ),
          30_000,
          20,
        );
        // The victim's jobs come back after its lease lapses and finish elsewhere.
        await waitFor(
          'every fast job completed',
          async () => {
            const s = await q.stats();
            return s.pending === 0 && s.processing === 0;
          },
          90_000,
          100,
        );
        for (const c of survivors) c.send('stop');
        await Promise.all(survivors.map((c) => c.exited));
        const allStarts = children.flatMap((c) => numbersOf(c.events, 'start'));
        expect(victimStarts.length).toBeGreaterThan(0);
        // Never re-run: the victim's slow jobs were cancelled before its lease lapsed, so none started twice.
        expect([...allStarts].sort((a, b) => a - b)).toEqual([...slow].sort((a, b) => a - b));
        for (const id of slow) expect((await q.getJob(id))!.state).toBe('cancelled');
        for (const [i, id] of fast.entries()) {
          const info = await q.getJob(id);
          expect([id, info?.state, (info?.result as { n?: number } | undefined)?.n]).toEqual([id, 'completed', i * 2]);
        }
      } finally {
        for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
      }
    }, 180_000);
  });
}
