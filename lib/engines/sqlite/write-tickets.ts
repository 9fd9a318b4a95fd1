// SQLite only: cross-process turn-taking on the file's one write lock (writeFairness), which PostgreSQL's row locks make unnecessary.
import { randomBytes } from 'node:crypto';
import {
  mkdirSync,
  readdirSync,
  rmdirSync,
  statSync,
  unlinkSync,
  utimesSync,
  watch,
  writeFileSync,
  type FSWatcher,
} from 'node:fs';
import { join } from 'node:path';

/** How often a writer that found no waiter looks again (ms): a new waiter is seen within this. */
const RECHECK_MS = 2;
/**
 * While the directory is watched: how often a writer that found no waiter looks again although no
 * change was reported (ms), in case the watch missed one.
 */
const WATCHED_RECHECK_MS = 100;
/** A waiter refreshes its ticket's mtime this often while it waits (ms). */
const TOUCH_MS = 100;
/** A ticket not refreshed for this long belongs to a dead or frozen process and is ignored (ms). */
const STALE_MS = 1_000;
/** Longest a writer steps aside for one waiter (ms), in case that waiter cannot take the lock either. */
const MAX_YIELD_MS = 250;

/**
 * Cross-process fairness for SQLite's write lock, which has no queue: a busy
 * writer that releases the lock and takes it again at once (back-to-back
 * transactions) leaves a gap of microseconds that another process, polling
 * with timers, almost never hits.
 *
 * A connection whose `BEGIN IMMEDIATE` found the lock taken advertises itself
 * with a ticket: an empty file named by time in `<database>-alkwait/`. Before
 * each `BEGIN IMMEDIATE`, a writer looks for a ticket of another connection
 * older than its own (a cached look, repeated at most every 2 ms while there is
 * none) and, if there is one, steps aside, polling every 1–2 ms, until that
 * waiter has taken the lock and withdrawn its ticket. Waiters get the lock in
 * ticket order, so the wait of one write is bounded by the transactions
 * already running plus one poll interval, instead of by luck. Nothing blocks
 * the event loop: stepping aside is an asynchronous retry, as for a busy lock.
 *
 * The look is a directory listing; where the directory can be watched (`fs.watch`: inotify on
 * Linux, FSEvents or kqueue on macOS), a writer lists it only after a change another connection
 * made in it was reported (or every 100 ms, in case a report was missed), instead of every 2 ms: a
 * single writer's commits then cost no listing each.
 *
 * Bounds: a ticket not refreshed for 1 s (its process died or froze) is
 * ignored and removed; a writer steps aside for one ticket at most 250 ms.
 * Connections that do not use tickets (a TypeORM transaction on the same
 * file, the sqlite3 shell) neither queue nor step aside.
 */
export class WriteTickets {
  private readonly dir: string | null;
  private readonly id = randomBytes(6).toString('hex');
  private seq = 0;
  private mine: string | null = null;
  private lastTouch = 0;
  private nextCheck = 0;
  private yieldingTo: string | null = null;
  private yieldSince = 0;
  /** Reports changes of the directory; null where it cannot be watched (then it is listed every 2 ms). */
  private watcher: FSWatcher | null = null;
  /** Another connection may have changed the directory since the last listing. */
  private changed = true;
  /** When the directory was last listed. */
  private lastLook = 0;
  /** The inode of the directory being watched: a directory removed and made again is watched anew. */
  private watchedIno = -1;
  /** `fs.watch` failed here (a platform or file system without it): list every 2 ms. */
  private unwatchable = false;

  constructor(dbPath: string | null) {
    let dir: string | null = null;
    if (dbPath !== null) {
      dir = `${dbPath}-alkwait`;
      try {
        mkdirSync(dir, { recursive: true });
      } catch {
        dir = null; // read-only directory: no fairness, plain polling as before
      }
    }
    this.dir = dir;
    if (dir !== null) this.watchDir(dir);
  }

  private watchDir(dir: string): void {
    try {
      this.watchedIno = statSync(dir).ino;
      // Not persistent: a store's open directory never keeps the process alive.
      const w = watch(dir, { persistent: false }, (_event, file) => {
        // Our own tickets carry our id; any other change (or one the platform does not name) counts.
        if (file === null || !String(file).includes(`-${this.id}-`)) this.changed = true;
      });
      w.on('error', () => this.unwatch());
      this.watcher = w;
    } catch {
      this.watcher = null;
      this.unwatchable = true;
    }
  }

  /** Watches the directory anew when the one watched was removed and made again (by another connection). */
  private checkWatch(dir: string): void {
    if (this.unwatchable || (this.watcher !== null && statSync(dir).ino === this.watchedIno)) return;
    this.unwatch();
    this.watchDir(dir);
  }

  private unwatch(): void {
    const w = this.watcher;
    this.watcher = null;
    this.changed = true;
    try {
      w?.close();
    } catch {
      // already closed
    }
  }

  /** True while this connection queues or steps aside: its busy retries should poll fast. */
  get contended(): boolean {
    return this.mine !== null || this.yieldingTo !== null;
  }

  /** Whether to step aside now instead of taking the write lock: an older ticket of another connection waits. */
  shouldYield(): boolean {
    if (this.dir === null) return false;
    const now = Date.now();
    if (this.mine === null && this.yieldingTo === null) {
      if (now < this.nextCheck) return false;
      if (this.watcher !== null && !this.changed && now - this.lastLook < WATCHED_RECHECK_MS) return false;
    }
    // A change reported from here on is looked at by the next call.
    this.changed = false;
    this.lastLook = now;
    let names: string[];
    try {
      names = readdirSync(this.dir);
      this.checkWatch(this.dir);
    } catch {
      names = [];
      this.unwatch(); // removed by a closing store: listed every 2 ms until this connection makes it again
    }
    let first: string | null = null;
    for (const name of names.sort()) {
      if (name === this.mine) break; // no other connection's ticket is older than ours
      if (this.isStale(name, now)) continue;
      first = name;
      break;
    }
    if (first === null) {
      this.yieldingTo = null;
      this.nextCheck = now + RECHECK_MS;
      return false;
    }
    if (first !== this.yieldingTo) {
      this.yieldingTo = first;
      this.yieldSince = now;
    }
    return now - this.yieldSince < MAX_YIELD_MS;
  }

  /** `BEGIN IMMEDIATE` found the lock taken: queue (once) and keep the ticket fresh. */
  waiting(): void {
    if (this.dir === null) return;
    if (this.mine === null) this.take();
    else this.touch();
  }

  /** Keeps this connection's ticket, if any, from looking stale while it steps aside for an older one. */
  touch(): void {
    if (this.dir === null || this.mine === null) return;
    const now = Date.now();
    if (now - this.lastTouch < TOUCH_MS) return;
    try {
      utimesSync(join(this.dir, this.mine), now / 1000, now / 1000);
      this.lastTouch = now;
    } catch {
      // removed as stale by another connection: queue again, at the back
      this.mine = null;
      this.take();
    }
  }

  private take(): void {
    const dir = this.dir!;
    const now = Date.now();
    const name = `${String(now).padStart(15, '0')}-${this.id}-${this.seq++}`;
    try {
      writeFileSync(join(dir, name), '');
    } catch {
      try {
        mkdirSync(dir, { recursive: true }); // removed by a closing store in the meantime
        writeFileSync(join(dir, name), '');
        this.checkWatch(dir);
      } catch {
        return;
      }
    }
    this.mine = name;
    this.lastTouch = now;
  }

  /** The lock was taken, or the write gave up: withdraw the ticket. */
  done(): void {
    this.yieldingTo = null;
    if (this.mine === null || this.dir === null) return;
    try {
      unlinkSync(join(this.dir, this.mine));
    } catch {
      // already removed
    }
    this.mine = null;
  }

  /** Withdraws the ticket, stops watching, and removes the directory when no one else uses it. */
  close(): void {
    this.done();
    this.unwatch();
    if (this.dir === null) return;
    try {
      rmdirSync(this.dir);
    } catch {
      // not empty (another connection waits) or already gone
    }
  }

  private isStale(name: string, now: number): boolean {
    try {
      if (now - statSync(join(this.dir!, name)).mtimeMs <= STALE_MS) return false;
      unlinkSync(join(this.dir!, name));
    } catch {
      // gone already
    }
    return true;
  }
}
