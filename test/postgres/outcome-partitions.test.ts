import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { Queue, Store } from '../../lib/contract/types.js';
import { type EngineDb, describePg, postgres, waitFor } from '../helpers/engines.js';
import { partitionsOf, withClient } from './pg-helpers.js';

/**
 * PostgreSQL only: job outcome records are partitioned by ranges of job id, and the retention runner
 * retires a range by dropping its partition once every record in it is past its retention.
 */
describePg('postgres job outcomes: retention drops partitions', () => {
  let db: EngineDb;
  let store: Store;
  const s = (): string => `"${db.location}"`;
  const partitions = (): Promise<string[]> => partitionsOf(db.location, 'job_outcomes');
  const partitionOf = (id: number): Promise<string> =>
    withClient(
      async (c) =>
        (
          await c.query<{ p: string }>(`SELECT tableoid::regclass::text AS p FROM ${s()}.job_outcomes WHERE id = $1`, [
            id,
          ])
        ).rows[0]!.p,
    );
  const retire = (): Promise<number> =>
    withClient(async (c) => Number((await c.query(`SELECT ${s()}.retire_outcome_partitions() AS n`)).rows[0].n));
  /** Records of `ids` made past their retention two hours ago. */
  const expire = (ids: readonly number[]): Promise<unknown> =>
    withClient((c) =>
      c.query(`UPDATE ${s()}.job_outcomes SET keep_until = keep_until - 7200000 WHERE id = ANY($1::bigint[])`, [ids]),
    );

  /**
   * Enqueues, claims and acks `n` jobs of `q` with a result each; resolves to their ids. The ranges are
   * made ahead of the ids issued (two widths, as a retention round does before each batch of ten).
   */
  async function completed(q: Queue, n: number): Promise<number[]> {
    const ids: number[] = [];
    for (let k = 0; k < n; k += 10) {
      await retire();
      ids.push(...(await q.enqueueMany(Array.from({ length: Math.min(10, n - k) }, (_, i) => ({ k: k + i })))));
    }
    let acked = 0;
    await waitFor(
      'every job acked',
      async () => {
        for (const job of await q.claimBatch(n, 'w')) if (await job.ack({ r: job.id })) acked++;
        return acked === n;
      },
      10_000,
      10,
    );
    return ids;
  }

  beforeAll(async () => {
    db = await postgres.create();
    store = await db.open();
    // Ids well above the migration's ranges, and ranges of 10 ids from there.
    await withClient(async (c) => {
      await c.query(`UPDATE ${s()}.partition_widths SET width = 10 WHERE parent = 'job_outcomes'`);
      await c.query(`SELECT setval(pg_get_serial_sequence('${s()}.jobs', 'id'), 4999999)`);
    });
    await retire();
  });
  afterAll(async () => {
    await db.destroy();
  });

  it('the migration keeps the existing table as the range below its first id range, beside an empty default', async () => {
    const parts = await partitions();
    expect(parts).toEqual(expect.arrayContaining(['job_outcomes_default', 'job_outcomes_legacy']));
    expect(parts.filter((p) => /^job_outcomes_p\d+$/.test(p)).length).toBeGreaterThanOrEqual(2);
  });

  it('retention makes ranges ahead of the ids issued; a range whose records are all past retention is dropped', async () => {
    await retire();
    const q = store.queue('parts', { resultRetentionMs: 3_600_000 });
    const old = await completed(q, 25);
    expect(await partitionOf(old[0]!)).toMatch(/job_outcomes_p\d+$/);
    // Nothing is past its retention yet: every range stays.
    const before = await partitions();
    await retire();
    expect(await partitions()).toEqual(expect.arrayContaining(before));
    const recent = await completed(q, 5);
    await expire(old);
    const dropped = await retire();
    const after = await partitions();
    expect(before.filter((p) => !after.includes(p)).length).toBeGreaterThan(0);
    expect(dropped).toBeGreaterThanOrEqual(0);
    // The records past retention are gone (their ranges dropped, what is left purged by the sweep);
    // the recent ones are still read.
    await q.sweepExpired();
    for (const id of old) expect(await q.getJob(id)).toBeNull();
    for (const id of recent) expect((await q.getJob(id))?.result).toEqual({ r: id });
    expect(after).toContain('job_outcomes_default');
  });

  it('a record kept forever, or not yet past retention, survives the drop of its range in the default partition', async () => {
    // Ranges of 40 ids from 6000040 on.
    await withClient(async (c) => {
      await c.query(`UPDATE ${s()}.partition_widths SET width = 40 WHERE parent = 'job_outcomes'`);
      await c.query(`SELECT setval(pg_get_serial_sequence('${s()}.jobs', 'id'), 6000039)`);
    });
    await retire();
    const forever = store.queue('forever', { resultRetentionMs: null });
    const short = store.queue('short', { resultRetentionMs: 3_600_000 });
    const kept = await completed(forever, 1);
    const gone = await completed(short, 38);
    const keptLonger = await completed(short, 1);
    await completed(short, 45); // ids past the range of the others, so it is full
    await expire(gone);
    const rangeOf = await partitionOf(gone[0]!);
    // Survivors are moved when they are a tenth of their range at most, by its statistics.
    await withClient((c) => c.query(`ANALYZE ${s()}.job_outcomes`));
    await retire();
    expect(await partitions()).not.toContain(rangeOf.replace(/^.*\./, ''));
    for (const id of kept) expect((await forever.getJob(id))?.result).toEqual({ r: id });
    for (const id of keptLonger) expect((await short.getJob(id))?.result).toEqual({ r: id });
    for (const id of [...kept, ...keptLonger]) expect(await partitionOf(id)).toMatch(/job_outcomes_default$/);
  });

  it('a range with a job still pending waits for it, so its outcome does not land in the default partition', async () => {
    await retire();
    const q = store.queue('waiting', { resultRetentionMs: 3_600_000 });
    const [pending] = await q.enqueueMany([{ late: true }]);
    const done = await completed(store.queue('waiting-others', { resultRetentionMs: 3_600_000 }), 25);
    await expire(done);
    await retire();
    const job = await waitFor('the pending job claimed', async () => (await q.claimBatch(1, 'w'))[0], 10_000, 10);
    expect(job.id).toBe(pending);
    await job.ack({ r: 'late' });
    expect(await partitionOf(pending!)).toMatch(/job_outcomes_p\d+$/);
  });

  it('a transaction holding the outcomes table neither blocks retention nor loses a range: the next round drops it', async () => {
    await retire();
    const q = store.queue('held', { resultRetentionMs: 3_600_000 });
    const ids = await completed(q, 85);
    await completed(q, 45);
    await expire(ids);
    const before = await partitions();
    await withClient(async (holder) => {
      await holder.query('BEGIN');
      await holder.query(`SELECT count(*) FROM ${s()}.job_outcomes`);
      expect(await retire()).toBe(0);
      expect(await partitions()).toEqual(before);
      await holder.query('ROLLBACK');
    });
    await retire();
    const after = await partitions();
    expect(before.filter((p) => !after.includes(p)).length).toBeGreaterThan(0);
  });

  it('the retention runner retires outcome ranges in its rounds', async () => {
    const q = store.queue('runner', { resultRetentionMs: 3_600_000 });
    await retire();
    const ids = await completed(q, 85);
    await completed(q, 45);
    await expire(ids);
    const before = await partitions();
    const ac = new AbortController();
    let rounds = 0;
    const errors: unknown[] = [];
    const running = store.runRetention(ac.signal, {
      intervalMs: 20,
      onError: (err) => errors.push(err),
      queues: () => {
        rounds++;
        return [];
      },
    });
    try {
      await waitFor('two retention rounds', async () => rounds >= 2 || errors.length > 0, 10_000, 10);
    } finally {
      ac.abort();
      await running;
    }
    expect(errors).toEqual([]);
    const after = await partitions();
    expect(before.filter((p) => !after.includes(p)).length).toBeGreaterThan(0);
    // Ranges of 40: at least two held only those records, and went whole.
    let gone = 0;
    for (const id of ids) if ((await q.getJob(id)) === null) gone++;
    expect(gone).toBeGreaterThanOrEqual(40);
  });
});
