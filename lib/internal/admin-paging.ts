import { InvalidArgument } from '../contract/errors.js';
import type { JobListState, ListJobsOpts, NamePageOpts } from '../contract/admin.js';
import { optionalObject, requireInstantMs, requireInt, validateName } from '../contract/validate.js';
import type { JobInfo } from '../contract/types.js';

const STATES: readonly JobListState[] = ['pending', 'scheduled', 'processing', 'dead', 'all'];

/** Keyset position: pending/scheduled `[priority, runAt, id]`, processing `[claimedUntil, id]`, dead/all `[id]`. */
export type Keyset = readonly number[];

/** Resolved `listJobs` options, checked before any I/O. */
export interface JobListQuery {
  state: JobListState;
  after: Keyset | null;
  limit: number;
}

function keyLength(state: JobListState): number {
  return state === 'pending' || state === 'scheduled' ? 3 : state === 'processing' ? 2 : 1;
}

/** Validates `listJobs` options; a cursor from another state or a tampered one is `InvalidOption('cursor')`. */
export function resolveJobListQuery(opts: ListJobsOpts | undefined): JobListQuery {
  const o = optionalObject<ListJobsOpts>('listJobs options', opts);
  const state = o?.state ?? 'all';
  if (!STATES.includes(state))
    throw new InvalidArgument(
      'state',
      `must be one of ${STATES.join(', ')}, got ${typeof state === 'string' ? JSON.stringify(state.slice(0, 40)) : typeof state}`,
    );
  const limit = o?.limit === undefined ? 50 : requireInt('limit', o.limit, 1, 1000);
  let after: Keyset | null = null;
  if (o?.cursor !== undefined) {
    const bad = new InvalidArgument('cursor', `must be a ${state} cursor returned by listJobs`);
    const p = readCursor(o.cursor, 200, bad) as { s?: unknown; k?: unknown };
    if (
      p === null ||
      typeof p !== 'object' ||
      p.s !== state ||
      !Array.isArray(p.k) ||
      p.k.length !== keyLength(state) ||
      !p.k.every((n) => Number.isSafeInteger(n))
    ) {
      throw bad;
    }
    after = p.k as number[];
  }
  return { state, after, limit };
}

/** The JSON inside an opaque (base64url) cursor of at most `maxLength` characters; `bad` when it is anything else. */
export function readCursor(cursor: unknown, maxLength: number, bad: InvalidArgument): unknown {
  if (typeof cursor !== 'string' || cursor.length > maxLength) throw bad;
  try {
    return JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw bad;
  }
}

/** The opaque cursor after `key`. */
export function encodeCursor(state: JobListState, key: Keyset): string {
  return Buffer.from(JSON.stringify({ s: state, k: key }), 'utf8').toString('base64url');
}

/** Validates name-paging options. */
export function resolveNamePage(opts: NamePageOpts | undefined): { after: string | null; limit: number } {
  const o = optionalObject<NamePageOpts>('page options', opts);
  const limit = o?.limit === undefined ? 200 : requireInt('limit', o.limit, 1, 1000);
  if (o?.after !== undefined && typeof o.after !== 'string')
    throw new InvalidArgument('after', `must be a string, got ${typeof o.after}`);
  return { after: o?.after ?? null, limit };
}

/** Validates a throughput window start (epoch ms). */
export function resolveSince(sinceMs: unknown): number {
  return requireInstantMs('sinceMs', sinceMs);
}

/** Minutes of throughput history kept (one day). */
export const THROUGHPUT_RETENTION_MS = 86_400_000;

/** The (runAt, id) lower bound of priority `p` in a claim-order walk (rows strictly after it). */
function lowerBound(after: Keyset | null, p: number, first: boolean, floorRunAt: number): [number, number] {
  if (first && after !== null && p === after[0] && after[1]! >= floorRunAt) return [after[1]!, after[2]!];
  return [floorRunAt, Number.MAX_SAFE_INTEGER];
}

/**
 * The keyset walk of pending (and scheduled) jobs in claim order, engine-agnostic:
 * one index probe for the next distinct priority, one index range for its rows.
 * `nextPriority(atMost)` = highest pending priority <= `atMost`; `rows(p, runAt, id, n)` =
 * up to n rows of priority p strictly after (runAt, id), in (runAt, id) order.
 */
export async function walkClaimOrder<R>(
  after: Keyset | null,
  limit: number,
  floorRunAt: number,
  nextPriority: (atMost: number) => Promise<number | null>,
  rows: (priority: number, afterRunAt: number, afterId: number, limit: number) => Promise<R[]>,
): Promise<R[]> {
  const out: R[] = [];
  let atMost = after ? after[0]! : INT32_MAX;
  for (let first = true; out.length < limit; first = false) {
    const p = await nextPriority(atMost);
    if (p === null) break;
    const [runAt, id] = lowerBound(after, p, first, floorRunAt);
    out.push(...(await rows(p, runAt, id, limit - out.length)));
    if (p <= INT32_MIN) break;
    atMost = p - 1;
  }
  return out;
}

/** {@link walkClaimOrder} for synchronous drivers (one read, no awaits in between). */
export function walkClaimOrderSync<R>(
  after: Keyset | null,
  limit: number,
  floorRunAt: number,
  nextPriority: (atMost: number) => number | null,
  rows: (priority: number, afterRunAt: number, afterId: number, limit: number) => R[],
): R[] {
  const out: R[] = [];
  let atMost = after ? after[0]! : INT32_MAX;
  for (let first = true; out.length < limit; first = false) {
    const p = nextPriority(atMost);
    if (p === null) break;
    const [runAt, id] = lowerBound(after, p, first, floorRunAt);
    out.push(...rows(p, runAt, id, limit - out.length));
    if (p <= INT32_MIN) break;
    atMost = p - 1;
  }
  return out;
}

export const INT32_MAX = 2_147_483_647;
export const INT32_MIN = -2_147_483_648;

/** Admin calls accept stored names, engine-derived ones (`__alkstore_outbox:…`) included. */
export function validateQueue(queue: unknown): string {
  if (typeof queue === 'string' && queue.startsWith('__alkstore_outbox:')) {
    validateName('outbox', queue.slice('__alkstore_outbox:'.length));
    return queue;
  }
  if (typeof queue === 'string' && queue.startsWith('__alkstore_workflows:'))
    return validateName('stream', queue.slice('__alkstore_workflows:'.length)) && queue;
  return validateName('queue', queue);
}

/** The keyset position of `job` in a `state` page. */
export function keyOf(state: JobListState, job: JobInfo): number[] {
  if (state === 'pending' || state === 'scheduled') return [job.priority, job.runAt, job.id];
  if (state === 'processing') return [job.claimedUntil ?? 0, job.id];
  return [job.id];
}
