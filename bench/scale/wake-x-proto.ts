/**
 * SQL-level prototype of cross-process wake designs (issue #45 item 2), timed beside a bare NOTIFY,
 * samples interleaved in one process over separate connections (a producer, a listener and the
 * listener's own query connection, as a worker process has). Per sample, from just before the
 * producer's statement until the worker side is done:
 *
 * - notify:  `SELECT pg_notify` → notification arrives.
 * - durable: one-row INSERT + pg_notify in one autocommit statement → notification arrives.
 * - claim:   today's shape: INSERT pending job + pg_notify → notification → claim statement
 *            (SKIP LOCKED UPDATE of the head, durable commit) returns.
 * - byid:    design (1): the NOTIFY names the job; the worker claims that id (durable UPDATE
 *            fenced on state = 'pending') → returns.
 * - byid_deferred: byid with the claim committed `synchronous_commit = off`.
 * - handed:  design (2): the enqueue takes a slot of a registered idle worker (a row of an
 *            `idle` table, SKIP LOCKED) whose listener session still holds its advisory lock
 *            (alive) when no ready job waits (never overtake), inserts the job claimed by it and
 *            NOTIFYs id + token + payload → notification arrives (the worker runs it, no claim
 *            round trip). The registration (one async-commit UPDATE) is not timed.
 * - handed_noidle: the same insert and NOTIFY without the slot, liveness and overtake checks.
 *
 * Every statement is named (prepared), as the library's are; the kinds rotate in each round, each
 * sample after a random 5–25 ms gap. `REG_SYNC=on` commits the registration durably (no change
 * seen). docs/bench.md, "B3x on PostgreSQL: where the time goes, and a hand-off design".
 *
 *   npx tsx bench/scale/wake-x-proto.ts [samples=200]
 *
 * `--enqueue-cost` instead times what design (2) adds to every plain enqueue while no worker is
 * registered: a pending insert + NOTIFY with and without the probe of the (empty) idle table,
 * alternating one by one, each also with `synchronous_commit = off` (the statement without its flush).
 */
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { PG_URL, percentile, randomGap, sleep, epochNow } from '../lib/util.js';

const N = Number(process.argv[2] ?? 200);
const S = `b3xproto_${process.pid}`;
const prod = new pg.Client({ connectionString: PG_URL });
const lis = new pg.Client({ connectionString: PG_URL });
const wq = new pg.Client({ connectionString: PG_URL });
await Promise.all([prod.connect(), lis.connect(), wq.connect()]);
await prod.query(`CREATE SCHEMA ${S}`);
await prod.query(`CREATE TABLE ${S}.jobs (id bigserial PRIMARY KEY, queue text NOT NULL, state text NOT NULL, payload json,
  priority int NOT NULL DEFAULT 0, run_at bigint NOT NULL DEFAULT 0, attempts int NOT NULL DEFAULT 0,
  claim_token uuid, claimed_until bigint, worker_id text)`);
await prod.query(`CREATE INDEX ON ${S}.jobs (queue, priority DESC, run_at, id) WHERE state = 'pending'`);
await prod.query(
  `CREATE TABLE ${S}.idle (queue text, worker_id text, slots int NOT NULL, PRIMARY KEY (queue, worker_id))`,
);
await prod.query(`CREATE TABLE ${S}.ref (id bigserial PRIMARY KEY, v text)`);
await prod.query(`INSERT INTO ${S}.idle VALUES ('q', 'w1', 0)`);
await lis.query(`LISTEN ${S}`);
// the worker's listener session holds its liveness lock: an enqueue hands off only to a live worker
await lis.query(`SELECT pg_advisory_lock(hashtext('w1'))`);
let waiter: ((p: string) => void) | null = null;
lis.on('notification', (m) => waiter?.(m.payload ?? ''));
const next = () => new Promise<string>((r) => (waiter = r));
let named = 0;
const names = new Map<string, string>();
/** A named (prepared) statement, as the library's statements are: planned once per connection. */
function q(text: string, values: unknown[] = []): pg.QueryConfig {
  let name = names.get(text);
  if (name === undefined) names.set(text, (name = `p${named++}`));
  return { name, text, values };
}
const NOW = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;

const kinds = {
  async notify() {
    const got = next();
    await prod.query(q(`SELECT pg_notify($1, 'x')`, [S]));
    await got;
  },
  async durable() {
    const got = next();
    await prod.query(
      q(`WITH i AS (INSERT INTO ${S}.ref (v) VALUES ('x') RETURNING id) SELECT pg_notify($1, 'x') FROM i`, [S]),
    );
    await got;
  },
  async claim() {
    const got = next();
    await prod.query(
      q(
        `WITH i AS (INSERT INTO ${S}.jobs (queue, state, payload, run_at) VALUES ('q', 'pending', '{"a":1}', ${NOW}) RETURNING id) SELECT pg_notify($1, 'q') FROM i`,
        [S],
      ),
    );
    await got;
    const r = await wq.query(
      q(
        `UPDATE ${S}.jobs j SET state = 'processing', attempts = attempts + 1, claim_token = gen_random_uuid(), claimed_until = ${NOW} + 30000, worker_id = 'w1'
       FROM (SELECT id FROM ${S}.jobs WHERE queue = 'q' AND state = 'pending' AND run_at <= ${NOW} ORDER BY priority DESC, run_at, id LIMIT 10 FOR UPDATE SKIP LOCKED) p
       WHERE j.id = p.id RETURNING j.*`,
      ),
    );
    if (r.rowCount !== 1) throw new Error('claim');
  },
  async byid() {
    await byId(false);
  },
  async byid_deferred() {
    await byId(true);
  },
  async handed() {
    const got = next();
    await prod.query(
      q(
        `WITH w AS (UPDATE ${S}.idle i SET slots = i.slots - 1 FROM (SELECT queue, worker_id FROM ${S}.idle
                    WHERE queue = 'q' AND slots > 0 AND NOT pg_try_advisory_xact_lock_shared(hashtext(worker_id))
                      AND NOT EXISTS (SELECT 1 FROM ${S}.jobs p WHERE p.queue = 'q' AND p.state = 'pending' AND p.priority >= 0 AND p.run_at <= ${NOW})
                    LIMIT 1 FOR UPDATE SKIP LOCKED) s
                  WHERE i.queue = s.queue AND i.worker_id = s.worker_id RETURNING i.worker_id),
       ins AS (INSERT INTO ${S}.jobs (queue, state, payload, run_at, attempts, claim_token, claimed_until, worker_id)
               SELECT 'q', CASE WHEN w.worker_id IS NULL THEN 'pending' ELSE 'processing' END, '{"a":1}', ${NOW},
                 CASE WHEN w.worker_id IS NULL THEN 0 ELSE 1 END, CASE WHEN w.worker_id IS NOT NULL THEN gen_random_uuid() END,
                 CASE WHEN w.worker_id IS NOT NULL THEN ${NOW} + 30000 END, w.worker_id
               FROM (SELECT 1) one LEFT JOIN w ON true RETURNING *)
       SELECT pg_notify($1, json_build_object('id', ins.id, 'token', ins.claim_token, 'worker', ins.worker_id, 'payload', ins.payload)::text) FROM ins`,
        [S],
      ),
    );
    const p = JSON.parse(await got) as { worker: string | null };
    if (p.worker !== 'w1') throw new Error('not handed');
  },
  async handed_noidle() {
    const got = next();
    await prod.query(
      q(
        `WITH ins AS (INSERT INTO ${S}.jobs (queue, state, payload, run_at, attempts, claim_token, claimed_until, worker_id)
               VALUES ('q', 'processing', '{"a":1}', ${NOW}, 1, gen_random_uuid(), ${NOW} + 30000, 'w1') RETURNING *)
       SELECT pg_notify($1, json_build_object('id', ins.id, 'token', ins.claim_token, 'worker', ins.worker_id, 'payload', ins.payload)::text) FROM ins`,
        [S],
      ),
    );
    await got;
  },
};
async function byId(deferred: boolean) {
  const got = next();
  await prod.query(
    q(
      `WITH i AS (INSERT INTO ${S}.jobs (queue, state, payload, run_at) VALUES ('q', 'pending', '{"a":1}', ${NOW}) RETURNING id) SELECT pg_notify($1, i.id::text) FROM i`,
      [S],
    ),
  );
  const id = await got;
  const r = await wq.query(
    q(
      `WITH sc AS MATERIALIZED (SELECT CASE WHEN $2::boolean THEN set_config('synchronous_commit', 'off', true) END AS v)
     UPDATE ${S}.jobs j SET state = 'processing', attempts = attempts + 1, claim_token = gen_random_uuid(), claimed_until = ${NOW} + 30000, worker_id = 'w1'
     FROM sc WHERE j.id = $1::bigint AND j.state = 'pending' RETURNING j.*`,
      [id, deferred],
    ),
  );
  if (r.rowCount !== 1) throw new Error('byid');
}

if (process.argv.includes('--enqueue-cost')) {
  await prod.query(`DELETE FROM ${S}.idle`);
  const plain = `WITH i AS (INSERT INTO ${S}.jobs (queue, state, payload, run_at) VALUES ('q', 'pending', '{"a":1}', ${NOW}) RETURNING id) SELECT pg_notify($1, 'q') FROM i`;
  const probed = `WITH w AS (UPDATE ${S}.idle i SET slots = i.slots - 1 FROM (SELECT queue, worker_id FROM ${S}.idle
       WHERE queue = 'q' AND slots > 0 AND NOT pg_try_advisory_xact_lock_shared(hashtext(worker_id)) LIMIT 1 FOR UPDATE SKIP LOCKED) s
       WHERE i.queue = s.queue AND i.worker_id = s.worker_id RETURNING i.worker_id),
     ins AS (INSERT INTO ${S}.jobs (queue, state, payload, run_at, attempts, claim_token, claimed_until, worker_id)
       SELECT 'q', CASE WHEN w.worker_id IS NULL THEN 'pending' ELSE 'processing' END, '{"a":1}', ${NOW},
         CASE WHEN w.worker_id IS NULL THEN 0 ELSE 1 END, CASE WHEN w.worker_id IS NOT NULL THEN gen_random_uuid() END,
         CASE WHEN w.worker_id IS NOT NULL THEN ${NOW} + 30000 END, w.worker_id
       FROM (SELECT 1) one LEFT JOIN w ON true RETURNING id)
     SELECT pg_notify($1, 'q') FROM ins`;
  const t: Record<string, number[]> = { plain: [], probed: [], plain_async: [], probed_async: [] };
  try {
    for (let i = 0; i < N * 5; i++) {
      for (const async of [false, true]) {
        await prod.query(`SET synchronous_commit = ${async ? 'off' : 'on'}`);
        for (const k of i % 2 === 0 ? ['plain', 'probed'] : ['probed', 'plain']) {
          const t0 = performance.now();
          await prod.query(q(k === 'plain' ? plain : probed, [S]));
          t[async ? `${k}_async` : k]!.push(performance.now() - t0);
        }
      }
      if (i % 200 === 0) await prod.query(`DELETE FROM ${S}.jobs`);
    }
    console.log(`enqueue cost, ${N * 5} each, alternating; p50 ms`);
    for (const [k, xs] of Object.entries(t)) console.log(`  ${k.padEnd(13)} p50 ${percentile(xs, 50).toFixed(3)}`);
    console.log(
      `  probed/plain ${(percentile(t.probed!, 50) / percentile(t.plain!, 50)).toFixed(3)}, without the flush ${(percentile(t.probed_async!, 50) / percentile(t.plain_async!, 50)).toFixed(3)}`,
    );
  } finally {
    await prod.query(`DROP SCHEMA ${S} CASCADE`);
    await Promise.all([prod.end(), lis.end(), wq.end()]);
  }
  process.exit(0);
}

const times: Record<string, number[]> = Object.fromEntries(Object.keys(kinds).map((k) => [k, []]));
const stmt: Record<string, number[]> = {};
const order = Object.keys(kinds) as (keyof typeof kinds)[];
try {
  for (let i = 0; i < N + 5; i++) {
    const rot = [...order.slice(i % order.length), ...order.slice(0, i % order.length)];
    for (const k of rot) {
      // design (2): the worker registered one idle slot before (soft state: not durable), untimed
      if (k === 'handed')
        await wq.query(
          `BEGIN; SET LOCAL synchronous_commit = ${process.env.REG_SYNC ?? 'off'}; UPDATE ${S}.idle SET slots = 1 WHERE queue = 'q' AND worker_id = 'w1'; COMMIT`,
        );
      await sleep(randomGap());
      const t0 = epochNow();
      const q0 = prod.query.bind(prod);
      let tq = 0;
      prod.query = (async (...a: unknown[]) => {
        const r = await (q0 as (...x: unknown[]) => Promise<unknown>)(...a);
        tq = epochNow();
        return r;
      }) as typeof prod.query;
      await kinds[k]();
      prod.query = q0;
      if (i >= 5) {
        times[k]!.push(epochNow() - t0);
        (stmt[k] ??= []).push(tq - t0);
      }
    }
    // keep the table small, as a drained queue is
    if (i % 20 === 0) await prod.query(`DELETE FROM ${S}.jobs`);
  }
  const n50 = percentile(times.notify!, 50);
  const n99 = percentile(times.notify!, 99);
  console.log(`B3x prototype, ${N} samples each, interleaved; ms and ratio to bare NOTIFY`);
  for (const k of order) {
    const p50 = percentile(times[k]!, 50);
    const p99 = percentile(times[k]!, 99);
    console.log(
      `  ${k.padEnd(14)} p50 ${p50.toFixed(2).padStart(6)} (${(p50 / n50).toFixed(2)}x)  p99 ${p99.toFixed(2).padStart(6)} (${(p99 / n99).toFixed(2)}x)  producer stmt p50 ${percentile(stmt[k]!, 50).toFixed(2)}`,
    );
  }
} finally {
  await prod.query(`DROP SCHEMA ${S} CASCADE`);
  await Promise.all([prod.end(), lis.end(), wq.end()]);
}
