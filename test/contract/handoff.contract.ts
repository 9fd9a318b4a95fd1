import { afterEach, describe, expect, it } from '@jest/globals';
import type { JobOpts } from '../../lib/contract/options.js';
import type { ClaimOpts, Job, Queue, Store } from '../../lib/contract/types.js';
import { QueueWorker } from '../../lib/worker/queue-worker.js';
import type { EngineFixture } from '../helpers/engines.js';
import { uid, useEnv, waitFor, within } from './harness.js';
import { openTx } from '../helpers/open-tx.js';

const LONG = 600_000;
const silent = { log: () => undefined, warn: () => undefined, error: () => undefined };

/** The real queue, recording every claimBatch call and the ids its claims returned. */
interface Observed {
  readonly queue: Queue;
  /** claimBatch calls that have returned. */
  claims: number;
  /** Ids of every job a claimBatch returned. */
  readonly claimedIds: Set<number>;
}

function observed(queue: Queue): Observed {
  const o: Observed = { queue: queue, claims: 0, claimedIds: new Set() };
  const proxy = new Proxy(queue, {
    get(target, prop, receiver) {
      if (prop === 'claimBatch') {
        return async (max: number, workerId?: string, opts?: ClaimOpts) => {
          const jobs = await target.claimBatch(max, workerId, opts);
          for (const j of jobs) o.claimedIds.add(j.id);
          o.claims += 1;
          return jobs;
        };
      }
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return Object.assign(o, { queue: proxy });
}

/** A gate a handler waits on. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { wait, open };
}

interface Running {
  readonly worker: QueueWorker;
  readonly seen: Job[];
  /** Calls of the observer's `claimed` hook, summed. */
  claimedCount: number;
}

/** Jobs counted from their rows, as stats() defines pending/processing/dead. */
async function rowCounts(store: Store, queue: string): Promise<{ pending: number; processing: number; dead: number }> {
  const c = { pending: 0, processing: 0, dead: 0 };
  const page = await store.admin().listJobs(queue, { state: 'all', limit: 1000 });
  for (const j of page.jobs) c[j.state as 'pending' | 'processing' | 'dead'] += 1;
  return c;
}

async function expectExactCounts(
  store: Store,
  q: Queue,
  expected: { pending: number; processing: number; dead: number },
): Promise<void> {
  const s = await q.stats();
  expect({ pending: s.pending, processing: s.processing, dead: s.dead }).toEqual(expected);
  expect(await rowCounts(store, q.name)).toEqual(expected);
}

/**
 * Local hand-off: a plain autocommit enqueue of a store whose own worker is
 * idle on the queue inserts the job claimed by that worker and gives it
 * straight to it (no claim statement); everything else enqueues pending.
 */
export function handoffContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  const running: QueueWorker[] = [];
  afterEach(async () => {
    for (const w of running.splice(0)) await w.stop();
  });

  /** Starts a worker on `o.queue` and waits until it is idle (its first claim returned). */
  async function idleWorker(o: Observed, handler: (job: Job) => Promise<void>, concurrency = 1): Promise<Running> {
    const r: Running = { worker: null as unknown as QueueWorker, seen: [], claimedCount: 0 };
    const worker = new QueueWorker({
      queue: o.queue,
      handler: async (job) => {
        r.seen.push(job);
        await handler(job);
      },
      name: 'handoff test',
      concurrency,
      prefetch: 0,
      leaseMs: LONG,
      idlePollIntervalMs: 60_000,
      drainTimeoutMs: 5_000,
      workerId: 'handoff-worker',
      logger: silent,
      observers: [{ claimed: (n) => (r.claimedCount += n) }],
    });
    Object.assign(r, { worker });
    running.push(worker);
    worker.start();
    await waitFor('the first claim returned', () => o.claims >= 1, 10_000, 5);
    return r;
  }

  describe('local hand-off', () => {
    it('gives a plain enqueue to the idle worker of the same store without a claim statement; counts stay exact', async () => {
      const o = observed(env.store.queue(uid('ho'), { leaseMs: LONG }));
      const hold = gate();
      const r = await idleWorker(o, () => hold.wait);
      const claimsBefore = o.claims;
      const id = await o.queue.enqueue({ n: 1 });
      await waitFor('the handler started', () => r.seen.length === 1, 10_000, 5);
      const job = r.seen[0]!;
      expect(job.id).toBe(id);
      expect(job.payload).toEqual({ n: 1 });
      expect(job.attempts).toBe(1);
      expect(o.claims).toBe(claimsBefore);
      expect(o.claimedIds.has(id)).toBe(false);
      expect(r.claimedCount).toBe(1);
      const info = await o.queue.getJob(id);
      expect(info?.state).toBe('processing');
      expect(info?.attempts).toBe(1);
      expect(info?.claimedUntil).toBe(job.deadline);
      // The lease the hand-off granted: the worker's own visibility timeout.
      expect(job.leaseMs).toBe(LONG);
      await expectExactCounts(env.store, o.queue, { pending: 0, processing: 1, dead: 0 });
      // The handle is a real claim: heartbeat and ack are fenced by its token.
      expect(await job.heartbeat(LONG)).toBe(true);
      hold.open();
      await waitFor('the job acked', async () => (await o.queue.getJob(id)) === null, 10_000, 10);
      await expectExactCounts(env.store, o.queue, { pending: 0, processing: 0, dead: 0 });
      expect(o.claims).toBe(claimsBefore);
    });

    // PostgreSQL offers idle workers to every store of the schema (cross-process hand-off, test/postgres/cross-handoff.test.ts).
    const crossProcess = engine.name === 'postgres';
    it(`an enqueue of another store is ${crossProcess ? 'handed off across stores (no claim)' : 'not handed off (claimed after its wake)'}`, async () => {
      const name = uid('ho-other');
      const o = observed(env.store.queue(name, { leaseMs: LONG }));
      const r = await idleWorker(o, async () => undefined);
      // The other store looks for offers on a queue once it heard one announced (`r:<queue>`).
      const remote = (env.other as unknown as { remote?: { mayHaveOffers(q: string): boolean } | null }).remote;
      if (crossProcess) await waitFor('the offer announced', () => remote?.mayHaveOffers(name) === true, 10_000, 5);
      const id = await env.other.queue(name, { leaseMs: LONG }).enqueue('x');
      await waitFor('the handler ran', () => r.seen.some((j) => j.id === id), 10_000, 5);
      expect(o.claimedIds.has(id)).toBe(!crossProcess);
    });

    const fallbacks: [string, (q: Queue) => Promise<number>, ((q: Queue) => Promise<void>) | null][] = [
      // setRateLimit wakes the worker: it claims (nothing) and is idle again before the enqueue.
      ['a rate-limited queue', (q) => q.enqueue('x'), (q) => q.setRateLimit({ max: 1000, perMs: 1000 })],
      ['an ordering key', (q) => q.enqueue('x', { orderingKey: 'k' }), null],
      ['a unique key', (q) => q.enqueue('x', { uniqueKey: 'u' }), null],
      [
        'a caller transaction',
        async (q) => {
          const tx = await openTx(env.store);
          const id = await tx.enqueue(q.name, 'x');
          await tx.commit();
          return id;
        },
        null,
      ],
    ];
    for (const [what, enqueue, prepare] of fallbacks) {
      it(`${what}: no hand-off, the job is pending and claimed as before`, async () => {
        const o = observed(env.store.queue(uid('ho-fb'), { leaseMs: LONG }));
        const r = await idleWorker(o, async () => undefined);
        if (prepare) {
          const before = o.claims;
          await prepare(o.queue);
          await waitFor('the claim after the settings wake', () => o.claims > before, 10_000, 5);
        }
        const id = await enqueue(o.queue);
        await waitFor('the handler ran', () => r.seen.some((j) => j.id === id), 10_000, 5);
        expect(o.claimedIds.has(id)).toBe(true);
        expect(r.seen.find((j) => j.id === id)?.attempts).toBe(1);
      });
    }

    it('a delay: no hand-off, the job is pending until due', async () => {
      const o = observed(env.store.queue(uid('ho-delay'), { leaseMs: LONG }));
      const r = await idleWorker(o, async () => undefined);
      const id = await o.queue.enqueue('x', { delayMs: LONG } satisfies JobOpts);
      const info = await o.queue.getJob(id);
      expect(info?.state).toBe('pending');
      expect(info?.attempts).toBe(0);
      expect(r.claimedCount).toBe(0);
      await expectExactCounts(env.store, o.queue, { pending: 1, processing: 0, dead: 0 });
    });

    it('a paused queue: no hand-off, the job stays pending until resumed, then is claimed', async () => {
      const o = observed(env.store.queue(uid('ho-paused'), { leaseMs: LONG }));
      const r = await idleWorker(o, async () => undefined);
      await o.queue.pause();
      const id = await o.queue.enqueue('x');
      const info = await o.queue.getJob(id);
      expect(info?.state).toBe('pending');
      expect(info?.attempts).toBe(0);
      await expectExactCounts(env.store, o.queue, { pending: 1, processing: 0, dead: 0 });
      expect(r.seen).toHaveLength(0);
      await o.queue.resume();
      await waitFor('the handler ran', () => r.seen.some((j) => j.id === id), 10_000, 5);
      expect(o.claimedIds.has(id)).toBe(true);
    });

    it('a busy worker takes nothing; of two quick enqueues to one free slot, at most one is handed off and the other claimed', async () => {
      const o = observed(env.store.queue(uid('ho-busy'), { leaseMs: LONG }));
      const holds = new Map<number, { wait: Promise<void>; open: () => void }>();
      const holdOf = (id: number) => {
        let h = holds.get(id);
        if (!h) holds.set(id, (h = gate()));
        return h;
      };
      const r = await idleWorker(o, (job) => holdOf(job.id).wait);
      const [first, second] = await Promise.all([o.queue.enqueue('a'), o.queue.enqueue('b')]);
      await waitFor('the first handler started', () => r.seen.length === 1, 10_000, 5);
      // The first enqueue reserved the slot. It is handed off, unless the second (a plain insert on another
      // connection) committed first: then a ready job was waiting and the hand-off went pending rather than
      // overtake it, and the worker claimed the older one.
      const a = r.seen[0]!.id;
      const b = a === first ? second : first;
      if (a === first) expect(o.claimedIds.has(a)).toBe(false);
      else expect(o.claimedIds.has(a)).toBe(true);
      expect((await o.queue.getJob(b))?.state).toBe('pending');
      await expectExactCounts(env.store, o.queue, { pending: 1, processing: 1, dead: 0 });
      // Busy (its one slot taken): a third enqueue is pending too.
      const c = await o.queue.enqueue('c');
      expect((await o.queue.getJob(c))?.state).toBe('pending');
      holdOf(a).open();
      await waitFor('b started', () => r.seen.some((j) => j.id === b), 10_000, 5);
      expect(o.claimedIds.has(b)).toBe(true);
      holdOf(b).open();
      holdOf(c).open();
      await waitFor('c ran', () => r.seen.some((j) => j.id === c), 10_000, 5);
      expect(o.claimedIds.has(c)).toBe(true);
      await waitFor('all acked', async () => (await o.queue.stats()).processing === 0, 10_000, 10);
      await expectExactCounts(env.store, o.queue, { pending: 0, processing: 0, dead: 0 });
    });

    it('stop while a hand-off is in flight: the job is released (pending, attempts 0) and nothing is lost', async () => {
      const o = observed(env.store.queue(uid('ho-stop'), { leaseMs: LONG }));
      // Two slots: on PostgreSQL one is offered to other processes (cross-process hand-off), whose withdrawal
      // at stop may beat the enqueue to it; the other is this store's, reserved as the enqueue is sent.
      const r = await idleWorker(o, async () => undefined, 2);
      const enqueued = o.queue.enqueue('x');
      const stopped = r.worker.stop();
      const id = await enqueued;
      await within('the worker stop', 10_000, stopped);
      // It was handed off (the worker counted a claim) and then given back.
      expect(r.claimedCount).toBe(1);
      expect(r.seen).toHaveLength(0);
      const info = await o.queue.getJob(id);
      expect(info?.state).toBe('pending');
      expect(info?.attempts).toBe(0);
      await expectExactCounts(env.store, o.queue, { pending: 1, processing: 0, dead: 0 });
      const again = await o.queue.claimOne('other');
      expect(again?.id).toBe(id);
      expect(again?.attempts).toBe(1);
      expect(await again?.ack()).toBe(true);
    });

    it('a job that fell due by time runs before a later enqueue: high-priority A (delayed) before low-priority B', async () => {
      const o = observed(env.store.queue(uid('ho-due'), { leaseMs: LONG }));
      const order: string[] = [];
      // Idle poll 60 s: only a wake, the worker's due timer or a claim can start A.
      const r = await idleWorker(o, async (job) => void order.push(job.payload as string));
      const a = await o.queue.enqueue('A', { priority: 10, delayMs: 500 });
      // A is due (no longer counted as scheduled) before B is enqueued: B must not overtake it.
      await waitFor('A is due', async () => (await o.queue.stats()).scheduled === 0, 10_000, 10);
      const b = await o.queue.enqueue('B', { priority: 0 });
      await waitFor('both ran', () => order.length === 2, 10_000, 5);
      expect(order).toEqual(['A', 'B']);
      expect(r.seen.map((j) => j.id)).toEqual([a, b]);
    });

    it('a lapsed claim is not overtaken: an enqueue while it waits goes pending and runs after it', async () => {
      const name = uid('ho-lapsed');
      // A crashed worker of another process held A with a short lease; it lapses with no wake.
      const other = env.other.queue(name, { leaseMs: LONG });
      const a = await other.enqueue('A');
      const crashed = await other.claimOne('crashed-worker', { leaseMs: 1_500 });
      expect(crashed?.id).toBe(a);
      const o = observed(env.store.queue(name, { leaseMs: LONG }));
      const order: string[] = [];
      const r = await idleWorker(o, async (job) => void order.push(job.payload as string));
      // Lapsed: the store refuses the crashed worker's heartbeat (each accepted one only extends it by 1 ms).
      await waitFor('the crashed claim lapsed', async () => !(await crashed!.heartbeat(1)), 10_000, 20);
      expect(order).toEqual([]);
      const b = await o.queue.enqueue('B');
      expect(o.claimedIds.has(b)).toBe(false);
      await waitFor('both ran', () => order.length === 2, 10_000, 5);
      expect(order).toEqual(['A', 'B']);
      expect(r.seen.map((j) => j.attempts)).toEqual([2, 1]);
    });

    it('localHandoff: false turns it off (every enqueue is pending and claimed)', async () => {
      const off = await env.db.open({ localHandoff: false });
      const o = observed(off.queue(uid('ho-off'), { leaseMs: LONG }));
      const r = await idleWorker(o, async () => undefined);
      const id = await o.queue.enqueue('x');
      await waitFor('the handler ran', () => r.seen.some((j) => j.id === id), 10_000, 5);
      expect(o.claimedIds.has(id)).toBe(true);
    });
  });
}
