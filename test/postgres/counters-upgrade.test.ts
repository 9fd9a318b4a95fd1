import { afterAll, expect, it } from '@jest/globals';
import { POSTGRES_MIGRATIONS, openPostgresStore } from '../../lib/engines/postgres/index.js';
import type { Queue } from '../../lib/contract/types.js';
import { PG_URL, describePg } from '../helpers/engines.js';
import { dropSchema, freshSchema, withClient } from './pg-helpers.js';

const created: string[] = [];
afterAll(async () => {
  for (const s of created) await dropSchema(s);
});

const NOW = 'floor(extract(epoch from clock_timestamp()) * 1000)::bigint';

/** A queue's counts straight from its rows (the database clock for `scheduled`). */
async function rowCounts(
  schema: string,
  queue: string,
): Promise<{ pending: number; processing: number; dead: number; scheduled: number }> {
  const r = await withClient((c) =>
    c.query<{ pending: string; processing: string; dead: string; scheduled: string }>(
      `SELECT count(*) FILTER (WHERE state = 'pending') AS pending, count(*) FILTER (WHERE state = 'processing') AS processing,
              count(*) FILTER (WHERE state = 'dead') AS dead, count(*) FILTER (WHERE state = 'pending' AND run_at > ${NOW}) AS scheduled
       FROM "${schema}".jobs WHERE queue = $1`,
      [queue],
    ),
  );
  const row = r.rows[0]!;
  return {
    pending: Number(row.pending),
    processing: Number(row.processing),
    dead: Number(row.dead),
    scheduled: Number(row.scheduled),
  };
}

describePg('postgres migration 7 (inline counter deltas)', () => {
  it('takes over from the triggers of a schema at version 6: stats stay exact, and so through every later change', async () => {
    const schema = freshSchema('cnt7');
    created.push(schema);
    const s = `"${schema}"`;
    await withClient(async (c) => {
      await c.query(`CREATE SCHEMA ${s}`);
      await c.query(
        `CREATE TABLE ${s}.migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      for (const m of POSTGRES_MIGRATIONS.filter((x) => x.version <= 6)) {
        await c.query(m.sql(s));
        await c.query(`INSERT INTO ${s}.migrations (version, name) VALUES ($1, $2)`, [m.version, m.name]);
      }
      // Jobs in every state and in several future buckets, counted by migration 4's triggers.
      const cols =
        'queue, state, payload, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, run_at, enqueued_at, claimed_until, claim_token, died_at, ordering_key, blocked, unique_key';
      const row = (
        state: string,
        runAt: string,
        extra: {
          attempts?: number;
          claimedUntil?: string;
          orderingKey?: string;
          blocked?: boolean;
          uniqueKey?: string;
        } = {},
      ) =>
        `('up', '${state}', '"${state}"', ${extra.attempts ?? 0}, 2, 600000, 1000, ${runAt}, ${NOW},
          ${extra.claimedUntil ?? (state === 'processing' ? `${NOW} + 600000` : 'NULL')}, ${state === 'processing' ? 'gen_random_uuid()' : 'NULL'},
          ${state === 'dead' ? NOW : 'NULL'}, ${extra.orderingKey ? `'${extra.orderingKey}'` : 'NULL'}, ${extra.blocked ?? false}, ${extra.uniqueKey ? `'${extra.uniqueKey}'` : 'NULL'})`;
      await c.query(
        `INSERT INTO ${s}.jobs (${cols}) VALUES
         ${row('pending', `${NOW} - 5000`)}, ${row('pending', `${NOW} - 4000`)}, ${row('pending', `${NOW} - 3000`)},
         ${row('pending', `${NOW} + 60000`)}, ${row('pending', `${NOW} + 60000`)}, ${row('pending', `${NOW} + 120000`)}, ${row('pending', `${NOW} + 600000`)},
         ${row('pending', `${NOW} + 60000`, { uniqueKey: 'u' })},
         ${row('pending', `${NOW} - 2000`, { orderingKey: 'k' })}, ${row('pending', `${NOW} - 1000`, { orderingKey: 'k', blocked: true })},
         ${row('processing', NOW, { attempts: 1 })}, ${row('processing', NOW, { attempts: 1 })},
         ${row('processing', `${NOW} - 9000`, { attempts: 1, claimedUntil: `${NOW} - 1000` })},
         ${row('processing', `${NOW} - 8000`, { attempts: 2, claimedUntil: `${NOW} - 1000` })},
         ${row('dead', NOW)}, ${row('dead', NOW)}`,
      );
      // And one through version 6's enqueue function.
      await c.query(
        `SELECT ${s}.enqueue_job('up', '"fn"', 0, 2, 600000, 1000, NULL, 300000, NULL, NULL, 'alkstore:x', 'c:x', NULL, NULL, false, NULL)`,
      );
    });
    const before = await rowCounts(schema, 'up');
    expect(before).toEqual({ pending: 11, processing: 4, dead: 2, scheduled: 6 });

    const store = await openPostgresStore({ connectionString: PG_URL, schema });
    try {
      const triggers = await withClient((c) =>
        c.query(`SELECT tgname FROM pg_trigger WHERE tgrelid = '${s}.jobs'::regclass AND NOT tgisinternal`),
      );
      expect(triggers.rows).toEqual([]);
      const q: Queue = store.queue('up', { maxAttempts: 2, leaseMs: 600_000 });
      const check = async (step: string): Promise<void> => {
        const st = await q.stats();
        expect({
          step,
          pending: st.pending,
          processing: st.processing,
          dead: st.dead,
          scheduled: st.scheduled,
        }).toEqual({ step, ...(await rowCounts(schema, 'up')) });
      };
      await check('migrated');

      // Claims the three due jobs, the ordered head and the lapsed job; buries the exhausted one.
      const claimed = await q.claimBatch(10, 'w');
      expect(claimed.length).toBe(5);
      await check('claim after the upgrade');
      const head = claimed.find((j) => j.orderingKey === 'k')!;
      expect(await head.ack()).toBe(true);
      await check('ack promoting the blocked job');
      const plain = claimed.filter((j) => j.orderingKey === null);
      expect(await q.ackBatch(plain.slice(0, 2))).toBe(2);
      await check('ackBatch');
      expect(await plain[2]!.retry('later', 120_000)).toBe(true);
      await check('retry into a later bucket');
      expect(await plain[3]!.release()).toBe(true);
      await check('release');
      expect(await q.enqueue('u due', { uniqueKey: 'u', onConflict: 'replace' })).toBeGreaterThan(0);
      await check('replace moving a job counted by the triggers out of its future bucket');
      const later = (await store.admin().listJobs('up', { state: 'scheduled', limit: 10 })).jobs;
      expect(later.length).toBeGreaterThan(2);
      expect(await q.cancel(later[0]!.id)).toBe(true);
      await check('cancel of a job the triggers counted in a future bucket');
      const dead = await q.listDead();
      expect(dead.length).toBe(3);
      expect(await q.retryDead([dead[0]!.id])).toEqual({ moved: 1, conflicts: 0, conflictIds: [] });
      expect(await q.purgeDead([dead[1]!.id])).toBe(1);
      await check('retryDead and purgeDead');
      await q.enqueueMany(['a', 'b'], { delayMs: 600_000 });
      await q.enqueue('c');
      await check('enqueues');
      for (let i = 0; i < 80; i++) {
        const j = await q.claimOne('w');
        if (j === null) break;
        expect(await j.ack()).toBe(true);
      }
      await check('drained, with folds in between');

      // Hand-written SQL is not counted any more; recount_queue_counts repairs a queue from its rows.
      await withClient((c) =>
        c.query(
          `INSERT INTO ${s}.jobs (queue, payload, max_attempts, visibility_timeout_ms, backoff_base_ms, run_at, enqueued_at)
           SELECT 'up', '1', 2, 1000, 1000, ${NOW} + g * 60000, ${NOW} FROM generate_series(0, 3) g`,
        ),
      );
      expect((await q.stats()).pending).not.toBe((await rowCounts(schema, 'up')).pending);
      await withClient((c) => c.query(`SELECT ${s}.recount_queue_counts('up')`));
      await check('recounted');
      await (await q.claimOne('w'))!.fail('x');
      await check('after the recount');
    } finally {
      await store.close();
    }
  }, 60_000);
});
