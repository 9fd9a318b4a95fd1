import { afterEach, expect, it } from '@jest/globals';
import { setTimeout as delay } from 'node:timers/promises';
import { InvalidArgument, InvalidOption } from '../../lib/contract/errors.js';
import type { Store } from '../../lib/contract/types.js';
import { createWorkflows, defineWorkflow, type Workflows, type WorkflowsOptions } from '../../lib/workflows/index.js';
import {
  PG_URL,
  sqliteDriverFromEnv,
  waitFor,
  withEngineDb,
  type EngineDb,
  type EngineFixture,
} from '../helpers/engines.js';
import { sqliteOpener } from '../../lib/engines/sqlite/connection.js';

let seq = 0;
function ns(): string {
  seq += 1;
  return `wf-limits-${process.pid}-${seq}`;
}

/** A job row of the workflows' queue as an operator reads it from the engine's own table. */
interface Row {
  payload: { k: string; id: string };
  state: string;
  priority: number;
  concurrencyKey: string | null;
  rateKey: string | null;
}

async function jobRows(engine: EngineFixture, db: EngineDb, queue: string): Promise<Row[]> {
  type Raw = { payload: string; state: string; priority: number; ck: string | null; rk: string | null };
  let raw: Raw[];
  if (engine.kind === 'sqlite') {
    const { open } = await sqliteOpener(sqliteDriverFromEnv().driver);
    const conn = open(db.location, { readonly: true });
    try {
      raw = conn
        .prepare(
          'SELECT payload, state, priority, concurrency_key AS ck, rate_key AS rk FROM __alkstore_jobs WHERE queue = ? ORDER BY id',
        )
        .all(queue) as Raw[];
    } finally {
      conn.close();
    }
  } else {
    const pg = (await import('pg')).default;
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      raw = (
        await client.query<Raw>(
          `SELECT payload::text AS payload, state, priority, concurrency_key AS ck, rate_key AS rk FROM "${db.location}".jobs WHERE queue = $1 ORDER BY id`,
          [queue],
        )
      ).rows;
    } finally {
      await client.end();
    }
  }
  return raw.map((r) => ({
    payload: JSON.parse(r.payload) as Row['payload'],
    state: r.state,
    priority: Number(r.priority),
    concurrencyKey: r.ck,
    rateKey: r.rk,
  }));
}

/** Records how many steps of each key run at once, in this process (both stores live here). */
class Overlap {
  readonly running = new Map<string, number>();
  readonly max = new Map<string, number>();
  async around<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const n = (this.running.get(key) ?? 0) + 1;
    this.running.set(key, n);
    this.max.set(key, Math.max(this.max.get(key) ?? 0, n));
    try {
      return await fn();
    } finally {
      this.running.set(key, this.running.get(key)! - 1);
    }
  }
}

/** Workflows' limits (issue #28 item 5): per-type and per-key concurrency, rate-limit keys, stamped on every pass. */
export function workflowLimitsContract(engine: EngineFixture): void {
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
  function make(opts: Partial<WorkflowsOptions> & Pick<WorkflowsOptions, 'workflows'>, on: Store = store): Workflows {
    const w = createWorkflows(on, { namespace: ns(), idlePollIntervalMs: 50, backoffBaseMs: 20, ...opts });
    open.push(w as Workflows<unknown>);
    return w;
  }

  it("concurrencyKey 'workflow' with two worker stores: never two passes of the type at once, yet every run completes", async () => {
    const namespace = ns();
    const seen = new Overlap();
    const wf = defineWorkflow('serial', {
      limitKeys: { concurrencyKey: 'workflow' },
      async run(input: { n: number }, ctx) {
        const a = await ctx.step('a', () => seen.around('serial', () => delay(20).then(() => input.n)));
        return ctx.step('b', () => seen.around('serial', () => delay(20).then(() => a * 2)));
      },
    });
    const second = await db.open();
    const w1 = make({ workflows: [wf], namespace, concurrency: 4 });
    const w2 = make({ workflows: [wf], namespace, concurrency: 4 }, second);
    await Promise.all([w1.ready(), w2.ready()]);
    const ids: string[] = [];
    for (let n = 0; n < 6; n++) ids.push((await w1.start(wf, { n })).id);
    const results = await Promise.all(ids.map((id) => w2.waitForResult(id, { timeoutMs: 30_000 })));
    expect(results).toEqual([0, 2, 4, 6, 8, 10]);
    expect(seen.max.get('serial')).toBe(1);
  });

  it('a concurrencyKey from the input serialises the runs of one key; the createWorkflows limits apply at ready', async () => {
    const namespace = ns();
    const seen = new Overlap();
    const wf = defineWorkflow('tenant', {
      limitKeys: { concurrencyKey: (input: { tenant: string; n: number }) => `tenant:${input.tenant}` },
      run: async (input: { tenant: string; n: number }, ctx) =>
        ctx.step('work', () => seen.around(input.tenant, () => delay(20).then(() => input.n))),
    });
    const w = make({
      workflows: [wf],
      namespace,
      concurrency: 6,
      limits: { concurrencyLimit: 2, keyRateLimit: { max: 1000, perMs: 1000 } },
    });
    await w.ready();
    expect(await w.queue.settings()).toMatchObject({ concurrencyLimit: 2, keyRateLimit: { max: 1000, perMs: 1000 } });
    await w.queue.setLimits({ concurrencyLimit: 1 });
    const ids: string[] = [];
    for (let n = 0; n < 8; n++) ids.push((await w.start(wf, { tenant: n % 2 === 0 ? 'a' : 'b', n })).id);
    await Promise.all(ids.map((id) => w.waitForResult(id, { timeoutMs: 30_000 })));
    expect([seen.max.get('a'), seen.max.get('b')]).toEqual([1, 1]);
    // The key is journaled with the start.
    const [first] = await store.stream(`${namespace}:run:${ids[1]!}`).readSince(0, 1);
    expect(first!.payload).toMatchObject({ t: 'start', ck: 'tenant:b' });
  });

  it('every job that advances a run carries its priority and keys: the start, a signal, a timer (resumed: one above); a child run journals its own', async () => {
    const namespace = ns();
    const child = defineWorkflow('kid', { limitKeys: { concurrencyKey: 'workflow' }, run: async () => 1 });
    const wf = defineWorkflow('stamped', {
      limitKeys: { concurrencyKey: (i: { who: string }) => i.who, rateLimitKey: 'workflow' },
      async run(_i: { who: string }, ctx) {
        await ctx.waitForSignal('go');
        await ctx.sleep('1 h');
        return null;
      },
    });
    const parent = defineWorkflow('parent', {
      limitKeys: { concurrencyKey: 'workflow' },
      async run(_i: null, ctx) {
        const h = await ctx.startChild(child, null);
        return ctx.waitAll([h]);
      },
    });
    const starter = make({ workflows: [wf, child, parent], namespace, worker: false });
    const q = starter.queue.name;
    const { id } = await starter.start(wf, { who: 'ada' }, { priority: 7 });
    const want = { priority: 7, concurrencyKey: 'ada', rateKey: 'stamped' };
    expect((await jobRows(engine, db, q)).filter((r) => r.payload.id === id)).toEqual([
      { payload: { k: 'drive', id }, state: 'pending', ...want },
    ]);
    // A worker parks it on the signal; with the worker gone, the signal's pass waits in the table.
    const worker = make({ workflows: [wf, child, parent], namespace });
    await waitFor('parked on the signal', async () =>
      (await starter.getStatus(id))?.steps.some((s) => s.state === 'waiting'),
    );
    await worker.close();
    await starter.signal(id, 'go');
    const pending = (await jobRows(engine, db, q)).filter((r) => r.payload.id === id && r.state === 'pending');
    // A pass that resumes a parked run goes one priority above the run's own.
    expect(pending).toEqual([{ payload: { k: 'drive', id }, state: 'pending', ...want, priority: 8 }]);
    // The pass it drives journals the sleep; the timer job is stamped too.
    make({ workflows: [wf, child, parent], namespace });
    await waitFor('sleeping', async () => (await starter.getStatus(id))?.steps.some((s) => s.state === 'sleeping'));
    const timers = (await jobRows(engine, db, q)).filter((r) => r.payload.id === id && r.payload.k === 'timer');
    expect(timers).toEqual([{ payload: { k: 'timer', id }, state: 'pending', ...want, priority: 8 }]);
    // A child run gets its own keys, and runs to its parent's end.
    const p = await starter.start(parent, null);
    await expect(starter.waitForResult(p.id, { timeoutMs: 30_000 })).resolves.toEqual([1]);
    const [kidStart] = await store.stream(`${namespace}:run:${p.id}:0`).readSince(0, 1);
    expect(kidStart!.payload).toMatchObject({ t: 'start', wf: 'kid', pa: p.id, ck: 'kid' });
  });

  it('a signal-driven pass holds its key: it waits while another run of the key is in a step', async () => {
    const namespace = ns();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const events: string[] = [];
    const wf = defineWorkflow('keyed', {
      limitKeys: { concurrencyKey: 'workflow' },
      async run(input: { role: string }, ctx) {
        if (input.role === 'waiter') {
          await ctx.waitForSignal('go');
          await ctx.step('after-signal', () => void events.push('waiter ran'));
          return 'w';
        }
        await ctx.step('hold', async () => {
          events.push('holder in');
          await gate;
          events.push('holder out');
        });
        return 'h';
      },
    });
    const w = make({ workflows: [wf], namespace, concurrency: 4 });
    const waiter = await w.start(wf, { role: 'waiter' });
    await waitFor('waiter parked', async () =>
      (await w.getStatus(waiter.id))?.steps.some((s) => s.state === 'waiting'),
    );
    const holder = await w.start(wf, { role: 'holder' });
    await waitFor('holder in its step', () => events.includes('holder in'));
    await w.signal(waiter.id, 'go');
    // The signal's pass is committed, yet no claim (the worker's or this probe's) may take it while the holder runs.
    expect((await w.queue.stats()).pending).toBeGreaterThanOrEqual(1);
    expect(await w.queue.claimBatch(10, 'probe')).toEqual([]);
    release();
    await expect(w.waitForResult(waiter.id, { timeoutMs: 30_000 })).resolves.toBe('w');
    await expect(w.waitForResult(holder.id, { timeoutMs: 30_000 })).resolves.toBe('h');
    expect(events).toEqual(['holder in', 'holder out', 'waiter ran']);
  });

  it('bad limits are typed errors naming them: at define, at createWorkflows, and a key function returning a non-string at start, before any write', async () => {
    expect(() =>
      defineWorkflow('x', { limitKeys: { concurrencyKey: 'type' as 'workflow' }, run: async () => null }),
    ).toThrow(InvalidOption);
    expect(() =>
      defineWorkflow('x', { limitKeys: { concurrencyKey: 'type' as 'workflow' }, run: async () => null }),
    ).toThrow(/limitKeys\.concurrencyKey of workflow "x".*'workflow'/);
    expect(() => defineWorkflow('x', { limitKeys: { other: 'workflow' } as never, run: async () => null })).toThrow(
      /limitKeys\.other/,
    );
    // 0.2's word for the keys is refused, naming today's.
    expect(() =>
      defineWorkflow('x', { limits: { concurrencyKey: 'workflow' }, run: async () => null } as never),
    ).toThrow(/option limits of workflow "x" is now limitKeys/);
    const ok = defineWorkflow('x', { run: async () => null });
    expect(() => make({ workflows: [ok], limits: { concurrencyLimit: 0 } })).toThrow(InvalidArgument);
    expect(() => make({ workflows: [ok], limits: { concurrencyLimit: 0 } })).toThrow(/limits\.concurrencyLimit/);
    const namespace = ns();
    const bad = defineWorkflow('bad-key', {
      limitKeys: { rateLimitKey: (i: { n: number }) => i.n as unknown as string },
      run: async () => null,
    });
    const w = make({ workflows: [bad], namespace, worker: false });
    const err = await w.start(bad, { n: 5 }, { id: 'r1' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidArgument);
    expect((err as Error).message).toMatch(/rateLimitKey.*must return a string.*"bad-key".*number/);
    expect(await w.getStatus('r1')).toBeNull();
    expect(await jobRows(engine, db, w.queue.name)).toEqual([]);
    // The id is not taken: a start with a good key function succeeds under it.
    const good = defineWorkflow('bad-key', {
      version: 2,
      limitKeys: { rateLimitKey: (i: { n: number }) => String(i.n) },
      run: async () => null,
    });
    const w2 = make({ workflows: [good], namespace, worker: false });
    await expect(w2.start(good, { n: 5 }, { id: 'r1' })).resolves.toEqual({ id: 'r1', created: true });
    // ctx.startChild of a child whose key function fails throws in the parent's code, starting no child.
    const parent = defineWorkflow('parent-of-bad', {
      async run(_i: null, ctx) {
        try {
          await ctx.startChild(bad, { n: 1 });
          return 'started';
        } catch (e) {
          return `${(e as Error).name}: ${(e as Error).message}`;
        }
      },
    });
    const w3 = make({ workflows: [parent, bad] });
    const p = await w3.start(parent, null);
    await expect(w3.waitForResult(p.id, { timeoutMs: 30_000 })).resolves.toMatch(
      /^InvalidArgument: .*rateLimitKey.*must return a string/,
    );
    expect((await w3.getStatus(p.id))!.children).toEqual([]);
  });
}
