/**
 * RETAIN: B2's drain at steady state while retention retires a large history of finished rows
 * (outbox delivery receipts, the table retention drops by partition on PostgreSQL), beside the
 * same drain while DELETE-based retention retires the same rows, in the same run.
 *
 * Per side, a fresh store: R receipts delivered two hours ago, then a claim loop (claimBatch(10),
 * ackBatch, as B2's worker) on a queue a producer keeps stocked, for a baseline phase of 15 s without
 * retention and then while the retention runner (`receiptRetentionMs` one hour, a round every
 * 500 ms) retires the R receipts (at least 15 s, rounds running on after the receipts are gone). Figures: drain per second and claim p50/p99 in each phase, the drain loss and claim
 * p99 ratio of the retention phase, how long retention took, and the table's size (with its
 * indexes; PostgreSQL: every partition) before and after.
 *
 * - `postgres.drop`: the receipts sit in ranges of message ids (10 partitions), so retention
 *   drops them;
 * - `postgres.delete`: the receipts sit outside the ranges retention makes (in the table kept from
 *   before the partitioning, and the default partition), so retention deletes them 10,000 at a time,
 *   as every table without partitions does;
 * - `postgres.outcomes.drop` and `postgres.outcomes.delete`: the same with up to 990,000 completed
 *   job outcome records past their retention, in ten id ranges or in the table kept from before the
 *   partitioning (the queue sweep's DELETE, one statement);
 * - `sqlite.delete`: SQLite's retention, DELETE in batches (no auto-vacuum: freed pages go to the
 *   file's free list and are reused, the file does not shrink).
 *
 *   npm run bench -- --workloads RETAIN [--engines sqlite,postgres] [--scale F]
 *
 * R is 10,000,000 × `--scale` (at least 100,000).
 */
import { now, percentile, sleep } from '../lib/util.js';
import type { Queue, Store } from '../../lib/contract/types.js';
import type { Metrics } from '../workloads.js';
import { label, scaleTarget, type ScaleEngine, type ScaleTarget } from './env.js';

const HOUR = 3_600_000;
const BASELINE_MS = 15_000;
const RETENTION_LIMIT_MS = 900_000;
const PARTITIONS = 10;
const OUTBOX = 'retained';
/** The queue whose outcome records (completed jobs with a result) the `outcomes` sides retire. */
const RESULTS = 'retained-results';
/** Outcome records the `outcomes` sides write at most: the ids below the migration's first range (one million). */
const OUTCOME_ROWS_MAX = 990_000;

/** What a side retires: outbox receipts, or job outcome records. */
type Table = 'receipts' | 'outcomes';

interface Phase {
  drained: number;
  ms: number;
  claims: number[];
}

/** Claims and acks batches of 10 on `q` until `until()` holds, the queue kept stocked by a producer. */
async function drainWhile(q: Queue, until: () => Promise<boolean> | boolean): Promise<Phase> {
  let drained = 0;
  let enqueued = 0;
  let stop = false;
  const claims: number[] = [];
  const producer = (async () => {
    while (!stop) {
      if (enqueued - drained < 20_000) {
        await q.enqueueMany(Array.from({ length: 1_000 }, (_, i) => ({ i })));
        enqueued += 1_000;
      } else await sleep(20);
    }
  })();
  const t0 = now();
  let checked = now();
  try {
    for (;;) {
      const c0 = now();
      const jobs = await q.claimBatch(10, 'retain');
      claims.push(now() - c0);
      if (jobs.length > 0) drained += await q.ackBatch(jobs);
      else await sleep(1);
      if (now() - checked > 200) {
        checked = now();
        if (await until()) break;
      }
    }
    return { drained, ms: now() - t0, claims };
  } finally {
    stop = true;
    await producer;
    // What is left on the queue goes, so the next phase starts from the same depth.
    for (;;) {
      const jobs = await q.claimBatch(1_000, 'retain');
      if (jobs.length === 0) break;
      await q.ackBatch(jobs);
    }
  }
}

async function receiptsLeft(t: ScaleTarget, table: Table): Promise<boolean> {
  if (table === 'outcomes') {
    const left = await t.sql(`SELECT 1 FROM ${t.schema}.job_outcomes WHERE queue = $1 LIMIT 1`, [RESULTS]);
    return left.length > 0;
  }
  const rows =
    t.engine === 'postgres'
      ? await t.sql(`SELECT 1 FROM ${t.schema}.outbox_receipts WHERE outbox = $1 LIMIT 1`, [OUTBOX])
      : await t.sql(`SELECT 1 FROM __alkstore_outbox_receipts WHERE outbox = ? LIMIT 1`, [OUTBOX]);
  return rows.length > 0;
}

/** Bytes of the receipts table with its indexes (PostgreSQL: every partition; SQLite: the whole file's used pages). */
async function receiptBytes(t: ScaleTarget, table: Table = 'receipts'): Promise<number> {
  if (t.engine === 'postgres') {
    const [r] = await t.sql<{ b: string }>(
      `SELECT coalesce(sum(pg_total_relation_size(relid)), 0) AS b FROM pg_partition_tree($1::regclass)`,
      [`${t.schema}.${table === 'outcomes' ? 'job_outcomes' : 'outbox_receipts'}`],
    );
    return Number(r!.b);
  }
  const [p] = await t.sql<{ n: number }>('SELECT page_count AS n FROM pragma_page_count');
  const [f] = await t.sql<{ n: number }>('SELECT freelist_count AS n FROM pragma_freelist_count');
  const [s] = await t.sql<{ n: number }>('SELECT page_size AS n FROM pragma_page_size');
  return (p!.n - f!.n) * s!.n;
}

async function fileBytes(t: ScaleTarget, table: Table): Promise<number> {
  if (t.engine === 'postgres') return receiptBytes(t, table);
  const [p] = await t.sql<{ n: number }>('SELECT page_count AS n FROM pragma_page_count');
  const [s] = await t.sql<{ n: number }>('SELECT page_size AS n FROM pragma_page_size');
  return p!.n * s!.n;
}

/** Writes `rows` receipts of OUTBOX delivered two hours ago, in id ranges (`drop`) or in the default partition. */
async function fill(t: ScaleTarget, side: 'drop' | 'delete', rows: number, log: (m: string) => void): Promise<void> {
  const t0 = now();
  const delivered = Date.now() - 2 * HOUR;
  const CHUNK = 500_000;
  if (t.engine === 'sqlite') {
    for (let lo = 1; lo <= rows; lo += CHUNK) {
      const hi = Math.min(rows, lo + CHUNK - 1);
      await t.sql(
        `WITH RECURSIVE g(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM g WHERE i < ?)
         INSERT INTO __alkstore_outbox_receipts (outbox, message_id, receipt, delivered_at)
         SELECT ?, i, '{"broker":"bench","seq":' || i || '}', ? FROM g`,
        [lo, hi, OUTBOX, delivered],
      );
    }
    await t.exec('ANALYZE');
  } else {
    const s = t.schema;
    const [q] = await t.sql<{ seq: string }>(`SELECT pg_get_serial_sequence($1, 'id') AS seq`, [`${s}.jobs`]);
    const seq = q!.seq;
    let first = 1;
    if (side === 'drop') {
      const width = Math.ceil(rows / PARTITIONS);
      await t.sql(`UPDATE ${s}.partition_widths SET width = $1 WHERE parent = 'outbox_receipts'`, [width]);
      // Ranges start above the table kept from before the partitioning (`first_id`) and are made ahead
      // of the ids issued: walk the sequence up from there so they cover the history.
      const [f] = await t.sql<{ id: string }>(
        `SELECT first_id AS id FROM ${s}.partition_widths WHERE parent = 'outbox_receipts'`,
      );
      const base = Math.max(Number(f!.id), width);
      for (let k = 0; k <= PARTITIONS; k++) {
        await t.sql(`SELECT setval($1::regclass, $2::bigint)`, [seq, base - 1 + k * width]);
        await t.sql(`SELECT ${s}.retire_receipt_partitions(${100 * 365 * 24 * HOUR})`);
      }
      const [m] = await t.sql<{ lo: string }>(
        `SELECT min(lo) AS lo FROM ${s}.range_partitions WHERE parent = 'outbox_receipts'`,
      );
      first = Number(m!.lo);
    }
    for (let lo = first; lo < first + rows; lo += CHUNK) {
      const hi = Math.min(first + rows - 1, lo + CHUNK - 1);
      await t.sql(
        `INSERT INTO ${s}.outbox_receipts (outbox, message_id, receipt, delivered_at)
         SELECT $1, i, json_build_object('broker', 'bench', 'seq', i), $2::bigint FROM generate_series($3::bigint, $4::bigint) AS g(i)`,
        [OUTBOX, delivered, lo, hi],
      );
    }
    // Every id of the history issued, as it would be.
    await t.sql(`SELECT setval($1::regclass, $2::bigint)`, [seq, first + rows + 1]);
    if (side === 'drop') {
      // The ranges were full by the time of those deliveries.
      await t.sql(`SELECT ${s}.retire_receipt_partitions(${100 * 365 * 24 * HOUR})`);
      await t.sql(`UPDATE ${s}.range_partitions SET full_at = $1::bigint WHERE full_at IS NOT NULL`, [delivered]);
    }
    await t.exec(`VACUUM ANALYZE ${s}.outbox_receipts`);
  }
  log(`RETAIN ${t.engine}.${side}: ${label(rows)} receipts written in ${((now() - t0) / 1000).toFixed(0)} s`);
}

/**
 * PostgreSQL: writes `rows` completed outcome records of RESULTS finished two hours ago and past their
 * retention for an hour, in id ranges of the job ids (`drop`: 10 partitions, made as the retention
 * step makes them, full for that long) or in the existing table the migration kept (`delete`).
 */
async function fillOutcomes(
  t: ScaleTarget,
  kind: 'drop' | 'delete',
  rows: number,
  log: (m: string) => void,
): Promise<void> {
  const t0 = now();
  const s = t.schema;
  const finished = Date.now() - 2 * HOUR;
  const [q] = await t.sql<{ seq: string }>(`SELECT pg_get_serial_sequence($1, 'id') AS seq`, [`${s}.jobs`]);
  const width = Math.ceil(rows / PARTITIONS);
  // drop: ids from 10M up, in ranges of `width`; delete: ids from 1 up, below the migration's first range.
  const first = kind === 'drop' ? 10_000_000 : 1;
  if (kind === 'drop') {
    for (let k = 0; k < PARTITIONS; k++) {
      const lo = first + k * width;
      await t.exec(
        `CREATE TABLE ${s}.job_outcomes_p${lo} PARTITION OF ${s}.job_outcomes FOR VALUES FROM (${lo}) TO (${lo + width})`,
      );
      await t.exec(
        `CREATE INDEX job_outcomes_p${lo}_forever_idx ON ${s}.job_outcomes_p${lo} (id) WHERE keep_until IS NULL`,
      );
      await t.sql(`INSERT INTO ${s}.range_partitions (parent, lo, hi, full_at) VALUES ('job_outcomes', $1, $2, $3)`, [
        lo,
        lo + width,
        finished,
      ]);
    }
  }
  const CHUNK = 200_000;
  for (let lo = first; lo < first + rows; lo += CHUNK) {
    const hi = Math.min(first + rows - 1, lo + CHUNK - 1);
    await t.sql(
      `INSERT INTO ${s}.job_outcomes (id, queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms,
         backoff_base_ms, run_at, enqueued_at, headers, result, finished_at, keep_until)
       SELECT i, $1, 'completed', json_build_object('i', i), 0, 1, 3, 30000, 1000, $2::bigint, $2::bigint, '{}'::json,
         json_build_object('ok', i), $2::bigint, $2::bigint + ${HOUR}
       FROM generate_series($3::bigint, $4::bigint) AS g(i)`,
      [RESULTS, finished, lo, hi],
    );
  }
  // Every id of the history issued; the drain's jobs come after them.
  await t.sql(`SELECT setval($1::regclass, $2::bigint)`, [
    q!.seq,
    first + (kind === 'drop' ? PARTITIONS * width : rows) + 1,
  ]);
  await t.exec(`VACUUM ANALYZE ${s}.job_outcomes`);
  log(
    `RETAIN ${t.engine}.outcomes.${kind}: ${label(rows)} outcome records written in ${((now() - t0) / 1000).toFixed(0)} s`,
  );
}

async function side(
  engine: ScaleEngine,
  kind: 'drop' | 'delete',
  rows: number,
  log: (m: string) => void,
  table: Table = 'receipts',
): Promise<Metrics> {
  const t = await scaleTarget(engine);
  let store: Store | null = null;
  try {
    store = await t.open();
    if (table === 'outcomes') await fillOutcomes(t, kind, rows, log);
    else await fill(t, kind, rows, log);
    // The fill's dirty pages and WAL are written out now, not during whichever phase a checkpoint falls in.
    if (t.engine === 'postgres') await t.exec('CHECKPOINT');
    const q = store.queue('retain-drain');
    const p = `RETAIN.${engine}.${table === 'outcomes' ? 'outcomes.' : ''}${kind}.`;
    const bytesBefore = await receiptBytes(t, table);
    const fileBefore = await fileBytes(t, table);
    const warm = now();
    await drainWhile(q, () => now() - warm > 2_000);
    const base0 = now();
    const base = await drainWhile(q, () => now() - base0 > BASELINE_MS);
    const ac = new AbortController();
    let pruned = 0;
    const errors: unknown[] = [];
    const r0 = now();
    const running = store.runRetention(ac.signal, {
      intervalMs: 500,
      receiptRetentionMs: HOUR,
      onPrune: (target, n) => {
        if (target === (table === 'outcomes' ? 'job outcomes' : 'outbox receipts')) pruned += n;
      },
      onSweep: (target, r) => {
        if (table === 'outcomes' && target === `queue ${JSON.stringify(RESULTS)}`) pruned += r.purged;
      },
      ...(table === 'outcomes' ? { queues: () => [RESULTS] } : {}),
      onError: (err) => errors.push(err),
    });
    let retainedMs = Number.NaN;
    const during = await drainWhile(q, async () => {
      if (errors.length > 0) throw errors[0] as Error;
      if (Number.isNaN(retainedMs) && !(await receiptsLeft(t, table))) retainedMs = now() - r0;
      // At least as long as the baseline, so both phases see the same number of retention rounds' edges.
      if (!Number.isNaN(retainedMs) && now() - r0 >= BASELINE_MS) return true;
      return now() - r0 > RETENTION_LIMIT_MS;
    });
    ac.abort();
    await running;
    if (t.engine === 'postgres')
      await t.exec(`VACUUM ${t.schema}.${table === 'outcomes' ? 'job_outcomes' : 'outbox_receipts'}`);
    const bytesAfter = await receiptBytes(t, table);
    const fileAfter = await fileBytes(t, table);
    const rate = (ph: Phase): number => (ph.drained * 1000) / ph.ms;
    const out: Metrics = {
      [`${p}drain_per_s@baseline`]: rate(base),
      [`${p}drain_per_s@retention`]: rate(during),
      [`${p}drain_loss`]: 1 - rate(during) / rate(base),
      [`${p}claim_p50_ms@baseline`]: percentile(base.claims, 50),
      [`${p}claim_p99_ms@baseline`]: percentile(base.claims, 99),
      [`${p}claim_p50_ms@retention`]: percentile(during.claims, 50),
      [`${p}claim_p99_ms@retention`]: percentile(during.claims, 99),
      [`${p}claim_p99_ratio`]: percentile(during.claims, 99) / percentile(base.claims, 99),
      [`${p}retention_s`]: retainedMs / 1000,
      [`${p}rows_retired`]: rows,
      [`${p}rows_reported`]: pruned,
      [`${p}table_mb@before`]: bytesBefore / 1e6,
      [`${p}table_mb@after`]: bytesAfter / 1e6,
      ...(engine === 'sqlite'
        ? { [`${p}file_mb@before`]: fileBefore / 1e6, [`${p}file_mb@after`]: fileAfter / 1e6 }
        : {}),
    };
    log(
      `RETAIN ${engine}.${table === 'outcomes' ? 'outcomes.' : ''}${kind}: ${label(rows)} ${table} retired in ${(retainedMs / 1000).toFixed(1)} s; drain ${rate(base).toFixed(0)}/s -> ${rate(during).toFixed(0)}/s (loss ${(100 * out[`${p}drain_loss`]!).toFixed(1)} %), claim p99 ${percentile(base.claims, 99).toFixed(2)} -> ${percentile(during.claims, 99).toFixed(2)} ms (${out[`${p}claim_p99_ratio`]!.toFixed(2)}x); table ${(bytesBefore / 1e6).toFixed(0)} MB -> ${(bytesAfter / 1e6).toFixed(1)} MB`,
    );
    return out;
  } finally {
    await store?.close();
    await t.cleanup();
  }
}

export async function retainWorkload(engine: ScaleEngine, scale: number, log: (m: string) => void): Promise<Metrics> {
  const rows = Math.max(100_000, Math.round(10_000_000 * scale));
  const out: Metrics = {};
  const kinds: ('drop' | 'delete')[] = engine === 'postgres' ? ['drop', 'delete'] : ['delete'];
  for (const k of kinds) Object.assign(out, await side(engine, k, rows, log));
  // Job outcome records (PostgreSQL): by DROP beside the queue sweep's DELETE.
  if (engine === 'postgres')
    for (const k of kinds) Object.assign(out, await side(engine, k, Math.min(rows, OUTCOME_ROWS_MAX), log, 'outcomes'));
  return out;
}
