// PostgreSQL only: whether a queue's next claim may skip reading its settings (pause, rate limit), trusted only while LISTEN carries every settings change; SQLite's single writer reads them in the claim itself.
/** Longest a "this queue has no settings" reading is trusted, whatever the listener says. */
export const SETTINGS_TRUST_MS = 2_000;
/** Queues remembered per store; past this the memory starts over (every queue's next claim is full). */
const MAX_QUEUES = 10_000;

interface QueueClaims {
  /** The last full claim read no pause and no rate limit, and nothing has invalidated that since. */
  unlimited: boolean;
  /** Until when (`performance.now()`) `unlimited` may be trusted. */
  trustedUntil: number;
  /** The last claim to finish returned as many jobs as it asked for (the queue is backlogged). */
  lastFull: boolean;
}

/**
 * Per store: which claim statement a queue's next claim may use. The full
 * `claim` reads the queue's settings (pause, rate limit) and buries exhausted
 * lapsed jobs; `claimPlain` reads no settings and only looks for such jobs
 * (the caller then follows up with a full claim), and is cheaper. A claim
 * starts plain only when all of these hold:
 *
 * - the last full claim of the queue in this store read no pause and no rate
 *   limit, less than {@link SETTINGS_TRUST_MS} ago;
 * - the store's LISTEN connection has been up since that reading, so every
 *   settings change committed since (pause, resume and setRateLimit notify
 *   `s:<queue>` in their statement) has invalidated it on arrival; this
 *   store's own changes invalidate at once;
 * - the queue's last claim here came back full (a backlog; a plain claim
 *   that comes back short is followed by a full one, so a queue that is
 *   polled while empty gets full claims only).
 *
 * A generation counter, bumped by every invalidation and every listener
 * health change, keeps a full claim that was in flight when a change arrived
 * from recording its older "unlimited" reading.
 */
export class ClaimGate {
  private gen = 0;
  private listening = false;
  private readonly queues = new Map<string, QueueClaims>();

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Whether the next claim of `queue` may start with `claimPlain`. */
  usePlain(queue: string): boolean {
    const q = this.queues.get(queue);
    return q !== undefined && this.listening && q.unlimited && q.lastFull && this.now() < q.trustedUntil;
  }

  /** Taken before a full claim is sent; hand it back to {@link fullDone}. */
  begin(): { gen: number; at: number } {
    return { gen: this.gen, at: this.now() };
  }

  /** A full claim finished: `limited` is what it read, `full` whether the claim call got as many jobs as asked. */
  fullDone(queue: string, started: { gen: number; at: number }, limited: boolean, full: boolean): void {
    const unlimited = !limited && this.listening && started.gen === this.gen;
    if (this.queues.size >= MAX_QUEUES && !this.queues.has(queue)) this.queues.clear();
    this.queues.set(queue, { unlimited, trustedUntil: started.at + SETTINGS_TRUST_MS, lastFull: full });
  }

  /** The settings of `queue` changed (or may have): its next claim is a full one. */
  invalidate(queue: string): void {
    this.gen += 1;
    const q = this.queues.get(queue);
    if (q) q.unlimited = false;
  }

  /** The listener went up or down: nothing read before can be trusted. */
  setListening(healthy: boolean): void {
    this.gen += 1;
    this.listening = healthy;
    for (const q of this.queues.values()) q.unlimited = false;
  }
}
