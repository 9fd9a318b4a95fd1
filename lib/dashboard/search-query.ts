import type { JobSearch, JobSearchState, JsonScalar } from '../contract/admin.js';

/** A job filter as the URL carries it (so a link can be shared), and as the search it runs. */
export interface JobFilter {
  readonly queue: string;
  readonly state: JobSearchState;
  /** The URL parameters of the filter (no cursor), in a stable order. */
  readonly params: Readonly<Record<string, string>>;
  /** Any field beyond the state, or the `finished` state: then the page runs `searchJobs` instead of `listJobs`. */
  readonly filtered: boolean;
  readonly search: JobSearch;
}

/** A filter field the operator typed wrong; the page says which and how. */
export class BadFilter extends Error {}

const STATES: readonly JobSearchState[] = ['pending', 'scheduled', 'processing', 'dead', 'finished', 'all'];
/** The URL fields of a filter, in the order links carry them. */
export const FILTER_FIELDS = [
  'name',
  'state',
  'id',
  'unique',
  'ordering',
  'error',
  'payload',
  'header',
  'from',
  'to',
] as const;

function text(source: unknown, name: string): string | undefined {
  if (!source || typeof source !== 'object') return undefined;
  const v = (source as Record<string, unknown>)[name];
  if (typeof v !== 'string') return undefined;
  const t = v.trim();
  return t.length > 0 && t.length <= 2048 ? t : undefined;
}

/** `2026-12-01T10:30` (a datetime-local field, read as UTC) or a full ISO instant. */
export function instant(field: string, v: string): number {
  const ms = Date.parse(/[zZ]|[+-]\d\d:\d\d$/.test(v) ? v : `${v}Z`);
  if (!Number.isFinite(ms)) throw new BadFilter(`${field} must be a date and time such as 2026-12-01T10:30 (UTC)`);
  return ms;
}

/** `orderId = 42`, `customer.id = "c-1"`, `vip = true`: the value is JSON when it parses as a scalar, else the text itself. */
export function parsePayloadFilter(v: string): { path: string; equals: JsonScalar } {
  const m = /^\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*){0,7})\s*=\s*(.*?)\s*$/.exec(
    v.replace(/^payload\./, ''),
  );
  if (!m)
    throw new BadFilter('payload must look like orderId = 42 or customer.id = "c-1" (a field path, =, a JSON value)');
  let equals: JsonScalar = m[2]!;
  try {
    const parsed: unknown = JSON.parse(m[2]!);
    if (parsed === null || ['string', 'number', 'boolean'].includes(typeof parsed)) equals = parsed as JsonScalar;
  } catch {
    // Not JSON: the text itself, as a string.
  }
  return { path: m[1]!, equals };
}

/** `alkstore-schedule = nightly`: a header name, =, the text it equals (JSON string quotes optional). */
export function parseHeaderFilter(v: string): { name: string; equals: string } {
  const m = /^\s*([A-Za-z0-9_.-]{1,128})\s*=\s*(.*?)\s*$/.exec(v);
  if (!m) throw new BadFilter('header must look like alkstore-schedule = nightly (a header name, =, its value)');
  let equals = m[2]!;
  if (/^".*"$/.test(equals)) {
    try {
      equals = String(JSON.parse(equals));
    } catch {
      // Not a JSON string: the text itself.
    }
  }
  return { name: m[1]!, equals };
}

/** Reads a filter from a query string (or a form); {@link BadFilter} names the field that is wrong. */
export function readFilter(source: unknown, defaultState: JobSearchState = 'pending'): JobFilter {
  const queue = text(source, 'name') ?? text(source, 'queue');
  if (!queue) throw new BadFilter('name (the queue) is required');
  const stateText = text(source, 'state') ?? defaultState;
  const state = STATES.find((s) => s === stateText);
  if (!state) throw new BadFilter(`state must be one of ${STATES.join(', ')}`);
  const params: Record<string, string> = { name: queue, state };
  const search: { -readonly [K in keyof JobSearch]: JobSearch[K] } = { state };
  const id = text(source, 'id');
  if (id !== undefined) {
    if (!/^\d{1,16}$/.test(id)) throw new BadFilter('id must be a job id (digits)');
    search.id = Number(id);
    params.id = id;
  }
  const unique = text(source, 'unique');
  if (unique !== undefined) search.uniqueKey = params.unique = unique;
  const ordering = text(source, 'ordering');
  if (ordering !== undefined) search.orderingKey = params.ordering = ordering;
  const error = text(source, 'error');
  if (error !== undefined) {
    if (error.length > 200) throw new BadFilter('error must be at most 200 characters');
    search.error = params.error = error;
  }
  const payload = text(source, 'payload');
  if (payload !== undefined) {
    search.payload = parsePayloadFilter(payload);
    params.payload = payload;
  }
  const header = text(source, 'header');
  if (header !== undefined) {
    search.header = parseHeaderFilter(header);
    params.header = header;
  }
  const from = text(source, 'from');
  if (from !== undefined) {
    search.enqueuedFrom = instant('from', from);
    params.from = from;
  }
  const to = text(source, 'to');
  if (to !== undefined) {
    search.enqueuedTo = instant('to', to);
    params.to = to;
  }
  return { queue, state, params, filtered: Object.keys(params).length > 2 || state === 'finished', search };
}

/** A filter in words, for confirmation questions and the audit log. */
export function describeFilter(f: JobFilter): string {
  const parts = [`state ${f.state}`];
  if (f.params.id) parts.push(`id ${f.params.id}`);
  if (f.params.unique) parts.push(`unique key ${JSON.stringify(f.params.unique)}`);
  if (f.params.ordering) parts.push(`ordering key ${JSON.stringify(f.params.ordering)}`);
  if (f.params.error) parts.push(`error contains ${JSON.stringify(f.params.error)}`);
  if (f.params.payload) parts.push(`payload ${f.params.payload}`);
  if (f.params.header) parts.push(`header ${f.params.header}`);
  if (f.params.from) parts.push(`enqueued from ${f.params.from}`);
  if (f.params.to) parts.push(`enqueued before ${f.params.to}`);
  return parts.join(', ');
}
