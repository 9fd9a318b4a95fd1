import type { JobSearch, StoreAdmin } from '../contract/admin.js';
import type { JobInfo } from '../contract/types.js';
import { html, type SafeHtml } from './html.js';

/** One page of a search that kept scanning: its matches, where to go on, and how far it looked. */
export interface SearchResult {
  readonly jobs: JobInfo[];
  /** Cursor of the rest of the search, or null when every row was looked at. */
  readonly next: string | null;
  /** Rows looked at for this page, over every call. */
  readonly scanned: number;
  /** Bounded search calls this page made. */
  readonly calls: number;
  /** The page stopped on the time budget before finding a page of matches (the rest is behind `next`). */
  readonly outOfTime: boolean;
  /** The time budget the page had (ms). */
  readonly budgetMs: number;
}

/**
 * Runs `searchJobs` call after call (each reads at most `SEARCH_SCAN_ROWS` rows, keyset-paged by id)
 * until it has `limit` matches, the queue is scanned to its oldest job, or `budgetMs` ran out, so
 * matches among the oldest rows of a large queue show on the first page, not behind clicks.
 */
export async function searchUntil(
  admin: StoreAdmin,
  queue: string,
  search: JobSearch,
  limit: number,
  cursor: string | undefined,
  budgetMs: number,
): Promise<SearchResult> {
  const started = Date.now();
  const jobs: JobInfo[] = [];
  let next: string | null | undefined = cursor;
  let scanned = 0;
  let calls = 0;
  do {
    const page = await admin.searchJobs(queue, { ...search, cursor: next, limit: limit - jobs.length });
    jobs.push(...page.jobs);
    scanned += page.scanned;
    calls += 1;
    next = page.next;
  } while (next !== null && jobs.length < limit && Date.now() - started < budgetMs);
  return { jobs, next, scanned, calls, outOfTime: next !== null && jobs.length < limit, budgetMs };
}

/** How far a search page looked: rows, calls, and whether it reached the oldest row or ran out of time. */
export function lookedAt(r: Pick<SearchResult, 'scanned' | 'calls' | 'outOfTime' | 'next' | 'budgetMs'>): SafeHtml {
  const rows = `${r.scanned.toLocaleString('en-US')} row${r.scanned === 1 ? '' : 's'}`;
  return html`<span id="looked-at" data-scanned="${r.scanned}"
    >Looked at ${rows} in ${r.calls}
    scan${r.calls === 1 ? '' : 's'}${
      r.next === null
        ? ', down to the oldest row: no more matches.'
        : r.outOfTime
          ? `, then stopped at the ${r.budgetMs / 1000} s budget: older rows are not searched yet.`
          : '; older rows are not searched yet.'
    }</span
  >`;
}
