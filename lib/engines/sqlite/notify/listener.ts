// Wakes from other connections on SQLite: polling PRAGMA data_version every wakeFallbackMs while something
// listens; PostgreSQL's notify/listener.ts has LISTEN.
import type { StoreLogger } from '../../../contract/types.js';
import type { WakeHub } from '../../../internal/wake-hub.js';
import { isBusy, type SqliteConn } from '../connection.js';
import { MAX_NOTIFY_ID_SQL, NOTIFY_AFTER_SQL } from './notify.sql.js';
import type { WakeFile } from './poke.js';

/**
 * Turns committed wake rows into in-process wakes. `PRAGMA data_version` on
 * the watcher's own read connection changes whenever any other connection
 * commits (this store's writer, a TypeORM connection, another process); on a
 * change it reads the wake rows after the last id it saw. It polls every
 * `intervalMs` only while someone listens, and at once when a store pokes the
 * database's wake file (see {@link WakeFile}). The store's own commits wake this
 * process's receivers directly (synchronously after COMMIT, see `SqliteStore`)
 * and hand their row ids to `skipOwn`, so the watcher does not wake them a
 * second time when it reads those rows.
 */
export class Watcher {
  private lastId: number | null = null;
  private lastVersion = -1;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Ids of wake rows this store committed and already dispatched in-process, ascending. */
  private readonly own = new Set<number>();

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
      } catch (err) {
        // Busy for a moment: the next check starts from the old id (a spurious wake at worst, which wakes allow).
        if (!isBusy(err)) throw err;
      }
      return;
    }
    this.check(true);
  }

  /** Starts polling (and watching the wake file) if someone listens and it is not running. */
  ensureRunning(): void {
    if (this.timer !== undefined || this.stopped || this.hub.size === 0) return;
    this.wakeFile?.watch(this.onPoke);
    this.schedule();
  }

  private readonly onPoke = (): void => this.check(false);

  /**
   * After one of our own commits whose channels were already woken in-process:
   * remember its wake rows so reading them later wakes nobody again. Nothing
   * to remember while nobody listens (the next `catchUp` starts from the max id).
   */
  skipOwn(ids: readonly number[]): void {
    if (this.stopped || this.hub.size === 0 || this.lastId === null) return;
    for (const id of ids) this.own.add(id);
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
      const rows = this.conn.stmt(NOTIFY_AFTER_SQL).all(this.lastId ?? 0) as { id: number; channel: string }[];
      if (rows.length === 0) return;
      const last = rows[rows.length - 1].id;
      this.lastId = last;
      const channels = new Set<string>();
      for (const r of rows) if (!this.own.delete(r.id)) channels.add(r.channel);
      // Own ids at or below the last row read were pruned unseen (a long stall): forget them.
      for (const id of this.own) {
        if (id > last) break;
        this.own.delete(id);
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
