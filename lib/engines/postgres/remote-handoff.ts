// PostgreSQL only: the cross-process hand-off (docs/semantics.md, Queues, "Cross-process hand-off"). The
// enqueue side is `enqueueRemote` (queue.sql.ts) in postgres-driver.ts; the worker side is lib/worker/handoff-taker.ts.
import { createHash, randomInt } from 'node:crypto';
import type { Client } from 'pg';
import type { StoreLogger } from '../../contract/types.js';
import { HandoffRegistry, type HandoffPoint, type HandoffSlot } from '../../internal/handoff.js';
import type { RemoteHandoffPoint } from '../../internal/remote-handoff.js';
import { ClaimedJob } from '../shared/job.js';
import type { QueueDriver } from '../shared/queue-driver.js';
import { num } from '../shared/rows.js';
import type { Executor } from './connection.js';
import type { PostgresLiveness } from './liveness.js';
import { sessionQuery } from './notify/session-query.js';
import { claimedRowOf } from './postgres-driver.js';
import { jobColumns, type JobRow } from './queue.sql.js';
import type { SchemaSql } from './schema-sql.js';

/**
 * The first key of every taker lock of `schema` (the two-key advisory lock form; the second key is the
 * registration's random `taker`): a key space apart from the liveness locks and the single-key ones.
 */
export function takerLockClass(schema: string): number {
  return createHash('sha256').update(`alkstore:takers:${schema}`, 'utf8').digest().readInt32BE(0);
}

/** The statements of the takers' side of one schema ($1 is always the lock class). */
export function takerSql(s: SchemaSql) {
  const t = `${s.q}.idle_takers`;
  return {
    /**
     * On the LISTEN session: $2 taker, $3 queue, $4 worker id, $5 lease override ms, $6 this store's
     * other takers. Takes the taker's session lock, then (async commit: soft state) deletes the rows
     * of `queue` whose lock no session holds (a taken one only once its job is no longer claimed with
     * its token: a worker whose LISTEN session was replaced still reads it at its withdrawal),
     * inserts the free slot and announces `r:<queue>` to every store (see `RemoteTakers.mayHaveOffers`).
     * → one row when registered.
     */
    register: `WITH l AS MATERIALIZED (SELECT pg_advisory_lock($1::int, $2::int)),
       sc AS MATERIALIZED (SELECT set_config('synchronous_commit', 'off', true)),
       gc AS (DELETE FROM ${t} g WHERE g.queue = $3::text AND g.taker <> $2::int AND g.taker <> ALL($6::int[])
              AND pg_try_advisory_xact_lock_shared($1::int, g.taker)
              AND (g.token IS NULL OR NOT EXISTS (SELECT 1 FROM ${s.q}.jobs j
                   WHERE j.id = g.job_id AND j.claim_token = g.token AND j.state = 'processing'))),
       ann AS MATERIALIZED (SELECT pg_notify(${s.channel}, 'r:' || $3::text))
       INSERT INTO ${t} (taker, queue, worker_id, lease_ms) SELECT $2::int, $3::text, $4::text, $5::bigint FROM l, sc, ann
       ON CONFLICT (taker) DO NOTHING RETURNING taker`,
    /** On the LISTEN session: $2 taker. */
    unlock: 'SELECT pg_advisory_unlock($1::int, $2::int)',
    /**
     * $1 taker, $2 worker id → what an enqueue left in the slot (token and job id, null when none), or
     * no row. Waits for an enqueue that holds the row, then reads what it committed.
     */
    withdraw: s.def(
      'ht_withdraw',
      `WITH sc AS MATERIALIZED (SELECT set_config('synchronous_commit', 'off', true))
       DELETE FROM ${t} d USING sc WHERE d.taker = $1::int AND d.worker_id = $2::text RETURNING d.token::text AS token, d.job_id`,
    ),
    /** $1 job id, $2 claim token → the job while that claim holds it (processing with that token), else no row. */
    readTaken: s.def(
      'ht_read',
      `SELECT ${jobColumns('j')} FROM ${s.q}.jobs j
       WHERE j.id = $1::bigint AND j.claim_token = $2::text::uuid AND j.state = 'processing'`,
    ),
  };
}

/** What {@link RemoteTakers} needs of its store. */
export interface RemoteTakersHost {
  readonly exec: Executor;
  readonly schema: SchemaSql;
  readonly logger: StoreLogger;
  readonly liveness: PostgresLiveness | null;
  /** The LISTEN connection while it is up, else null. */
  session(): Client | null;
  /** Whether this store's LISTEN connection is up (announcements of offers arrive). */
  listening(): boolean;
  /** The queue driver jobs of `queue` are delivered with. */
  driver(queue: string): QueueDriver;
}

interface Offer {
  readonly taker: number;
  readonly queue: string;
  readonly slot: HandoffSlot;
  /** deliver or cancel was called. */
  settled: boolean;
  /** The session that holds the taker's lock (null: none, or released). */
  client: Client | null;
  /** The registration was sent, so the row may exist (the withdrawal deletes it and reads what it holds). */
  row: boolean;
  /** The registration statement (resolves either way). */
  registered: Promise<void>;
  /** The withdrawal, once begun. */
  withdrawn: Promise<void> | null;
}

/**
 * The offers of one store's idle workers to every store of the schema. An offer is a row of
 * `idle_takers` registered on the store's LISTEN session, which holds its advisory lock for as long
 * as the offer stands: an enqueue of any store takes the slot only while that lock is held (the
 * session is alive), inserts the job claimed for the slot's worker and notifies `x:<taker>:<job>`. The
 * offer settles exactly once: delivered on that notification (or at once when this store's own
 * enqueue took it), or at the withdrawal, which deletes the row and reads what an enqueue left in it
 * (so a lost notification loses no job), or cancelled.
 */
export class RemoteTakers {
  private readonly offers = new Map<number, Offer>();
  /** Queues on which an offer was announced (or made here) since this store opened. */
  private readonly offered = new Set<string>();
  /** The latest registration in flight per queue (an enqueue of this store waits for it: see {@link registered}). */
  private readonly registering = new Map<string, Promise<void>>();
  private readonly cls: number;
  private readonly sql: ReturnType<typeof takerSql>;
  private warned = false;
  private closed = false;

  constructor(private readonly host: RemoteTakersHost) {
    this.cls = takerLockClass(host.schema.schema);
    this.sql = takerSql(host.schema);
  }

  /**
   * Whether an enqueue of `queue` should look for an offer: once an offer on the queue was announced
   * (`r:<queue>`, sent by each registration) or made by this store, and whenever this store cannot hear
   * the announcements (no LISTEN connection). Otherwise it is the plain insert, which costs no probe; an
   * offer whose announcement has not arrived yet then gets the job by the wake and its claim, as before.
   */
  mayHaveOffers(queue: string): boolean {
    return this.offered.has(queue) || !this.host.listening();
  }

  /** A `r:<queue>` notification: an offer was registered on `queue`. */
  announced(queue: string): void {
    this.offered.add(queue);
  }

  /** The takers' lock class (`enqueueRemote`'s $13). */
  get lockClass(): number {
    return this.cls;
  }

  /** Offers `slot` of an idle worker of `queue`; the returned function withdraws it (see `RemoteHandoffPoint.offer`). */
  offer(queue: string, slot: HandoffSlot): () => Promise<void> {
    let taker = randomInt(1, 2 ** 31 - 1);
    while (this.offers.has(taker)) taker = randomInt(1, 2 ** 31 - 1);
    const o: Offer = {
      taker,
      queue,
      slot,
      settled: false,
      client: null,
      row: false,
      registered: Promise.resolve(),
      withdrawn: null,
    };
    this.offers.set(taker, o);
    this.offered.add(queue);
    o.registered = this.register(o);
    const inFlight = o.registered.finally(() => {
      if (this.registering.get(queue) === inFlight) this.registering.delete(queue);
    });
    this.registering.set(queue, inFlight);
    return () => (o.withdrawn ??= this.withdraw(o));
  }

  private async register(o: Offer): Promise<void> {
    const client = this.closed ? null : this.host.session();
    if (client === null) return;
    try {
      // Dead worker detection covers the handed-off job as it covers a claimed one.
      const watching = this.host.liveness?.watch(o.slot.workerId);
      if (watching) await watching;
      if (o.settled || o.withdrawn !== null) return;
      o.client = client;
      o.row = true;
      const others = [...this.offers.keys()].filter((k) => k !== o.taker);
      const r = await sessionQuery(client, this.sql.register.replace(/\s+/g, ' '), [
        this.cls,
        o.taker,
        o.queue,
        o.slot.workerId,
        o.slot.leaseMs,
        others,
      ]);
      // The number is another registration's (a dead one not deleted yet): this offer stands empty.
      if (r.rows.length === 0) o.row = false;
    } catch (err) {
      if (!this.warned) {
        this.warned = true;
        this.host.logger.warn(
          `alkstore postgres: could not offer an idle worker of ${JSON.stringify(o.queue)} to other processes (${String(err)}); its jobs come by claims`,
        );
      }
    }
  }

  /**
   * Resolves when the registration of this store's latest offer on `queue` has landed, or null when none is in
   * flight: an enqueue of this store that the local hand-off could not take, because its idle worker's slot is
   * being offered, finds that offer (and delivers to it at once) instead of missing it by a round trip.
   */
  registered(queue: string): Promise<void> | null {
    return this.registering.get(queue) ?? null;
  }

  /** This store's enqueue took `taker`'s slot: its job, delivered now when the taker is this store's (the notification's echo is then dropped). */
  taken(taker: number, row: JobRow): void {
    const o = this.offers.get(taker);
    if (o !== undefined) this.deliver(o, row);
  }

  /** A `x:` notification: `x:<taker>:<job JSON>` or `x:<taker>:<id>:<token>`. Not one of this store's takers: ignored. */
  notified(payload: string): void {
    const end = payload.indexOf(':', 2);
    if (end < 0) return;
    const o = this.offers.get(Number(payload.slice(2, end)));
    if (o === undefined || o.settled) return;
    const rest = payload.slice(end + 1);
    if (rest.startsWith('{')) {
      let row: JobRow;
      try {
        row = JSON.parse(rest) as JobRow;
      } catch {
        return;
      }
      this.deliver(o, row);
      return;
    }
    const sep = rest.indexOf(':');
    if (sep < 0) return;
    // Too large for the notification: read by id and token (the withdrawal reads it too, whichever is first).
    void this.readTaken(num(rest.slice(0, sep)), rest.slice(sep + 1)).then(
      (row) => {
        if (row !== null) this.deliver(o, row);
      },
      () => undefined,
    );
  }

  /** Offers are withdrawn by their workers before the store closes; nothing is registered after this. */
  close(): void {
    this.closed = true;
  }

  private deliver(o: Offer, row: JobRow): void {
    if (o.settled) return;
    o.settled = true;
    let job: ClaimedJob;
    try {
      job = new ClaimedJob(this.host.driver(o.queue), claimedRowOf(row, o.slot.leaseMs));
    } catch (err) {
      // Not decodable here: the job's lease lapses and a claim takes it (and reports it).
      this.host.logger.warn(`alkstore postgres: a job handed off to this process could not be read: ${String(err)}`);
      o.slot.cancel();
      void this.end(o);
      return;
    }
    o.slot.deliver(job);
    // The row and the lock go now; a withdrawal finds nothing left to settle.
    o.withdrawn ??= this.end(o);
  }

  private async withdraw(o: Offer): Promise<void> {
    await o.registered;
    if (!o.row) {
      // Never registered (no session, or the number was taken): nothing was taken.
      this.settleEmpty(o);
      this.unlock(o);
      return;
    }
    try {
      const r = await this.host.exec.run<{ token: string | null; job_id: string | null }>(this.sql.withdraw, [
        o.taker,
        o.slot.workerId,
      ]);
      const left = r.rows[0];
      if (!o.settled && left !== undefined && left.token !== null && left.job_id !== null) {
        const row = await this.readTaken(num(left.job_id), left.token);
        if (row !== null) this.deliver(o, row);
      }
    } catch (err) {
      this.host.logger.warn(
        `alkstore postgres: withdrawing an idle worker's offer failed (${String(err)}); a job it took comes back when its lease lapses`,
      );
    } finally {
      this.settleEmpty(o);
      this.unlock(o);
    }
  }

  /** A delivered offer's row and lock go (its worker's withdrawal, if any, finds them gone). */
  private async end(o: Offer): Promise<void> {
    await o.registered;
    try {
      if (o.row) await this.host.exec.run(this.sql.withdraw, [o.taker, o.slot.workerId]);
    } catch {
      // Left for the next registration of the queue to delete once the lock is gone.
    } finally {
      this.offers.delete(o.taker);
      this.unlock(o);
    }
  }

  private settleEmpty(o: Offer): void {
    this.offers.delete(o.taker);
    if (o.settled) return;
    o.settled = true;
    o.slot.cancel();
  }

  private unlock(o: Offer): void {
    const client = o.client;
    o.client = null;
    if (client !== null && client === this.host.session())
      sessionQuery(client, this.sql.unlock, [this.cls, o.taker]).catch(() => undefined);
  }

  private async readTaken(id: number, token: string): Promise<JobRow | null> {
    const r = await this.host.exec.run<JobRow>(this.sql.readTaken, [id, token]);
    return r.rows[0] ?? null;
  }
}

/** The hand-off registry of a PostgreSQL store: its points also offer slots to other processes when `remote` is set. */
export class PgHandoffRegistry extends HandoffRegistry {
  constructor(private readonly remote: RemoteTakers | null) {
    super();
  }

  override point(queue: string): HandoffPoint {
    const base = super.point(queue);
    const remote = this.remote;
    if (remote === null) return base;
    const point: RemoteHandoffPoint = {
      register: base.register,
      reserve: base.reserve,
      offer: (slot) => remote.offer(queue, slot),
    };
    return point;
  }
}
