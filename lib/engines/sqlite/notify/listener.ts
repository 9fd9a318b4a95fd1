// Wakes from other connections on SQLite: polling PRAGMA data_version every wakeFallbackMs while something
// listens; PostgreSQL's notify/listener.ts has LISTEN.
import type { StoreLogger } from '../../../contract/types.js';
import type { WakeHub } from '../../../internal/wake-hub.js';
import { isBusy, type SqliteConn } from '../connection.js';
import { queueWakeChannel } from '../../../contract/names.js';
import { WAKE_SEQ } from '../counts.sql.js';
import { MAX_NOTIFY_ID_SQL, NOTIFY_AFTER_SQL, queueOfWakeChannel, type OwnWakes } from './notify.sql.js';
import type { WakeFile } from './poke.js';

/** A queue's wake sequence that could not be read: the next read wakes whatever it finds. */
const UNREAD = -1;

/**
 * Turns committed wake rows into in-process wakes. `PRAGMA data_version` on
 * the watcher's own read connection changes whenever any other connection
 * commits (this store's writer, a TypeORM connection, another process); on a
 * change it reads the wake rows after the last id it saw, and the wake
 * sequence of every queue someone here listens on (counts.sql.ts,
 * `BUMP_WAKE_SEQ`): a queue whose sequence moved is woken. It polls every
 * `intervalMs` only while someone listens, and at once when a store pokes the
 * database's wake file (see {@link WakeFile}). The store's own commits wake this
 * process's receivers directly (synchronously after COMMIT, see `SqliteStore`)
 * and hand their row ids to `skipOwn`, so the watcher does not wake them a
 * second time when it reads those rows (or those steps of a queue's sequence).
 */
export class Watcher {
  private lastId: number | null = null;
  private lastVersion = -1;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Ids of wake rows this store committed and already dispatched in-process, ascending. */
  private readonly own = new Set<number>();
  /** Per queue listened on here: the last wake sequence read (0: no row yet; UNREAD). */
  private readonly seqs = new Map<string, number>();
  /** Per queue: values of its wake sequence this store committed and already dispatched in-process. */
  private readonly ownSeqs = new Map<string, Set<number>>();

  constructor(
    private readonly conn: SqliteConn,
    private readonly hub: WakeHub,
    private readonly intervalMs: number,
    private readonly logger: StoreLogger,
    private readonly wakeFile: WakeFile | null = null,
  ) {}

  /**
   * Call before a receiver attaches: dispatches every already-committed row to
   * the current receivers, so the new receiver starts from now.
   */
  catchUp(): void {
    if (this.stopped) return;
    if (this.hub.size === 0 || this.lastId === null) {
      try {
        this.lastVersion = this.dataVersion();
        this.lastId = this.conn.pluck(MAX_NOTIFY_ID_SQL).get() as number;
        this.own.clear();
        this.seqs.clear();
        this.ownSeqs.clear();
      } catch (err) {
        // Busy for a moment: the next check starts from the old id (a spurious wake at worst, which wakes allow).
        if (!isBusy(err)) throw err;
      }
      return;
    }
    this.check(true);
  }

  /**
   * After a receiver attached: reads the wake sequence of each queue newly listened on (a bump
   * committed later wakes it; one committed before is seen by the claim the listener makes next),
   * and starts polling (and watching the wake file) if someone listens and it is not running.
   */
  ensureRunning(): void {
    if (this.stopped || this.hub.size === 0) return;
    for (const channel of this.hub.channels()) {
      const queue = queueOfWakeChannel(channel);
      if (queue !== null && !this.seqs.has(queue)) this.seqs.set(queue, this.readSeq(queue));
    }
    if (this.timer !== undefined) return;
    this.wakeFile?.watch(this.onPoke);
    this.schedule();
  }

  private readonly onPoke = (): void => this.check(false);

  /**
   * After one of our own commits whose channels were already woken in-process:
   * remember its wake rows so reading them later wakes nobody again. Nothing
   * to remember while nobody listens (the next `catchUp` starts from the max id).
   */
  skipOwn(wakes: OwnWakes): void {
    if (this.stopped || this.hub.size === 0 || this.lastId === null) return;
    for (const id of wakes.ids) this.own.add(id);
    for (const [queue, seq] of wakes.seqs) {
      if (!this.seqs.has(queue)) continue;
      let set = this.ownSeqs.get(queue);
      if (set === undefined) this.ownSeqs.set(queue, (set = new Set()));
      set.add(seq);
    }
  }

  stop(): void {
    this.stopped = true;
    this.wakeFile?.unwatch();
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.stopped) return;
      if (this.hub.size === 0) {
        this.wakeFile?.unwatch();
        return;
      }
      this.check(false);
      this.ensureRunning();
    }, this.intervalMs);
    // Not unref'd: like a PostgreSQL LISTEN socket, an open receiver keeps the process alive
    // (a worker that only awaits wakes must not exit). It stops when the last receiver closes.
  }

  /** The queue's wake sequence (0: no row); UNREAD when it cannot be read now (the next check reports a failure that lasts). */
  private readSeq(queue: string): number {
    try {
      return (this.conn.pluck(WAKE_SEQ).get(queue) as number | undefined) ?? 0;
    } catch {
      return UNREAD;
    }
  }

  /**
   * The wake sequences of the listened queues that moved since last read (queues no one listens on
   * any more are forgotten). Reads only: {@link applySeqs} records them once every read succeeded.
   */
  private readSeqs(): [queue: string, seq: number][] {
    const stmt = this.conn.pluck(WAKE_SEQ);
    const moved: [string, number][] = [];
    for (const [queue, prev] of this.seqs) {
      if (!this.hub.hasListeners(queueWakeChannel(queue))) {
        this.seqs.delete(queue);
        this.ownSeqs.delete(queue);
        continue;
      }
      const seq = (stmt.get(queue) as number | undefined) ?? 0;
      if (seq !== prev) moved.push([queue, seq]);
    }
    return moved;
  }

  /**
   * Records sequences read by {@link readSeqs} and adds to `channels` each queue that moved by a
   * step this store did not dispatch itself (or went back: the counters were rebuilt).
   */
  private applySeqs(moved: readonly [string, number][], channels: Set<string>): void {
    for (const [queue, seq] of moved) {
      const prev = this.seqs.get(queue) ?? UNREAD;
      this.seqs.set(queue, seq);
      const own = this.ownSeqs.get(queue);
      let mine = 0;
      if (own !== undefined) {
        for (const v of own) {
          if (v > prev && v <= seq) mine++;
          if (v <= seq) own.delete(v);
        }
      }
      if (prev === UNREAD || seq < prev || mine < seq - prev) channels.add(queueWakeChannel(queue));
    }
  }

  private dataVersion(): number {
    return this.conn.pluck('PRAGMA data_version').get() as number;
  }

  private check(force: boolean): void {
    if (this.stopped || this.hub.size === 0) return;
    try {
      // Version first, rows second: a commit in between is read now and only re-checked later.
      const version = this.dataVersion();
      if (!force && version === this.lastVersion) return;
      this.lastVersion = version;
      const moved = this.readSeqs();
      const rows = this.conn.stmt(NOTIFY_AFTER_SQL).all(this.lastId ?? 0) as { id: number; channel: string }[];
      const channels = new Set<string>();
      this.applySeqs(moved, channels);
      if (rows.length > 0) {
        const last = rows[rows.length - 1].id;
        this.lastId = last;
        for (const r of rows) if (!this.own.delete(r.id)) channels.add(r.channel);
        // Own ids at or below the last row read were pruned unseen (a long stall): forget them.
        for (const id of this.own) {
          if (id > last) break;
          this.own.delete(id);
        }
      }
      for (const c of channels) this.hub.wake(c);
    } catch (err) {
      // A transient lock (WAL recovery, checkpoint) is retried at the next poll.
      if (isBusy(err)) {
        this.lastVersion = -1;
        return;
      }
      // Watcher death: receivers close rather than go silent (contract: failure is visible).
      this.logger.error('SQLite wake watcher failed; closing every receiver', err);
      this.stop();
      this.hub.closeAll();
    }
  }
}
