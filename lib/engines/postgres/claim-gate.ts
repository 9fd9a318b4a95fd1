// PostgreSQL only: whether a queue's next claim may skip reading its settings (pause, rate limit), trusted
// only while LISTEN carries every settings change; SQLite's single writer reads them in the claim itself.
/** Longest a "this queue has no settings" reading is trusted, whatever the listener says. */
export const SETTINGS_TRUST_MS = 2_000;
/** Queues remembered per store; past this the memory starts over (every queue's next claim is full). */
const MAX_QUEUES = 10_000;
/**
 * How often the sweep (`q_claim_sweep`) of a queue whose worker claims follow the watermark runs,
 * beside them: it looks for what only a full claim takes (lapsed leases, a limiting setting, a job
 * made ready behind the watermark), so about the longest such a job waits.
 */
export const CLAIM_SWEEP_MS = 1_000;
/**
 * How long past its due time a sweep (`q_claim_sweep`, run beside the claims) may take while the
 * claims keep following the watermark; a slower one means the next worker claim is a full claim.
 */
export const SWEEP_LATE_MS = 1_000;
/** While a sweep runs, a worker claim that came back short is due back after this long (ms). */
export const SWEEP_POLL_MS = 25;
/**
 * How far behind the watermark a worker claim that came back empty looks again (ms of `run_at`), while
 * the watermark moved less than {@link CLAIM_SWEEP_MS} ago. An enqueue stamps its `run_at` when its
 * statement starts and becomes visible when it commits, so two producers can commit out of `run_at` order:
 * a claim between the two commits moves the watermark past the job that commits second. This finds that
 * job at its wake instead of at the next sweep, for a walk of at most this window's index entries.
 */
export const NEAR_WINDOW_MS = 250;

/** Where this store's last claim of a queue stopped: the last fresh row it took, in claim order. */
export interface ClaimWatermark {
  readonly priority: number;
  readonly runAt: number;
}

interface QueueClaims {
  /** The last full claim read no pause and no rate limit, and nothing has invalidated that since. */
  unlimited: boolean;
  /** Until when (`performance.now()`) `unlimited` may be trusted. */
  trustedUntil: number;
  /** The last claim to finish returned as many jobs as it asked for (the queue is backlogged). */
  lastFull: boolean;
  /** When (`performance.now()`) the last full claim of the queue started. */
  sweptAt: number;
  /** Where the claims since stopped; null until one took a fresh row, and after {@link ClaimGate.rewind}. */
  mark: ClaimWatermark | null;
  /** A sweep of the queue is in flight ({@link ClaimGate.sweepBegin}). */
  sweeping: boolean;
  /** When (`performance.now()`) `mark` last moved forward. */
  movedAt: number;
}

/** What {@link ClaimGate.begin} hands to {@link ClaimGate.fullDone}. */
export interface ClaimStart {
  readonly gen: number;
  readonly at: number;
  readonly rewinds: number;
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
 *
 * A worker's claim (one that claims again on its own schedule) may start
 * after the claim watermark instead (`claimAfter`), under the same settings
 * trust, while the last full claim started less than {@link CLAIM_SWEEP_MS}
 * ago: the rows of the pending index before the watermark were claimed, so
 * their index entries are dead, and while an old snapshot holds the xmin
 * horizon nothing removes them and every claim from the head walks them all.
 * What only a full claim finds (lapsed leases, burial, a job made ready with
 * a `run_at` older than the watermark) is looked for by a sweep that runs
 * beside the claims once the interval is up (`q_claim_sweep`: it claims
 * nothing, so a slow one delays no job); when it finds any, or the settings
 * changed, the watermark is dropped and the next worker claim is a full one.
 * A sweep more than {@link SWEEP_LATE_MS} late drops it as well. This store's
 * own promotions rewind at once.
 */
export class ClaimGate {
  private gen = 0;
  private rewound = 0;
  private listening = false;
  private readonly queues = new Map<string, QueueClaims>();

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Whether the next claim of `queue` may start with `claimPlain`. */
  usePlain(queue: string): boolean {
    const q = this.queues.get(queue);
    return q !== undefined && this.listening && q.unlimited && q.lastFull && this.now() < q.trustedUntil;
  }

  /**
   * The watermark a worker's next claim of `queue` may start from: only while that claim could
   * have been plain (the settings are trusted) and the last full claim started less than
   * {@link CLAIM_SWEEP_MS} ago. Null: the claim is a full one.
   */
  watermark(queue: string): ClaimWatermark | null {
    const q = this.queues.get(queue);
    if (q === undefined || q.mark === null || !this.listening || !q.unlimited) return null;
    const now = this.now();
    return now < q.trustedUntil && now - q.sweptAt < CLAIM_SWEEP_MS + SWEEP_LATE_MS ? q.mark : null;
  }

  /** Whether the sweep of `queue` is due (its interval is up) and none is in flight. */
  sweepDue(queue: string): boolean {
    const q = this.queues.get(queue);
    return q !== undefined && q.mark !== null && !q.sweeping && this.now() - q.sweptAt >= CLAIM_SWEEP_MS;
  }

  /** A sweep of `queue` is sent; hand the result to {@link sweepDone}. */
  sweepBegin(queue: string): ClaimStart {
    const q = this.queues.get(queue);
    if (q) q.sweeping = true;
    return this.begin();
  }

  /**
   * The sweep of `queue` begun at `started` read `limited` (settings that limit claims) and `behind`
   * (something only a full claim takes). Nothing of either, and no rewind or settings change since it
   * began: the watermark holds for another interval. Otherwise the next worker claim is a full one.
   */
  sweepDone(queue: string, started: ClaimStart, limited: boolean, behind: boolean): void {
    const q = this.queues.get(queue);
    if (q === undefined) return;
    q.sweeping = false;
    if (behind || limited || started.rewinds !== this.rewound) {
      q.mark = null;
      if (limited) q.unlimited = false;
      return;
    }
    if (!this.listening || started.gen !== this.gen) return;
    q.unlimited = true;
    q.trustedUntil = started.at + SETTINGS_TRUST_MS;
    q.sweptAt = started.at;
  }

  /** Whether `queue` has a watermark (trusted or not): a worker's claims of it have been following one. */
  hasMark(queue: string): boolean {
    return (this.queues.get(queue)?.mark ?? null) !== null;
  }

  /**
   * Ms until a worker claim of `queue` that came back short should come again: when the sweep is due,
   * {@link SWEEP_POLL_MS} while one runs (it may drop the watermark), 0 when there is no watermark.
   */
  sweepDueIn(queue: string): number {
    const q = this.queues.get(queue);
    if (q === undefined || q.mark === null) return 0;
    if (q.sweeping) return SWEEP_POLL_MS;
    return Math.max(0, Math.ceil(q.sweptAt + CLAIM_SWEEP_MS - this.now()));
  }

  /** Rewinds so far: taken before a claim after the watermark is sent, handed to {@link advance}. */
  get rewinds(): number {
    return this.rewound;
  }

  /** A claim of `queue` sent after `rewinds` rewinds took fresh rows, the last of them (claim order) at `mark`. */
  advance(queue: string, mark: ClaimWatermark, rewinds: number): void {
    const q = this.queues.get(queue);
    if (!q) return;
    q.mark = rewinds === this.rewound ? mark : null;
    q.movedAt = this.now();
  }

  /**
   * Where a worker claim of `queue` that came back empty after the watermark looks again: {@link NEAR_WINDOW_MS}
   * of `run_at` behind it, while the watermark is offered and moved less than {@link CLAIM_SWEEP_MS} ago (a job
   * committed after a later-stamped one may sit there; later, the sweep is the one to find it); null otherwise.
   */
  nearMark(queue: string): ClaimWatermark | null {
    const mark = this.watermark(queue);
    const q = this.queues.get(queue);
    if (mark === null || q === undefined || this.now() - q.movedAt >= CLAIM_SWEEP_MS) return null;
    return { priority: mark.priority, runAt: mark.runAt - NEAR_WINDOW_MS };
  }

  /**
   * Jobs may have become ready behind a watermark (an ordering key's next job, a flow's parent,
   * both with their old `run_at`): every queue's next worker claim is a full one.
   */
  rewind(): void {
    this.rewound += 1;
    for (const q of this.queues.values()) q.mark = null;
  }

  /** Taken before a full claim is sent; hand it back to {@link fullDone}. */
  begin(): ClaimStart {
    return { gen: this.gen, at: this.now(), rewinds: this.rewound };
  }

  /**
   * A full claim finished: `limited` is what it read, `full` whether the claim call got as many jobs
   * as asked, `mark` where its fresh rows ended (null: it took none, the watermark stays).
   */
  fullDone(
    queue: string,
    started: ClaimStart,
    limited: boolean,
    full: boolean,
    mark: ClaimWatermark | null = null,
  ): void {
    const unlimited = !limited && this.listening && started.gen === this.gen;
    if (this.queues.size >= MAX_QUEUES && !this.queues.has(queue)) this.queues.clear();
    // A rewind while the claim ran: a job it could not see may sit behind where it stopped.
    const kept = started.rewinds === this.rewound ? (mark ?? this.queues.get(queue)?.mark ?? null) : null;
    const sweeping = this.queues.get(queue)?.sweeping ?? false;
    this.queues.set(queue, {
      unlimited,
      trustedUntil: started.at + SETTINGS_TRUST_MS,
      lastFull: full,
      sweptAt: started.at,
      mark: kept,
      sweeping,
      movedAt: mark !== null ? this.now() : (this.queues.get(queue)?.movedAt ?? 0),
    });
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
