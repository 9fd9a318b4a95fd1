// Sending wakes on SQLite: rows of a log table (and a sequence per queue) read by other connections' listeners;
// PostgreSQL's notify/notify.sql.ts uses NOTIFY.
import { queueWakeChannel } from '../../../contract/names.js';
import type { SqliteConn } from '../connection.js';
import { BUMP_WAKE_SEQ } from '../counts.sql.js';

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

const QUEUE_CHANNEL_PREFIX = queueWakeChannel('');

/** The queue whose wake channel `channel` is, or null for any other channel. */
export function queueOfWakeChannel(channel: string): string | null {
  return channel.startsWith(QUEUE_CHANNEL_PREFIX) ? channel.slice(QUEUE_CHANNEL_PREFIX.length) : null;
}

/** What one commit wrote for its wakes: wake rows (other channels) and queue wake sequences. */
export interface OwnWakes {
  readonly ids: readonly number[];
  /** Per queue, the value its wake sequence took in this commit. */
  readonly seqs: ReadonlyMap<string, number>;
}

export const NO_WAKES: OwnWakes = Object.freeze({ ids: Object.freeze([]), seqs: new Map<string, number>() });

/**
 * Writes the wakes of `channels` inside the open write transaction, so they exist exactly when it
 * commits: a queue's channel bumps the queue's wake sequence (counts.sql.ts, `BUMP_WAKE_SEQ`), any
 * other channel inserts a wake row. Old wake rows are pruned now and then.
 */
export function writeWakes(
  conn: SqliteConn,
  channels: ReadonlySet<string>,
  now: number,
  pruner: NotifyPruner,
): OwnWakes {
  const ids: number[] = [];
  const seqs = new Map<string, number>();
  for (const channel of channels) {
    const queue = queueOfWakeChannel(channel);
    if (queue !== null) seqs.set(queue, conn.pluck(BUMP_WAKE_SEQ).get(queue) as number);
    else ids.push(Number(conn.stmt(INSERT_NOTIFY_SQL).run(channel, now).lastInsertRowid));
  }
  pruner.maybePrune(conn, now);
  return { ids, seqs };
}
