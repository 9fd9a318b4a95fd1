import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import type { FlowNode } from '../../lib/contract/flows.js';
import type { Store } from '../../lib/contract/types.js';
import { contractEngines, waitFor, withEngineDb, type EngineDb } from '../helpers/engines.js';
import { spawnStoreChild } from '../helpers/store-child.js';

const CHILD = fileURLToPath(new URL('./fixtures/flows-child.ts', import.meta.url));

/** Every node of a flow tree with its number of direct children. */
function nodes(n: FlowNode): FlowNode[] {
  return [n, ...n.children.flatMap(nodes)];
}

for (const engine of contractEngines()) {
  describe(`flows across processes [${engine.name}]`, () => {
    let db!: EngineDb;
    let store!: Store;
    withEngineDb(engine, (d, s) => {
      db = d;
      store = s;
    });

    it('4 worker processes, one SIGKILLed mid-run: no parent is claimed before all its children are acked, and every flow finishes', async () => {
      const name = 'fprobe';
      const q = store.queue(name, { leaseMs: 3000 });
      // 20 flows of 1 parent × 6 children, one child itself a parent of 3.
      const flows: FlowNode[] = [];
      for (let f = 0; f < 20; f++) {
        flows.push(
          await q.enqueueFlow({
            payload: { n: f, parent: true },
            children: Array.from({ length: 6 }, (_, i) =>
              i === 0
                ? {
                    payload: { n: i, parent: true },
                    children: Array.from({ length: 3 }, (_, k) => ({ payload: { n: 10 + k } })),
                  }
                : { payload: { n: i } },
            ),
          }),
        );
      }
      const all = flows.flatMap(nodes);
      const parents = all.filter((n) => n.children.length > 0);
      const children = Array.from({ length: 4 }, () => spawnStoreChild(CHILD, engine, db, [name], 'flows'));
      try {
        await Promise.all(children.map((c) => c.ready));
        for (const c of children) c.send();
        const starts = store.stream(`${name}-starts`);
        await waitFor(
          'a third of the jobs started',
          async () => (await starts.readSince(0, 10_000)).length >= all.length / 3,
          60_000,
          20,
        );
        const victim = children[0]!;
        victim.proc.kill('SIGKILL');
        await victim.exited;
        await waitFor(
          'every flow finished',
          async () => {
            for (const f of flows) if ((await q.getJob(f.id))?.state !== 'completed') return false;
            return true;
          },
          120_000,
          100,
        );
        const survivors = children.slice(1);
        for (const c of survivors) c.send('stop');
        await Promise.all(survivors.map((c) => c.exited));
        // From the database: every start of a parent (reruns after the kill included) saw all its children completed.
        const events = (await starts.readSince(0, 10_000)).map(
          (e) => e.payload as { id: number; kind: string; seen?: number },
        );
        const want = new Map(parents.map((p) => [p.id, p.children.length]));
        const parentStarts = events.filter((e) => e.kind === 'parent');
        expect(parentStarts.length).toBeGreaterThanOrEqual(parents.length);
        expect(parentStarts.filter((e) => e.seen !== want.get(e.id))).toEqual([]);
        for (const n of all) expect([n.id, (await q.getJob(n.id))?.state]).toEqual([n.id, 'completed']);
        const s = await q.stats();
        expect([s.pending, s.processing, s.dead]).toEqual([0, 0, 0]);
      } finally {
        for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
      }
    }, 180_000);
  });
}
