import { requireBatchSize, requireDurationMs } from '../contract/validate.js';
import type { JobInfo, ListDeadOpts, RedriveResult, Store } from '../contract/types.js';

/** Options of {@link listDead}: which outbox, and a page of its dead letters (ordered by id ascending). */
export interface ListDeadLettersOpts extends ListDeadOpts {
  readonly outbox: string;
}

/**
 * One page of an outbox's dead letters, ordered by id ascending. Page on with
 * `after: <last id of the previous page>`. `lastError` starts with
 * `permanent: ` or `exhausted after N attempts: ` when the dispatcher
 * dead-lettered the row (`max attempts exceeded` / `expired` when the engine did).
 */
export function listDead(store: Pick<Store, 'outbox'>, opts: ListDeadLettersOpts): Promise<JobInfo[]> {
  const { outbox, ...page } = opts;
  return store.outbox(outbox).queue.listDead(page);
}

/**
 * Redrives dead letters: back to pending now with attempts reset to 0. Resolves to how many moved
 * and which stayed dead because a live message holds their unique key.
 */
export function retryDead(
  store: Pick<Store, 'outbox'>,
  outbox: string,
  ids: readonly number[],
): Promise<RedriveResult> {
  return store.outbox(outbox).queue.retryDead(ids);
}

/** Deletes dead letters (only dead rows). Resolves to how many. */
export function purgeDead(store: Pick<Store, 'outbox'>, outbox: string, ids: readonly number[]): Promise<number> {
  return store.outbox(outbox).queue.purgeDead(ids);
}

/**
 * Deletes the outbox's dead letters that died more than `ageMs` ago (database
 * clock), page by page. Resolves to how many were deleted. For standing
 * retention, stamp `deadLetterRetentionMs` on the outbox and run
 * `queue.sweepExpired()` periodically instead.
 */
export async function purgeDeadOlderThan(
  store: Pick<Store, 'outbox' | 'now'>,
  outbox: string,
  ageMs: number,
  pageSize = 500,
): Promise<number> {
  requireDurationMs('ageMs', ageMs);
  requireBatchSize('pageSize', pageSize);
  const queue = store.outbox(outbox).queue;
  const before = (await store.now()) - ageMs;
  let purged = 0;
  let after: number | undefined;
  for (;;) {
    const page = await queue.listDead({ before, after, limit: pageSize });
    if (page.length === 0) return purged;
    purged += await queue.purgeDead(page.map((j) => j.id));
    after = page[page.length - 1]!.id;
  }
}
