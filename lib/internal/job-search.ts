import { InvalidArgument } from '../contract/errors.js';
import {
  SEARCH_SCAN_ROWS,
  type JobSearch,
  type JobSearchPage,
  type JobSearchState,
  type JsonScalar,
} from '../contract/admin.js';
import type { JobInfo } from '../contract/types.js';
import { optionalKey, optionalObject, requireInstantMs, requireInt, requireJobId } from '../contract/validate.js';

const STATES: readonly JobSearchState[] = ['pending', 'scheduled', 'processing', 'dead', 'finished', 'all'];
const HEADER_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
const SEGMENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The JSON type of a payload field a search compares with (`number` covers integers and fractions). */
export type ScalarType = 'string' | 'number' | 'boolean' | 'null';

/** A `searchJobs` query after validation: every value an engine binds as a parameter. */
export interface ResolvedSearch {
  /** Row state to scan (`scheduled` is `pending` plus `futureOnly`; `finished` every state but the live ones), null for every state. */
  readonly rowState: 'pending' | 'processing' | 'dead' | 'finished' | null;
  readonly futureOnly: boolean;
  /** Scan ids strictly below this one. */
  readonly before: number;
  /** Rows the scan reads at most. */
  readonly budget: number;
  readonly id: number | null;
  readonly uniqueKey: string | null;
  readonly orderingKey: string | null;
  readonly enqueuedFrom: number | null;
  readonly enqueuedTo: number | null;
  /** Lower-cased needle. */
  readonly error: string | null;
  readonly payloadPath: readonly string[] | null;
  readonly payloadType: ScalarType | null;
  /** The scalar as text (`true`, `42`, the string itself), null for a JSON null. */
  readonly payloadText: string | null;
  /** The scalar when it is a number. */
  readonly payloadNumber: number | null;
  readonly headerName: string | null;
  readonly headerValue: string | null;
  readonly limit: number;
}

/** The cursor of a search: the id to continue below. */
function decodeCursor(cursor: unknown): number {
  const bad = new InvalidArgument('cursor', 'must be a cursor returned by searchJobs');
  if (typeof cursor !== 'string' || cursor.length > 100) throw bad;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw bad;
  }
  const p = parsed as { b?: unknown } | null;
  if (p === null || typeof p !== 'object' || typeof p.b !== 'number' || !Number.isSafeInteger(p.b) || p.b < 1)
    throw bad;
  return p.b;
}

function encodeCursor(before: number): string {
  return Buffer.from(JSON.stringify({ b: before }), 'utf8').toString('base64url');
}

function scalarOf(v: unknown): { type: ScalarType; text: string | null; num: number | null } {
  if (v === null) return { type: 'null', text: null, num: null };
  if (typeof v === 'boolean') return { type: 'boolean', text: String(v), num: null };
  if (typeof v === 'number' && Number.isFinite(v)) return { type: 'number', text: String(v), num: v };
  if (typeof v === 'string' && v.length <= 1024) return { type: 'string', text: v, num: null };
  throw new InvalidArgument(
    'payload.equals',
    'must be a string (at most 1024 characters), a finite number, a boolean or null',
  );
}

/** Validates a `searchJobs` query before any I/O. */
export function resolveSearch(query: JobSearch | undefined): ResolvedSearch {
  const o = optionalObject<JobSearch>('searchJobs query', query);
  const state = o?.state ?? 'all';
  if (!STATES.includes(state))
    throw new InvalidArgument(
      'state',
      `must be one of ${STATES.join(', ')}, got ${typeof state === 'string' ? JSON.stringify(state.slice(0, 40)) : typeof state}`,
    );
  const limit = o?.limit === undefined ? 50 : requireInt('limit', o.limit, 1, 1000);
  const id = o?.id === undefined ? null : requireJobId('id', o.id);
  let before = o?.cursor === undefined ? Number.MAX_SAFE_INTEGER : decodeCursor(o.cursor);
  let budget = SEARCH_SCAN_ROWS;
  if (id !== null) {
    // One probe of the primary key: the highest id at or below it, kept only if it is the one.
    before = Math.min(before, id + 1);
    budget = 1;
  }
  let error: string | null = null;
  if (o?.error !== undefined) {
    if (typeof o.error !== 'string' || o.error.length < 1 || o.error.length > 200)
      throw new InvalidArgument('error', 'must be a string of 1..200 characters');
    error = o.error.toLowerCase();
  }
  let payloadPath: string[] | null = null;
  let scalar: ReturnType<typeof scalarOf> | null = null;
  if (o?.payload !== undefined) {
    const p = optionalObject<{ path: string; equals: JsonScalar }>('payload', o.payload);
    const segments = typeof p?.path === 'string' ? p.path.split('.') : [];
    if (segments.length < 1 || segments.length > 8 || !segments.every((s) => SEGMENT.test(s))) {
      throw new InvalidArgument(
        'payload.path',
        'must be 1..8 dot-separated identifiers such as "orderId" or "customer.id"',
      );
    }
    if (!p || !('equals' in p))
      throw new InvalidArgument('payload.equals', 'is required: the JSON scalar the field must equal');
    payloadPath = segments;
    scalar = scalarOf(p.equals);
  }
  let header: { name: string; equals: string } | null = null;
  if (o?.header !== undefined) {
    const h = optionalObject<{ name: string; equals: string }>('header', o.header);
    if (typeof h?.name !== 'string' || !HEADER_NAME.test(h.name))
      throw new InvalidArgument('header.name', 'must be 1..128 characters of A-Za-z0-9_.- such as "alkstore-schedule"');
    if (typeof h.equals !== 'string' || h.equals.length > 1024)
      throw new InvalidArgument('header.equals', 'must be a string of at most 1024 characters');
    header = { name: h.name, equals: h.equals };
  }
  const from = o?.enqueuedFrom === undefined ? null : requireInstantMs('enqueuedFrom', o.enqueuedFrom);
  const to = o?.enqueuedTo === undefined ? null : requireInstantMs('enqueuedTo', o.enqueuedTo);
  return {
    rowState: state === 'all' ? null : state === 'scheduled' ? 'pending' : state,
    futureOnly: state === 'scheduled',
    before,
    budget,
    id,
    uniqueKey: optionalKey('uniqueKey', o?.uniqueKey) ?? null,
    orderingKey: optionalKey('orderingKey', o?.orderingKey) ?? null,
    enqueuedFrom: from,
    enqueuedTo: to,
    error,
    payloadPath,
    payloadType: scalar?.type ?? null,
    payloadText: scalar?.text ?? null,
    payloadNumber: scalar?.num ?? null,
    headerName: header?.name ?? null,
    headerValue: header?.equals ?? null,
    limit,
  };
}

/**
 * The page from one bounded scan: `hits` (up to limit + 1, id descending),
 * how many rows the scan read and the lowest id it reached.
 */
export function searchPage(
  q: ResolvedSearch,
  hits: JobInfo[],
  scanned: number,
  lowestId: number | null,
): JobSearchPage {
  const jobs = hits.slice(0, q.limit);
  let next: string | null = null;
  if (hits.length > q.limit) next = encodeCursor(jobs[jobs.length - 1]!.id);
  else if (q.id === null && scanned >= q.budget && lowestId !== null && lowestId > 1) next = encodeCursor(lowestId);
  return { jobs, next, scanned };
}
