import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { createWorkflows } from '../../lib/workflows/index.js';
import {
  contractEngines,
  PG_URL,
  waitFor,
  withEngineDb,
  type EngineDb,
  type EngineFixture,
} from '../helpers/engines.js';
import {
  EXECUTIONS,
  LEDGER,
  NAMESPACE,
  orderWorkflow,
  PACKED,
  packWorkflow,
  VIOLATIONS,
  type OrderResult,
} from './fixtures/order-workflow.js';

// The crash proof: order runs (a step, a transactional step writing a business row, a durable sleep, a
// wait for a signal this process sends, a child run started with ctx.startChild and awaited with
// ctx.waitAll, a last step) advanced by 4 worker processes, one of which is
// SIGKILLed at random 10 times (and replaced). Every run must complete; every business row must exist
// exactly once; no completed step may run again; no sleep may end before the time asked.

const WORKER = fileURLToPath(new URL('./fixtures/workflow-worker.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const RUNS = 200;
const WORKERS = 4;
const KILLS = 10;

function spawnWorker(engine: EngineFixture, db: EngineDb): { proc: ChildProcess; ready: Promise<void> } {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const proc = spawn(
    process.execPath,
    ['--import', 'tsx', WORKER, engine.kind, db.location, engine.kind === 'postgres' ? PG_URL : '-'],
    { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  const ready = new Promise<void>((resolve, reject) => {
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('"ready":true')) resolve();
    });
    proc.once('exit', (code, signal) => reject(new Error(`worker exited early (${code ?? signal})`)));
  });
  proc.stderr!.on('data', () => undefined);
  return { proc, ready };
}

async function countByKey(store: Store, stream: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  let offset = 0;
  for (;;) {
    const events = await store.stream(stream).readSince(offset, 1000);
    for (const e of events) counts.set(e.key ?? '', (counts.get(e.key ?? '') ?? 0) + 1);
    if (events.length < 1000) return counts;
    offset = events[events.length - 1]!.offset;
  }
}

for (const engine of contractEngines()) {
  describe(`workflows across worker processes with SIGKILL [${engine.name}]`, () => {
    let db!: EngineDb;
    let store!: Store;
    withEngineDb(engine, (d, s) => {
      db = d;
      store = s;
    });

    it(`${RUNS} runs, ${WORKERS} workers, ${KILLS} SIGKILLs: every run completes, each business row exists once, no completed step runs again, no sleep ends early`, async () => {
      const workflows = createWorkflows(store, {
        workflows: [orderWorkflow(store), packWorkflow(store)],
        namespace: NAMESPACE,
        worker: false,
      });
      const workers = Array.from({ length: WORKERS }, () => spawnWorker(engine, db));
      await Promise.all(workers.map((w) => w.ready));
      const ids: string[] = [];
      try {
        for (let i = 0; i < RUNS; i++)
          ids.push(
            (await workflows.start('order', { sleepMs: 100 + Math.floor(Math.random() * 400) }, { id: `order-${i}` }))
              .id,
          );
        const signalled = new Set<string>();
        let kills = 0;
        const chaos = (async () => {
          while (kills < KILLS) {
            await new Promise((r) => setTimeout(r, 300 + Math.random() * 900));
            const i = Math.floor(Math.random() * workers.length);
            workers[i]!.proc.kill('SIGKILL');
            kills += 1;
            workers[i] = spawnWorker(engine, db);
            await workers[i]!.ready;
          }
        })();
        // Signals go out while the chaos runs, in random order: some before their run waits, some after.
        for (const id of [...ids].sort(() => Math.random() - 0.5)) {
          await workflows.signal(id, 'approve', { by: `parent-${process.pid}` });
          signalled.add(id);
          await new Promise((r) => setTimeout(r, Math.random() * 40));
        }
        await chaos;
        expect(kills).toBe(KILLS);
        await waitFor(
          'every run completed',
          async () => (await workflows.list({ state: 'completed', workflow: 'order' })).length === RUNS,
          120_000,
          250,
        );
        const results = await Promise.all(
          ids.map((id) => workflows.waitForResult<OrderResult>(id, { timeoutMs: 5_000 })),
        );
        for (const r of results) {
          expect(r.sleptMs).toBeGreaterThanOrEqual(r.askedMs);
          expect(r.approvedBy).toBe(`parent-${process.pid}`);
        }
        for (const [i, r] of results.entries()) expect(r.packed).toBe(`packed ${ids[i]}`);
        // One child per order, whatever the kills: the child start is journaled with the parent's position.
        const children = await workflows.list({ workflow: 'pack' });
        expect(children.length).toBe(RUNS);
        expect(children.every((c) => c.state === 'completed')).toBe(true);
        const packed = await countByKey(store, PACKED);
        expect(packed.size).toBe(RUNS);
        const ledger = await countByKey(store, LEDGER);
        expect(ledger.size).toBe(RUNS);
        expect([...ledger.values()].every((n) => n === 1)).toBe(true);
        expect(await countByKey(store, VIOLATIONS)).toEqual(new Map());
        // Each plain step ran at least once per run (and more only for steps a kill interrupted before their journal entry).
        const executions = await countByKey(store, EXECUTIONS);
        expect(executions.size).toBe(RUNS);
        expect([...executions.values()].every((n) => n >= 2)).toBe(true);
        expect(signalled.size).toBe(RUNS);
      } finally {
        for (const w of workers) w.proc.kill('SIGKILL');
        await workflows.close();
      }
    }, 180_000);
  });
}
