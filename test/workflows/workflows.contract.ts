import { afterEach, expect, it } from '@jest/globals';
import { InvalidName, InvalidOption, PermanentError } from '../../lib/contract/errors.js';
import type { Queue, Store, StoreLogger } from '../../lib/contract/types.js';
import { Registry } from 'prom-client';
import {
  ChildWorkflowFailed,
  createPrometheusWorkflowMetrics,
  createWorkflows,
  defineWorkflow,
  NonDeterministicWorkflow,
  StepFailed,
  UnknownWorkflow,
  WorkflowCancelled,
  WorkflowFailed,
  WorkflowTimeout,
  type WorkflowDefinition,
  type Workflows,
  type WorkflowsOptions,
} from '../../lib/workflows/index.js';
import { waitFor, withEngineDb, type EngineDb, type EngineFixture } from '../helpers/engines.js';
import {
  WORKFLOW_SQL,
  workflowSqlOf,
  type EndedRun,
  type StepAppend,
  type WorkflowSql,
} from '../../lib/workflows/sql-seam.js';

/** `queue` with the calls of `claimBatch` counted in `claims`, and the ids of the jobs they returned. */
function countClaims(queue: Queue, claims: { calls: number; jobs: number[] }): Queue {
  return new Proxy(queue, {
    get(target, prop, receiver) {
      if (prop === 'claimBatch')
        return async (...a: Parameters<Queue['claimBatch']>) => {
          const jobs = await target.claimBatch(...a);
          claims.calls += 1;
          claims.jobs.push(...jobs.map((j) => j.id));
          return jobs;
        };
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/**
 * `store` as the workflows see it: the ids of the jobs the queues' `ackBatch` acks kept in `acked`, and
 * its workflow statements replaced by `sql` when given.
 */
function keepingAcks(store: Store, acked: number[], sql?: WorkflowSql): Store {
  return new Proxy(store, {
    get(target, prop) {
      if (prop === WORKFLOW_SQL && sql) return sql;
      if (prop === 'queue')
        return (name: string, o?: Parameters<Store['queue']>[1]) => {
          const q = target.queue(name, o);
          return new Proxy(q, {
            get(t, k) {
              if (k === 'ackBatch')
                return (jobs: Parameters<Queue['ackBatch']>[0]) => {
                  acked.push(...jobs.map((j) => j.id));
                  return t.ackBatch(jobs);
                };
              const v: unknown = Reflect.get(t, k, t);
              return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
            },
          });
        };
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

let seq = 0;
/** A namespace of its own per test, so runs of one test never meet another's. */
function ns(): string {
  seq += 1;
  return `wf-test-${process.pid}-${seq}`;
}

/** Waits until run `id` has a position in `state` (its journal says it is parked). */
async function untilParked(w: Workflows, id: string, state: 'waiting' | 'sleeping'): Promise<void> {
  await waitFor(`run ${id} ${state}`, async () => (await w.getStatus(id))?.steps.some((s) => s.state === state));
}

/** A store logger that keeps its lines. */
function capturingLogger(): StoreLogger & {
  lines: { level: 'log' | 'warn' | 'error'; message: string; error?: unknown }[];
} {
  const lines: { level: 'log' | 'warn' | 'error'; message: string; error?: unknown }[] = [];
  return {
    lines,
    log: (message) => lines.push({ level: 'log', message }),
    warn: (message) => lines.push({ level: 'warn', message }),
    error: (message, error) => lines.push({ level: 'error', message, error }),
  };
}

export function workflowsContract(engine: EngineFixture): void {
  let store!: Store;
  let db!: EngineDb;
  withEngineDb(engine, (d, s) => {
    db = d;
    store = s;
  });
  const open: Workflows<unknown>[] = [];
  afterEach(async () => {
    for (const w of open.splice(0)) await w.close();
  });
  function make(opts: Partial<WorkflowsOptions> & Pick<WorkflowsOptions, 'workflows'>): Workflows {
    const w = createWorkflows(store, { namespace: ns(), idlePollIntervalMs: 50, backoffBaseMs: 20, ...opts });
    open.push(w as Workflows<unknown>);
    return w;
  }

  it('a run executes its steps in order and waitForResult returns what run returned', async () => {
    const calls: string[] = [];
    const wf = defineWorkflow('add', {
      async run(input: { a: number; b: number }, ctx) {
        const sum = await ctx.step('sum', () => {
          calls.push('sum');
          return input.a + input.b;
        });
        const doubled = await ctx.step('double', () => {
          calls.push('double');
          return sum * 2;
        });
        return { doubled };
      },
    });
    const w = make({ workflows: [wf] });
    const { id, created } = await w.start(wf, { a: 2, b: 3 });
    expect(created).toBe(true);
    await expect(w.waitForResult(id, { timeoutMs: 20_000 })).resolves.toEqual({ doubled: 10 });
    expect(calls).toEqual(['sum', 'double']);
    const run = await w.getStatus(id);
    expect(run).toMatchObject({
      id,
      workflow: 'add',
      version: 1,
      state: 'completed',
      input: { a: 2, b: 3 },
      result: { doubled: 10 },
      error: null,
    });
    expect(run!.steps.map((s) => [s.position, s.kind, s.name, s.state])).toEqual([
      [0, 'step', 'sum', 'done'],
      [1, 'step', 'double', 'done'],
    ]);
  });

  it('after a crash, completed steps return their journaled result without running again and the run continues at the first unfinished step', async () => {
    const namespace = ns();
    const ran: string[] = [];
    let crash = true;
    const wf = defineWorkflow('resume', {
      async run(_input: null, ctx) {
        const a = await ctx.step('a', () => {
          ran.push('a');
          return { at: 'a', n: 1 };
        });
        const b = await ctx.step('b', () => {
          ran.push('b');
          if (crash) {
            crash = false;
            throw new Error('worker died');
          }
          return a.n + 1;
        });
        return b;
      },
    });
    // One attempt per step: the "crash" journals a failure only if the step is retried, so give it 2.
    const w = make({ workflows: [wf], namespace, maxAttempts: 2 });
    const { id } = await w.start(wf, null);
    await expect(w.waitForResult(id, { timeoutMs: 20_000 })).resolves.toBe(2);
    expect(ran).toEqual(['a', 'b', 'b']);
    const run = await w.getStatus(id);
    expect(run!.steps[1]).toMatchObject({ name: 'b', state: 'done', failures: 1 });
  });

  it('a journal in the stored form 0.2 wrote replays: its journaled calls return their outcomes without running again', async () => {
    const namespace = ns();
    const ran: string[] = [];
    const wf = defineWorkflow('legacy', {
      async run(input: { n: number }, ctx) {
        const a = await ctx.step('a', () => {
          ran.push('a');
          return input.n + 1;
        });
        const go = await ctx.waitForSignal<string>('go');
        const b = await ctx.step('b', () => {
          ran.push('b');
          return a * 10;
        });
        return { a, go, b };
      },
    });
    const w = make({ workflows: [wf], namespace });
    // A run as 0.2 journaled it (single-letter entries, each under its guard): step a done, signal go
    // consumed, step b's first attempt failed and due again at once, and the pass's job.
    const id = 'legacy-run';
    const stream = `${namespace}:run:${id}`;
    await store.withTx(async (tx) => {
      await tx.inboxClaim(`${namespace}:runs`, id);
      await tx.publish(stream, { t: 'start', wf: 'legacy', v: 1, input: { n: 4 } });
      await tx.publishWithKey(`${namespace}:runs`, id, { s: 'running', wf: 'legacy', v: 1 });
      await tx.inboxClaim(`${namespace}:journal`, `${id}#0`);
      await tx.publish(stream, { t: 'done', p: 0, k: 'step', n: 'a', r: { v: 5 } });
      const o = await tx.publish(stream, { t: 'signal', n: 'go', d: 'yes' });
      await tx.inboxClaim(`${namespace}:journal`, `${id}#1`);
      await tx.publish(stream, { t: 'done', p: 1, k: 'signal', n: 'go', r: { v: { o, d: 'yes' } } });
      await tx.inboxClaim(`${namespace}:journal`, `${id}#2/r1`);
      const e = { name: 'Error', message: 'first try', code: null };
      await tx.publish(stream, { t: 'retry', p: 2, k: 'step', n: 'b', a: 1, e, at: 0 });
      await tx.enqueue(w.queue.name, { k: 'drive', id }, { orderingKey: id });
    });
    await expect(w.waitForResult(id, { timeoutMs: 20_000 })).resolves.toEqual({ a: 5, go: 'yes', b: 50 });
    expect(ran).toEqual(['b']);
    const run = await w.getStatus(id);
    expect(run!.steps.map((s) => [s.position, s.kind, s.name, s.state, s.failures])).toEqual([
      [0, 'step', 'a', 'done', 0],
      [1, 'signal', 'go', 'done', 0],
      [2, 'step', 'b', 'done', 1],
    ]);
    expect(await w.list({ workflow: 'legacy' })).toMatchObject([{ id, state: 'completed' }]);
  });

  it("a failing step logs a warning per attempt naming the step and the attempt, and a failed run logs an error with the run id and the error, through the store's logger", async () => {
    const logger = capturingLogger();
    const logged = await db.open({ logger });
    const bad = defineWorkflow('logged-bad', {
      async run(_input: null, ctx) {
        await ctx.step(
          'charge',
          () => {
            throw new Error('card declined');
          },
          { maxAttempts: 2, backoffBaseMs: 10 },
        );
        return 'never';
      },
    });
    const good = defineWorkflow('logged-good', { run: async (_input: null, ctx) => ctx.step('fine', () => 1) });
    // No `logger` option: the workflows log where the store they were given logs.
    const w = createWorkflows(logged, { namespace: ns(), idlePollIntervalMs: 50, workflows: [bad, good] });
    open.push(w as Workflows<unknown>);
    const { id } = await w.start(bad, null);
    const ok = await w.start(good, null);
    await expect(w.waitForResult(id, { timeoutMs: 20_000 })).rejects.toBeInstanceOf(WorkflowFailed);
    await expect(w.waitForResult(ok.id, { timeoutMs: 20_000 })).resolves.toBe(1);
    await waitFor('the failed run is logged', () => logger.lines.some((l) => l.level === 'error'));
    const about = (runId: string) => logger.lines.filter((l) => l.message.includes(JSON.stringify(runId)));
    expect(about(id).map((l) => [l.level, l.message])).toEqual([
      [
        'warn',
        expect.stringMatching(
          new RegExp(
            `^workflow "logged-bad" run "${id}": step "charge" failed on attempt 1/2 \\(Error: card declined\\); retrying at \\d{4}-`,
          ),
        ),
      ],
      [
        'warn',
        `workflow "logged-bad" run "${id}": step "charge" failed on attempt 2/2 (Error: card declined); the step failed for good`,
      ],
      [
        'error',
        `workflow "logged-bad" run "${id}" failed: StepFailed: step "charge" failed after 2 attempts: Error: card declined`,
      ],
    ]);
    expect(about(id)[2]!.error).toBeInstanceOf(StepFailed);
    expect(about(ok.id)).toEqual([]);
  });

  it('start is idempotent by id: a second start with the id starts nothing', async () => {
    let runs = 0;
    const wf = defineWorkflow('once', {
      async run(_input: null, ctx) {
        return ctx.step('count', () => ++runs);
      },
    });
    const w = make({ workflows: [wf] });
    const first = await w.start(wf, null, { id: 'order-1' });
    const second = await w.start('once', null, { id: 'order-1' });
    expect(first).toEqual({ id: 'order-1', created: true });
    expect(second).toEqual({ id: 'order-1', created: false });
    await expect(w.waitForResult('order-1', { timeoutMs: 20_000 })).resolves.toBe(1);
    expect(runs).toBe(1);
  });

  it('a burst of concurrent starts, with one id given twice and one failing run, starts each id once and ends every run with exact counts', async () => {
    let steps = 0;
    const wf = defineWorkflow('burst', {
      async run(input: { n: number }, ctx) {
        const a = await ctx.step('a', () => ((steps += 1), input.n));
        if (input.n === 7) throw new PermanentError('seven');
        return a * 2;
      },
    });
    const w = make({ workflows: [wf], concurrency: 8 });
    const ids = Array.from({ length: 40 }, (_, n) => `burst-${n}`);
    const started = await Promise.all([
      ...ids.map((id, n) => w.start(wf, { n }, { id })),
      w.start(wf, { n: 99 }, { id: 'burst-3' }),
    ]);
    expect(
      started
        .filter((s) => s.id === 'burst-3')
        .map((s) => s.created)
        .sort(),
    ).toEqual([false, true]);
    expect(started.filter((s) => s.created)).toHaveLength(40);
    const outcomes = await Promise.all(
      ids.map((id) =>
        w.waitForResult<number>(id, { timeoutMs: 30_000 }).then(
          (r) => r,
          (e: Error) => e.name,
        ),
      ),
    );
    expect(outcomes[7]).toBe('WorkflowFailed');
    // burst-3 ran with the input of whichever of its two starts won.
    expect(outcomes.filter((o, n) => n !== 7 && (n === 3 ? o !== 6 && o !== 198 : o !== 2 * n))).toEqual([]);
    expect(steps).toBe(40);
    expect(await w.counts()).toMatchObject({ running: 0, completed: 39, failed: 1 });
    expect((await w.list({ state: 'completed', limit: 100 })).length).toBe(39);
  });

  it('start inside a transaction commits with it, and a rollback leaves no run', async () => {
    const wf = defineWorkflow('in-tx', {
      async run(input: { n: number }, ctx) {
        return ctx.step('echo', () => input.n);
      },
    });
    const w = make({ workflows: [wf] });
    await expect(
      store.withTx(async (tx) => {
        await w.start(wf, { n: 1 }, { id: 'rolled-back', tx });
        throw new Error('business write failed');
      }),
    ).rejects.toThrow('business write failed');
    await store.withTx(async (tx) => {
      await tx.publish('orders-business', { order: 2 });
      await w.start(wf, { n: 2 }, { id: 'committed', tx });
    });
    await expect(w.waitForResult('committed', { timeoutMs: 20_000 })).resolves.toBe(2);
    expect(await w.getStatus('rolled-back')).toBeNull();
    await expect(w.waitForResult('rolled-back', { timeoutMs: 300 })).rejects.toBeInstanceOf(WorkflowTimeout);
  });

  it('a transactional step commits its writes and its journal entry together: a failed attempt leaves no write, the next one commits once', async () => {
    let attempts = 0;
    const wf = defineWorkflow('ledger', {
      async run(input: { order: string }, ctx) {
        return ctx.transaction('book', async (tx) => {
          attempts += 1;
          await tx.publishWithKey('ledger-rows', input.order, { order: input.order, attempt: attempts });
          if (attempts === 1) throw new Error('constraint violated');
          return attempts;
        });
      },
    });
    const w = make({ workflows: [wf] });
    const { id } = await w.start(wf, { order: 'o-7' });
    await expect(w.waitForResult(id, { timeoutMs: 20_000 })).resolves.toBe(2);
    const rows = (await store.stream('ledger-rows').readSince(0)).filter((e) => e.key === 'o-7');
    expect(rows.map((e) => e.payload)).toEqual([{ order: 'o-7', attempt: 2 }]);
  });

  it('a step failing on its last attempt throws StepFailed in run, so the workflow can compensate; a PermanentError is not retried', async () => {
    let charges = 0;
    const wf = defineWorkflow('saga', {
      async run(_input: null, ctx) {
        await ctx.step('reserve', () => 'reserved');
        try {
          await ctx.step('charge', () => {
            charges += 1;
            throw new PermanentError('card declined');
          });
        } catch (err) {
          await ctx.step('release', () => 'released');
          if (err instanceof StepFailed) return `compensated: ${err.error.message}`;
          throw err;
        }
        return 'charged';
      },
    });
    const w = make({ workflows: [wf], maxAttempts: 5 });
    const { id } = await w.start(wf, null);
    await expect(w.waitForResult(id, { timeoutMs: 20_000 })).resolves.toBe('compensated: card declined');
    expect(charges).toBe(1);
    const run = await w.getStatus(id);
    expect(run!.steps.map((s) => `${s.name}:${s.state}`)).toEqual(['reserve:done', 'charge:failed', 'release:done']);
  });

  it('a step is retried with backoff up to maxAttempts; a run that throws ends failed with the error', async () => {
    let tries = 0;
    const wf = defineWorkflow('flaky', {
      async run(_input: null, ctx) {
        await ctx.step(
          'call',
          () => {
            tries += 1;
            throw new Error(`boom ${tries}`);
          },
          { maxAttempts: 3, backoffBaseMs: 10 },
        );
        return 'never';
      },
    });
    const w = make({ workflows: [wf] });
    const { id } = await w.start(wf, null);
    const err = await w.waitForResult(id, { timeoutMs: 20_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailed);
    expect((err as WorkflowFailed).error).toMatchObject({ name: 'StepFailed', code: 'STEP_FAILED' });
    expect((err as WorkflowFailed).message).toContain('boom 3');
    expect(tries).toBe(3);
    expect((await w.getStatus(id))!.state).toBe('failed');
  });

  it("a workflow's maxAttempts and backoffBaseMs are its steps' defaults; a step's own options win", async () => {
    const tries = { plain: 0, own: 0 };
    const wf = defineWorkflow('defaults', {
      maxAttempts: 2,
      backoffBaseMs: 10,
      async run(_input: null, ctx) {
        const plain = await ctx
          .step('plain', () => {
            tries.plain += 1;
            throw new Error('always');
          })
          .catch((e: unknown) => (e as StepFailed).attempts);
        const own = await ctx
          .step(
            'own',
            () => {
              tries.own += 1;
              throw new Error('always');
            },
            { maxAttempts: 3 },
          )
          .catch((e: unknown) => (e as StepFailed).attempts);
        return { plain, own };
      },
    });
    // The instance default (5 attempts, 60 s apart) would never finish within the test.
    const w = make({ workflows: [wf], maxAttempts: 5, backoffBaseMs: 60_000 });
    const { id } = await w.start(wf, null);
    await expect(w.waitForResult(id, { timeoutMs: 20_000 })).resolves.toEqual({ plain: 2, own: 3 });
    expect(tries).toEqual({ plain: 2, own: 3 });
    expect(() => defineWorkflow('d', { maxAttempts: 0, run: async () => null })).toThrow(
      /option maxAttempts of workflow "d"/,
    );
    expect(() => defineWorkflow('d', { backoffBaseMs: -1, run: async () => null })).toThrow(
      /option backoffBaseMs of workflow "d"/,
    );
  });

  it('ctx.sleep is durable: the run is parked (no worker held), resumes on another worker, and never before the time asked', async () => {
    const namespace = ns();
    const wf = defineWorkflow('nap', {
      async run(_input: null, ctx) {
        const before = await ctx.now();
        await ctx.sleep('300 ms');
        const after = await ctx.now();
        return after - before;
      },
    });
    const first = make({ workflows: [wf], namespace });
    const { id } = await first.start(wf, null);
    await untilParked(first, id, 'sleeping');
    // The pass that journaled the sleep ends and its job is acked: no worker holds the run while it sleeps.
    await waitFor('the run released', async () => (await first.queue.stats()).processing === 0);
    expect((await first.getStatus(id))!.state).toBe('running');
    await first.close();
    const second = make({ workflows: [wf], namespace });
    const slept = await second.waitForResult<number>(id, { timeoutMs: 20_000 });
    expect(slept).toBeGreaterThanOrEqual(300);
  });

  it('waitForSignal resumes on a signal sent from another store handle, in a transaction, and resolves undefined on timeout', async () => {
    const namespace = ns();
    const wf = defineWorkflow('approval', {
      async run(_input: null, ctx) {
        const approved = await ctx.waitForSignal<{ by: string }>('approved');
        const late = await ctx.waitForSignal('never', { timeoutMs: 100 });
        return { approved, late: late === undefined ? 'timed out' : late };
      },
    });
    const w = make({ workflows: [wf], namespace });
    const { id } = await w.start(wf, null);
    await untilParked(w, id, 'waiting');
    const other = createWorkflows(store, { workflows: [wf], namespace, worker: false });
    await store.withTx((tx) => other.signal(id, 'approved', { by: 'ada' }, { tx }));
    await expect(w.waitForResult(id, { timeoutMs: 20_000 })).resolves.toEqual({
      approved: { by: 'ada' },
      late: 'timed out',
    });
  });

  it('a signal sent before the wait is kept for it', async () => {
    const wf = defineWorkflow('early', {
      async run(_input: null, ctx) {
        await ctx.sleep(50);
        return ctx.waitForSignal('go');
      },
    });
    const w = make({ workflows: [wf] });
    const { id } = await w.start(wf, null);
    await w.signal(id, 'go', 42);
    await expect(w.waitForResult(id, { timeoutMs: 20_000 })).resolves.toBe(42);
  });

  it('ctx.now and ctx.random are journaled: a replay sees the same values', async () => {
    let fail = true;
    const seen: number[][] = [];
    const wf = defineWorkflow('dice', {
      async run(_input: null, ctx) {
        const t = await ctx.now();
        const r = await ctx.random();
        seen.push([t, r]);
        await ctx.step('maybe', () => {
          if (fail) {
            fail = false;
            throw new Error('again');
          }
        });
        return [t, r];
      },
    });
    const w = make({ workflows: [wf] });
    const { id } = await w.start(wf, null);
    const result = await w.waitForResult<number[]>(id, { timeoutMs: 20_000 });
    expect(seen.length).toBe(2);
    expect(seen[1]).toEqual(seen[0]);
    expect(result).toEqual(seen[0]);
  });

  it('cancel stops a run: the running step sees its AbortSignal, no later step starts, waitForResult rejects', async () => {
    let later = false;
    const wf = defineWorkflow('long', {
      async run(_input: null, ctx) {
        await ctx.step(
          'wait-for-abort',
          (signal) =>
            new Promise<string>((resolve) =>
              signal.addEventListener('abort', () => resolve('aborted'), { once: true }),
            ),
        );
        await ctx.step('later', () => {
          later = true;
        });
      },
    });
    const namespace = ns();
    const w = make({ workflows: [wf], namespace });
    const { id } = await w.start(wf, null);
    await waitFor('the step running', async () => (await w.queue.stats()).processing === 1);
    expect(await w.cancel(id)).toBe(true);
    await expect(w.waitForResult(id, { timeoutMs: 20_000 })).rejects.toBeInstanceOf(WorkflowCancelled);
    await waitFor('the job finished', async () => (await w.queue.stats()).processing === 0);
    expect(later).toBe(false);
    expect((await w.getStatus(id))!.state).toBe('cancelled');
    expect(await w.cancel(id)).toBe(false);
    expect(await w.cancel('no-such-run')).toBe(false);
  });

  /** Workflows on `store` whose queue's claims are counted, once its worker is idle (its first claim returned). */
  async function idleWorkflows(
    opts: Pick<WorkflowsOptions, 'workflows'> & Partial<WorkflowsOptions>,
  ): Promise<{ w: Workflows; claims: { calls: number; jobs: number[] } }> {
    const claims = { calls: 0, jobs: [] as number[] };
    // The store as the workflows see it, with the workflows queue's claims counted.
    const counted = new Proxy(store, {
      get(target, prop) {
        if (prop === 'queue')
          return (name: string, o?: Parameters<Store['queue']>[1]) => countClaims(target.queue(name, o), claims);
        const v: unknown = Reflect.get(target, prop, target);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const w = createWorkflows(counted, { namespace: ns(), concurrency: 2, idlePollIntervalMs: 60_000, ...opts });
    open.push(w as Workflows<unknown>);
    await waitFor('the worker idle (its first claim returned)', () => claims.calls >= 1, 10_000, 5);
    return { w, claims };
  }

  it('a run started by an instance whose worker is idle begins its first pass without a claim (local hand-off)', async () => {
    let atFirstStep = -1;
    const seen = { claims: { calls: 0 } };
    const wf = defineWorkflow('handed', {
      async run(input: number, ctx) {
        atFirstStep = seen.claims.calls;
        return ctx.step('double', () => input * 2);
      },
    });
    const idle = await idleWorkflows({ workflows: [wf] });
    seen.claims = idle.claims;
    const before = idle.claims.calls;
    const { id } = await idle.w.start(wf, 21);
    await expect(idle.w.waitForResult(id, { timeoutMs: 20_000 })).resolves.toBe(42);
    // No claim ran between the start and the pass, and none returned the pass's job.
    expect(atFirstStep).toBe(before);
    expect(idle.claims.jobs).toEqual([]);
  });

  it("a start does not hand its first pass off while a job of the run's key is live: the pass waits behind it", async () => {
    const wf = defineWorkflow('keyed', {
      async run(input: number, ctx) {
        return ctx.step('double', () => input * 2);
      },
    });
    const namespace = ns();
    const id = 'keyed-run';
    // A pass of the run's key, due in a minute (as a parked run's timer is): live, but not claimable.
    const producer = make({ workflows: [wf], namespace, worker: false });
    const early = await producer.queue.enqueue({ k: 'drive', id }, { orderingKey: id, delayMs: 60_000 });
    const { w } = await idleWorkflows({ workflows: [wf], namespace });
    await w.start(wf, 21, { id });
    const page = await store.admin().listJobs(w.queue.name, { state: 'all', limit: 100 });
    const passes = page.jobs.filter((j) => (j.payload as { id?: string }).id === id);
    expect(passes.map((j) => [j.id === early, j.state]).sort()).toEqual([
      [false, 'pending'],
      [true, 'pending'],
    ]);
    expect((await w.getStatus(id))?.state).toBe('running');
    // A run of another id, started now, is handed off: the worker was idle all along.
    const other = await w.start(wf, 1);
    await expect(w.waitForResult(other.id, { timeoutMs: 20_000 })).resolves.toBe(2);
  });

  it('a run cancelled from another instance before its first pass runs no step', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const ran: string[] = [];
    const wf = defineWorkflow('queued', {
      async run(input: { block: boolean }, ctx) {
        await ctx.step('first', async () => {
          ran.push(ctx.runId);
          if (input.block) await gate;
        });
      },
    });
    const namespace = ns();
    const w = make({ workflows: [wf], namespace, concurrency: 1 });
    const other = make({ workflows: [wf], namespace, worker: false });
    const blocker = await w.start(wf, { block: true });
    await waitFor('the blocker running', async () => ran.length === 1);
    const { id } = await w.start(wf, { block: false });
    expect(await other.cancel(id)).toBe(true);
    release();
    await expect(w.waitForResult(blocker.id, { timeoutMs: 20_000 })).resolves.toBeUndefined();
    await expect(w.waitForResult(id, { timeoutMs: 20_000 })).rejects.toBeInstanceOf(WorkflowCancelled);
    await waitFor(
      'the queue idle',
      async () => (await w.queue.stats()).pending + (await w.queue.stats()).processing === 0,
    );
    expect(ran).toEqual([blocker.id]);
  });

  it('list filters runs by state and workflow', async () => {
    const ok = defineWorkflow('ok', { run: async () => 'fine' });
    const bad = defineWorkflow('bad', {
      run: async () => {
        throw new Error('nope');
      },
    });
    const w = make({ workflows: [ok, bad] });
    const a = await w.start(ok, null, { id: 'a' });
    const b = await w.start(bad, null, { id: 'b' });
    await w.waitForResult(a.id, { timeoutMs: 20_000 });
    await expect(w.waitForResult(b.id, { timeoutMs: 20_000 })).rejects.toBeInstanceOf(WorkflowFailed);
    expect((await w.list()).map((r) => [r.id, r.workflow, r.state])).toEqual([
      ['a', 'ok', 'completed'],
      ['b', 'bad', 'failed'],
    ]);
    expect((await w.list({ state: 'failed' })).map((r) => r.id)).toEqual(['b']);
    expect((await w.list({ workflow: 'ok' })).map((r) => r.id)).toEqual(['a']);
  });

  it('a replay whose code asks for another step than the journal holds fails the run with NonDeterministicWorkflow naming both and the position, running nothing', async () => {
    const namespace = ns();
    const v1 = defineWorkflow('shipping', {
      async run(_input: null, ctx) {
        await ctx.step('pack', () => 'packed');
        await ctx.waitForSignal('ship');
        return 'v1';
      },
    });
    const w1 = make({ workflows: [v1], namespace });
    const { id } = await w1.start(v1, null);
    await untilParked(w1, id, 'waiting');
    await w1.close();
    let labelled = false;
    const changed = defineWorkflow('shipping', {
      async run(_input: null, ctx) {
        await ctx.step('label', () => {
          labelled = true;
        });
        return 'changed';
      },
    });
    const w2 = make({ workflows: [changed], namespace });
    await w2.signal(id, 'ship');
    const err = await w2.waitForResult(id, { timeoutMs: 20_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailed);
    expect((err as WorkflowFailed).error).toMatchObject({
      name: 'NonDeterministicWorkflow',
      code: 'NON_DETERMINISTIC_WORKFLOW',
    });
    expect((err as WorkflowFailed).error.message).toContain('step "label" at position 0');
    expect((err as WorkflowFailed).error.message).toContain('step "pack"');
    expect(labelled).toBe(false);
  });

  it('a replay whose code ends before the positions its journal holds fails the run with NonDeterministicWorkflow', async () => {
    const namespace = ns();
    const v1 = defineWorkflow('refund', {
      async run(_input: null, ctx) {
        await ctx.step('lookup', () => 1);
        await ctx.waitForSignal('approve');
        return 'refunded';
      },
    });
    const w1 = make({ workflows: [v1], namespace });
    const { id } = await w1.start(v1, null);
    await untilParked(w1, id, 'waiting');
    await w1.close();
    const shortened = defineWorkflow('refund', { run: async () => 'skipped everything' });
    const w2 = make({ workflows: [shortened], namespace });
    await w2.signal(id, 'approve');
    const err = await w2.waitForResult(id, { timeoutMs: 20_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailed);
    expect((err as WorkflowFailed).error.message).toContain(
      'asked for the end of run at position 0, but its journal holds step "lookup"',
    );
  });

  it('a version tag lets an old run finish on the old code while new runs take the new version', async () => {
    const namespace = ns();
    const v1 = defineWorkflow('pricing', {
      version: 1,
      async run(_input: null, ctx) {
        await ctx.waitForSignal('go');
        return await ctx.step('price-v1', () => 'v1');
      },
    });
    const w1 = make({ workflows: [v1], namespace });
    const old = await w1.start(v1, null);
    await untilParked(w1, old.id, 'waiting');
    await w1.close();
    const v2 = defineWorkflow('pricing', {
      version: 2,
      async run(_input: null, ctx) {
        return ctx.step('price-v2', () => 'v2');
      },
    });
    const w2 = make({ workflows: [v1, v2] as WorkflowDefinition<never>[], namespace });
    const fresh = await w2.start('pricing', null);
    await w2.signal(old.id, 'go');
    await expect(w2.waitForResult(old.id, { timeoutMs: 20_000 })).resolves.toBe('v1');
    await expect(w2.waitForResult(fresh.id, { timeoutMs: 20_000 })).resolves.toBe('v2');
    expect((await w2.getStatus(fresh.id))!.version).toBe(2);
  });

  it('runs live on their own queue __alkstore_workflows:<ns>, not on an outbox', async () => {
    const namespace = ns();
    const wf = defineWorkflow('where', { run: async (_i: null, ctx) => ctx.step('s', () => 1) });
    const w = make({ workflows: [wf], namespace });
    expect(w.queue.name).toBe(`__alkstore_workflows:${namespace}`);
    const { id } = await w.start(wf, null);
    await w.waitForResult(id, { timeoutMs: 20_000 });
    const names = await store.admin().queueNames();
    expect(names).not.toContain(`__alkstore_outbox:${namespace}`);
    // A user queue handle may not take the reserved prefix for another name.
    expect(() => store.queue(`__alkstore_workflows:${namespace}-other`)).toThrow(/reserved/i);
  });

  it("a run's end acks its pass's job in the same commit: once the result is seen no job of the run is left, and no ack of its own is written", async () => {
    const acked: number[] = [];
    const seen = keepingAcks(store, acked);
    const wf = defineWorkflow('acked-by-end', {
      async run(input: number, ctx) {
        const a = await ctx.step('one', () => input + 1);
        return ctx.step('two', () => a * 2);
      },
    });
    const w = createWorkflows(seen, { namespace: ns(), workflows: [wf], idlePollIntervalMs: 50 });
    open.push(w as Workflows<unknown>);
    const ids = await Promise.all([1, 2, 3].map(async (i) => (await w.start(wf, i)).id));
    for (const [i, id] of ids.entries())
      await expect(w.waitForResult(id, { timeoutMs: 20_000 })).resolves.toBe((i + 2) * 2);
    const page = await store.admin().listJobs(w.queue.name, { state: 'all', limit: 100 });
    expect(page.jobs.map((j) => [(j.payload as { id?: string }).id, j.state])).toEqual([]);
    await w.close();
    expect(acked).toEqual([]);
  });

  // The end statement writes the run's last step's entry ahead of the end (`endsCarryEntry`).
  it("a run's last plain step is journaled in its end's commit: a run of three steps appends two entries on their own", async () => {
    const counted = { appended: 0, carried: 0 };
    const seam = workflowSqlOf(store as object)!;
    // The store as the workflows see it, with the journal entries its statements write counted.
    const wrapped: WorkflowSql = Object.assign(Object.create(seam) as WorkflowSql, {
      appendSteps: (writes: readonly StepAppend[]) => {
        counted.appended += writes.length;
        return seam.appendSteps!(writes);
      },
      endRuns: (inbox: string, ends: readonly EndedRun[]) => {
        counted.carried += ends.filter((e) => e.before).length;
        return seam.endRuns!(inbox, ends);
      },
    });
    const seen = new Proxy(store, {
      get(target, prop) {
        if (prop === WORKFLOW_SQL) return wrapped;
        const v: unknown = Reflect.get(target, prop, target);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const wf = defineWorkflow('carried', {
      async run(input: number, ctx) {
        const a = await ctx.step('one', () => input + 1);
        const b = await ctx.step('two', () => a * 2);
        return ctx.step('three', () => b + 1);
      },
    });
    const w = createWorkflows(seen, { namespace: ns(), workflows: [wf], idlePollIntervalMs: 50 });
    open.push(w as Workflows<unknown>);
    const { id } = await w.start(wf, 1);
    await expect(w.waitForResult(id, { timeoutMs: 20_000 })).resolves.toBe(5);
    expect(counted).toEqual({ appended: 2, carried: 1 });
    const status = await w.getStatus(id);
    expect(status?.steps.map((st) => [st.name, st.state])).toEqual([
      ['one', 'done'],
      ['two', 'done'],
      ['three', 'done'],
    ]);
  });

  it("a run's end promotes the next job of the run's key: a signal's pass queued behind the ending pass runs, and no job is left", async () => {
    const acked: number[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inStep = new Promise<void>((r) => (entered = r));
    const wf = defineWorkflow('signalled-at-end', {
      async run(input: number, ctx) {
        const a = await ctx.step('one', () => input + 1);
        return ctx.step('two', async () => {
          entered();
          await gate;
          return a * 2;
        });
      },
    });
    const w = createWorkflows(keepingAcks(store, acked), { namespace: ns(), workflows: [wf], idlePollIntervalMs: 50 });
    open.push(w as Workflows<unknown>);
    const { id } = await w.start(wf, 1);
    await inStep;
    // The signal's pass waits behind the running one (the run's ordering key): only the end's ack frees it.
    await w.signal(id, 'poke');
    release();
    await expect(w.waitForResult(id, { timeoutMs: 20_000 })).resolves.toBe(4);
    await waitFor(
      "the signal's pass run and acked",
      async () => (await store.admin().listJobs(w.queue.name, { state: 'all', limit: 100 })).jobs.length === 0,
      20_000,
    );
    // The signal's pass, acked on its own (the run had ended); the pass that ended the run was acked by the end.
    expect(acked).toHaveLength(1);
  });

  it("a run's end after its pass's claim lapsed ends the run and leaves the job: the ack is fenced, and the job's next claim acks it once", async () => {
    const acked: number[] = [];
    const ended: { outcome: string; acked: boolean | null }[] = [];
    let passJob: number | null = null;
    const seam = workflowSqlOf(store as object)!;
    const wrapped: WorkflowSql = Object.assign(Object.create(seam) as WorkflowSql, {
      endRuns: async (inbox: string, ends: readonly EndedRun[]) => {
        for (const e of ends)
          if (e.ack) {
            passJob = e.ack.id;
            // The pass's lease lapses before its end is written (as a stalled worker's would).
            await seam.query(`UPDATE ${seam.prefix}jobs SET claimed_until = 1 WHERE id = $1`, [e.ack.id], true);
          }
        const out = await seam.endRuns!(inbox, ends);
        ended.push(...out);
        return out;
      },
    });
    const wf = defineWorkflow('lapsed-at-end', {
      async run(input: number, ctx) {
        const a = await ctx.step('one', () => input + 1);
        return ctx.step('two', () => a * 2);
      },
    });
    const w = createWorkflows(keepingAcks(store, acked, wrapped), {
      namespace: ns(),
      workflows: [wf],
      idlePollIntervalMs: 50,
    });
    open.push(w as Workflows<unknown>);
    const { id } = await w.start(wf, 1);
    await expect(w.waitForResult(id, { timeoutMs: 20_000 })).resolves.toBe(4);
    // The lapsed job is claimed again; that pass finds the run ended and acks the job, once.
    await waitFor(
      'the lapsed pass claimed again and acked',
      async () => (await store.admin().listJobs(w.queue.name, { state: 'all', limit: 100 })).jobs.length === 0,
      20_000,
    );
    expect(ended).toEqual([{ outcome: 'ended', acked: false }]);
    expect(acked).toEqual([passJob]);
    const status = await w.getStatus(id);
    expect(status?.state).toBe('completed');
    expect(status?.steps.map((st) => [st.name, st.state])).toEqual([
      ['one', 'done'],
      ['two', 'done'],
    ]);
  });

  it("a run's end whose last step's position another writer journaled first writes nothing and the pass replays (superseded)", async () => {
    const ended: { outcome: string; acked: boolean | null }[] = [];
    const seam = workflowSqlOf(store as object)!;
    const wrapped: WorkflowSql = Object.assign(Object.create(seam) as WorkflowSql, {
      endRuns: async (inbox: string, ends: readonly EndedRun[]) => {
        // Another writer (a pass of the same run elsewhere) journals the last step first, under its guard.
        for (const e of ends)
          if (e.before && ended.length === 0)
            expect(
              await seam.appendSteps!([
                {
                  ns: e.ns,
                  run: e.id,
                  position: e.before.position,
                  key: e.before.key,
                  stream: e.stream,
                  payload: e.before.payload,
                },
              ]),
            ).toEqual([expect.any(Number)]);
        const out = await seam.endRuns!(inbox, ends);
        ended.push(...out);
        return out;
      },
    });
    let ran = 0;
    const wf = defineWorkflow('superseded-at-end', {
      async run(input: number, ctx) {
        const a = await ctx.step('one', () => input + 1);
        return ctx.step('two', () => {
          ran += 1;
          return a * 2;
        });
      },
    });
    const w = createWorkflows(keepingAcks(store, [], wrapped), {
      namespace: ns(),
      workflows: [wf],
      idlePollIntervalMs: 50,
    });
    open.push(w as Workflows<unknown>);
    const { id } = await w.start(wf, 1);
    await expect(w.waitForResult(id, { timeoutMs: 20_000 })).resolves.toBe(4);
    // The result's wake can come before the end statement's reply.
    await waitFor('the end statement back', () => ended.length === 2);
    // The first end wrote nothing; the replay took step two from the journal and ended the run.
    expect(ended).toEqual([
      { outcome: 'superseded', acked: null },
      { outcome: 'ended', acked: true },
    ]);
    expect(ran).toBe(1);
    const status = await w.getStatus(id);
    expect(status?.steps.map((st) => [st.name, st.state])).toEqual([
      ['one', 'done'],
      ['two', 'done'],
    ]);
    await waitFor(
      'no job of the run left',
      async () => (await store.admin().listJobs(w.queue.name, { state: 'all', limit: 100 })).jobs.length === 0,
    );
  });

  it('a step whose run then awaits something other than a journaled call is journaled meanwhile, not at the end', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const wf = defineWorkflow('gated', {
      async run(_input: null, ctx) {
        const a = await ctx.step('one', () => 1);
        await gate;
        return a + 1;
      },
    });
    const w = make({ workflows: [wf] });
    const { id } = await w.start(wf, null);
    await waitFor('step one journaled while the run waits at its gate', async () =>
      (await w.getStatus(id))?.steps.some((st) => st.name === 'one' && st.state === 'done'),
    );
    expect((await w.getStatus(id))?.state).toBe('running');
    release();
    await expect(w.waitForResult(id, { timeoutMs: 20_000 })).resolves.toBe(2);
  });

  it('startChild fans out and waitAll fans in: the parent parks without a worker and gets the results in order', async () => {
    const namespace = ns();
    const ran: string[] = [];
    const child = defineWorkflow('square', {
      async run(input: { n: number; ms: number }, ctx) {
        await ctx.sleep(input.ms);
        return ctx.step('square', () => {
          ran.push(`square ${input.n}`);
          return input.n * input.n;
        });
      },
    });
    let parentPasses = 0;
    const parent = defineWorkflow('sum-squares', {
      async run(input: { ns: number[] }, ctx) {
        parentPasses += 1;
        const handles = [];
        for (const [i, n] of input.ns.entries()) handles.push(await ctx.startChild(child, { n, ms: 100 + 100 * i }));
        const squares = await ctx.waitAll(handles);
        return ctx.step('total', () => squares.reduce((a, b) => a + b, 0));
      },
    });
    const w = make({ workflows: [parent, child], namespace });
    const { id } = await w.start(parent, { ns: [1, 2, 3] }, { id: 'p1' });
    await untilParked(w, id, 'waiting');
    // Parked on its children: the parent's job was acked (only the children's sleeps are queued).
    const parked = await w.getStatus(id);
    expect(parked!.children).toEqual(['p1:0', 'p1:1', 'p1:2']);
    expect(parked!.steps.at(-1)).toMatchObject({ kind: 'children', state: 'waiting' });
    await expect(w.waitForResult(id, { timeoutMs: 20_000 })).resolves.toBe(14);
    expect(ran.sort()).toEqual(['square 1', 'square 2', 'square 3']);
    for (const c of ['p1:0', 'p1:1', 'p1:2'])
      expect(await w.getStatus(c)).toMatchObject({ state: 'completed', parentId: 'p1', workflow: 'square' });
    // Woken once per child end at most (plus the first pass), not by polling.
    expect(parentPasses).toBeLessThanOrEqual(5);
  });

  it('a child start is journaled: a replay returns the same handle and starts no second child', async () => {
    let childRuns = 0;
    let crash = true;
    const child = defineWorkflow('leaf', { run: async (_i: null, ctx) => ctx.step('leaf', () => ++childRuns) });
    const parent = defineWorkflow('root', {
      async run(_i: null, ctx) {
        const h = await ctx.startChild('leaf', null, { id: 'given-child' });
        await ctx.step('flaky', () => {
          if (crash) {
            crash = false;
            throw new Error('again');
          }
        });
        const [r] = await ctx.waitAll([h]);
        return { id: h.id, r };
      },
    });
    const w = make({ workflows: [parent, child], maxAttempts: 2 });
    const { id } = await w.start(parent, null);
    await expect(w.waitForResult(id, { timeoutMs: 20_000 })).resolves.toEqual({ id: 'given-child', r: 1 });
    expect(childRuns).toBe(1);
    expect((await w.list({ workflow: 'leaf' })).map((r) => r.id)).toEqual(['given-child']);
  });

  it('waitAll throws ChildWorkflowFailed naming a failed child, so the parent can compensate', async () => {
    const bad = defineWorkflow('bad-child', {
      run: async () => {
        throw new PermanentError('out of stock');
      },
    });
    const good = defineWorkflow('good-child', { run: async () => 'ok' });
    const parent = defineWorkflow('fan', {
      async run(_i: null, ctx) {
        const a = await ctx.startChild(good, null);
        const b = await ctx.startChild(bad, null);
        try {
          await ctx.waitAll([a, b]);
          return 'all fine';
        } catch (err) {
          if (err instanceof ChildWorkflowFailed)
            return `compensated ${err.childId} ${err.state}: ${err.error.message}`;
          throw err;
        }
      },
    });
    const w = make({ workflows: [parent, good, bad] });
    const { id } = await w.start(parent, null, { id: 'fan-1' });
    await expect(w.waitForResult(id, { timeoutMs: 20_000 })).resolves.toBe('compensated fan-1:1 failed: out of stock');
  });

  it('cancel of a parent cancels its children', async () => {
    const child = defineWorkflow('waiter', { run: async (_i: null, ctx) => ctx.waitForSignal('never') });
    const parent = defineWorkflow('boss', {
      async run(_i: null, ctx) {
        const hs = [await ctx.startChild(child, null), await ctx.startChild(child, null)];
        return ctx.waitAll(hs);
      },
    });
    const w = make({ workflows: [parent, child] });
    const { id } = await w.start(parent, null, { id: 'boss-1' });
    await untilParked(w, id, 'waiting');
    await untilParked(w, 'boss-1:0', 'waiting');
    await untilParked(w, 'boss-1:1', 'waiting');
    expect(await w.cancel(id)).toBe(true);
    await expect(w.waitForResult(id, { timeoutMs: 20_000 })).rejects.toBeInstanceOf(WorkflowCancelled);
    for (const c of ['boss-1:0', 'boss-1:1'])
      await expect(w.waitForResult(c, { timeoutMs: 20_000 })).rejects.toBeInstanceOf(WorkflowCancelled);
  });

  it('ctx.startChild and ctx.waitAll refuse bad input with a typed error naming it', async () => {
    const seen: string[] = [];
    const parent = defineWorkflow('bad-fan', {
      async run(_i: null, ctx) {
        for (const call of [
          () => ctx.startChild('nope', null),
          () => ctx.startChild('bad-fan', { n: 1n }),
          () => ctx.waitAll('x' as never),
        ]) {
          try {
            await call();
          } catch (err) {
            seen.push((err as Error).name);
          }
        }
        return seen;
      },
    });
    const w = make({ workflows: [parent] });
    const { id } = await w.start(parent, null);
    await expect(w.waitForResult(id, { timeoutMs: 20_000 })).resolves.toEqual([
      'UnknownWorkflow',
      'Codec',
      'InvalidArgument',
    ]);
  });

  it('a schedule starts runs once per fire, with a run id derived from the fire, across two workflows instances', async () => {
    const namespace = ns();
    const tick = defineWorkflow('tick', {
      schedule: { cron: '@every 1s', input: { from: 'cron' } },
      run: async (input: { from: string }) => input.from,
    });
    const a = make({ workflows: [tick], namespace });
    const b = make({ workflows: [tick], namespace });
    await Promise.all([a.ready(), b.ready()]);
    const broken = defineWorkflow('broken-schedule', { schedule: 'every minute', run: async () => null });
    await expect(
      make({
        workflows: [broken],
        worker: false,
        logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
      }).ready(),
    ).rejects.toThrow(/every minute/);
    const ac = new AbortController();
    const runners = [store.runSchedules(ac.signal), store.runSchedules(ac.signal)];
    try {
      await waitFor(
        'three scheduled runs completed',
        async () => (await a.list({ workflow: 'tick', state: 'completed' })).length >= 3,
        30_000,
      );
    } finally {
      ac.abort();
      await Promise.allSettled(runners);
      await store.unschedule(a.scheduleName('tick'));
    }
    const runs = await a.list({ workflow: 'tick' });
    const boundaries = runs.map((r) => /^cron:tick:(\d+)$/.exec(r.id)?.[1]);
    expect(boundaries.every((x) => x !== undefined)).toBe(true);
    expect(new Set(boundaries).size).toBe(runs.length);
    await expect(a.waitForResult(runs[0]!.id, { timeoutMs: 20_000 })).resolves.toBe('cron');
  });

  it('retry re-drives a failed run from its first failed step: done steps replay, the failed one runs again', async () => {
    const ran: string[] = [];
    let fail = true;
    const wf = defineWorkflow('redo', {
      async run(_i: null, ctx) {
        const a = await ctx.step('a', () => {
          ran.push('a');
          return 1;
        });
        const b = await ctx.step('b', () => {
          ran.push('b');
          if (fail) throw new PermanentError('downstream down');
          return 2;
        });
        return a + b;
      },
    });
    const w = make({ workflows: [wf] });
    const { id } = await w.start(wf, null);
    await expect(w.waitForResult(id, { timeoutMs: 20_000 })).rejects.toBeInstanceOf(WorkflowFailed);
    expect(await w.retry('no-such-run')).toBe(false);
    fail = false;
    expect(await w.retry(id)).toBe(true);
    await expect(w.waitForResult(id, { timeoutMs: 20_000 })).resolves.toBe(3);
    expect(ran).toEqual(['a', 'b', 'b']);
    expect(await w.retry(id)).toBe(false);
    expect((await w.list({ state: 'completed' })).map((r) => r.id)).toEqual([id]);
  });

  it('prune drops the runs finished longer ago than retentionMs; their ids are free again, their steps forgotten', async () => {
    let ran = 0;
    const wf = defineWorkflow('short', {
      run: async (_i: null, ctx) =>
        ctx.step('once', () => {
          ran += 1;
          return `run ${ran}`;
        }),
    });
    const w = make({ workflows: [wf], retentionMs: 1 });
    const { id } = await w.start(wf, null, { id: 'old' });
    await expect(w.waitForResult(id, { timeoutMs: 20_000 })).resolves.toBe('run 1');
    const running = defineWorkflow('park', { run: async (_i: null, ctx) => ctx.waitForSignal('go') });
    const w2 = make({ workflows: [running], retentionMs: 1 });
    const parked = await w2.start(running, null);
    await untilParked(w2, parked.id, 'waiting');
    await new Promise((r) => setTimeout(r, 20));
    expect(await w.prune()).toBe(1);
    expect(await w.getStatus(id)).toBeNull();
    expect(await w.list()).toEqual([]);
    expect(await w.start(wf, null, { id: 'old' })).toEqual({ id: 'old', created: true });
    // The new run of the id ran its step and returns its own outcome: nothing of the pruned run's
    // journal was left to replay.
    await expect(w.waitForResult('old', { timeoutMs: 20_000 })).resolves.toBe('run 2');
    expect(ran).toBe(2);
    expect(await w2.prune()).toBe(0);
    expect((await w2.getStatus(parked.id))!.state).toBe('running');
  });

  it('a run started with a higher priority is advanced first when runs queue up', async () => {
    const namespace = ns();
    const order: string[] = [];
    const wf = defineWorkflow('prio', {
      run: async (input: { tag: string }, ctx) =>
        ctx.step('mark', () => {
          order.push(input.tag);
        }),
    });
    const starter = make({ workflows: [wf], namespace, worker: false });
    for (const tag of ['low-1', 'low-2', 'low-3']) await starter.start(wf, { tag });
    await starter.start(wf, { tag: 'high' }, { priority: 10 });
    make({ workflows: [wf], namespace, concurrency: 1 });
    await waitFor('every run marked', async () => order.length === 4);
    expect(order[0]).toBe('high');
  });

  it('parked runs hold nothing in the worker: only their journals and rows keep them', async () => {
    const wf = defineWorkflow('parked', {
      async run(input: { i: number }, ctx) {
        await ctx.step('before', () => input.i);
        if (input.i % 2 === 0) await ctx.sleep('1 h');
        else await ctx.waitForSignal('go');
        return input.i;
      },
    });
    const w = make({ workflows: [wf], concurrency: 4 });
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) ids.push((await w.start(wf, { i })).id);
    await waitFor('every run parked', async () => {
      const runs = await w.list({ state: 'running' });
      return runs.length === 40 && runs.every((r) => r.waiting === 'sleep' || r.waiting === 'signal:go');
    });
    // Their passes ended and their jobs were acked: the worker lets go of them.
    await waitFor('the worker holds no run', () => {
      const h = w.held;
      return h.passes === 0 && h.jobs === 0 && h.writes === 0;
    });
    expect(w.held).toEqual({ passes: 0, jobs: 0, writes: 0 });
    // A signalled run comes back from the database alone.
    await w.signal(ids[1]!, 'go');
    await expect(w.waitForResult(ids[1]!, { timeoutMs: 20_000 })).resolves.toBe(1);
    await waitFor('the worker lets go again', () => w.held.passes === 0 && w.held.jobs === 0);
  });

  it('a signalled run resumes ahead of runs of its priority waiting for their first pass', async () => {
    const namespace = ns();
    const order: string[] = [];
    const wf = defineWorkflow('resume-first', {
      async run(input: { tag: string }, ctx) {
        if (input.tag === 'parked') await ctx.waitForSignal('go');
        await ctx.step('mark', () => void order.push(input.tag));
      },
    });
    const first = make({ workflows: [wf], namespace });
    const parked = await first.start(wf, { tag: 'parked' });
    await untilParked(first, parked.id, 'waiting');
    await first.close();
    const starter = make({ workflows: [wf], namespace, worker: false });
    for (const tag of ['new-1', 'new-2', 'new-3']) await starter.start(wf, { tag });
    await starter.signal(parked.id, 'go');
    make({ workflows: [wf], namespace, concurrency: 1 });
    await waitFor('every run marked', async () => order.length === 4);
    expect(order[0]).toBe('parked');
  });

  it('metrics count started, completed and failed runs per workflow and time each step', async () => {
    const registry = new Registry();
    const metrics = await createPrometheusWorkflowMetrics({ registry });
    const ok = defineWorkflow('m-ok', { run: async (_i: null, ctx) => ctx.step('work', () => 1) });
    const bad = defineWorkflow('m-bad', {
      run: async () => {
        throw new Error('no');
      },
    });
    const w = make({ workflows: [ok, bad], metrics });
    const a = await w.start(ok, null);
    const b = await w.start(bad, null);
    await w.waitForResult(a.id, { timeoutMs: 20_000 });
    await expect(w.waitForResult(b.id, { timeoutMs: 20_000 })).rejects.toBeInstanceOf(WorkflowFailed);
    // A run's end is counted after its commit, which is what wakes waitForResult: both ends are counted soon after.
    await waitFor('both ends counted', async () => {
      const now = await registry.metrics();
      return (
        now.includes('alkstore_workflow_runs_failed_total{workflow="m-bad"} 1') &&
        now.includes('alkstore_workflow_runs_completed_total{workflow="m-ok"} 1')
      );
    });
    const text = await registry.metrics();
    expect(text).toContain('alkstore_workflow_runs_started_total{workflow="m-ok"} 1');
    expect(text).toContain('alkstore_workflow_runs_started_total{workflow="m-bad"} 1');
    expect(text).toContain('alkstore_workflow_runs_completed_total{workflow="m-ok"} 1');
    expect(text).toContain('alkstore_workflow_runs_failed_total{workflow="m-bad"} 1');
    expect(text).toContain('alkstore_workflow_step_duration_seconds_count{workflow="m-ok",step="work",outcome="ok"} 1');
  });

  it('bad input is a typed error naming it, before any I/O', async () => {
    const wf = defineWorkflow('typed', { run: async () => null });
    expect(() => defineWorkflow('  ', { run: async () => null })).toThrow(InvalidName);
    expect(() => defineWorkflow('x', { version: 0, run: async () => null })).toThrow(/version of workflow "x"/);
    expect(() => createWorkflows(store, { workflows: [wf, wf], worker: false })).toThrow(InvalidOption);
    expect(() => createWorkflows(store, { workflows: [wf], concurrency: 0, worker: false })).toThrow(/concurrency/);
    expect(() => createWorkflows(store, { workflows: [wf], worker: false, concurency: 2 } as WorkflowsOptions)).toThrow(
      /concurency is not a createWorkflows option/,
    );
    expect(() => createWorkflows(store, { workflows: [wf], worker: false, namespace: '__alkstore_x' })).toThrow(
      /reserved/i,
    );
    const w = make({ workflows: [wf], worker: false });
    await expect(w.start('missing', null)).rejects.toBeInstanceOf(UnknownWorkflow);
    await expect(w.start(wf, { n: 1n })).rejects.toThrow(/input/);
    await expect(w.start(wf, null, { id: '' })).rejects.toBeInstanceOf(InvalidName);
    await expect(w.signal('x'.repeat(300), 'go')).rejects.toThrow(/workflow id/);
    await expect(w.waitForResult('r', { timeoutMs: -1 })).rejects.toThrow(/timeoutMs/);
    expect(() => defineWorkflow('sched', { schedule: '', run: async () => null })).toThrow(
      /schedule of workflow "sched"/,
    );
    expect(() => createWorkflows(store, { workflows: [wf], worker: false, retentionMs: 0 })).toThrow(/retentionMs/);
    await expect(w.start(wf, null, { priority: 1.5 })).rejects.toThrow(/priority/);
    expect(await w.list()).toEqual([]);
    expect(NonDeterministicWorkflow.name).toBe('NonDeterministicWorkflow');
  });
}
