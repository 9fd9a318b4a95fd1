/**
 * Runs one peer instance (pg-boss 12 or graphile-worker 0.18) for the bench on
 * Node 24: requests on stdin, replies and handler events on stdout, one JSON
 * object per line (bench/peers/protocol.ts). Started by bench/systems/remote.ts.
 */
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { epochNow } from '../lib/util.js';
import { graphile18 } from './graphile18.js';
import { pgBoss12 } from './pgboss12.js';
import type { CreateAnswer, PeerAdapter, Reply, Request } from './protocol.js';

/** Read from the file: graphile-worker's `exports` does not expose its package.json. */
function versionOf(pkg: string): string {
  return (
    JSON.parse(readFileSync(new URL(`./node_modules/${pkg}/package.json`, import.meta.url), 'utf8')) as {
      version: string;
    }
  ).version;
}

let adapter: PeerAdapter | null = null;
const workers = new Map<number, { completed(): Promise<number>; stop(): Promise<void> }>();
let nextWorker = 1;

function send(r: Reply): void {
  process.stdout.write(`${JSON.stringify(r)}\n`);
}

function need(): PeerAdapter {
  if (!adapter) throw new Error('create first');
  return adapter;
}

async function handle(m: Request): Promise<{ value?: unknown; t?: number }> {
  switch (m.op) {
    case 'create': {
      adapter =
        m.kind === 'pg-boss'
          ? await pgBoss12(m.variant, versionOf('pg-boss'))
          : await graphile18(m.variant, versionOf('graphile-worker'));
      const answer: CreateAnswer = {
        version: adapter.version,
        settings: adapter.settings,
        notes: adapter.notes,
        outboxHow: adapter.outboxHow,
        flows: adapter.enqueueFlow !== undefined,
        concurrencyKeyed: adapter.enqueueConcurrencyKeyed !== undefined,
      };
      return { value: answer };
    }
    case 'prepareQueue':
      return { value: await need().prepareQueue(m.queue) };
    case 'enqueue': {
      const t = epochNow();
      await need().enqueue(m.queue, m.payload);
      return { t };
    }
    case 'enqueueMany':
      await need().enqueueMany(m.queue, m.payloads);
      return {};
    case 'startWorker':
    case 'startDispatcher': {
      const w = nextWorker++;
      const running = await need().startWorker(m.op === 'startWorker' ? m.queue : 'outbox', (p) =>
        send({ ev: 'job', w, p, t: epochNow() }),
      );
      workers.set(w, running);
      return { value: w };
    }
    case 'produce': {
      const a = need();
      if (!a.produce) throw new Error('no outbox path');
      let t = 0;
      await a.produce(m.payload, () => {
        t = epochNow();
      });
      return { t };
    }
    case 'enqueueFlow': {
      const a = need();
      if (!a.enqueueFlow) throw new Error('no flow path');
      await a.enqueueFlow(m.parentQueue, m.childQueue, m.parent, m.children);
      return {};
    }
    case 'enqueueConcurrencyKeyed': {
      const a = need();
      if (!a.enqueueConcurrencyKeyed) throw new Error('no per-key concurrency');
      await a.enqueueConcurrencyKeyed(m.queue, m.key, m.payloads);
      return {};
    }
    case 'completed':
      return { value: await workers.get(m.worker)!.completed() };
    case 'stopWorker':
      await workers.get(m.worker)?.stop();
      workers.delete(m.worker);
      return {};
    case 'close':
      for (const w of workers.values()) await w.stop().catch(() => undefined);
      workers.clear();
      await adapter?.close();
      adapter = null;
      return {};
  }
}

createInterface({ input: process.stdin })
  .on('line', (line) => {
    const m = JSON.parse(line) as Request;
    handle(m).then(
      (r) => send({ id: m.id, ok: true, ...r }),
      (err: unknown) => send({ id: m.id, ok: false, error: (err as Error).message }),
    );
  })
  .on('close', () => {
    void (async () => {
      for (const w of workers.values()) await w.stop().catch(() => undefined);
      await adapter?.close().catch(() => undefined);
      process.exit(0);
    })();
  });
