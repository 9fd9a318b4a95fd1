import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { packageVersion } from '../../lib/cli/version.js';
import type { NodeHeartbeat } from '../../lib/contract/admin.js';
import { InvalidArgument } from '../../lib/contract/errors.js';
import type { Job } from '../../lib/contract/types.js';
import { retentionDriverOf } from '../../lib/internal/retention-runner.js';
import { AlkstoreModule, QueueHandler } from '../../lib/nest/index.js';
import { Store } from '../../lib/index.js';
import { waitFor } from '../helpers/engines.js';
import { nestEngines } from '../nest/nest-fixtures.js';
import { BASE, dashboardClient, jobIdsOf, withDashboardApp } from './dashboard-app.js';

const XSS = '<script>window.__owned = 1</script>';

/** Rows of the fleet table: `node|queue|state` → the row's cells folded to text. */
function fleetRows(text: string): Map<string, string> {
  const rows = [...text.matchAll(/<tr data-node="([^"]*)" data-queue="([^"]*)" data-state="([^"]*)">(.*?)<\/tr>/gs)];
  return new Map(
    rows.map((m) => [
      `${m[1]}|${m[2]}|${m[3]}`,
      m[4]!
        .replace(/<[^>]+>/g, ' ')
        .replace(/\s+/g, ' ')
        .trim(),
    ]),
  );
}

let running: ((job: Job) => void) | null = null;

@Injectable()
class FleetWorkers {
  @QueueHandler('fleet-busy', { concurrency: 3 })
  async busy(job: Job, signal: AbortSignal): Promise<void> {
    running?.(job);
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
  }

  @QueueHandler('fleet-idle', { concurrency: 2 })
  async idle(): Promise<void> {}
}

for (const engine of nestEngines()) {
  describe(`dashboard fleet view over HTTP [${engine.name}]`, () => {
    let app: INestApplication;
    let store: Store;
    withDashboardApp(engine, (made) => ({ app, store } = made));
    const { get } = dashboardClient(() => app);

    const node = (over: Partial<NodeHeartbeat>): NodeHeartbeat => ({
      nodeId: 'web-9:999:abc123',
      host: 'web-9',
      pid: 999,
      version: '9.9.9',
      startedAt: Date.now() - 60_000,
      intervalMs: 600_000,
      queues: [],
      ...over,
    });

    it('lists every node with its queues, idle ones too, links the jobs it holds, and marks a silent one gone', async () => {
      const q = store.queue(`fleet-q-${engine.kind}`);
      const ids = await q.enqueueMany([{ n: 1 }, { n: 2 }, { n: 3 }]);
      const held = await q.claimBatch(2, 'web-9:999:abc123');
      expect(held).toHaveLength(2);
      await store.admin().heartbeat(
        node({
          queues: [
            { queue: q.name, concurrency: 4, running: 2 },
            { queue: `idle-${engine.kind}`, concurrency: 2, running: 0 },
          ],
        }),
      );
      // Silent after its first heartbeat, on a short interval: gone after three of them.
      await store
        .admin()
        .heartbeat(node({ nodeId: `crashed-${XSS}`, host: `h-${XSS}`, pid: 7, intervalMs: 100, queues: [] }));
      const page = await waitFor('the silent node to be gone', async () => {
        const res = await get(`${BASE}/workers`).expect(200);
        return res.text.includes('data-state="gone"') ? res : null;
      });
      const rows = fleetRows(page.text);
      expect(rows.get(`web-9:999:abc123|${q.name}|alive`)).toMatch(
        /^web-9:999:abc123 web-9 999 9\.9\.9 \S+ 4 2 .* alive$/,
      );
      expect(rows.get(`web-9:999:abc123|idle-${engine.kind}|alive`)).toMatch(/ 2 0 .* alive$/);
      const gone = [...rows.entries()].find(([k]) => k.startsWith('crashed-'));
      expect(gone?.[0]).toBe('crashed-&lt;script&gt;window.__owned = 1&lt;/script&gt;||gone');
      expect(gone?.[1]).toMatch(/gone: no heartbeat for \d+/);
      expect(page.text).not.toContain(XSS);
      // The node's jobs held now.
      expect(page.text).toContain(`href="${BASE}/workers?node=web-9%3A999%3Aabc123"`);
      const mine = await get(`${BASE}/workers?node=web-9%3A999%3Aabc123`).expect(200);
      expect(jobIdsOf(/<section id="held">(.*?)<\/section>/s.exec(mine.text)![1]!)).toEqual(ids.slice(0, 2));
      for (const j of held) await j.ack();
      const none = await get(`${BASE}/workers?node=web-9%3A999%3Aabc123`).expect(200);
      expect(jobIdsOf(/<section id="held">(.*?)<\/section>/s.exec(none.text)![1]!)).toEqual([]);
      // A graceful stop forgets the node; retention removes a silent one's row.
      expect(await store.admin().forgetNode('web-9:999:abc123')).toBe(true);
      expect(await store.admin().forgetNode('web-9:999:abc123')).toBe(false);
      const driver = retentionDriverOf(store)!;
      expect(await driver.pruneNodes(60_000)).toBe(0);
      await waitFor(
        'a millisecond to pass',
        async () => (await store.now()) > (await store.admin().nodes())[0]!.heartbeatAt,
      );
      expect(await driver.pruneNodes(0)).toBe(1);
      expect(await store.admin().nodes()).toEqual([]);
    });

    it('refuses a bad heartbeat naming the field, before any write', async () => {
      const admin = store.admin();
      const cases: [Partial<NodeHeartbeat>, string][] = [
        [{ nodeId: ' ' }, 'node.nodeId'],
        [{ pid: -1 }, 'node.pid'],
        [{ intervalMs: 10 }, 'node.intervalMs'],
        [{ queues: [{ queue: 'q', concurrency: 1.5, running: 0 }] }, 'node.queues[0].concurrency'],
        [{ version: 'x'.repeat(101) }, 'node.version'],
      ];
      for (const [over, argument] of cases) {
        const err = await admin.heartbeat(node(over)).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(InvalidArgument);
        expect((err as InvalidArgument).argument).toBe(argument);
      }
      await expect(admin.heldBy('')).rejects.toMatchObject({ argument: 'workerId' });
      expect(await admin.nodes()).toEqual([]);
    });
  });

  describe(`worker node heartbeat of AlkstoreModule [${engine.name}]`, () => {
    it('writes its queues with concurrency, running jobs and version on an interval, and forgets the node on close', async () => {
      const db = await engine.create();
      const ready: Job[] = [];
      running = (job) => ready.push(job);
      try {
        const app = await Test.createTestingModule({
          imports: [
            AlkstoreModule.forRoot(
              db.moduleOptions({ workerId: 'node-a:1234:beef01', heartbeatIntervalMs: 100, drainTimeoutMs: 300 }),
            ),
          ],
          providers: [FleetWorkers],
        }).compile();
        await app.init();
        const store = app.get(Store);
        const id = await store.queue('fleet-busy').enqueue({ n: 1 });
        const seen = await waitFor('a heartbeat with the running job', async () => {
          const n = (await store.admin().nodes()).find((x) => x.nodeId === 'node-a:1234:beef01');
          return n?.queues.find((q) => q.queue === 'fleet-busy')?.running === 1 ? n : null;
        });
        expect(seen).toMatchObject({
          host: 'node-a',
          pid: process.pid,
          version: packageVersion(),
          gone: false,
          intervalMs: 100,
        });
        expect([...seen.queues].sort((a, b) => a.queue.localeCompare(b.queue))).toEqual([
          { queue: 'fleet-busy', concurrency: 3, running: 1 },
          { queue: 'fleet-idle', concurrency: 2, running: 0 },
        ]);
        expect((await store.admin().heldBy('node-a:1234:beef01')).map((j) => j.id)).toEqual([id]);
        await app.close();
        const check = await Test.createTestingModule({
          imports: [AlkstoreModule.forRoot(db.moduleOptions({ workers: 'off' }))],
        }).compile();
        await check.init();
        expect(await check.get(Store).admin().nodes()).toEqual([]);
        await check.close();
      } finally {
        running = null;
        await db.destroy();
      }
    }, 60_000);
  });
}
