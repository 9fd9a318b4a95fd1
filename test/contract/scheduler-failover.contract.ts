import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import type { CatchUpPolicy, ScheduleListing, Store } from '../../lib/contract/types.js';
import { PG_URL, type EngineFixture } from '../helpers/engines.js';
import { type Runner, startRunner, uid, useEnv, waitFor } from './harness.js';

const CHILD = fileURLToPath(new URL('./fixtures/scheduler-child.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const EVERY_MS = 1_000;

/** A scheduler replica in another process (fixtures/scheduler-child.ts). */
interface Replica {
  readonly owner: string;
  /** Resolves once its store is open and its runner started. */
  readonly ready: Promise<void>;
  /** Resolves when the process has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Throws (with its output) when the process exited without being told to. */
  assertAlive(): void;
  readonly proc: ChildProcessWithoutNullStreams;
  output(): string;
}

function spawnReplica(
  engine: EngineFixture,
  location: string,
  owner: string,
  lockTtlMs: number,
  renewIntervalMs: number,
  maxTickMs: number,
): Replica {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const args = [
    engine.kind,
    location,
    engine.kind === 'postgres' ? PG_URL : '-',
    owner,
    String(lockTtlMs),
    String(renewIntervalMs),
    String(maxTickMs),
  ];
  const proc = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], {
    cwd: ROOT,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let ended = false;
  let told = false;
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  proc.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    if (out.includes('"ready":true')) markReady();
  });
  proc.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.on('exit', (code, signal) => {
      ended = true;
      markReady();
      resolve({ code, signal });
    }),
  );
  const kill = proc.kill.bind(proc);
  proc.kill = (signal?: NodeJS.Signals | number): boolean => {
    told = true;
    return kill(signal);
  };
  return {
    owner,
    ready,
    exited,
    proc,
    output: () => out,
    assertAlive() {
      if (ended && !told) throw new Error(`replica ${owner} exited on its own: ${out}`);
    },
  };
}

/** Every job of `queue`, as enqueue instants sorted ascending (claims them: call once the runners are stopped). */
async function enqueuedAts(store: Store, queue: string): Promise<number[]> {
  const q = store.queue(queue);
  const jobs = await q.claimBatch(10_000, 'failover-test');
  const at = await Promise.all(jobs.map(async (j) => (await q.getJob(j.id))!.enqueuedAt));
  return at.sort((a, b) => a - b);
}

/** One `@every 1s` schedule per catch-up policy, on the same boundaries, so every tick fires all three together. */
interface Trio {
  readonly startAt: number;
  readonly name: Record<CatchUpPolicy, string>;
  readonly queue: Record<CatchUpPolicy, string>;
}

const POLICIES: readonly CatchUpPolicy[] = ['all', 'latest', 'none'];

async function scheduleTrio(store: Store, tag: string): Promise<Trio> {
  const startAt = (await store.now()) + 300;
  const name = {} as Record<CatchUpPolicy, string>;
  const queue = {} as Record<CatchUpPolicy, string>;
  for (const p of POLICIES) {
    name[p] = uid(`${tag}-${p}`);
    queue[p] = uid(`q-${tag}-${p}`);
    // 'all' is the default policy: leave it unset so the default is what is tested.
    await store.schedule(name[p], '@every 1s', queue[p], p, p === 'all' ? { startAt } : { startAt, catchUp: p });
  }
  return { startAt, name, queue };
}

/** What the trio's schedules and jobs look like once every runner has stopped. */
interface TrioResult {
  /** The common next fire of the three schedules. */
  readonly next: number;
  readonly at: Record<CatchUpPolicy, number[]>;
}

async function readTrio(store: Store, trio: Trio): Promise<TrioResult> {
  const nexts = await Promise.all(POLICIES.map(async (p) => (await store.getSchedule(trio.name[p]))!.nextFireAt));
  // The policies differ only in how many jobs a late tick enqueues, never in where the schedule goes next.
  expect(new Set(nexts).size).toBe(1);
  const at = {} as Record<CatchUpPolicy, number[]>;
  for (const p of POLICIES) at[p] = await enqueuedAts(store, trio.queue[p]);
  for (const p of POLICIES) await store.unschedule(trio.name[p]);
  return { next: nexts[0]!, at };
}

/** Distinct values of sorted `xs` with their multiplicity: one entry per runner tick that fired. */
function ticks(xs: readonly number[]): { at: number; jobs: number }[] {
  const out: { at: number; jobs: number }[] = [];
  for (const x of xs) {
    const last = out[out.length - 1];
    if (last && last.at === x) last.jobs += 1;
    else out.push({ at: x, jobs: 1 });
  }
  return out;
}

/**
 * The exactly-once invariant of catch-up 'all' on an `@every` schedule: one job per boundary from
 * startAt up to (not including) the stored next fire, none before its boundary. A double fire
 * makes too many jobs, a lost boundary too few. Returns each boundary's lateness.
 */
function expectEveryBoundaryOnce(trio: Trio, r: TrioResult): number[] {
  expect((r.next - trio.startAt) % EVERY_MS).toBe(0);
  const boundaries = (r.next - trio.startAt) / EVERY_MS;
  expect(r.at.all).toHaveLength(boundaries);
  const late = r.at.all.map((t, i) => t - (trio.startAt + i * EVERY_MS));
  for (const l of late) expect(l).toBeGreaterThanOrEqual(0);
  return late;
}

async function leaderOf(store: Store): Promise<ScheduleListing['leader']> {
  return (await store.listSchedules()).leader;
}

async function pending(store: Store, queue: string): Promise<number> {
  return (await store.queue(queue).stats()).pending;
}

/**
 * Scheduler failover across processes (docs/nest.md "Failover"; SPEC §7, §10): a leader in a child
 * process is SIGKILLed or stopped with SIGTERM while a standby runs in this process on the same
 * database (PostgreSQL: this file's schema; SQLite: one file both processes open).
 */
export function schedulerFailoverContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  const store = (): Store => env.store;

  describe('scheduler failover across processes', () => {
    it('a SIGKILLed leader is replaced once its lock lapses; every boundary fires once, missed ones per catch-up policy', async () => {
      // Small but legal timings: the child renews every 500 ms within a 3.5 s TTL, so after the kill
      // its lock stays 3-3.5 s: at least two 1-second boundaries pass with no leader even when a
      // renew runs late by most of a second on a loaded machine.
      const ttl = 3_500;
      const renew = 500;
      const standbyTick = 200;
      // Take-over bound: the TTL from the last renew (before the kill), one standby retry, and a
      // generous allowance for a loaded 2-core machine.
      const takeoverBound = ttl + standbyTick + 3_000;
      const leader = spawnReplica(engine, env.db.location, uid('crash-leader'), ttl, renew, 200);
      let standby: Runner | undefined;
      try {
        await leader.ready;
        leader.assertAlive();
        const trio = await scheduleTrio(store(), 'crash');
        const alive = (): void => {
          leader.assertAlive();
          if (standby?.error !== undefined) throw standby.error;
        };
        const nextFire = async (): Promise<number> => (await store().getSchedule(trio.name.all))!.nextFireAt;
        await waitFor(
          'the child to lead and fire',
          async () => {
            alive();
            return (await leaderOf(store()))?.owner === leader.owner && (await pending(store(), trio.queue.all)) >= 1;
          },
          30_000,
          20,
        );
        const standbyOwner = uid('standby');
        standby = startRunner(store(), {
          owner: standbyOwner,
          lockTtlMs: ttl,
          renewIntervalMs: renew,
          maxTickMs: standbyTick,
        });
        // The child keeps leading and firing while the standby polls the lock.
        const fired = await pending(store(), trio.queue.all);
        await waitFor(
          'another fire by the child beside the standby',
          async () => {
            alive();
            return (await pending(store(), trio.queue.all)) > fired;
          },
          15_000,
          20,
        );
        const held = await leaderOf(store());
        expect(held?.owner).toBe(leader.owner);

        leader.proc.kill('SIGKILL');
        expect((await leader.exited).signal).toBe('SIGKILL');
        // Every transaction of the child began before this instant.
        const killedAt = await store().now();
        // When the dead leader's lock lapses: as read now, or (should this process have stalled
        // past it) as read before the kill; a late renew only moves it later.
        const seen = await leaderOf(store());
        const lapsesAt = seen?.owner === leader.owner ? seen.expiresAt : held!.expiresAt;
        expect(lapsesAt - killedAt).toBeLessThanOrEqual(ttl);

        await waitFor(
          'the standby to lead',
          async () => {
            alive();
            return (await leaderOf(store()))?.owner === standbyOwner;
          },
          takeoverBound + 15_000,
          20,
        ).catch(async (err: unknown) => {
          throw new Error(`${String(err)}; leader now ${JSON.stringify(await leaderOf(store()))}`);
        });
        // The child's last fire left the next fire at most a boundary after the kill, so a next
        // fire past the lapse is the standby's take-over tick; then one regular tick of its own.
        const afterTakeover = await waitFor(
          'the take-over fire',
          async () => {
            alive();
            const next = await nextFire();
            return next > lapsesAt ? next : 0;
          },
          15_000,
          20,
        );
        await waitFor(
          'a regular fire by the standby',
          async () => {
            alive();
            return (await nextFire()) > afterTakeover;
          },
          15_000,
          20,
        );
        await standby.stop();
        standby = undefined;

        const r = await readTrio(store(), trio);
        const late = expectEveryBoundaryOnce(trio, r);
        const before = r.at.all.filter((t) => t <= killedAt);
        const after = ticks(r.at.all.filter((t) => t > killedAt));
        expect(before.length).toBeGreaterThanOrEqual(2);
        expect(after.length).toBeGreaterThanOrEqual(2);
        const takeover = after[0]!;
        // Not before the dead leader's lock lapsed (no steal), and within the bound.
        expect(takeover.at).toBeGreaterThanOrEqual(lapsesAt);
        expect(takeover.at - killedAt).toBeLessThanOrEqual(takeoverBound);
        // 'all' (the default): the take-over tick enqueued every boundary missed during the outage, at once.
        const missed = Math.floor((takeover.at - trio.startAt) / EVERY_MS) + 1 - before.length;
        expect(missed).toBeGreaterThanOrEqual(2);
        expect(takeover.jobs).toBe(missed);
        // No boundary waited longer than the outage.
        expect(Math.max(...late)).toBeLessThanOrEqual(takeoverBound);
        // 'latest' and 'none' (the outage is far inside the 60 s grace): one job per tick that fired,
        // so the take-over tick enqueued one where 'all' enqueued `missed`.
        const all = ticks(r.at.all);
        for (const p of ['latest', 'none'] as const) {
          expect(r.at[p]).toHaveLength(all.length);
          expect(r.at[p].filter((t) => t > killedAt)).toHaveLength(after.length);
          expect(r.at[p].length).toBeLessThan(r.at.all.length);
        }
      } finally {
        if (leader.proc.exitCode === null && leader.proc.signalCode === null) leader.proc.kill('SIGKILL');
        await leader.exited;
        await standby?.stop();
      }
    }, 90_000);

    it('a leader stopped with SIGTERM releases the lock and the standby fires the next boundary without waiting for the TTL', async () => {
      // The default 60 s TTL, and a standby that retries the lock only every 20 s by itself: only the
      // release and its wake explain a take-over within seconds.
      const ttl = 60_000;
      const standbyRetry = 20_000;
      const leader = spawnReplica(engine, env.db.location, uid('graceful-leader'), ttl, 20_000, 1_000);
      let standby: Runner | undefined;
      try {
        await leader.ready;
        const trio = await scheduleTrio(store(), 'graceful');
        const alive = (): void => {
          leader.assertAlive();
          if (standby?.error !== undefined) throw standby.error;
        };
        await waitFor(
          'the child to lead and fire',
          async () => {
            alive();
            return (await leaderOf(store()))?.owner === leader.owner && (await pending(store(), trio.queue.all)) >= 1;
          },
          30_000,
          20,
        );
        const standbyOwner = uid('standby');
        standby = startRunner(store(), { owner: standbyOwner, maxTickMs: standbyRetry });
        const fired = await pending(store(), trio.queue.all);
        await waitFor(
          'another fire by the child beside the standby',
          async () => {
            alive();
            return (await pending(store(), trio.queue.all)) > fired;
          },
          15_000,
          20,
        );
        expect((await leaderOf(store()))?.owner).toBe(leader.owner);

        const stoppedAt = await store().now();
        leader.proc.kill('SIGTERM');
        const led = await waitFor(
          'the standby to lead',
          async () => {
            alive();
            const l = await store().listSchedules();
            return l.leader?.owner === standbyOwner ? l : null;
          },
          15_000,
          20,
        );
        expect(await leader.exited).toEqual({ code: 0, signal: null });
        expect(leader.output()).toContain('"stopped":true');
        expect(led.now - stoppedAt).toBeLessThan(standbyRetry / 2);
        // Only the standby runs now: the next fire moving proves it fires.
        const ledNext = (await store().getSchedule(trio.name.all))!.nextFireAt;
        await waitFor(
          'a fire by the standby',
          async () => {
            alive();
            return (await store().getSchedule(trio.name.all))!.nextFireAt > ledNext;
          },
          15_000,
          20,
        );
        await standby.stop();
        standby = undefined;

        const r = await readTrio(store(), trio);
        const late = expectEveryBoundaryOnce(trio, r);
        // The boundaries around the hand-over fired within the hand-over time, not after a TTL.
        expect(Math.max(...late)).toBeLessThan(standbyRetry / 2);
      } finally {
        if (leader.proc.exitCode === null && leader.proc.signalCode === null) leader.proc.kill('SIGKILL');
        await leader.exited;
        await standby?.stop();
      }
    }, 90_000);
  });
}
