import { AUDIT_STREAM } from '../contract/names.js';
import type { Store } from '../contract/types.js';

/**
 * One state-changing action taken on the dashboard, as stored in the audit
 * log (`store.admin().auditLog()`, the stream `__alkstore_audit`).
 */
export interface AuditEntry {
  /** When it was done (epoch ms, database clock). */
  readonly at: number;
  /** Who (the `actor` option), `anonymous` when unknown. */
  readonly actor: string;
  readonly role: 'admin' | 'viewer';
  /**
   * `redrive`, `purge`, `cancel`, `pause`, `resume`, `trigger`, `pause-schedule`, `resume-schedule`,
   * `redrive-all`, `purge-all`, `enqueue`, `edit`, `bulk-retry`, `bulk-delete` (started) and
   * `bulk-retry-done`, `bulk-delete-done`.
   */
  readonly action: string;
  readonly queue: string | null;
  readonly schedule: string | null;
  /** Job ids acted on, at most {@link AUDIT_IDS} of them (`count` is the total). */
  readonly jobs: readonly number[];
  /** How many jobs (or queues, schedules) it changed; for a started bulk action, how many matched. */
  readonly count: number;
  /** The filter of a bulk action, as the query string of the search it ran. */
  readonly filter: string | null;
  /** The bulk operation's id. */
  readonly op: string | null;
}

/** An audit entry with its offset in the log. */
export interface AuditRow {
  readonly offset: number;
  readonly entry: AuditEntry;
}

/** Most job ids one audit entry lists. */
export const AUDIT_IDS = 100;

/** Appends to the audit log, then tells `onAudit`. */
export async function writeAudit(
  store: Store,
  entry: AuditEntry,
  onAudit: ((e: AuditEntry) => void) | null,
): Promise<number> {
  const offset = await store
    .admin()
    .auditLog()
    .publish({ ...entry, jobs: entry.jobs.slice(0, AUDIT_IDS) });
  try {
    onAudit?.(entry);
  } catch {
    // The hook is the application's; the action is done and logged either way.
  }
  return offset;
}

function isEntry(v: unknown): v is AuditEntry {
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof (v as { action?: unknown }).action === 'string' &&
    typeof (v as { at?: unknown }).at === 'number'
  );
}

/** The log's last offset (0 when empty): one keyset probe of the stream heads. */
async function headOffset(store: Store): Promise<number> {
  // The first stream name at or after the audit stream's: names are unique, so it is the audit stream when it exists.
  const [first] = await store.admin().streams({ after: AUDIT_STREAM.slice(0, -1), limit: 1 });
  return first?.name === AUDIT_STREAM ? first.headOffset : 0;
}

/** One page of the audit log, newest first: entries with offset < `before` (the head when null). */
export async function readAudit(
  store: Store,
  before: number | null,
  limit: number,
): Promise<{ rows: AuditRow[]; next: number | null }> {
  const head = before === null ? (await headOffset(store)) + 1 : before;
  const from = Math.max(0, head - 1 - limit);
  const events = await store.admin().auditLog().readSince(from, limit);
  const rows = events
    .filter((e) => e.offset < head && isEntry(e.payload))
    .map((e) => ({ offset: e.offset, entry: e.payload as AuditEntry }))
    .reverse();
  return { rows, next: from > 0 ? from + 1 : null };
}

/** The latest entries (at most `scan` of them) that name job `id` of `queue`, oldest first. */
export async function auditOfJob(store: Store, queue: string, id: number, scan = 500): Promise<AuditRow[]> {
  const { rows } = await readAudit(store, null, scan);
  return rows.filter((r) => r.entry.queue === queue && r.entry.jobs.includes(id)).reverse();
}
