// SQLite only: dead worker detection by process ids (docs/semantics.md, Leases, "Dead workers");
// PostgreSQL's liveness.ts uses session advisory locks instead.
import { LivenessSweeper } from '../shared/liveness.js';
import { createHash } from 'node:crypto';
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { queueWakeChannel } from '../../contract/names.js';
import type { StoreLogger } from '../../contract/types.js';
import type { SqliteConn } from './connection.js';
import type { WriteCtx } from './writer.js';

const TABLE = '__alkstore_worker_liveness';
/** Rows of other places (host, pid namespace) older than this are deleted unjudged (ms). */
const FOREIGN_ROW_MS = 24 * 3_600_000;

/**
 * Where a pid means this process: the host name and the pid namespace (a container sharing the
 * file and the host name has namespaces of its own). Rows of another tag are never judged.
 */
function placeTag(): string {
  let ns = '';
  try {
    ns = readlinkSync('/proc/self/ns/pid');
  } catch {
    // No /proc (macOS, Windows): the host name alone.
  }
  return createHash('sha256').update(`${hostname()}\n${ns}`).digest('hex').slice(0, 16);
}

const PLACE = placeTag();

/**
 * When process `pid` started (clock ticks since boot, field 22 of `/proc/<pid>/stat`), '' where
 * there is no /proc or it cannot be read: then the pid alone is checked, and a reused pid keeps a
 * dead worker's jobs until their lease lapses (never the other way round).
 */
export function processStart(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count from its closing one.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19] ?? '';
  } catch {
    return '';
  }
}

const OWN_START = processStart(process.pid);

/**
 * Whether the process a row names is gone: no process has its pid here (`kill(pid, 0)` is ESRCH;
 * EPERM means it runs as another user), or the one that has it started at another time (a reused
 * pid). Anything it cannot tell counts as alive.
 */
export function processGone(pid: number, started: string): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
  if (started === '') return false;
  const now = processStart(pid);
  return now !== '' && now !== started;
}

/**
 * A store's side of dead worker detection on SQLite (one machine by construction). The store's first
 * claim with a worker id records the id with this process (pid, start time, place tag) in the claim's
 * own write transaction. Every sweep interval (`LIVENESS_SWEEP_MS`, shared/liveness.ts) a store that
 * records ids reads the rows of other processes of its place and checks each process; for one that is
 * gone it deletes its rows and, for each of its ids no other row vouches for, ends the leases of the
 * id's jobs (`claimed_until = now`, a lapsed lease fenced and reclaimed like any other) and wakes
 * their queues, in one write transaction. A live process is never judged gone, whatever its handlers
 * do: the check asks the kernel, not the process.
 */
export class SqliteLiveness extends LivenessSweeper {
  private readonly held = new Set<string>();

  constructor(
    private readonly write: <T>(op: string, fn: (ctx: WriteCtx) => T) => Promise<T>,
    private readonly read: <T>(op: string, fn: (conn: SqliteConn) => T) => Promise<T>,
    logger: StoreLogger,
  ) {
    super('sqlite', logger);
  }

  /** Whether `workerId` still needs {@link record} in the claim's transaction. */
  needs(workerId: string | null): workerId is string {
    return workerId !== null && !this.closed && !this.held.has(workerId);
  }

  /** Records `workerId` as this process's, inside a claim's write transaction; {@link recorded} after its commit. */
  record(ctx: WriteCtx, workerId: string): void {
    ctx.conn
      .stmt(
        `INSERT INTO ${TABLE} (worker_id, host, pid, started, registered_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (worker_id, host, pid) DO UPDATE SET started = excluded.started`,
      )
      .run(workerId, PLACE, process.pid, OWN_START, ctx.now);
  }

  recorded(workerId: string): void {
    if (this.closed) return;
    this.held.add(workerId);
    this.startSweeps();
  }

  /** One read of the other processes' rows; when one's process is gone, one write. Returns the queues it woke. */
  protected async round(): Promise<string[]> {
    const { rows, foreign } = await this.read('liveness', (conn) => ({
      rows: conn
        .stmt(`SELECT DISTINCT pid, started FROM ${TABLE} WHERE host = ? AND pid <> ? LIMIT 1000`)
        .all(PLACE, process.pid) as { pid: number; started: string }[],
      foreign: conn
        .stmt(`SELECT 1 FROM ${TABLE} WHERE host <> ? AND registered_at < ? LIMIT 1`)
        .get(PLACE, conn.now() - FOREIGN_ROW_MS) as unknown,
    }));
    const gone = rows.filter((r) => processGone(r.pid, r.started));
    if (gone.length === 0 && foreign === undefined) return [];
    return await this.write('liveness', (ctx) => {
      // Rows of another host or pid namespace are never judged; after a day they go (bounded growth:
      // a container's new name would otherwise leave rows forever). Their ids then wait for their lease.
      if (foreign !== undefined)
        ctx.conn
          .stmt(`DELETE FROM ${TABLE} WHERE host <> ? AND registered_at < ?`)
          .run(PLACE, ctx.now - FOREIGN_ROW_MS);
      return reap(ctx, gone);
    });
  }
}

/** The write of {@link SqliteLiveness.sweep}: rows of the gone processes out, their ids' leases ended. */
function reap(ctx: WriteCtx, gone: readonly { pid: number; started: string }[]): string[] {
  const { conn } = ctx;
  const ids = new Set<string>();
  for (const g of gone) {
    const del = conn
      .stmt(`DELETE FROM ${TABLE} WHERE host = ? AND pid = ? AND started = ? RETURNING worker_id`)
      .all(PLACE, g.pid, g.started) as { worker_id: string }[];
    for (const d of del) ids.add(d.worker_id);
  }
  const queues = new Set<string>();
  const now = ctx.now;
  for (const id of ids) {
    // Another process (live, or not judged yet) vouches for the id: its jobs wait.
    if (conn.stmt(`SELECT 1 FROM ${TABLE} WHERE worker_id = ? LIMIT 1`).get(id) !== undefined) continue;
    // The attempt first, with its claim time read before the deadline moves; the claim that takes
    // the job over finds this row and keeps that time (RECORD_LAPSED).
    conn
      .stmt(
        `INSERT INTO __alkstore_job_attempts (job_id, queue, attempt, worker_id, claimed_at, ended_at, outcome, error)
         SELECT id, queue, attempts, worker_id, claimed_until - visibility_timeout_ms, ?, 'lapsed', NULL FROM __alkstore_jobs
         WHERE state = 'processing' AND worker_id = ? AND claimed_until > ?
         ON CONFLICT (job_id, attempt) DO UPDATE SET worker_id = excluded.worker_id, claimed_at = excluded.claimed_at,
           ended_at = excluded.ended_at, outcome = excluded.outcome, error = excluded.error`,
      )
      .run(now, id, now);
    const lapsed = conn
      .stmt(
        `UPDATE __alkstore_jobs SET claimed_until = ?
         WHERE state = 'processing' AND worker_id = ? AND claimed_until > ? RETURNING queue`,
      )
      .all(now, id, now) as { queue: string }[];
    for (const l of lapsed) queues.add(l.queue);
  }
  for (const q of queues) ctx.wake(queueWakeChannel(q));
  return [...queues];
}
