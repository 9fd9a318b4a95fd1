// PostgreSQL only: dead worker detection by session advisory locks (docs/semantics.md, Leases, "Dead
// workers"); SQLite's liveness.ts checks process ids instead.
import { LivenessSweeper } from '../shared/liveness.js';
import type { Client } from 'pg';
import { sessionQuery } from './notify/session-query.js';
import type { StoreLogger } from '../../contract/types.js';
import { queueWakeChannel } from '../../contract/names.js';
import { createHash } from 'node:crypto';
import type { Executor } from './connection.js';
import type { ClaimGate } from './claim-gate.js';
import type { WakeHub } from '../../internal/wake-hub.js';
import { NOW_MS, wakePayload, type SchemaSql, type Sql } from './schema-sql.js';

/**
 * The first key of every liveness lock of `schema` (the two-key advisory lock form; the second key
 * is `hashtext(worker_id)`): a key space of its own, apart from the single-key locks the engine
 * takes elsewhere. Two ids with one hash share a lock: each keeps the other alive, never dead.
 */
export function livenessLockClass(schema: string): number {
  return createHash('sha256').update(`alkstore:liveness:${schema}`, 'utf8').digest().readInt32BE(0);
}

/** The liveness statements of one schema. */
export function livenessSql(s: SchemaSql) {
  const reg = `${s.q}.worker_liveness`;
  return {
    /**
     * Run on the LISTEN session: $1 lock class, $2 worker id. Takes the id's shared lock (waiting
     * while a sweep judges the id), then records the id as watched.
     */
    watch: `WITH l AS MATERIALIZED (SELECT pg_advisory_lock_shared($1::int, hashtext($2::text)))
            INSERT INTO ${reg} (worker_id, registered_at) SELECT $2::text, ${NOW_MS} FROM l
            ON CONFLICT (worker_id) DO NOTHING`,
    /**
     * $1 lock class, $2 this store's own ids → the watched ids whose lock no session holds (the
     * exclusive transaction lock is free, so no shared one is held). Reads and locks nothing for
     * long: the locks it takes end with the statement.
     */
    probe: s.def(
      'lv_probe',
      `SELECT l.worker_id FROM ${reg} l
       WHERE l.worker_id <> ALL($2::text[]) AND pg_try_advisory_xact_lock($1::int, hashtext(l.worker_id))
       LIMIT 1000`,
    ),
    /**
     * $1 lock class, $2 candidate ids → the queues of the jobs whose lease it ended. For each id
     * whose lock is still free, taken exclusively until the commit (so a process that starts using
     * the id waits for the commit before its first claim), the row goes and the id's claimed jobs get
     * `claimed_until = now`: a lapsed lease, fenced and reclaimed like any other. The attempt is
     * recorded here, as `lapsed` with its claim time read before the deadline moved; the claim that
     * takes the job over finds it and keeps that time (`SAME_LAPSE`, queue.sql.ts).
     */
    reap: s.def(
      'lv_reap',
      `WITH dead AS MATERIALIZED (
         SELECT l.worker_id FROM ${reg} l
         WHERE l.worker_id = ANY($2::text[]) AND pg_try_advisory_xact_lock($1::int, hashtext(l.worker_id))
       ),
       gone AS (DELETE FROM ${reg} l USING dead d WHERE l.worker_id = d.worker_id RETURNING l.worker_id),
       lapsed AS (
         UPDATE ${s.q}.jobs j SET claimed_until = t.ms FROM (SELECT ${NOW_MS} AS ms) t, ${s.q}.jobs o
         WHERE o.id = j.id AND j.state = 'processing' AND j.worker_id IN (SELECT g.worker_id FROM gone g) AND j.claimed_until > t.ms
         RETURNING j.id, j.queue, j.attempts, j.worker_id, o.claimed_until - j.visibility_timeout_ms AS claimed_at, t.ms AS ended_at
       ),
       att AS (
         INSERT INTO ${s.q}.job_attempts (job_id, queue, attempt, worker_id, claimed_at, ended_at, outcome, error)
         SELECT l.id, l.queue, l.attempts, l.worker_id, l.claimed_at, l.ended_at, 'lapsed', NULL FROM lapsed l
         ON CONFLICT (job_id, attempt) DO UPDATE SET worker_id = excluded.worker_id, claimed_at = excluded.claimed_at,
           ended_at = excluded.ended_at, outcome = excluded.outcome, error = excluded.error
       )
       SELECT DISTINCT queue FROM lapsed`,
    ),
  } satisfies Record<string, Sql | string>;
}

/** What {@link PostgresLiveness} needs of its store. */
export interface LivenessHost {
  readonly exec: Executor;
  readonly sql: { readonly notify: { readonly notify: Sql } };
  readonly claims: ClaimGate;
  readonly hub: WakeHub;
  readonly logger: StoreLogger;
  /** The LISTEN connection while it is up, else null. */
  session(): Client | null;
}

/**
 * A store's side of dead worker detection on PostgreSQL. Before the store's first claim with a worker
 * id, {@link watch} takes a shared advisory lock keyed by the id on the LISTEN connection (a direct
 * session, never a pooled one: a transaction-mode pooler has no LISTEN connection, and then nothing is
 * watched) and records the id in `worker_liveness`. When the process dies, the kernel closes the
 * connection and PostgreSQL drops its locks at once. Every sweep interval (`LIVENESS_SWEEP_MS`,
 * shared/liveness.ts) a store that watches ids probes the others' ids ({@link livenessSql} `probe`,
 * one statement) and, when one's lock is free, ends the leases of its jobs (`reap`) and wakes their
 * queues. A live process holds the lock for as long as its LISTEN session lives, whatever its handlers
 * do: a blocked event loop does not close a socket. Losing the session itself (a network cut, a server
 * restart, a terminated backend) does count as death: the jobs are reclaimed and this process's acks
 * are refused as for a lapsed lease. The store watches its ids again on the new session.
 */
export class PostgresLiveness extends LivenessSweeper {
  /** Every id this store has watched (re-watched on a new session, left out of its own probes). */
  private readonly ids = new Set<string>();
  /** The ids whose lock `on` holds. */
  private readonly held = new Set<string>();
  private readonly pending = new Map<string, Promise<void>>();
  private on: Client | null = null;
  private readonly cls: number;
  private readonly sql: ReturnType<typeof livenessSql>;
  private warned = false;

  constructor(
    private readonly host: LivenessHost,
    schema: SchemaSql,
  ) {
    super('postgres', host.logger);
    this.cls = livenessLockClass(schema.schema);
    this.sql = livenessSql(schema);
  }

  /**
   * Resolves once `workerId`'s lock is held by this store's session (at once when it already is). No
   * session: resolves without watching (the id's jobs wait for their lease). Never throws: a failed
   * watch is logged once and tried again at the next claim.
   */
  watch(workerId: string): Promise<void> | undefined {
    if (this.closed) return undefined;
    const client = this.host.session();
    if (client === null) return undefined;
    if (client !== this.on) {
      this.on = client;
      this.held.clear();
    }
    if (this.held.has(workerId)) return undefined;
    let p = this.pending.get(workerId);
    if (p === undefined) {
      p = this.take(client, workerId).finally(() => this.pending.delete(workerId));
      this.pending.set(workerId, p);
    }
    return p;
  }

  private async take(client: Client, workerId: string): Promise<void> {
    try {
      // One statement at a time on the LISTEN connection (pg queues them, but warns when asked to).
      await sessionQuery(client, this.sql.watch, [this.cls, workerId]);
      if (client !== this.on || this.closed) return;
      this.held.add(workerId);
      this.ids.add(workerId);
      this.startSweeps();
    } catch (err) {
      if (!this.warned) {
        this.warned = true;
        this.host.logger.warn(
          `alkstore postgres: could not register worker ${JSON.stringify(workerId)} for dead worker detection (${String(err)}); its jobs wait for their lease`,
        );
      }
    }
  }

  /** The LISTEN connection is back: every id is watched again on it. */
  sessionRenewed(): void {
    for (const id of this.ids) void this.watch(id);
  }

  /** One probe; when it finds dead ids, one reap and a wake per queue whose jobs it freed. Returns the queues. */
  protected async round(): Promise<string[]> {
    const { exec } = this.host;
    const own = [...this.ids];
    const dead = await exec.run<{ worker_id: string }>(this.sql.probe, [this.cls, own]);
    if (dead.rows.length === 0) return [];
    const r = await exec.run<{ queue: string }>(this.sql.reap, [this.cls, dead.rows.map((x) => x.worker_id)]);
    const queues = r.rows.map((x) => x.queue);
    for (const q of queues) {
      // Every store of the schema: the queue's next claim is a full one (it takes lapsed leases), now.
      this.host.claims.invalidate(q);
      this.host.hub.wake(queueWakeChannel(q));
      await exec.run(this.host.sql.notify.notify, [`s:${q}`]);
      await exec.run(this.host.sql.notify.notify, [wakePayload(queueWakeChannel(q))]);
    }
    return queues;
  }
}
