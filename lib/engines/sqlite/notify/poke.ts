// SQLite only: a file-change nudge after commits that wrote wake rows, so watchers in other processes read
// them at once instead of at their next data_version poll; PostgreSQL's NOTIFY already pushes.
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  fstatSync,
  futimesSync,
  mkdirSync,
  openSync,
  readdirSync,
  rmdirSync,
  statSync,
  unlinkSync,
  watch,
  writeSync,
  type FSWatcher,
} from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

const BYTE = new Uint8Array([1]);
/** How often a store refreshes its file's mtime (ms), and puts the file back if someone removed it. */
export const WAKE_FILE_HEARTBEAT_MS = 60_000;
/** A wake file whose mtime is older than this (ms) belongs to no live store: ten missed heartbeats. */
export const WAKE_FILE_STALE_MS = 10 * WAKE_FILE_HEARTBEAT_MS;

/** This host's tag in wake file names: the pid in a name is only checked on the host that wrote it. */
const HOST_TAG = createHash('sha256').update(hostname()).digest('hex').slice(0, 8);

/**
 * Whether the file `name` (`<random>.<pid>.<host tag>`) in a wake directory was left by a store that
 * is gone: its process is not running on this host, or (any name, a store of another host or of an
 * older alkstore) its mtime is older than {@link WAKE_FILE_STALE_MS}. A process with a reused pid
 * keeps a dead store's file only until the mtime rule removes it.
 */
export function isStaleWakeFile(name: string, mtimeMs: number, now: number, staleMs = WAKE_FILE_STALE_MS): boolean {
  const [, pid, host] = name.split('.');
  if (host === HOST_TAG && pid !== undefined && /^[1-9][0-9]*$/.test(pid) && !processRuns(Number(pid))) return true;
  return now - mtimeMs > staleMs;
}

/** Whether a process with this pid runs here (signal 0 checks without signalling; EPERM: it runs as another user). */
function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/**
 * The wake directory beside a database, `<database>-alkwake/`: each store
 * owns a one-byte file in it, named at random, and writes that byte (at
 * offset 0, never fsynced) after every commit of its own that wrote wake
 * rows. Every listening store on the database watches the directory
 * (`fs.watch`: inotify on Linux, FSEvents or kqueue on macOS) and, on a
 * change to another store's file, reads the wake rows at once; the change
 * event names the file, so a store skips its own pokes without counting
 * them (the kernel merges repeated events of one file, never of two). The
 * byte is written after COMMIT returned, so a watcher that reads on the
 * event sees the commit.
 *
 * A store whose file is the only one in the directory (one process, one
 * store: the usual embedded setup) skips its pokes, which no store could
 * hear: it watches the directory instead, and the first file of another
 * store that appears there ends the skipping with one poke at once (for a
 * commit made between that file's creation and its report); the heartbeat's
 * listing starts skipping again once the others have gone.
 *
 * The files carry no data and are never read: a missed or spurious event
 * costs nothing but a `PRAGMA data_version`, and polling every
 * `wakeFallbackMs` still finds commits of writers that do not poke (a
 * TypeORM connection of its own, the sqlite3 shell, an older alkstore). A
 * directory the store cannot write, or a platform without file watching,
 * leaves polling alone. A store removes its file on close, and the
 * directory when it is the last.
 *
 * A crashed process cannot remove its file, so the next store that opens the
 * database removes the files of stores that are gone ({@link isStaleWakeFile}):
 * a file is named `<random>.<pid>.<host tag>`, and one whose process no longer
 * runs on this host goes at once; any file whose mtime is older than ten
 * minutes goes too, which covers a store on another host sharing the directory,
 * a reused pid and files of an older alkstore. A live store refreshes its
 * file's mtime every minute (each poke refreshes it too) and puts its file
 * back if it finds it removed, so a store wrongly taken for gone (a process
 * frozen for ten minutes, or another pid namespace on a host of the same name)
 * loses its pokes for at most a minute, never a wake: its commits are still
 * found by the poll.
 */
export class WakeFile {
  private readonly name = `${randomBytes(6).toString('hex')}.${process.pid}.${HOST_TAG}`;
  private fd: number | null = null;
  private created = false;
  private watcher: FSWatcher | null = null;
  /** What a change to another store's file calls while this store listens (`watch`); null: nobody listens here. */
  private onChange: (() => void) | null = null;
  /**
   * No other store's file is in the directory, and the directory is watched for one to appear:
   * pokes are skipped, since no store could hear them. The first change naming another file ends
   * it with one poke at once, for the commits whose pokes were skipped meanwhile (see `onEvent`).
   */
  private alone = false;
  private heartbeat: NodeJS.Timeout | null = null;

  constructor(
    private readonly dir: string,
    heartbeatMs = WAKE_FILE_HEARTBEAT_MS,
  ) {
    this.create();
    if (this.fd === null) return;
    removeStaleWakeFiles(dir, this.name);
    this.checkAlone();
    this.heartbeat = setInterval(() => this.refresh(), heartbeatMs);
    this.heartbeat.unref();
  }

  /** This store's file name in the directory (tests, diagnostics). */
  get fileName(): string {
    return this.name;
  }

  private create(): void {
    // Twice: a store closing at this moment may remove the directory between the two calls.
    for (let i = 0; i < 2 && this.fd === null; i++) {
      try {
        mkdirSync(this.dir, { recursive: true });
        this.fd = openSync(join(this.dir, this.name), 'w');
        this.created = true;
      } catch {
        this.fd = null;
      }
    }
  }

  /**
   * The heartbeat: a fresh mtime, or the file made again when another store took it for a dead
   * one's (the directory may be a new one then: it is watched anew); then the directory is listed
   * again, which starts skipping pokes once the other stores have gone.
   */
  private refresh(): void {
    if (this.fd === null) return;
    try {
      if (fstatSync(this.fd).nlink > 0) {
        const now = new Date();
        futimesSync(this.fd, now, now);
        this.checkAlone();
        return;
      }
    } catch {
      // closed under us: make it again below
    }
    this.closeFd();
    this.create();
    this.closeWatcher();
    if (this.fd === null) {
      this.alone = false;
      return;
    }
    this.checkAlone();
  }

  /**
   * Lists the directory (watched first, so a file that appears after the listing is reported) and
   * skips pokes while this store's file is the only one. A listing that finds another store's file
   * while pokes were skipped pokes at once, as a change event would have.
   */
  private checkAlone(): void {
    const was = this.alone;
    let names: string[] = [];
    if (this.openWatcher()) {
      try {
        names = readdirSync(this.dir);
      } catch {
        names = [];
      }
    }
    this.alone = names.length === 1 && names[0] === this.name;
    if (this.alone) return;
    if (this.onChange === null) this.closeWatcher();
    if (was) this.poke();
  }

  /** After a commit that other stores should see now. Never throws. */
  poke(): void {
    if (this.fd === null || this.alone) return;
    try {
      writeSync(this.fd, BYTE, 0, 1, 0);
    } catch {
      this.closeFd();
    }
  }

  /** Calls `onChange` whenever another store pokes (until `unwatch`); false when the directory cannot be watched. */
  watch(onChange: () => void): boolean {
    if (this.fd === null || !this.openWatcher()) return false;
    this.onChange = onChange;
    return true;
  }

  unwatch(): void {
    this.onChange = null;
    if (!this.alone) this.closeWatcher();
  }

  /**
   * A change in the directory. Our own file's (our pokes, our heartbeat) is ignored. Any other
   * (or one the platform does not name) means another store is there: pokes resume, with one now
   * for the commits made while they were skipped (the kernel reports the new file after its
   * creation, so one of those commits may have come after it: that store hears it now).
   */
  private readonly onEvent = (_event: string, file: string | null): void => {
    if (file === this.name) return;
    if (this.alone) {
      this.alone = false;
      if (this.onChange === null) this.closeWatcher();
      this.poke();
    }
    this.onChange?.();
  };

  private openWatcher(): boolean {
    if (this.watcher !== null) return true;
    try {
      // Not persistent: the store's Watcher's fallback timer is what keeps a listening process alive.
      const w = watch(this.dir, { persistent: false }, this.onEvent);
      w.on('error', () => {
        // Pokes resume (nothing would report another store now); a listening store watches again on its next poll.
        if (this.watcher !== w) return;
        this.alone = false;
        this.onChange = null;
        this.closeWatcher();
      });
      this.watcher = w;
      return true;
    } catch {
      return false;
    }
  }

  private closeWatcher(): void {
    const w = this.watcher;
    this.watcher = null;
    try {
      w?.close();
    } catch {
      // already closed
    }
  }

  /** Stops watching and removes this store's file, and the directory when no other store's file is left. */
  close(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
    this.onChange = null;
    this.alone = false;
    this.closeWatcher();
    this.closeFd();
    if (!this.created) return;
    this.created = false;
    try {
      unlinkSync(join(this.dir, this.name));
      rmdirSync(this.dir);
    } catch {
      // another store's file is still there, or already removed
    }
  }

  private closeFd(): void {
    const fd = this.fd;
    this.fd = null;
    if (fd === null) return;
    try {
      closeSync(fd);
    } catch {
      // already closed
    }
  }
}

/** Removes the files of gone stores from a wake directory (never `own`); best effort, never throws. */
export function removeStaleWakeFiles(dir: string, own: string, now = Date.now()): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    if (name === own) continue;
    try {
      if (isStaleWakeFile(name, statSync(join(dir, name)).mtimeMs, now)) unlinkSync(join(dir, name));
    } catch {
      // removed meanwhile by its store or another opener
    }
  }
}
