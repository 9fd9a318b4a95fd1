import type { HandoffPoint, HandoffSlot } from './handoff.js';

/**
 * Cross-process hand-off (PostgreSQL only; docs/semantics.md, Queues, "Cross-process hand-off"): a
 * hand-off point that can also offer one handler slot of an idle worker to the plain enqueues of
 * every store of the schema, in any process. The engine side is lib/engines/postgres/remote-handoff.ts.
 */
export interface RemoteHandoffPoint extends HandoffPoint {
  /**
   * Offers `slot` until the returned function is called. Exactly one of the slot's `deliver` and
   * `cancel` is called, once: `deliver` when an enqueue inserted a job claimed for it, `cancel` when
   * the offer ends without one. The returned function withdraws the offer; its promise resolves once
   * the slot has settled (never rejects).
   */
  offer(slot: HandoffSlot): () => Promise<void>;
}

/** `point` as a {@link RemoteHandoffPoint}, or null when its store offers no cross-process hand-off. */
export function remoteHandoffPoint(point: HandoffPoint | null): RemoteHandoffPoint | null {
  return point !== null && typeof (point as RemoteHandoffPoint).offer === 'function'
    ? (point as RemoteHandoffPoint)
    : null;
}
