import { describe, expect, it } from '@jest/globals';
import { InvalidArgument } from '../../lib/contract/errors.js';
import type { RunRetentionOpts, Store } from '../../lib/contract/types.js';
import { createWorkflows, defineWorkflow } from '../../lib/workflows/index.js';
import { waitFor, type EngineFixture } from '../helpers/engines.js';
import { countRows, execRows, tableNames, type Table } from '../helpers/table-rows.js';
import { expectError, uid, useEnv } from './harness.js';

/**
 * Every table the migrations create has an owner that removes the rows of finished work (SPEC §12,
 * docs/operations.md "What each table holds, and what removes it"): each test fills a table, finishes
 * the work, runs the owner (the retention runner, a sweep, a documented prune) and counts the rows
 * with engine-level reads.
 */
export function retentionContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  const store = (): Store => env.store;
  const rows = (table: Table, where?: string, params?: readonly unknown[]): Promise<number> =>
    countRows(engine.kind, env.db.location, table, where, params);

  /** Runs the retention runner until `done` holds (a deadline, no fixed sleep), then stops it. */
  async function retainUntil(
    what: string,
    done: () => Promise<boolean>,
    opts: RunRetentionOpts = {},
    s: Store = store(),
  ): Promise<void> {
    const ac = new AbortController();
    const errors: unknown[] = [];
    const running = s.runRetention(ac.signal, {
      intervalMs: 20,
      everyQueue: true,
      onError: (err) => errors.push(err),
      ...opts,
    });
    try {
      await waitFor(
        what,
        async () => {
          if (errors.length > 0) throw errors[0];
          return done();
        },
        10_000,
        25,
      );
    } finally {
      ac.abort();
      await running;
    }
  }

  describe('retention: every table has an owner', () => {
    it('every table of the schema is one this suite knows the owner of (a new table needs one)', async () => {
      const known = new Set([
        'jobs',
        'job_outcomes',
        'job_attempts',
        'job_waits',
        'job_deps',
        'key_rate_windows',
        'queue_settings',
        'queue_counts',
        'queue_minutes',
        'queue_latency',
        'stream_heads',
        // SQLite's names of the stream tables
        'events',
        'offsets',
        'stream_events',
        'stream_offsets',
        'locks',
        'nodes',
        // Dead worker detection: the sweep of every claiming store deletes a dead worker's row
        'worker_liveness',
        // PostgreSQL: cross-process hand-off offers; each worker deletes its own, and the next offer on the queue deletes dead ones
        'idle_takers',
        'workflow_runs',
        'workflow_counts',
        'workflow_steps',
        'schedules',
        'inbox',
        'outbox_receipts',
        // PostgreSQL: the partitions of outbox_receipts (retention drops them) and their bookkeeping
        'outbox_receipts_default',
        'outbox_receipts_legacy',
        // PostgreSQL: the partitions of job_outcomes (retention drops the ranges; the table from before
        // the partitioning is the range below them, its rows swept by DELETE)
        'job_outcomes_default',
        'job_outcomes_legacy',
        'partition_widths',
        'range_partitions',
        'notify',
        'meta',
        'migrations',
      ]);
      const names = await tableNames(engine.kind, env.db.location);
      expect(names.length).toBeGreaterThan(10);
      expect(names.filter((n) => !known.has(n) && !/^(outbox_receipts|job_outcomes)_p\d+$/.test(n))).toEqual([]);
    });

    it('a worker node’s heartbeat row is deleted an hour after its last heartbeat, a live one kept', async () => {
      const admin = store().admin();
      const beat = (nodeId: string) =>
        admin.heartbeat({ nodeId, host: 'h', pid: 1, version: 'v', startedAt: 0, intervalMs: 10_000, queues: [] });
      const silent = uid('node-silent');
      const live = uid('node-live');
      await beat(silent);
      await beat(live);
      // Back-dated past NODE_REMOVED_AFTER_MS (one hour): the node stopped heartbeating long ago.
      await execRows(
        engine.kind,
        env.db.location,
        'UPDATE {nodes} SET heartbeat_at = heartbeat_at - 3700000 WHERE node_id = ?',
        [silent],
      );
      expect((await admin.nodes()).find((n) => n.nodeId === silent)?.gone).toBe(true);
      await retainUntil('the silent node removed', async () => (await rows('nodes', 'node_id = ?', [silent])) === 0);
      expect(await rows('nodes', 'node_id = ?', [live])).toBe(1);
      expect(await admin.forgetNode(live)).toBe(true);
    });

    it('delivery receipts older than receiptRetentionMs are deleted for every outbox', async () => {
      const outbox = store().outbox(uid('ob'));
      const id = await outbox.enqueue({ n: 1 });
      expect(await outbox.runOnce('w', async () => undefined)).toBe(true);
      await outbox.recordReceipts([{ messageId: id, receipt: { broker: 'test', seq: 1 } }]);
      expect(await rows('outbox_receipts', 'outbox = ?', [outbox.name])).toBe(1);
      await retainUntil(
        'the receipt pruned',
        async () => (await rows('outbox_receipts', 'outbox = ?', [outbox.name])) === 0,
        {
          receiptRetentionMs: 0,
        },
      );
      expect(await outbox.receipt(id)).toBeNull();
    });

    it('inbox entries past inboxRetentionMs are deleted, done, failed and dead alike, never below a known floor', async () => {
      const name = uid('ib');
      // A floor of 1 ms: its entries go as soon as they are older than that.
      const tiny = { maxDeliveries: 1, ackWaitMs: 1, maxBackoffMs: 0, producerHorizonMs: 0 };
      const inbox = store().inbox(name, tiny);
      const guarded = uid('ib-floor'); // the default floor (9.5 minutes) keeps its entries
      const floored = store().inbox(guarded);
      for (const ib of [inbox, floored]) {
        await store().withTx(async (tx) => expect(await ib.claim(tx, 'done-1')).toBe('claimed'));
        expect(await ib.fail('failed-1', new Error('once'))).toBe('retry');
      }
      const dead = store().inbox(name, { ...tiny, maxAttempts: 1 });
      expect(await dead.fail('dead-1', new Error('gone'))).toBe('dead');
      expect(await rows('inbox', 'inbox = ?', [name])).toBe(3);
      await retainUntil('the inbox pruned', async () => (await rows('inbox', 'inbox = ?', [name])) === 0, {
        inboxRetentionMs: 0,
      });
      expect(await rows('inbox', 'inbox = ?', [guarded])).toBe(2);
      // An inbox this store never opened is pruned when listed, at the retention given.
      const listed = uid('ib-listed');
      await env.other.withTx(async (tx) => expect(await env.other.inbox(listed).claim(tx, 'm')).toBe('claimed'));
      await retainUntil('the listed inbox pruned', async () => (await rows('inbox', 'inbox = ?', [listed])) === 0, {
        inboxRetentionMs: 0,
        inboxes: () => [listed],
      });
    });

    it('locks past their expiry are deleted; a held one stays', async () => {
      const lapsed = uid('lock');
      const held = uid('lock');
      expect(await store().tryLock(lapsed, 'me', 1)).not.toBeNull();
      expect(await store().tryLock(held, 'me', 600_000)).not.toBeNull();
      await retainUntil('the lapsed lock deleted', async () => (await rows('locks', 'name = ?', [lapsed])) === 0);
      expect(await rows('locks', 'name = ?', [held])).toBe(1);
    });

    it('events of a stream given a retention are trimmed by age; other streams keep theirs', async () => {
      const kept = store().stream(uid('st'));
      const aged = store().stream(uid('st'));
      for (let i = 0; i < 3; i++) {
        await kept.publish({ i });
        await aged.publish({ i });
      }
      await retainUntil(
        'the aged stream trimmed',
        async () => (await rows('stream_events', 'stream = ?', [aged.name])) === 0,
        {
          streamRetention: { [aged.name]: 0 },
        },
      );
      expect(await rows('stream_events', 'stream = ?', [kept.name])).toBe(3);
      // Offsets go on from where they were.
      expect(await aged.publish({ i: 3 })).toBe(4);
    });

    it('the audit log is trimmed after auditRetentionMs', async () => {
      const log = store().admin().auditLog();
      await log.publish({ action: 'test', actor: uid('actor') });
      await retainUntil(
        'the audit log trimmed',
        async () => (await rows('stream_events', 'stream = ?', [log.name])) === 0,
        {
          auditRetentionMs: 0,
        },
      );
    });

    it("the sweep reaches queues the database no longer lists: their outcome records, attempts and flows' rows go", async () => {
      const q = store().queue(uid('q'), { resultRetentionMs: 1 });
      // An outcome record, after a failed attempt.
      const kept = await q.enqueue({ n: 1 });
      await (await waitFor('a claim', () => q.claimOne('w')))!.retry(new Error('once'), 0);
      await (await waitFor('a claim', () => q.claimOne('w')))!.ack({ ok: true });
      // A dead letter, purged: its attempt row stays until a sweep.
      const dead = await q.enqueue({ n: 2 });
      await (await waitFor('a claim', () => q.claimOne('w')))!.fail(new Error('gone'));
      expect(await q.purgeDead([dead])).toBe(1);
      // A finished flow: its wait row and edge.
      const flow = await q.enqueueFlow({ payload: 'parent', children: [{ payload: 'child' }] });
      await (await waitFor('the child', () => q.claimOne('w')))!.ack();
      await (await waitFor('the parent', () => q.claimOne('w')))!.ack();
      const ids = [kept, dead, flow.id, flow.children[0]!.id];
      const left = async (): Promise<Record<string, number>> => {
        const inIds = `${ids.map(() => '?').join(', ')}`;
        return {
          jobs: await rows('jobs', `id IN (${inIds})`, ids),
          outcomes: await rows('job_outcomes', `id IN (${inIds})`, ids),
          attempts: await rows('job_attempts', `job_id IN (${inIds})`, ids),
          waits: await rows('job_waits', `job_id IN (${inIds})`, ids),
          deps: await rows('job_deps', `job_id IN (${inIds})`, ids),
        };
      };
      const before = await left();
      expect(before.outcomes + before.attempts + before.waits + before.deps).toBeGreaterThan(3);
      // A day later the queue's throughput minutes are gone, and with them its place in queueNames().
      await store().admin().throughput(q.name, 0);
      await execRows(engine.kind, env.db.location, 'DELETE FROM {queue_minutes} WHERE queue = ?', [q.name]);
      await execRows(engine.kind, env.db.location, 'DELETE FROM {queue_latency} WHERE queue = ?', [q.name]);
      expect(await store().admin().queueNames()).not.toContain(q.name);
      await retainUntil('the queue swept', async () => Object.values(await left()).every((n) => n === 0));
    });

    it('throughput minutes past the charts\u2019 day are deleted by the runner, even in a store that writes none', async () => {
      const s = await env.db.open();
      const queue = uid('q-min');
      const now = await s.now();
      const old = Math.floor((now - 2 * 86_400_000) / 60_000) * 60_000;
      // A day-old minute, written as the outcome counter writes them: a test cannot wait a day.
      await execRows(
        engine.kind,
        env.db.location,
        'INSERT INTO {queue_minutes} (queue, minute, completed) VALUES (?, ?, 1)',
        [queue, old],
      );
      await execRows(
        engine.kind,
        env.db.location,
        'INSERT INTO {queue_latency} (queue, minute, run_n) VALUES (?, ?, 1)',
        [queue, old],
      );
      await retainUntil(
        'the old minutes deleted',
        async () =>
          (await rows('queue_minutes', 'queue = ?', [queue])) + (await rows('queue_latency', 'queue = ?', [queue])) ===
          0,
        {},
        s,
      );
    });

    if (engine.kind === 'sqlite') {
      it('(SQLite only) wake rows older than a watcher may still read are deleted; the newest stays', async () => {
        const channel = uid('ch');
        for (let i = 0; i < 5; i++) await store().notify(channel);
        const now = await store().now();
        // Two minutes old, as if written then: a test does not wait for the wake rows' minute.
        await execRows(engine.kind, env.db.location, 'UPDATE {notify} SET created_at = ? WHERE channel = ?', [
          now - 120_000,
          channel,
        ]);
        await retainUntil('the old wake rows deleted', async () => {
          const newest = await rows('notify', 'id = (SELECT max(id) FROM {notify})');
          return (
            (await rows('notify', 'channel = ? AND id < (SELECT max(id) FROM {notify})', [channel])) === 0 &&
            newest === 1
          );
        });
      });
    }

    it('a pruned workflow run leaves nothing: journal, step rows, head, once-only guards, id guard and runs row', async () => {
      const namespace = uid('wfns').replace(/-/g, '_');
      const wf = defineWorkflow('ret-short', {
        async run(input: { n: number }, ctx) {
          const a = await ctx.step('a', () => input.n + 1);
          await ctx.sleep(1);
          return ctx.step('b', () => a * 2);
        },
      });
      const park = defineWorkflow('ret-park', { run: async (_i: null, ctx) => ctx.waitForSignal('go') });
      const w = createWorkflows(store(), {
        workflows: [wf, park],
        namespace,
        retentionMs: 1,
        idlePollIntervalMs: 50,
      });
      const journal = `${namespace}:journal`;
      const runsInbox = `${namespace}:runs`;
      const guardsOf = (id: string): Promise<number> =>
        rows('inbox', '(inbox = ? AND substr(message_id, 1, ?) = ?) OR (inbox = ? AND message_id = ?)', [
          journal,
          id.length + 1,
          `${id}#`,
          runsInbox,
          id,
        ]);
      const allGuards = (): Promise<number> => rows('inbox', 'inbox IN (?, ?)', [journal, runsInbox]);
      const runPrefix = `${namespace}:run:`;
      const heads = (): Promise<number> =>
        rows('stream_heads', 'substr(stream, 1, ?) = ?', [runPrefix.length, runPrefix]);
      const index = (): Promise<number> => rows('workflow_runs', 'ns = ?', [namespace]);
      const stepsOf = (id: string): Promise<number> => rows('workflow_steps', 'ns = ? AND run_id = ?', [namespace, id]);
      const allSteps = (): Promise<number> => rows('workflow_steps', 'ns = ?', [namespace]);
      try {
        const ids: string[] = [];
        for (let i = 0; i < 3; i++) ids.push((await w.start(wf, { n: i })).id);
        for (const id of ids) await w.waitForResult(id, { timeoutMs: 20_000 });
        // A run still waiting whose guards start like a finished run's: they stay.
        const live = `${ids[0]}#live`;
        await w.start(park, null, { id: live });
        await waitFor('the live run parked', async () => (await w.getStatus(live))?.steps.length === 1, 20_000);
        for (const id of ids) expect(await guardsOf(id)).toBeGreaterThan(1);
        // Each finished run's steps, its sleep and the sleep's end are rows; the live run's wait is one.
        for (const id of ids) expect(await stepsOf(id)).toBeGreaterThan(1);
        expect(await stepsOf(live)).toBe(1);
        const liveGuards = await guardsOf(live);
        expect(liveGuards).toBeGreaterThanOrEqual(1);
        expect(await heads()).toBe(4);

        await waitFor('the runs past their retention', async () => (await w.prune()) === ids.length, 10_000, 25);
        // (The guards of ids[0] are counted with the live run's, whose ids start with `${ids[0]}#`.)
        for (const id of ids.slice(1)) expect(await guardsOf(id)).toBe(0);
        expect(await allGuards()).toBe(liveGuards);
        expect(await allSteps()).toBe(1);
        expect(await heads()).toBe(1);
        // The runs table keeps only the live run's row.
        expect(await index()).toBe(1);
        expect((await w.getStatus(live))!.state).toBe('running');

        expect(await w.cancel(live)).toBe(true);
        await waitFor('the live run pruned', async () => (await w.prune()) === 1, 10_000, 25);
        expect(await allGuards()).toBe(0);
        expect(await allSteps()).toBe(0);
        expect(await heads()).toBe(0);
        expect(await rows('stream_events', 'substr(stream, 1, ?) = ?', [runPrefix.length, runPrefix])).toBe(0);
        expect(await w.prune()).toBe(0);
        expect(await index()).toBe(0);
        expect(await w.list()).toEqual([]);
        // The id is free again.
        expect(await w.start(wf, { n: 5 }, { id: ids[0] })).toEqual({ id: ids[0], created: true });
        await expect(w.waitForResult(ids[0]!, { timeoutMs: 20_000 })).resolves.toBe(12);
      } finally {
        await w.close();
      }
    });

    it('refuses bad retention periods before any I/O, naming the field', async () => {
      const ac = new AbortController();
      ac.abort();
      const cases: RunRetentionOpts[] = [
        { receiptRetentionMs: -1 },
        { inboxRetentionMs: Number.NaN },
        { auditRetentionMs: 'long' as unknown as number },
        { streamRetention: { ok: -5 } },
        { streamRetention: { '': 5 } },
      ];
      for (const bad of cases) {
        const err = await expectError(() => store().runRetention(ac.signal, bad), InvalidArgument);
        expect(err.message).toMatch(/RetentionMs|streamRetention/);
      }
    });
  });
}
