// SQLite only: a file-change nudge after commits that wrote wake rows, so watchers in other processes read them at once instead of at their next data_version poll; PostgreSQL's NOTIFY already pushes.
import { closeSync, openSync, watch, writeSync, type FSWatcher } from 'node:fs';

const BYTE = new Uint8Array([1]);

/**
 * The wake file beside a database, `<database>-alkwake`: one byte is written
 * to it (at offset 0, never fsynced, the file stays one byte long) after
 * every commit of this store that wrote wake rows, and after every
 * `joinTransaction` commit. Every store watching the same database watches
 * the file for changes (`fs.watch`: inotify on Linux, FSEvents or kqueue on
 * macOS) and reads the wake rows at once. The byte is written after COMMIT
 * returned, so a watcher that reads on the event sees the commit.
 *
 * The file carries no data and is never read: a missed or spurious event
 * costs nothing but a `PRAGMA data_version`, and polling every
 * `wakeFallbackMs` still finds commits of writers that do not poke (a
 * TypeORM connection of its own, the sqlite3 shell, an older alkstore). A
 * directory the store cannot write, or a platform without file watching,
 * leaves polling alone, as before.
 */
export class WakeFile {
  private fd: number | null = null;
  private watcher: FSWatcher | null = null;

  constructor(private readonly path: string) {
    try {
      // 'a' creates the file without truncating another store's; writeSync with a position then overwrites byte 0.
      this.fd = openSync(path, 'a');
      closeSync(this.fd);
      this.fd = openSync(path, 'r+');
    } catch {
      this.fd = null;
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

  /** Calls `onChange` whenever any store pokes (until `unwatch`); false when the file cannot be watched. */
  watch(onChange: () => void): boolean {
    if (this.watcher !== null) return true;
    if (this.fd === null) return false;
    try {
      // Not persistent: the watcher's fallback timer is what keeps a listening process alive.
      const w = watch(this.path, { persistent: false }, onChange);
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

  close(): void {
    this.unwatch();
    this.closeFd();
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
