import { THROUGHPUT_RETENTION_MS } from '../../internal/admin-paging.js';
import type { RetentionDriver } from '../../internal/retention-runner.js';
import { PRUNE_LATENCY, PRUNE_MINUTES } from './admin.sql.js';
import type { SqliteCore } from './context.js';
import { NOTIFY_RETENTION_MS } from './notify/notify.sql.js';
import { sleep } from '../../internal/sleep.js';

/**
 * Rows one retention write deletes at most: the store has one writer, so a first prune of a long
 * history is many short write transactions with the other writes between them.
 */
export const SQLITE_RETENTION_BATCH = 2_000;
const B = SQLITE_RETENTION_BATCH;
/** The pause after a full retention batch, as a multiple of the time the batch took. */
export const SQLITE_RETENTION_PAUSE = 4;

/** The next value of `col` after @after in `table` under `cond` (one index seek; loop it for the distinct values). */
const next = (table: string, col: string, cond = '1') =>
  `SELECT ${col} FROM ${table} WHERE ${cond} AND ${col} > @after ORDER BY ${col} LIMIT 1`;

/** Index walks for the queues a sweep has rows to remove from (see `RetentionDriver.sweepQueueNames`). */
const NEXT_QUEUE = [
  next('__alkstore_jobs', 'queue', 'expires_at IS NOT NULL'),
  next('__alkstore_jobs', 'queue', "ordering_key IS NOT NULL AND state IN ('pending', 'processing')"),
  next('__alkstore_job_outcomes', 'queue', 'keep_until IS NOT NULL'),
  next('__alkstore_job_attempts', 'queue'),
];
const FLOW_QUEUES =
  'SELECT DISTINCT queue FROM __alkstore_job_waits UNION SELECT DISTINCT dep_queue FROM __alkstore_job_deps WHERE done = 0';
const NEXT_OUTBOX = next('__alkstore_outbox_receipts', 'outbox');
// WITHOUT ROWID tables: deletes by primary key.
const PRUNE_RECEIPTS = `DELETE FROM __alkstore_outbox_receipts WHERE outbox = @outbox AND message_id IN (
  SELECT message_id FROM __alkstore_outbox_receipts WHERE outbox = @outbox AND delivered_at < @cut LIMIT ${B})`;
const PRUNE_INBOX_DONE = `DELETE FROM __alkstore_inbox WHERE inbox = @inbox AND message_id IN (
  SELECT message_id FROM __alkstore_inbox WHERE inbox = @inbox AND state = 'done' AND done_at < @cut LIMIT ${B})`;
const PRUNE_INBOX_OPEN = `DELETE FROM __alkstore_inbox WHERE inbox = @inbox AND message_id IN (
  SELECT message_id FROM __alkstore_inbox WHERE inbox = @inbox AND state <> 'done' AND received_at < @cut LIMIT ${B})`;
const PRUNE_LOCKS = 'DELETE FROM __alkstore_locks WHERE expires_at <= @now';
const PRUNE_NODES = 'DELETE FROM __alkstore_nodes WHERE heartbeat_at < @cut';
const TRIM_BY_AGE = `DELETE FROM __alkstore_events WHERE stream = @stream AND seq <= (
  SELECT max(seq) FROM (SELECT seq, created_at FROM __alkstore_events WHERE stream = @stream ORDER BY seq LIMIT ${B})
  WHERE created_at < @cut)`;
// The newest row always stays, so rowids never go backwards (a watcher reads ids after the last it saw).
const PRUNE_WAKES = `DELETE FROM __alkstore_notify WHERE created_at < @cut AND id < (SELECT max(id) FROM __alkstore_notify)`;
const DROP_EVENTS = 'DELETE FROM __alkstore_events WHERE stream = ?';
const DROP_OFFSETS = 'DELETE FROM __alkstore_offsets WHERE stream = ?';
const DROP_HEAD = 'DELETE FROM __alkstore_stream_heads WHERE stream = ?';
const FORGET_ID = 'DELETE FROM __alkstore_inbox WHERE inbox = ? AND message_id = ?';
// `<owner>#<what>` with no `#` in `what`: the primary key's range of ids that start with @prefix (`<owner>#`),
// [prefix, the prefix with its last code point + 1).
const FORGET_GUARDS = `DELETE FROM __alkstore_inbox WHERE inbox = @inbox AND message_id >= @prefix AND message_id < @upper
  AND substr(message_id, 1, length(@prefix)) = @prefix AND instr(substr(message_id, length(@prefix) + 1), '#') = 0`;

/** The smallest string above every string that starts with `prefix` (UTF-8 byte order is code point order). */
function prefixUpper(prefix: string): string {
  const cps = [...prefix];
  const last = cps.pop()!.codePointAt(0)!;
  const up = last + 1 === 0xd800 ? 0xe000 : last + 1;
  return up > 0x10ffff ? `${prefix}\u{10ffff}` : `${cps.join('')}${String.fromCodePoint(up)}`;
}

/** The retention runner's store-wide deletes on SQLite: bounded write transactions, repeated while full. */
export function sqliteRetentionDriver(core: SqliteCore): RetentionDriver {
  /**
   * Repeats one bounded delete, each its own write, while it removes a full batch, pausing after each
   * full one for {@link SQLITE_RETENTION_PAUSE} times as long as it took: the file has one writer, so
   * a first prune of a long history takes at most a fifth of it and the claims and acks of a drain
   * keep the rest.
   */
  const batched = async (
    op: string,
    sql: string,
    params: (now: number) => Record<string, unknown>,
  ): Promise<number> => {
    let total = 0;
    for (;;) {
      const t0 = performance.now();
      const n = await core.write(op, (ctx) => ctx.conn.stmt(sql).run(params(ctx.now)).changes);
      total += n;
      if (n < B) return total;
      await sleep(SQLITE_RETENTION_PAUSE * (performance.now() - t0));
    }
  };
  return {
    sweepQueueNames: () =>
      core.read('retention.queueNames', (conn) => {
        const names = new Set<string>();
        for (const sql of NEXT_QUEUE) {
          const step = conn.pluck(sql);
          for (let after = ''; ;) {
            const q = step.get({ after }) as string | undefined;
            if (q === undefined) break;
            names.add(q);
            after = q;
          }
        }
        for (const q of conn.pluck(FLOW_QUEUES).all() as string[]) names.add(q);
        return [...names];
      }),
    // No partitions on SQLite: outcome records leave by the queue sweep's DELETE.
    retireOutcomes: () => Promise.resolve(0),
    async pruneReceipts(olderThanMs) {
      const outboxes = await core.read('retention.outboxes', (conn) => {
        const out: string[] = [];
        const step = conn.pluck(NEXT_OUTBOX);
        for (let after = ''; ;) {
          const o = step.get({ after }) as string | undefined;
          if (o === undefined) return out;
          out.push(o);
          after = o;
        }
      });
      let n = 0;
      for (const outbox of outboxes)
        n += await batched('retention.receipts', PRUNE_RECEIPTS, (now) => ({ outbox, cut: now - olderThanMs }));
      return n;
    },
    async pruneInbox(inbox, olderThanMs) {
      const cut = (now: number) => ({ inbox, cut: now - olderThanMs });
      return (
        (await batched('retention.inbox', PRUNE_INBOX_DONE, cut)) +
        (await batched('retention.inbox', PRUNE_INBOX_OPEN, cut))
      );
    },
    pruneLocks: () => core.write('retention.locks', (ctx) => ctx.conn.stmt(PRUNE_LOCKS).run({ now: ctx.now }).changes),
    pruneNodes: (olderThanMs) =>
      core.write('retention.nodes', (ctx) => ctx.conn.stmt(PRUNE_NODES).run({ cut: ctx.now - olderThanMs }).changes),
    trimStreamByAge: (stream, olderThanMs) =>
      batched('retention.stream', TRIM_BY_AGE, (now) => ({ stream, cut: now - olderThanMs })),
    pruneMinutes: () =>
      core.write('retention.minutes', (ctx) => {
        const p = { now: ctx.now, retention: THROUGHPUT_RETENTION_MS };
        return ctx.conn.stmt(PRUNE_MINUTES).run(p).changes + ctx.conn.stmt(PRUNE_LATENCY).run(p).changes;
      }),
    pruneWakes: () =>
      core.write(
        'retention.wakes',
        (ctx) => ctx.conn.stmt(PRUNE_WAKES).run({ cut: ctx.now - NOTIFY_RETENTION_MS }).changes,
      ),
    dropStream: (stream) =>
      core.write('retention.dropStream', (ctx) => {
        ctx.conn.stmt(DROP_EVENTS).run(stream);
        ctx.conn.stmt(DROP_OFFSETS).run(stream);
        ctx.conn.stmt(DROP_HEAD).run(stream);
      }),
    forgetGuards: (inbox, ids, owners) =>
      core.write('retention.forgetGuards', (ctx) => {
        let n = 0;
        for (const id of ids) n += ctx.conn.stmt(FORGET_ID).run(inbox, id).changes;
        for (const owner of owners) {
          const prefix = `${owner}#`;
          n += ctx.conn.stmt(FORGET_GUARDS).run({ inbox, prefix, upper: prefixUpper(prefix) }).changes;
        }
        return n;
      }),
  };
}
