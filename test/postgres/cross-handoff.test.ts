// The cross-process hand-off (lib/engines/postgres/remote-handoff.ts): stores of one schema, each with its own
// pool and LISTEN connection, hand plain enqueues to each other's idle workers. PostgreSQL only.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, expect, it } from '@jest/globals';
import pg from 'pg';
import type { ClaimOpts, Job, Queue, Store } from '../../lib/contract/types.js';
import { DEFAULT_QUEUE_OPTS, resolveJobStamp } from '../../lib/contract/options.js';
import { InvalidOption } from '../../lib/contract/errors.js';
import { openPostgresStore } from '../../lib/engines/postgres/index.js';
import { engineSql, stampParams } from '../../lib/engines/postgres/context.js';
import { takerLockClass } from '../../lib/engines/postgres/remote-handoff.js';
import { QueueWorker } from '../../lib/worker/queue-worker.js';
import { PG_URL, describePg, waitFor } from '../helpers/engines.js';
import { dropSchema, freshSchema, withClient } from './pg-helpers.js';

const LONG = 600_000;
const CHILD = fileURLToPath(new URL('./fixtures/handoff-worker.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const silent = { log: () => undefined, warn: () => undefined, error: () => undefined };

/** `queue` whose claimBatch records the ids its claims returned. */
function observed(queue: Queue): { queue: Queue; claimed: Set<number> } {
  const claimed = new Set<number>();
  const proxy = new Proxy(queue, {
    get(target, prop, receiver) {
      if (prop === 'claimBatch')
        return async (max: number, workerId?: string, opts?: ClaimOpts) => {
          const jobs = await target.claimBatch(max, workerId, opts);
          for (const j of jobs) claimed.add(j.id);
          return jobs;
        };
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { queue: proxy, claimed };
}

describePg('postgres cross-process hand-off', () => {
  const schema = freshSchema('xho');
  let a: Store;
  let b: Store;
  let plain: Store;
  const workers: QueueWorker[] = [];
  const sql = engineSql(schema);
  const cls = takerLockClass(schema);

  beforeAll(async () => {
    a = await openPostgresStore({
      connectionString: PG_URL,
      schema,
      poolSize: 4,
      logger: silent,
      crossProcessHandoff: true,
    });
    b = await openPostgresStore({
      connectionString: PG_URL,
      schema,
      poolSize: 4,
      logger: silent,
      crossProcessHandoff: true,
    });
    plain = await openPostgresStore({
      connectionString: PG_URL,
      schema,
      poolSize: 2,
      logger: silent,
      crossProcessHandoff: false,
    });
  });
  afterEach(async () => {
    for (const w of workers.splice(0)) await w.stop();
  });
  afterAll(async () => {
    for (const s of [a, b, plain]) await s.close();
    await dropSchema(schema);
  });

  function start(queue: Queue, workerId: string, handler: (job: Job) => Promise<void>, concurrency = 1): QueueWorker {
    const w = new QueueWorker({
      queue,
      handler,
      name: workerId,
      concurrency,
      prefetch: 0,
      leaseMs: LONG,
      idlePollIntervalMs: 60_000,
      drainTimeoutMs: 5_000,
      workerId,
      logger: silent,
    });
    workers.push(w);
    w.start();
    return w;
  }

  const offers = async (queue: string, workerId?: string): Promise<{ taker: number; token: string | null }[]> =>
    withClient(
      async (c) =>
        (
          await c.query<{ taker: number; token: string | null }>(
            `SELECT taker, token::text AS token FROM "${schema}".idle_takers WHERE queue = $1 AND ($2::text IS NULL OR worker_id = $2)`,
            [queue, workerId ?? null],
          )
        ).rows,
    );

  /** The engine's hand-off statement from a raw client, its notification sent to a channel nobody listens on (a lost one). */
  async function enqueueLosingNotification(
    c: pg.Client,
    queue: string,
    payload: unknown,
  ): Promise<{ id: number; taker: number | null }> {
    const text = sql.queue.enqueueRemote.text.split(sql.schema.channel).join("'nobody_listens'");
    const stamp = resolveJobStamp({ ...DEFAULT_QUEUE_OPTS, leaseMs: LONG }, undefined);
    const r = await c.query<{ id: string; taker: number | null }>(text, [
      queue,
      JSON.stringify(payload),
      ...stampParams(stamp),
      `c:q:${queue}`,
      stamp.headersText,
      cls,
    ]);
    return { id: Number(r.rows[0]!.id), taker: r.rows[0]!.taker };
  }

  it('two stores race enqueues and hand-offs: every job runs exactly once, some without a claim', async () => {
    const name = 'race';
    const runs = new Map<number, number>();
    const handler = async (job: Job): Promise<void> => {
      runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
      if (Math.random() < 0.3) await new Promise((r) => setTimeout(r, Math.random() * 4));
    };
    const oa = observed(a.queue(name, { leaseMs: LONG }));
    const ob = observed(b.queue(name, { leaseMs: LONG }));
    start(oa.queue, 'race-a', handler, 2);
    start(ob.queue, 'race-b', handler, 2);
    await waitFor('both workers offered', async () => (await offers(name)).length >= 2);
    const ids: number[] = [];
    const producer = async (s: Store, n: number): Promise<void> => {
      const q = s.queue(name, { leaseMs: LONG });
      for (let i = 0; i < n; i++) {
        // Mostly one at a time with gaps (idle workers to hand to), sometimes two at once (racing for one slot).
        if (i % 7 === 0) ids.push(...(await Promise.all([q.enqueue({ i }), q.enqueue({ i, twin: true })])));
        else ids.push(await q.enqueue({ i }));
        await new Promise((r) => setTimeout(r, Math.random() * 3));
      }
    };
    await Promise.all([producer(a, 150), producer(b, 150), producer(plain, 60)]);
    await waitFor('every job ran', () => ids.every((id) => runs.has(id)), 30_000, 10);
    await waitFor('every job acked', async () => {
      const s = await a.queue(name).stats();
      return s.pending === 0 && s.processing === 0;
    });
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(runs.get(id)).toBe(1);
    expect([...runs.keys()].sort((x, y) => x - y)).toEqual([...ids].sort((x, y) => x - y));
    const claimed = new Set([...oa.claimed, ...ob.claimed]);
    const handedOff = ids.filter((id) => !claimed.has(id)).length;
    // Both directions of hand-off happened (a store's worker took the other store's enqueues).
    expect(handedOff).toBeGreaterThan(0);
    expect(await a.queue(name).stats()).toMatchObject({ pending: 0, processing: 0, dead: 0 });
  }, 60_000);

  it('two processes: jobs enqueued here run exactly once, some handed to the other process without a claim', async () => {
    const name = 'procs';
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, PG_URL, schema, name], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const theirs: { id: number; how: string }[] = [];
    let stopped = false;
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const [kind, id, how] = line.split(' ');
      if (kind === 'job') theirs.push({ id: Number(id), how: how! });
      if (kind === 'stopped') stopped = true;
    });
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    try {
      await waitFor('the child offered', async () => (await offers(name)).length >= 1, 30_000, 20);
      const mine: number[] = [];
      start(a.queue(name, { leaseMs: LONG }), 'procs-parent', async (job) => void mine.push(job.id), 2);
      const ids: number[] = [];
      for (let i = 0; i < 120; i++) {
        ids.push(await (i % 2 ? b : a).queue(name, { leaseMs: LONG }).enqueue({ i }));
        await new Promise((r) => setTimeout(r, Math.random() * 4));
      }
      const all = (): number[] => [...mine, ...theirs.map((t) => t.id)];
      await waitFor('every job ran', () => ids.every((id) => all().includes(id)), 30_000, 10);
      await waitFor('every job acked', async () => {
        const s = await a.queue(name).stats();
        return s.pending === 0 && s.processing === 0;
      });
      expect([...all()].sort((x, y) => x - y)).toEqual([...ids].sort((x, y) => x - y));
      expect(theirs.filter((t) => t.how === 'handed').length).toBeGreaterThan(0);
      child.stdin!.end();
      await exited;
      expect(stopped).toBe(true);
      // The child withdrew its offer as it stopped.
      expect((await offers(name, `child-${child.pid}`)).filter((o) => o.token === null)).toEqual([]);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  }, 90_000);

  it('a taker whose LISTEN session died gets no jobs; a live one does, fenced like a claim and reclaimable once lapsed', async () => {
    const name = 'ghosts';
    const q = a.queue(name, { leaseMs: LONG });
    const ghost = new pg.Client({ connectionString: PG_URL });
    await ghost.connect();
    // A live registration held by the ghost's session, with a 300 ms lease.
    await ghost.query('SELECT pg_advisory_lock($1::int, 11)', [cls]);
    await ghost.query(
      `INSERT INTO "${schema}".idle_takers (taker, queue, worker_id, lease_ms) VALUES (11, $1, 'ghost', 300)`,
      [name],
    );
    // Announced as a registration does: the stores' enqueues of the queue look for offers from now on.
    await ghost.query('SELECT pg_notify($1, $2)', [`alkstore:${schema}`, `r:${name}`]);
    await waitFor('the announcement heard', () =>
      (a as unknown as { remote: { mayHaveOffers(q: string): boolean } }).remote.mayHaveOffers(name),
    );
    const t0 = await a.now();
    const handed = await q.enqueue({ to: 'ghost' });
    const info = await q.getJob(handed);
    expect(info).toMatchObject({ state: 'processing', attempts: 1 });
    expect(info!.claimedUntil! - t0).toBeGreaterThanOrEqual(300);
    expect(info!.claimedUntil! - t0).toBeLessThan(LONG);
    const [row] = (await offers(name, 'ghost')) as [{ taker: number; token: string | null }];
    expect(row.token).not.toBeNull();
    // The session dies: its lock goes with it, and its next row is not taken.
    await ghost.end();
    await withClient((c) =>
      c.query(`INSERT INTO "${schema}".idle_takers (taker, queue, worker_id, lease_ms) VALUES (12, $1, 'ghost', 300)`, [
        name,
      ]),
    );
    const pending = await q.enqueue({ to: 'nobody' });
    expect((await q.getJob(pending))?.state).toBe('pending');
    // The hand-off's lease lapses: a claim takes it over (attempt 2); the ghost's token is fenced out.
    const claimedAfter = await waitFor(
      'the lapsed hand-off reclaimed',
      async () => {
        const jobs = await q.claimBatch(10, 'rescuer', { leaseMs: LONG });
        const mine = jobs.find((j) => j.id === handed);
        for (const j of jobs) if (j.id !== handed) await j.ack();
        return mine ?? null;
      },
      5_000,
      50,
    );
    expect(claimedAfter.attempts).toBe(2);
    expect(await q.ackBatch([{ id: handed, claimToken: row.token! }])).toBe(0);
    expect(await claimedAfter.ack()).toBe(true);
    // The next registration on the queue deletes the dead rows.
    const w = start(b.queue(name, { leaseMs: LONG }), 'after-ghost', async () => undefined);
    await waitFor('the dead rows deleted', async () => (await offers(name, 'ghost')).length === 0);
    await w.stop();
  }, 30_000);

  it("a store's LISTEN session killed: its offer takes nothing, and its worker offers again on the new session", async () => {
    const name = 'killed';
    const ran: number[] = [];
    start(b.queue(name, { leaseMs: LONG }), 'killed-b', async (job) => void ran.push(job.id));
    const [first] = await waitFor('the worker offered', async () => {
      const o = await offers(name, 'killed-b');
      return o.length === 1 ? o : null;
    });
    const holder = (c: pg.Client, taker: number) =>
      c.query<{ pid: number }>(
        `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND objid = $2::int::oid
           AND classid::bigint - CASE WHEN classid::bigint >= 2147483648 THEN 4294967296 ELSE 0 END = $1::bigint`,
        [cls, taker],
      );
    await withClient(async (c) => {
      const [lock] = (await holder(c, first!.taker)).rows;
      expect(lock).toBeDefined();
      await c.query('SELECT pg_terminate_backend($1)', [lock!.pid]);
      await waitFor('the lock gone', async () => (await holder(c, first!.taker)).rows.length === 0);
    });
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) ids.push(await a.queue(name, { leaseMs: LONG }).enqueue({ i }));
    await waitFor('every job ran', () => ids.every((id) => ran.includes(id)), 15_000);
    for (const id of ids) expect(ran.filter((x) => x === id)).toHaveLength(1);
    // The dead offer was never filled; the worker offered again on its new session.
    const left = await offers(name, 'killed-b');
    expect(left.find((o) => o.taker === first!.taker)?.token ?? null).toBeNull();
    await waitFor('offered again', async () => (await offers(name, 'killed-b')).some((o) => o.taker !== first!.taker));
  }, 30_000);

  it('a lost notification loses no job: the withdrawal before the next claim reads it', async () => {
    const name = 'lost';
    const ran: number[] = [];
    const ob = observed(b.queue(name, { leaseMs: LONG }));
    start(ob.queue, 'lost-b', async (job) => void ran.push(job.id));
    await waitFor('the worker offered', async () => (await offers(name, 'lost-b')).some((o) => o.token === null));
    const taken = await withClient((c) => enqueueLosingNotification(c, name, { lost: true }));
    expect(taken.taker).not.toBeNull();
    // Nothing arrives; the job sits claimed by the worker. Any wake makes it withdraw, which finds the job.
    await new Promise((r) => setTimeout(r, 100));
    expect(ran).toEqual([]);
    const second = await plain.queue(name, { leaseMs: LONG }).enqueue({ wake: true });
    await waitFor('both ran', () => ran.includes(taken.id) && ran.includes(second), 10_000);
    expect(ob.claimed.has(taken.id)).toBe(false);
    expect(ran.filter((id) => id === taken.id)).toHaveLength(1);
    await waitFor('acked', async () => (await b.queue(name).stats()).processing === 0);
  }, 30_000);

  it('a stop with a slot offered withdraws it cleanly: no row left, and the next enqueue goes pending', async () => {
    const name = 'stop';
    const w = start(b.queue(name, { leaseMs: LONG }), 'stop-b', async () => undefined, 3);
    await waitFor('the worker offered', async () => (await offers(name, 'stop-b')).length === 1);
    await w.stop();
    expect(await offers(name)).toEqual([]);
    const id = await a.queue(name).enqueue({ after: 'stop' });
    expect((await a.queue(name).getJob(id))?.state).toBe('pending');
  }, 30_000);

  it('a stop while a hand-off lands releases the job (pending, attempts 0)', async () => {
    const name = 'stop-race';
    const w = start(b.queue(name, { leaseMs: LONG }), 'stop-race-b', async () => undefined);
    await waitFor('the worker offered', async () => (await offers(name, 'stop-race-b')).length === 1);
    // Taken without a notification, then stop: the withdrawal reads it, and the stopping worker gives it back.
    const taken = await withClient((c) => enqueueLosingNotification(c, name, { during: 'stop' }));
    expect(taken.taker).not.toBeNull();
    await w.stop();
    const info = await a.queue(name).getJob(taken.id);
    expect(info).toMatchObject({ state: 'pending', attempts: 0 });
    expect(await offers(name)).toEqual([]);
  }, 30_000);
});

// PostgreSQL only (the option exists on this engine alone).
it('crossProcessHandoff that is not a boolean is refused before any I/O, naming it', async () => {
  // Port 1: a store that tried to connect would fail with a connection error instead.
  const err = await openPostgresStore({
    connectionString: 'postgres://postgres@127.0.0.1:1/test',
    crossProcessHandoff: 'yes' as unknown as boolean,
  }).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(InvalidOption);
  expect(String(err)).toContain('crossProcessHandoff');
});
