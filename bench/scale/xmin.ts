/**
 * B12 (PostgreSQL): a held xmin horizon. A producer enqueues at a steady rate
 * (default 800/s, one enqueue per commit) while the library's queue worker
 * (concurrency 10) drains; after a baseline, a REPEATABLE READ transaction on
 * another connection takes a snapshot and holds it (default 5 min, --quick
 * 30 s), then commits; the run goes on for a recovery phase. Reported per
 * phase (before / during / after): drain throughput, enqueue-to-handler p50 /
 * p99, and the jobs table's heap size, index size and dead tuples at the
 * start, at the end of the hold and at the end of the run; plus the drained
 * count of every second (the chart). Autovacuum runs at the server's setting,
 * or with `--b12-autovacuum` is also switched on for the bench's jobs table
 * (which only acts when the server's `autovacuum` is on). `--b12-holder
 * writer` holds the horizon the other common way: a READ COMMITTED
 * transaction that wrote one row (so it has a transaction id) and then sits
 * idle in transaction, as an application session that forgot to commit.
 * Every second the run also times one `stats()` call (p50 / p99 per phase):
 * the counters are what a held horizon could slow down.
 */
import pg from 'pg';
import { epochNow, now, percentile, sleep } from '../lib/util.js';
import type { Metrics } from '../workloads.js';
import { scaleTarget } from './env.js';
import { startWorker } from './worker.js';

export interface XminOptions {
  /** Enqueues per second. */
  rate: number;
  baselineS: number;
  holdS: number;
  afterS: number;
  /** Also set autovacuum_enabled (and an eager threshold) on the jobs table. */
  autovacuumOnTable: boolean;
  /** What holds the horizon (see above). */
  holder: 'snapshot' | 'writer';
}

export interface XminSecond {
  t_s: number;
  phase: 'before' | 'during' | 'after';
  enqueued: number;
  drained: number;
}

type Phase = XminSecond['phase'];

/** Enqueuing connections: one is a single sequential producer; more keep the rate when a commit is slow. */
const PRODUCERS = 4;

export async function xminWorkload(
  o: XminOptions,
  log: (m: string) => void,
): Promise<{ metrics: Metrics; seconds: XminSecond[] }> {
  const t = await scaleTarget('postgres');
  const store = await t.open();
  const holder = new pg.Client({ connectionString: t.url });
  await holder.connect();
  const m: Metrics = {};
  const seconds: XminSecond[] = [];
  let phase: Phase = 'before';
  const lat: Record<Phase, number[]> = { before: [], during: [], after: [] };
  const statsLat: Record<Phase, number[]> = { before: [], during: [], after: [] };
  const drained: Record<Phase, number> = { before: 0, during: 0, after: 0 };
  const enqueued: Record<Phase, number> = { before: 0, during: 0, after: 0 };
  const phaseMs: Record<Phase, number> = { before: 0, during: 0, after: 0 };
  let enq = 0;
  let drainedSecond = 0;
  let enqSecond = 0;
  try {
    const server = await t.sql<{ setting: string }>("SELECT setting FROM pg_settings WHERE name = 'autovacuum'");
    m['B12.postgres.server_autovacuum_on'] = server[0]?.setting === 'on' ? 1 : 0;
    if (o.autovacuumOnTable) {
      await t.exec(
        `ALTER TABLE ${t.jobs} SET (autovacuum_enabled = on, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0)`,
      );
      if (server[0]?.setting !== 'on')
        log(
          'B12: autovacuum is off on this server: the table setting has no effect (set autovacuum = on, e.g. on a second cluster via BENCH_PG_URL)',
        );
    }
    m['B12.postgres.table_autovacuum_on'] = o.autovacuumOnTable ? 1 : 0;
    m['B12.postgres.holder_writer'] = o.holder === 'writer' ? 1 : 0;
    if (o.holder === 'writer')
      await t.exec(`CREATE TABLE IF NOT EXISTS ${t.jobs}_b12_side (id int PRIMARY KEY, at timestamptz NOT NULL)`);
    const sizes = async (at: string): Promise<void> => {
      const r = await t.sql<{ heap: string; idx: string; dead: string; live: string }>(
        `SELECT pg_relation_size('${t.jobs}')::text AS heap, pg_indexes_size('${t.jobs}')::text AS idx,
                coalesce(n_dead_tup, 0)::text AS dead, coalesce(n_live_tup, 0)::text AS live
           FROM pg_stat_user_tables WHERE relid = '${t.jobs}'::regclass`,
      );
      const row = r[0]!;
      m[`B12.postgres.table_mb@${at}`] = Number(row.heap) / 2 ** 20;
      m[`B12.postgres.index_mb@${at}`] = Number(row.idx) / 2 ** 20;
      m[`B12.postgres.dead_tuples@${at}`] = Number(row.dead);
      m[`B12.postgres.live_tuples@${at}`] = Number(row.live);
    };
    const q = store.queue('b12');
    const w = startWorker(q, 'b12', (p) => {
      const sent = (p as { at?: number }).at;
      if (typeof sent === 'number') lat[phase].push(epochNow() - sent);
      drained[phase]++;
      drainedSecond++;
    });
    await sizes('start');
    const t0 = now();
    const end = t0 + (o.baselineS + o.holdS + o.afterS) * 1000;
    let stopped = false;
    // Producers: together they keep `enq` at rate × elapsed, one enqueue per commit.
    const producers = Array.from({ length: PRODUCERS }, async () => {
      while (!stopped) {
        const due = Math.floor(((now() - t0) * o.rate) / 1000);
        if (enq >= due) {
          await sleep(2);
          continue;
        }
        enq++;
        enqSecond++;
        enqueued[phase]++;
        await q.enqueue({ i: enq, kind: 'bench', at: epochNow() });
      }
    });
    let phaseStart = now();
    let statsBusy = false;
    const ticker = setInterval(() => {
      seconds.push({ t_s: Math.round((now() - t0) / 1000), phase, enqueued: enqSecond, drained: drainedSecond });
      enqSecond = 0;
      drainedSecond = 0;
      if (statsBusy) return;
      statsBusy = true;
      const at = phase;
      const s0 = now();
      void q
        .stats()
        .then(() => statsLat[at].push(now() - s0))
        .catch((err: unknown) => log(`B12: stats() failed: ${String(err)}`))
        .finally(() => (statsBusy = false));
    }, 1000);
    const enter = (next: Phase): void => {
      phaseMs[phase] = now() - phaseStart;
      phase = next;
      phaseStart = now();
    };
    try {
      await sleep(o.baselineS * 1000);
      if (o.holder === 'writer') {
        // A transaction id, no snapshot held between statements: idle in transaction after a write.
        await holder.query('BEGIN ISOLATION LEVEL READ COMMITTED');
        await holder.query(
          `INSERT INTO ${t.jobs}_b12_side (id, at) VALUES (1, now()) ON CONFLICT (id) DO UPDATE SET at = now()`,
        );
      } else {
        await holder.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
        await holder.query(`SELECT count(*) FROM ${t.jobs}`); // the snapshot is taken here and held
      }
      enter('during');
      log(`B12: ${o.holder === 'writer' ? 'a writing transaction left idle' : 'snapshot'} held for ${o.holdS} s`);
      await sleep(o.holdS * 1000);
      await sizes('during');
      await holder.query('COMMIT');
      enter('after');
      log('B12: snapshot released');
      await sleep(Math.max(0, end - now()));
      phaseMs.after = now() - phaseStart;
    } finally {
      stopped = true;
      clearInterval(ticker);
      await Promise.all(producers);
      await w.stop();
    }
    await sizes('after');
    for (const p of ['before', 'during', 'after'] as const) {
      m[`B12.postgres.drain_per_s@${p}`] = (drained[p] * 1000) / phaseMs[p];
      m[`B12.postgres.enqueue_per_s@${p}`] = (enqueued[p] * 1000) / phaseMs[p];
      m[`B12.postgres.latency_p50_ms@${p}`] = percentile(lat[p], 50);
      m[`B12.postgres.latency_p99_ms@${p}`] = percentile(lat[p], 99);
      m[`B12.postgres.stats_p50_ms@${p}`] = percentile(statsLat[p], 50);
      m[`B12.postgres.stats_p99_ms@${p}`] = percentile(statsLat[p], 99);
    }
    m['B12.postgres.enqueue_target_per_s'] = o.rate;
    m['B12.postgres.enqueued'] = enq;
    m['B12.postgres.drain_loss_during'] =
      1 - m['B12.postgres.drain_per_s@during']! / m['B12.postgres.drain_per_s@before']!;
    m['B12.postgres.p99_during_over_before'] =
      m['B12.postgres.latency_p99_ms@during']! / m['B12.postgres.latency_p99_ms@before']!;
    log(
      `B12: drain ${m['B12.postgres.drain_per_s@before']!.toFixed(0)} / ${m['B12.postgres.drain_per_s@during']!.toFixed(0)} / ${m['B12.postgres.drain_per_s@after']!.toFixed(0)} per s, p99 ${m['B12.postgres.latency_p99_ms@before']!.toFixed(1)} / ${m['B12.postgres.latency_p99_ms@during']!.toFixed(1)} ms, dead tuples ${m['B12.postgres.dead_tuples@start']} / ${m['B12.postgres.dead_tuples@during']} / ${m['B12.postgres.dead_tuples@after']}, stats() p50 ${m['B12.postgres.stats_p50_ms@before']!.toFixed(2)} / ${m['B12.postgres.stats_p50_ms@during']!.toFixed(2)} / ${m['B12.postgres.stats_p50_ms@after']!.toFixed(2)} ms`,
    );
    return { metrics: m, seconds };
  } finally {
    await holder.query('ROLLBACK').catch(() => undefined);
    await holder.end().catch(() => undefined);
    await store.close();
    await t.cleanup();
  }
}
