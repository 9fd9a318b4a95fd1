/**
 * B1CT (SQLite; PostgreSQL until its migration 7 moved the counters into the
 * statements): enqueue commit rate with 1 and 10 concurrent clients on one store, with
 * the queue counters of step 4 on and off, in many short rounds that
 * alternate the two (same schema, triggers switched between rounds), so the
 * shared disk's drifting fsync rate hits both alike. Shows what keeping
 * stats() constant costs a producer, and that concurrent enqueuers do not
 * serialise on a counter.
 */
import { QUEUE_COUNTS_STEP } from '../../lib/engines/sqlite/counts.sql.js';
import { median, now, payload } from '../lib/util.js';
import type { Metrics } from '../workloads.js';
import { scaleTarget, type ScaleEngine, type ScaleTarget } from './env.js';

const SQLITE_TRIGGERS = [
  '__alkstore_jobs_count_insert',
  '__alkstore_jobs_count_delete',
  '__alkstore_jobs_count_update',
];

async function setCounters(t: ScaleTarget, on: boolean): Promise<void> {
  if (t.engine === 'postgres') {
    throw new Error(
      'B1CT: PostgreSQL counters are written by the statements themselves (migration 7); nothing to switch off',
    );
  } else if (on) {
    await t.exec(QUEUE_COUNTS_STEP);
  } else {
    for (const tr of SQLITE_TRIGGERS) await t.sql(`DROP TRIGGER IF EXISTS ${tr}`);
  }
  // Switching writes pages (SQLite recounts the rows): checkpoint them so no round pays for it.
  if (t.engine === 'sqlite') await t.sql('PRAGMA wal_checkpoint(TRUNCATE)');
}

/**
 * `noSync` (PostgreSQL): the store's connections run with synchronous_commit
 * off, so the commit rate shows the CPU cost of the counters instead of the
 * shared disk's fsync rate.
 */
export async function concurrentEnqueueWorkload(
  engine: ScaleEngine,
  jobs: number,
  rounds: number,
  log: (m: string) => void,
  noSync = false,
): Promise<Metrics> {
  const t = await scaleTarget(engine);
  const saved = process.env.PGOPTIONS;
  if (noSync) process.env.PGOPTIONS = '-c synchronous_commit=off';
  const store = await t.open();
  const res: Record<string, number[]> = {};
  const tag = `${engine}${noSync ? '.nosync' : ''}`;
  try {
    const q = store.queue('b1c');
    // Ten connections opened now (while PGOPTIONS applies) and kept busy by the rounds.
    await Promise.all(Array.from({ length: 10 }, (_, c) => q.enqueue(payload(-1 - c))));
    if (noSync) {
      if (saved === undefined) delete process.env.PGOPTIONS;
      else process.env.PGOPTIONS = saved;
    }
    for (let r = 0; r < rounds; r++) {
      for (const clients of [1, 10]) {
        for (const on of r % 2 === 0 ? [true, false] : [false, true]) {
          await setCounters(t, on);
          const per = Math.ceil(jobs / clients);
          const t0 = now();
          await Promise.all(
            Array.from({ length: clients }, async (_, c) => {
              for (let i = 0; i < per; i++) await q.enqueue(payload(c * per + i));
            }),
          );
          const rate = (per * clients * 1000) / (now() - t0);
          (res[`B1CT.${tag}.enqueue_${clients}clients_counters_${on ? 'on' : 'off'}_per_s`] ??= []).push(rate);
          log(
            `B1CT ${tag} round ${r + 1}/${rounds}: ${clients} clients, counters ${on ? 'on ' : 'off'}: ${rate.toFixed(0)}/s`,
          );
        }
      }
    }
  } finally {
    await store.close();
    await t.cleanup();
  }
  const out: Metrics = {};
  for (const [k, v] of Object.entries(res)) out[k] = median(v);
  for (const c of [1, 10]) {
    const on = res[`B1CT.${tag}.enqueue_${c}clients_counters_on_per_s`]!;
    const off = res[`B1CT.${tag}.enqueue_${c}clients_counters_off_per_s`]!;
    // Per-round ratios (each pair measured back to back), then their median.
    out[`B1CT.${tag}.enqueue_${c}clients_on_over_off`] = median(on.map((v, i) => v / off[i]!));
  }
  return out;
}
