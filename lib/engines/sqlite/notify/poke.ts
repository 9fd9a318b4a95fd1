// SQLite only: a file-change nudge after commits that wrote wake rows, so watchers in other processes read them at once instead of at their next data_version poll; PostgreSQL's NOTIFY already pushes.
import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, rmdirSync, unlinkSync, watch, writeSync, type FSWatcher } from 'node:fs';
import { join } from 'node:path';

const BYTE = new Uint8Array([1]);

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
 * The files carry no data and are never read: a missed or spurious event
 * costs nothing but a `PRAGMA data_version`, and polling every
 * `wakeFallbackMs` still finds commits of writers that do not poke (a
 * TypeORM connection of its own, the sqlite3 shell, an older alkstore). A
 * directory the store cannot write, or a platform without file watching,
 * leaves polling alone. A store removes its file on close, and the
 * directory when it is the last; a crashed process leaves its one-byte file
 * behind, which nothing reads.
 */
export class WakeFile {
  private readonly name = `${randomBytes(6).toString('hex')}.${process.pid}`;
  private fd: number | null = null;
  private created = false;
  private watcher: FSWatcher | null = null;

  constructor(private readonly dir: string) {
    // Twice: a store closing at this moment may remove the directory between the two calls.
    for (let i = 0; i < 2 && this.fd === null; i++) {
      try {
        mkdirSync(dir, { recursive: true });
        this.fd = openSync(join(dir, this.name), 'w');
        this.created = true;
      } catch {
        this.fd = null;
      }
    }
  }

  /** After a commit that other stores should see now. Never throws. */
  poke(): void {
    if (this.fd === null) return;
    try {
      writeSync(this.fd, BYTE, 0, 1, 0);
    } catch {
      this.closeFd();
    }
  }

  /** Calls `onChange` whenever another store pokes (until `unwatch`); false when the directory cannot be watched. */
  watch(onChange: () => void): boolean {
    if (this.watcher !== null) return true;
    if (this.fd === null) return false;
    try {
      // Not persistent: the watcher's fallback timer is what keeps a listening process alive.
      const w = watch(this.dir, { persistent: false }, (_event, file) => {
        if (file !== this.name) onChange();
      });
      w.on('error', () => this.unwatch());
      this.watcher = w;
      return true;
    } catch {
      return false;
    }
  }

  unwatch(): void {
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
    this.unwatch();
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
