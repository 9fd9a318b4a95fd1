import { mkdir, open, readFile, realpath, rename, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { AlkstoreError, Closed, Database, InvalidName, InvalidOption } from '../contract/errors.js';
import { assertEpoch, assertFrame, copyFrame, type OutboxRecord } from './epoch.js';
import {
  applyJournal,
  decodeJournal,
  encodeJournalRecord,
  type JournalRecord,
  type JournalState,
} from './journal-codec.js';
import type { OutboxStore } from './outbox-store.js';
import { Serial } from './serial.js';
import { checkKey } from './store-options.js';
import { requireCount, requireTimerMs } from '../contract/validate.js';

/**
 * When the journal calls fdatasync:
 * - `always` (default): after every append, before the call resolves, so a
 *   frame whose `put` resolved survives a power loss (append before send holds);
 * - `interval`: appends resolve after write(2); one fdatasync runs at most every
 *   `fsyncIntervalMs` and on close. A process crash loses nothing, a power
 *   loss or kernel crash may lose the last interval;
 * - `never`: leave it to the OS (tests, tmpfs).
 */
export type JournalFsyncPolicy = 'always' | 'interval' | 'never';

/** Options of {@link FileJournalOutboxStore.open}. */
export interface FileJournalOutboxStoreOptions {
  /** Directory holding one journal file per outbox key (created if missing). */
  directory: string;
  /** Which outbox of this directory (one per document or peer). Default `"default"`. */
  key?: string;
  /** See {@link JournalFsyncPolicy}. Default `always`. */
  fsync?: JournalFsyncPolicy;
  /** With `fsync: 'interval'`, the longest a write waits for its fdatasync (ms, default 100). */
  fsyncIntervalMs?: number;
  /**
   * The journal is compacted (live state rewritten to a temp file, fsynced,
   * renamed over the journal, directory fsynced) once it is at least this
   * large and at least twice its size after the previous compaction.
   * Default 1 MiB; `Infinity` disables automatic compaction.
   */
  compactThresholdBytes?: number;
}

/**
 * An {@link OutboxStore} in an append-only JSON-lines journal file, one file
 * per outbox key in a directory (`<escaped key>.outbox.jsonl`). Opening
 * replays the journal: a complete record that does not decode (an unknown
 * opcode included) throws {@link JournalCorrupt}; one torn trailing record is
 * forgiven and truncated away before the next append.
 *
 * Handles opened on the same file in one process share one journal: their
 * appends go through one `O_APPEND` descriptor in order, and the cursor is
 * the maximum over every cursor record, so a stale handle cannot lower it.
 * One process at a time may use a journal directory; use the SQLite or
 * PostgreSQL store for several processes.
 */
export class FileJournalOutboxStore implements OutboxStore {
  private closed = false;

  private constructor(
    private readonly journal: Journal,
    /** The outbox key this handle reads and writes. */
    readonly key: string,
  ) {}

  /** Opens (creating if missing) the journal of outbox `key` in `directory`, replaying it. */
  static async open(options: FileJournalOutboxStoreOptions): Promise<FileJournalOutboxStore> {
    if (options === null || typeof options !== 'object') throw new InvalidOption('options', 'must be an object');
    const key = checkKey(options.key);
    if (typeof options.directory !== 'string' || options.directory.length === 0)
      throw new InvalidOption('directory', 'must be a non-empty path');
    const policy = options.fsync ?? 'always';
    if (policy !== 'always' && policy !== 'interval' && policy !== 'never')
      throw new InvalidOption('fsync', 'must be "always", "interval" or "never"');
    const intervalMs =
      options.fsyncIntervalMs === undefined ? 100 : requireTimerMs('fsyncIntervalMs', options.fsyncIntervalMs, 0);
    const threshold = options.compactThresholdBytes ?? 1024 * 1024;
    // Infinity turns compaction off.
    if (threshold !== Number.POSITIVE_INFINITY) requireCount('compactThresholdBytes', threshold);
    try {
      await mkdir(options.directory, { recursive: true });
      const dir = await realpath(options.directory);
      const path = join(dir, journalFileName(key));
      const journal = await Journal.acquire(path, dir, { policy, intervalMs, threshold });
      return new FileJournalOutboxStore(journal, key);
    } catch (err) {
      throw journalError(`opening the journal of outbox ${JSON.stringify(key)} in ${options.directory}`, err);
    }
  }

  /** The journal file of this outbox. */
  get path(): string {
    return this.journal.path;
  }

  async put(epoch: number, frame: Uint8Array): Promise<void> {
    assertEpoch(epoch);
    assertFrame(frame, epoch);
    const bytes = copyFrame(frame);
    await this.run(() => this.journal.append([{ op: 'put', epoch, frame: bytes }]));
  }

  async deleteThrough(epoch: number): Promise<void> {
    assertEpoch(epoch);
    await this.run(async () => {
      // Nothing to remove means nothing to journal: the state is shared by every handle in this process.
      for (const e of this.journal.state.frames.keys()) {
        if (e <= epoch) return this.journal.append([{ op: 'delete_through', epoch }]);
      }
    });
  }

  async scanAfter(epoch: number): Promise<OutboxRecord[]> {
    assertEpoch(epoch);
    return this.run(async () =>
      [...this.journal.state.frames.entries()]
        .filter(([e]) => e > epoch)
        .sort((a, b) => a[0] - b[0])
        .map(([e, frame]) => ({ epoch: e, frame: copyFrame(frame) })),
    );
  }

  async loadCursor(): Promise<number> {
    return this.run(async () => this.journal.state.cursor);
  }

  async saveCursor(epoch: number): Promise<void> {
    assertEpoch(epoch);
    await this.run(async () => {
      if (epoch > this.journal.state.cursor) await this.journal.append([{ op: 'cursor', epoch }]);
    });
  }

  /** Rewrites the journal to its live state now (normally automatic past the threshold). */
  async compact(): Promise<void> {
    await this.run(() => this.journal.compact());
  }

  /** Releases this handle; the last handle of a journal flushes and closes the file. Later calls throw {@link Closed}. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Journal.release(this.journal);
  }

  private run<T>(task: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new Closed('file journal outbox store'));
    return this.journal.serial.run(task).catch((err: unknown) => {
      throw journalError(`journal ${this.journal.path}`, err);
    });
  }
}

/** A file-system failure surfaces as {@link Database} (the journal is the store's storage), the OS error kept as `cause`. */
function journalError(what: string, err: unknown): unknown {
  return err instanceof AlkstoreError || err instanceof RangeError ? err : new Database(what, err);
}

/**
 * The journal file name of `key`: every byte of its UTF-8 form outside
 * `[a-z0-9_-]` becomes `%XX`, so names never collide on case-insensitive
 * file systems and never contain `.`, `/` or `\`.
 */
export function journalFileName(key: string): string {
  let out = '';
  for (const byte of Buffer.from(key, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[a-z0-9_-]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  if (out.length > 200)
    throw new InvalidName(
      'outbox key',
      key,
      'is too long for a journal file name (at most 200 characters once escaped)',
    );
  return `${out}.outbox.jsonl`;
}

interface JournalSettings {
  policy: JournalFsyncPolicy;
  intervalMs: number;
  threshold: number;
}

const open_ = new Map<string, Promise<Journal>>();
const closing = new Map<string, Promise<void>>();

/** One open journal file, shared by every handle on it in this process. All work runs through `serial`. */
class Journal {
  readonly serial = new Serial();
  private refs = 0;
  private shutting = false;
  private failed: Error | null = null;
  private syncTimer: NodeJS.Timeout | null = null;
  private dirty = false;

  private constructor(
    readonly path: string,
    private readonly dir: string,
    private readonly settings: JournalSettings,
    private fd: FileHandle,
    readonly state: JournalState,
    /** Bytes of complete records: where the next record starts. */
    private size: number,
    /** A torn trailing record is still on disk and must be cut before the next append. */
    private torn: boolean,
    private baseSize: number,
  ) {}

  static async acquire(path: string, dir: string, settings: JournalSettings): Promise<Journal> {
    for (;;) {
      await closing.get(path);
      let pending = open_.get(path);
      if (!pending) {
        pending = Journal.load(path, dir, settings);
        open_.set(path, pending);
        pending.catch(() => {
          if (open_.get(path) === pending) open_.delete(path);
        });
      }
      const journal = await pending;
      // The last handle may have released it while this call waited; open it afresh then.
      if (journal.shutting) continue;
      journal.refs += 1;
      return journal;
    }
  }

  static async release(journal: Journal): Promise<void> {
    journal.refs -= 1;
    if (journal.refs > 0) return;
    journal.shutting = true;
    const done = journal.serial
      .run(() => journal.shutdown())
      .finally(() => {
        closing.delete(journal.path);
      });
    open_.delete(journal.path);
    closing.set(
      journal.path,
      done.catch(() => undefined),
    );
    await done;
  }

  private static async load(path: string, dir: string, settings: JournalSettings): Promise<Journal> {
    // A compaction that crashed before its rename leaves only this temp file; the journal itself is intact.
    await rm(`${path}.compact`, { force: true });
    let bytes: Buffer;
    let created = false;
    try {
      bytes = await readFile(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      bytes = Buffer.alloc(0);
      created = true;
    }
    const decoded = decodeJournal(bytes, path);
    const state = applyJournal(decoded.records);
    const fd = await open(path, 'a');
    if (created) await syncDir(dir);
    return new Journal(path, dir, settings, fd, state, decoded.completeLength, decoded.tornBytes > 0, 0);
  }

  /** Appends records durably (per the fsync policy), then applies them. Call inside `serial`. */
  async append(records: JournalRecord[]): Promise<void> {
    if (this.failed) throw this.failed;
    if (this.torn) {
      await this.fd.truncate(this.size);
      await this.fd.datasync();
      this.torn = false;
    }
    const buf = Buffer.concat(records.map(encodeJournalRecord));
    try {
      let written = 0;
      while (written < buf.byteLength) {
        const { bytesWritten } = await this.fd.write(buf, written, buf.byteLength - written);
        written += bytesWritten;
      }
      if (this.settings.policy === 'always') await this.fd.datasync();
    } catch (err) {
      // A partial write would sit between complete records; cut it so later appends stay well-formed.
      try {
        await this.fd.truncate(this.size);
      } catch {
        this.failed = new Database(`repairing journal ${this.path} after a failed write (reopen it)`, err);
      }
      throw err;
    }
    this.size += buf.byteLength;
    applyJournal(records, this.state);
    if (this.settings.policy === 'interval') this.scheduleSync();
    if (this.size >= Math.max(this.settings.threshold, 2 * this.baseSize)) await this.compactQuietly();
  }

  /** Rewrites the live state to a temp file, fsyncs it, renames it over the journal and fsyncs the directory. Call inside `serial`. */
  async compact(): Promise<void> {
    if (this.failed) throw this.failed;
    const records: JournalRecord[] = [];
    if (this.state.cursor > 0) records.push({ op: 'cursor', epoch: this.state.cursor });
    for (const epoch of [...this.state.frames.keys()].sort((a, b) => a - b)) {
      records.push({ op: 'put', epoch, frame: this.state.frames.get(epoch)! });
    }
    const buf = Buffer.concat(records.map(encodeJournalRecord));
    const tmp = `${this.path}.compact`;
    const out = await open(tmp, 'w');
    try {
      await out.writeFile(buf);
      await out.sync();
    } catch (err) {
      await out.close().catch(() => undefined);
      await rm(tmp, { force: true });
      throw err;
    }
    await out.close();
    await rename(tmp, this.path);
    // From here the old descriptor points at an unlinked file; nothing may be written through it.
    try {
      await syncDir(this.dir);
      await this.fd.close().catch(() => undefined);
      this.fd = await open(this.path, 'a');
    } catch (err) {
      this.failed = new Database(`reopening journal ${this.path} after compaction (reopen it)`, err);
      throw err;
    }
    this.size = buf.byteLength;
    this.baseSize = buf.byteLength;
    this.torn = false;
    this.dirty = false;
  }

  private async compactQuietly(): Promise<void> {
    try {
      await this.compact();
    } catch (err) {
      if (this.failed) throw this.failed;
      // The append itself is durable; try again once the journal doubles.
      this.baseSize = this.size;
    }
  }

  private scheduleSync(): void {
    this.dirty = true;
    if (this.syncTimer) return;
    this.syncTimer = setTimeout(() => {
      this.syncTimer = null;
      void this.serial
        .run(async () => {
          if (!this.dirty || this.failed) return;
          this.dirty = false;
          await this.fd.datasync();
        })
        .catch(() => {
          this.dirty = true;
        });
    }, this.settings.intervalMs);
    this.syncTimer.unref();
  }

  private async shutdown(): Promise<void> {
    if (this.syncTimer) clearTimeout(this.syncTimer);
    this.syncTimer = null;
    try {
      if (this.dirty && !this.failed) await this.fd.datasync();
    } finally {
      await this.fd.close();
    }
  }
}

async function syncDir(dir: string): Promise<void> {
  let handle: FileHandle | null = null;
  try {
    handle = await open(dir, 'r');
    await handle.sync();
  } catch (err) {
    // Some platforms (Windows) cannot open or fsync a directory; the rename is still atomic there.
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EISDIR' && code !== 'EPERM' && code !== 'EINVAL' && code !== 'EACCES') throw err;
  } finally {
    await handle?.close();
  }
}
