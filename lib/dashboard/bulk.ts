import { randomBytes } from 'node:crypto';
import type { Store } from '../contract/types.js';
import { queueHandle } from './data.js';
import type { JobFilter } from './search-query.js';

/**
 * What a bulk action does to every job matching a filter: `retry` redrives the dead ones, `delete` deletes
 * them all (dead ones deleted, live ones cancelled), `cancel` cancels the pending and running ones.
 */
export type BulkKind = 'retry' | 'delete' | 'cancel';

/** One bulk action running (or run) in this process, with its progress. */
export interface BulkOp {
  readonly id: string;
  readonly kind: BulkKind;
  readonly filter: JobFilter;
  /** Jobs that matched when the operator confirmed. */
  readonly matched: number;
  /** Jobs looked at so far. */
  seen: number;
  /** Jobs changed so far (redriven or deleted). */
  changed: number;
  /** Dead jobs a retry left dead because a live job holds their unique key. */
  conflicts: number;
  /** Batches written so far. */
  batches: number;
  state: 'running' | 'done' | 'failed';
  error: string | null;
  readonly startedAt: number;
  finishedAt: number | null;
}

/** Jobs one batch reads and changes at most. */
export const BULK_BATCH = 1000;
/** Cancels in flight at once within a batch (each is its own statement). */
const CANCEL_CONCURRENCY = 16;
/** Finished operations kept for their progress page. */
const KEEP = 100;

/**
 * The jobs a bulk action acts on: rows of the jobs table. Completed and cancelled outcome records
 * (the history) are not retried or deleted: retention prunes them.
 */
function actionable<J extends { state: string }>(jobs: readonly J[]): J[] {
  return jobs.filter((j) => j.state !== 'completed' && j.state !== 'cancelled');
}

/** Counts the jobs matching `filter` that a bulk action of `kind` acts on, page by bounded page (the count the confirmation shows). */
export async function countMatching(store: Store, filter: JobFilter, kind: BulkKind = 'delete'): Promise<number> {
  const admin = store.admin();
  let n = 0;
  let cursor: string | undefined;
  for (;;) {
    const page = await admin.searchJobs(filter.queue, { ...filter.search, limit: 1000, cursor });
    const jobs = actionable(page.jobs);
    n += kind === 'cancel' ? jobs.filter((j) => j.state !== 'dead').length : jobs.length;
    if (page.next === null) return n;
    cursor = page.next;
  }
}

/** A fresh operation id for a confirmation form (the same id twice is one operation). */
export function newOpId(): string {
  return randomBytes(12).toString('base64url');
}

/**
 * Runs bulk actions in the background, one bounded batch at a time, through
 * the public queue API (`retryDead`, `purgeDead`, `cancel`). Idempotent: the
 * same operation id twice (a double-clicked confirmation) is one operation,
 * and while one runs, the same action on the same filter joins it. Progress
 * lives in this process (a replica behind a load balancer shows its own).
 */
export class BulkRunner {
  private readonly ops = new Map<string, BulkOp>();
  private readonly runningByKey = new Map<string, string>();

  constructor(private readonly store: Store) {}

  get(id: string): BulkOp | undefined {
    return this.ops.get(id);
  }

  /** Starts the operation (or returns the one already known by id, or running on the same filter); `finished` runs when it ends. */
  start(
    id: string,
    kind: BulkKind,
    filter: JobFilter,
    matched: number,
    now: number,
    finished: (op: BulkOp) => Promise<void>,
  ): { op: BulkOp; fresh: boolean } {
    const known = this.ops.get(id);
    if (known) return { op: known, fresh: false };
    const key = `${kind}\u0000${new URLSearchParams(filter.params).toString()}`;
    const runningId = this.runningByKey.get(key);
    const running = runningId === undefined ? undefined : this.ops.get(runningId);
    if (running && running.state === 'running') return { op: running, fresh: false };
    const op: BulkOp = {
      id,
      kind,
      filter,
      matched,
      seen: 0,
      changed: 0,
      conflicts: 0,
      batches: 0,
      state: 'running',
      error: null,
      startedAt: now,
      finishedAt: null,
    };
    this.ops.set(id, op);
    this.runningByKey.set(key, id);
    this.prune();
    void this.run(op)
      .then(
        () => {
          op.state = 'done';
        },
        (err: unknown) => {
          op.state = 'failed';
          op.error = err instanceof Error ? err.message : String(err);
        },
      )
      .finally(async () => {
        op.finishedAt = Date.now();
        if (this.runningByKey.get(key) === id) this.runningByKey.delete(key);
        await finished(op).catch(() => {});
      });
    return { op, fresh: true };
  }

  /** Waits for every running operation (tests, shutdown). */
  async idle(): Promise<void> {
    while ([...this.ops.values()].some((o) => o.state === 'running')) await new Promise((r) => setTimeout(r, 10));
  }

  private async run(op: BulkOp): Promise<void> {
    const admin = this.store.admin();
    const queue = queueHandle(this.store, op.filter.queue);
    let cursor: string | undefined;
    for (;;) {
      const page = await admin.searchJobs(op.filter.queue, { ...op.filter.search, limit: BULK_BATCH, cursor });
      const jobs = actionable(page.jobs);
      op.seen += jobs.length;
      const dead = jobs.filter((j) => j.state === 'dead').map((j) => j.id);
      if (op.kind === 'retry') {
        if (dead.length > 0) {
          const r = await queue.retryDead(dead);
          op.changed += r.moved;
          op.conflicts += r.conflicts;
        }
      } else {
        if (dead.length > 0 && op.kind === 'delete') op.changed += await queue.purgeDead(dead);
        const live = jobs.filter((j) => j.state !== 'dead').map((j) => j.id);
        for (let i = 0; i < live.length; i += CANCEL_CONCURRENCY) {
          const done = await Promise.all(live.slice(i, i + CANCEL_CONCURRENCY).map((id) => queue.cancel(id)));
          op.changed += done.filter(Boolean).length;
        }
      }
      if (jobs.length > 0) op.batches++;
      if (page.next === null) return;
      cursor = page.next;
      // Let the app's own requests in between batches.
      await new Promise((r) => setImmediate(r));
    }
  }

  private prune(): void {
    if (this.ops.size <= KEEP) return;
    for (const [id, op] of this.ops) {
      if (this.ops.size <= KEEP) break;
      if (op.state !== 'running') this.ops.delete(id);
    }
  }
}
