// Sending wakes on SQLite: rows of a log table read by other connections' listeners; PostgreSQL's notify/notify.sql.ts uses NOTIFY.
import type { SqliteConn } from '../connection.js';

/** A wake row, written inside the writing transaction so it exists exactly when the write commits. */
export const INSERT_NOTIFY_SQL = 'INSERT INTO __alkstore_notify (channel, created_at) VALUES (?, ?)';
export const MAX_NOTIFY_ID_SQL = 'SELECT coalesce(max(id), 0) FROM __alkstore_notify';
export const NOTIFY_AFTER_SQL = 'SELECT id, channel FROM __alkstore_notify WHERE id > ? ORDER BY id';

/** Wake rows older than this are deleted now and then; a watcher lagging longer misses them. */
export const NOTIFY_RETENTION_MS = 60_000;
const MARK_EVERY_MS = 10_000;

/**
 * Prunes old wake rows without scanning: every 10 s it remembers the highest
 * id, and deletes up to a mark once the mark is older than the retention.
 * The newest row always stays, so rowids never go backwards.
 */
export class NotifyPruner {
  private marks: { at: number; maxId: number }[] = [];
  private lastMarkAt = 0;

  maybePrune(conn: SqliteConn, now: number): void {
    if (now - this.lastMarkAt < MARK_EVERY_MS) return;
    this.lastMarkAt = now;
    this.marks.push({ at: now, maxId: conn.pluck(MAX_NOTIFY_ID_SQL).get() as number });
    let upTo = 0;
    while (this.marks.length > 0 && this.marks[0].at <= now - NOTIFY_RETENTION_MS) upTo = this.marks.shift()!.maxId;
    if (upTo > 0)
      conn
        .stmt('DELETE FROM __alkstore_notify WHERE id <= ? AND id < (SELECT max(id) FROM __alkstore_notify)')
        .run(upTo);
  }
}
