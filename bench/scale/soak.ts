/**
 * SOAK (opt-in, `--soak [minutes]`): steady enqueue at a fixed rate and a
 * draining worker on one queue for a bounded time, per engine. Samples RSS,
 * heap, the jobs table and its indexes, the counters table and (PostgreSQL)
 * dead tuples at the start, every 10 s and at the end. On PostgreSQL the run is
 * split in two halves: autovacuum as configured (when the server has it off,
 * the bench runs VACUUM on the two tables every 30 s instead, and says so in
 * `server_autovacuum_on`), then autovacuum disabled on the jobs and counters
 * tables (what happens when it does not keep up).
 */
import { now, sleep } from '../lib/util.js';
import type { Metrics } from '../workloads.js';
import { scaleTarget, type ScaleEngine, type ScaleTarget } from './env.js';
import { startWorker } from './worker.js';

/** Enqueues per second of the steady producer. */
const RATE = 200;

export interface SoakSample {
  t_s: number;
  phase: string;
  rss_mb: number;
  heap_mb: number;
  jobs_table_mb: number;
  jobs_indexes_mb: number;
  counters_mb: number;
  dead_tuples: number;
  live_rows: number;
}

async function sizes(t: ScaleTarget): Promise<Omit<SoakSample, 't_s' | 'phase' | 'rss_mb' | 'heap_mb'>> {
  if (t.engine === 'postgres') {
    const [r] = await t.sql<{ tbl: string; idx: string; cnt: string; dead: string; live: string }>(
      `SELECT pg_table_size('${t.jobs}') AS tbl, pg_indexes_size('${t.jobs}') AS idx, pg_total_relation_size('${t.schema}.queue_counts') AS cnt,
              coalesce((SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = '${t.jobs}'::regclass), 0) AS dead,
              coalesce((SELECT n_live_tup FROM pg_stat_user_tables WHERE relid = '${t.jobs}'::regclass), 0) AS live`,
    );
    return {
      jobs_table_mb: Number(r!.tbl) / 2 ** 20,
      jobs_indexes_mb: Number(r!.idx) / 2 ** 20,
      counters_mb: Number(r!.cnt) / 2 ** 20,
      dead_tuples: Number(r!.dead),
      live_rows: Number(r!.live),
    };
  }
  const rows = await t.sql<{ name: string; pgsize: number }>(
    'SELECT name, sum(pgsize) AS pgsize FROM dbstat GROUP BY name',
  );
  const size = (f: (n: string) => boolean): number =>
    rows.filter((r) => f(r.name)).reduce((a, r) => a + Number(r.pgsize), 0) / 2 ** 20;
  const [free] = await t.sql<{ n: number }>('SELECT freelist_count AS n FROM pragma_freelist_count');
  const [live] = await t.sql<{ n: number }>('SELECT count(*) AS n FROM __alkstore_jobs');
  return {
    jobs_table_mb: size((n) => n === '__alkstore_jobs'),
    jobs_indexes_mb: size((n) => n.startsWith('__alkstore_jobs_')),
    counters_mb: size((n) => n === '__alkstore_queue_counts'),
    dead_tuples: free!.n, // SQLite: free pages in the file
    live_rows: live!.n,
  };
}

export async function soakWorkload(
  engine: ScaleEngine,
  minutes: number,
  log: (m: string) => void,
): Promise<{ metrics: Metrics; samples: SoakSample[] }> {
  const t = await scaleTarget(engine);
  const store = await t.open();
  const samples: SoakSample[] = [];
  const t0 = now();
  const sample = async (phase: string): Promise<SoakSample> => {
    const mem = process.memoryUsage();
    const s = {
      t_s: (now() - t0) / 1000,
      phase,
      rss_mb: mem.rss / 2 ** 20,
      heap_mb: mem.heapUsed / 2 ** 20,
      ...(await sizes(t)),
    };
    samples.push(s);
    return s;
  };
  try {
    const q = store.queue('soak');
    const w = startWorker(q, 'soak');
    // A server with autovacuum off (test setups often have it) gets a stand-in that keeps up: the
    // bench itself runs VACUUM on the two tables every 30 s during the first half.
    const serverAutovacuum =
      engine === 'postgres' ? (await t.sql<{ autovacuum: string }>('SHOW autovacuum'))[0]!.autovacuum === 'on' : false;
    const phases = engine === 'postgres' ? ['autovacuum', 'autovacuum off'] : ['steady'];
    let nextVacuum = Date.now() + 30_000;
    const perPhaseMs = (minutes * 60_000) / phases.length;
    let produced = 0;
    await sample('start');
    for (const phase of phases) {
      if (phase === 'autovacuum off') {
        await t.sql(`ALTER TABLE ${t.jobs} SET (autovacuum_enabled = false)`);
        await t.sql(`ALTER TABLE ${t.schema}.queue_counts SET (autovacuum_enabled = false)`);
      }
      const end = Date.now() + perPhaseMs;
      let nextSample = Date.now() + 10_000;
      const start = Date.now();
      while (Date.now() < end) {
        // Paced producer: catch up to RATE per second of this phase, in batches of at most 20 single enqueues.
        const due = Math.floor(((Date.now() - start) * RATE) / 1000);
        const burst = Math.min(20, due - produced);
        for (let i = 0; i < burst; i++) await q.enqueue({ i: produced++ });
        if (engine === 'postgres' && phase === 'autovacuum' && !serverAutovacuum && Date.now() >= nextVacuum) {
          await t.sql(`VACUUM ${t.jobs}`);
          await t.sql(`VACUUM ${t.schema}.queue_counts`);
          nextVacuum += 30_000;
        }
        if (Date.now() >= nextSample) {
          const s = await sample(phase);
          nextSample += 10_000;
          log(
            `SOAK ${engine} ${phase} t=${s.t_s.toFixed(0)}s rss ${s.rss_mb.toFixed(0)} MB heap ${s.heap_mb.toFixed(0)} MB jobs ${s.jobs_table_mb.toFixed(2)} MB idx ${s.jobs_indexes_mb.toFixed(2)} MB counters ${s.counters_mb.toFixed(2)} MB dead ${s.dead_tuples} live ${s.live_rows}`,
          );
        }
        await sleep(5);
      }
      await sample(`${phase} end`);
      produced = 0;
    }
    await w.stop();
    const first = samples[0]!;
    const last = samples[samples.length - 1]!;
    const p = `SOAK.${engine}.`;
    const metrics: Metrics = {};
    for (const k of ['rss_mb', 'heap_mb', 'jobs_table_mb', 'jobs_indexes_mb', 'counters_mb', 'dead_tuples'] as const) {
      metrics[`${p}${k}@start`] = first[k];
      metrics[`${p}${k}@end`] = last[k];
      metrics[`${p}${k}@max`] = Math.max(...samples.map((s) => s[k]));
    }
    const firstHalfEnd = samples.find((s) => s.phase === 'autovacuum end');
    if (firstHalfEnd) {
      metrics[`${p}jobs_table_mb@autovacuum_end`] = firstHalfEnd.jobs_table_mb;
      metrics[`${p}dead_tuples@autovacuum_end`] = firstHalfEnd.dead_tuples;
    }
    metrics[`${p}minutes`] = minutes;
    if (engine === 'postgres') metrics[`${p}server_autovacuum_on`] = serverAutovacuum ? 1 : 0;
    metrics[`${p}handled`] = w.handled();
    return { metrics, samples };
  } finally {
    await store.close();
    await t.cleanup();
  }
}
