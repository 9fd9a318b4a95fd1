/**
 * The promotion of ordering keys' next jobs alone, per-key (`ordering_next`, one call per key) against
 * one call for all keys (`ordering_next_keys`, migration 32), on one PostgreSQL connection: 1,000 keys
 * of 5 jobs, then rounds of 20 heads deleted (acked) and their keys promoted inside a transaction that is rolled
 * back, the two forms alternating; ms per promotion of 20 keys, medians.
 *
 *   npx tsx bench/ordering-promote.ts [rounds=400]
 */
import pg from 'pg';
import { openStore } from '../lib/index.js';
import { median, now } from './lib/util.js';

const ROUNDS = Number(process.argv[2] ?? 400);
const url = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `bench_okp_${process.pid}`;
const store = await openStore({ url, schema });
const q = store.queue('ok');
for (let n = 0; n < 5; n++)
  for (let k = 0; k < 1_000; k += 100)
    for (let i = k; i < k + 100; i++) await q.enqueue({ i, n }, { orderingKey: `k-${i}` });
await store.close();
const c = new pg.Client({ connectionString: url });
await c.connect();
const s = `"${schema}"`;
const heads = (
  await c.query<{ id: string; key: string }>(
    `SELECT id, ordering_key AS key FROM ${s}.jobs WHERE NOT blocked ORDER BY id`,
  )
).rows;
const times: Record<'perKey' | 'allKeys', number[]> = { perKey: [], allKeys: [] };
for (let r = 0; r < ROUNDS; r++) {
  const pick = heads.slice((r * 20) % (heads.length - 20), ((r * 20) % (heads.length - 20)) + 20);
  const ids = pick.map((h) => h.id);
  const keys = pick.map((h) => h.key);
  for (const form of r % 2 === 0 ? (['perKey', 'allKeys'] as const) : (['allKeys', 'perKey'] as const)) {
    await c.query('BEGIN');
    await c.query(`DELETE FROM ${s}.jobs WHERE id = ANY($1::bigint[])`, [ids]);
    const t0 = now();
    const res =
      form === 'perKey'
        ? await c.query(
            `SELECT sum(${s}.ordering_next('ok', k, $2::bigint[], 'x', 'y')) AS n FROM unnest($1::text[]) k`,
            [keys, ids],
          )
        : await c.query(
            `SELECT ${s}.ordering_next_keys(array_fill('ok'::text, ARRAY[20]), $1::text[], $2::bigint[], 'x', 'y') AS n`,
            [keys, ids],
          );
    times[form].push(now() - t0);
    if (Number(res.rows[0].n) !== 20) throw new Error(`${form} promoted ${res.rows[0].n}`);
    await c.query('ROLLBACK');
  }
}
if (process.env.KEEP !== '1') await c.query(`DROP SCHEMA ${s} CASCADE`);
await c.end();
const p = median(times.perKey);
const a = median(times.allKeys);
console.log(
  `promotion of 20 keys, ${ROUNDS} rounds: per key ${p.toFixed(3)} ms, all keys ${a.toFixed(3)} ms (${(a / p).toFixed(2)}x)`,
);
