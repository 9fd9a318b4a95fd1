// SQLite only: claimDurability 'deferred' commits claims on a synchronous = NORMAL connection and fsyncs the WAL right after, off the event loop.
import { close, fdatasync, open } from 'node:fs';
import type { StoreLogger } from '../../contract/types.js';
import type { SqliteConn } from './connection.js';

/**
 * Claim transactions under `synchronous = FULL` with `claimDurability:
 * 'deferred'`: a claim commits on a second write connection of the store that
 * runs `synchronous = NORMAL` (no fsync inside COMMIT, so a woken handler
 * starts one fsync sooner and the event loop is not blocked for it), and the
 * WAL file is then fdatasync'ed on the libuv thread pool right away. A WAL
 * fsync covers every frame written before it, so the claim is durable a moment
 * later, and at the latest with the next FULL commit of any connection
 * (usually its own ack). Only a power loss inside that window can undo a
 * claim: the job is pending again with its attempt uncounted. Atomicity,
 * visibility and exactly-once handout are SQLite's and unchanged (NORMAL in
 * WAL mode never corrupts the file); both connections take turns on the
 * store's one write mutex, so they never wait for each other's lock.
 */
export class DeferredSync {
  private fd: number | null = null;
  private running = false;
  private again = false;
  private closed = false;
  private warned = false;

  constructor(
    /** The NORMAL write connection claims commit on. */
    readonly conn: SqliteConn,
    /** Absolute path of the `-wal` file. */
    private readonly walPath: string,
    private readonly logger: StoreLogger,
  ) {}

  /** Runs `attemptTx` (a whole BEGIN … COMMIT/ROLLBACK) on the NORMAL connection; syncs the WAL when it wrote something. */
  run<R>(attemptTx: (conn: SqliteConn) => R): R {
    const changes = this.conn.pluck('SELECT total_changes()');
    const before = changes.get() as number;
    const r = attemptTx(this.conn);
    if ((changes.get() as number) !== before) this.request();
    return r;
  }

  /** Syncs the WAL off the event loop; requests made while one runs coalesce into one more. */
  request(): void {
    if (this.closed) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    if (this.fd === null) {
      open(this.walPath, 'r', (err, fd) => {
        if (err) return this.done(err);
        if (this.closed) {
          close(fd, () => undefined);
          return this.done(null);
        }
        this.fd = fd;
        fdatasync(fd, (e) => this.done(e));
      });
      return;
    }
    fdatasync(this.fd, (e) => this.done(e));
  }

  close(): void {
    this.closed = true;
    if (!this.running) this.closeFd();
    this.conn.close();
  }

  private done(err: NodeJS.ErrnoException | null): void {
    this.running = false;
    // After close the store's connections are gone: the last one checkpointed the WAL and removed
    // it (the usual ENOENT of a sync that was still opening it), or another process's commits sync it.
    if (err && !this.warned && !this.closed) {
      // Not fatal: the next FULL commit fsyncs the WAL anyway.
      this.warned = true;
      this.logger.warn(
        `background fsync of ${this.walPath} failed (${err.message}); claims become durable with the next commit instead`,
      );
    }
    if (this.closed) {
      this.closeFd();
      return;
    }
    if (this.again) {
      this.again = false;
      this.request();
    }
  }

  private closeFd(): void {
    if (this.fd === null) return;
    const fd = this.fd;
    this.fd = null;
    close(fd, () => undefined);
  }
}
