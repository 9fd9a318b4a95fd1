/**
 * The stdio protocol between the bench (Node 20) and bench/peers/host.ts (a
 * child on Node 24 running pg-boss 12 / graphile-worker 0.18): one JSON object
 * per line each way. Times are `epochNow()` readings of the child.
 */

/** Peers the host runs, each at its defaults or its documented fast settings. */
export const PEER_KINDS = ['pg-boss', 'graphile-worker'] as const;
export type PeerKind = (typeof PEER_KINDS)[number];
export type PeerVariant = 'default' | 'fast';

export type Request =
  | { id: number; op: 'create'; kind: PeerKind; variant: PeerVariant }
  | { id: number; op: 'prepareQueue'; queue: string }
  | { id: number; op: 'enqueue'; queue: string; payload: unknown }
  | { id: number; op: 'enqueueMany'; queue: string; payloads: unknown[] }
  | { id: number; op: 'startWorker'; queue: string }
  | { id: number; op: 'startDispatcher' }
  | { id: number; op: 'produce'; payload: unknown }
  | { id: number; op: 'enqueueFlow'; parentQueue: string; childQueue: string; parent: unknown; children: number }
  | { id: number; op: 'enqueueConcurrencyKeyed'; queue: string; key: string; payloads: unknown[] }
  | { id: number; op: 'completed'; worker: number }
  | { id: number; op: 'stopWorker'; worker: number }
  | { id: number; op: 'close' };

/** What `create` answers. */
export interface CreateAnswer {
  version: string;
  settings: Record<string, unknown>;
  notes: string[];
  outboxHow: string | null;
  /** The peer has a flow path (B9). */
  flows: boolean;
  /** The peer has per-key concurrency (B10). */
  concurrencyKeyed: boolean;
}

/** `t`: the child's start instant of an enqueue, or the instant a produce issued its COMMIT. */
export interface OkReply {
  id: number;
  ok: true;
  value?: unknown;
  t?: number;
}

/** A handler started on worker `w` with payload `p` at `t`. */
export interface JobEvent {
  ev: 'job';
  w: number;
  p: unknown;
  t: number;
}

export type Reply = OkReply | { id: number; ok: false; error: string } | JobEvent;

/** The peer adapter a host runs: a SystemInstance without callbacks. */
export interface PeerAdapter {
  version: string;
  settings: Record<string, unknown>;
  notes: string[];
  outboxHow: string | null;
  prepareQueue(name: string): Promise<string>;
  enqueue(name: string, payload: unknown): Promise<void>;
  enqueueMany(name: string, payloads: readonly unknown[]): Promise<void>;
  /** Starts workers calling `onJob` at each handler start. */
  startWorker(
    name: string,
    onJob: (payload: unknown) => void,
  ): Promise<{ completed(): Promise<number>; stop(): Promise<void> }>;
  /** The outbox path: business row + job in one transaction; `beforeCommit` right before COMMIT. */
  produce?(payload: unknown, beforeCommit: () => void): Promise<void>;
  /** B9: one flow in one call, a parent on `parentQueue` waiting for `children` children on `childQueue`. */
  enqueueFlow?(parentQueue: string, childQueue: string, parent: unknown, children: number): Promise<void>;
  /** B10: `payloads` under one concurrency key with a limit of 1 (the queue's worker then enforces it). */
  enqueueConcurrencyKeyed?(queue: string, key: string, payloads: readonly unknown[]): Promise<void>;
  close(): Promise<void>;
}
