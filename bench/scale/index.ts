/**
 * Scale workloads of `npm run bench` (alkstore only, one engine at a time):
 * cost as queues grow, fleets, fairness between processes, memory and a soak.
 * Sizes follow `--scale` (1 = 10k / 100k / 1M jobs).
 */
import type { Metrics } from '../workloads.js';
import { brokerWorkload } from './brokers.js';
import { depthWorkload } from './depth.js';
import { concurrentEnqueueWorkload } from './enqueue.js';
import { fairWorkload } from './fair.js';
import { chartsOf, writeChart, type Chart } from './charts.js';
import { fleetWorkload } from './fleet.js';
import { flowCostWorkload } from './flow-cost.js';
import { memWorkload } from './mem.js';
import { rateKeysWorkload } from './rate-keys.js';
import { retainWorkload } from './retain.js';
import { soakWorkload, type SoakSample } from './soak.js';
import type { ScaleEngine } from './env.js';
import { statsWorkload } from './stats.js';
import { crossWakeWorkload } from './wake-x.js';
import { xminWorkload, type XminOptions, type XminSecond } from './xmin.js';

export const SCALE_WORKLOADS = [
  'STATS',
  'B1CT',
  'B3x',
  'B12',
  'DEPTH',
  'FAIR',
  'FLEET',
  'MEM',
  'B8',
  'RATEKEYS',
  'FLOWCOST',
  'RETAIN',
] as const;
export type ScaleWorkloadId = (typeof SCALE_WORKLOADS)[number];

export interface ScaleOptions {
  /** Multiplier of the 10k / 100k / 1M size points. */
  scale: number;
  engines: ScaleEngine[];
  /** B3x: latency samples and the upper bound of its phase (ms). */
  samples: number;
  latencyPhaseMs: number;
  /** B12 phases, rate and autovacuum. */
  xmin: XminOptions;
  /** Jobs per round of B1CT. */
  jobs: number;
  /** Alternating rounds of before/after comparisons (B1CT, FAIR). */
  rounds: number;
  /** Seconds of one FAIR round. */
  fairSeconds: number;
  /** Minutes of the opt-in soak per engine, or null. */
  soakMinutes: number | null;
  /** Folder for `--charts`, or null. */
  chartsDir: string | null;
  /** DEPTH: its ready-job points instead of the scale points (`--depth-points`), or null. */
  depthPoints: number[] | null;
}

type Runner = (engine: ScaleEngine, o: ScaleOptions, log: (m: string) => void) => Promise<Metrics>;

const RUNNERS: Record<ScaleWorkloadId, Runner> = {
  STATS: (e, o, log) => statsWorkload(e, o.scale, log),
  // SQLite only since PostgreSQL migration 7: the enqueue statement writes its own counter delta,
  // so there is no trigger to switch off (bench/ab-ops.ts against a pre-0.2 checkout shows the cost).
  B1CT: async (e, o, log) => {
    if (e === 'sqlite') return concurrentEnqueueWorkload(e, o.jobs, Math.max(2, o.rounds * 2), log);
    log('B1CT postgres: skipped (counters are written inline since migration 7 and cannot be switched off)');
    return {};
  },
  B3x: (e, o, log) => crossWakeWorkload(e, o.samples, o.latencyPhaseMs, log),
  // PostgreSQL only: the xmin horizon and vacuum are PostgreSQL's.
  B12: async (e, o, log) => {
    if (e !== 'postgres') return {};
    const r = await xminWorkload(o.xmin, log);
    b12Seconds.push(...r.seconds);
    return r.metrics;
  },
  DEPTH: (e, o, log) => depthWorkload(e, o.scale, log, o.depthPoints),
  // SQLite only: PostgreSQL queues its lock waiters itself.
  FAIR: async (e, o, log) => (e === 'sqlite' ? fairWorkload(o.fairSeconds, o.rounds, log) : {}),
  // PostgreSQL only: SQLite has one writer per file.
  FLEET: async (e, o, log) => (e === 'postgres' ? fleetWorkload(o.scale, o.rounds, log) : {}),
  MEM: (e, _o, log) => memWorkload(e, log),
  // Outbox → NATS JetStream and RabbitMQ beside a bare publish loop (bench/scale/brokers.ts).
  B8: (e, o, log) => brokerWorkload(e, o.jobs, 200, log),
  // A limited claim with 100 keys ever used beside the same claim with 100 000 (bench/scale/rate-keys.ts).
  RATEKEYS: (e, o, log) => rateKeysWorkload(e, o.scale, log),
  // B2's drain with each kind of flow control beside the unlimited drain of the same run (bench/scale/flow-cost.ts).
  FLOWCOST: (e, o, log) => flowCostWorkload(e, o.scale, o.rounds, log),
  // B2's drain while retention retires 10M × scale finished rows, by DROP beside DELETE (bench/scale/retain.ts).
  RETAIN: (e, o, log) => retainWorkload(e, o.scale, log),
};

/** Per-second drain of the last B12 run (for its chart and the JSON). */
const b12Seconds: XminSecond[] = [];

export interface ScaleResult {
  metrics: Metrics;
  /** B12's per-second enqueued / drained counts. */
  b12: XminSecond[];
  errors: string[];
  soak: Record<string, SoakSample[]>;
  charts: string[];
}

export async function runScale(
  workloads: readonly ScaleWorkloadId[],
  o: ScaleOptions,
  log: (m: string) => void,
): Promise<ScaleResult> {
  const metrics: Metrics = {};
  const errors: string[] = [];
  const soak: Record<string, SoakSample[]> = {};
  for (const w of workloads) {
    for (const engine of o.engines) {
      log(`${w} ${engine}`);
      try {
        Object.assign(metrics, await RUNNERS[w](engine, o, log));
      } catch (err) {
        errors.push(`${w} ${engine}: ${(err as Error).message}`);
        log(`${w} ${engine} failed: ${(err as Error).message}`);
      }
    }
  }
  if (o.soakMinutes !== null) {
    for (const engine of o.engines) {
      log(`SOAK ${engine}: ${o.soakMinutes} min`);
      try {
        const r = await soakWorkload(engine, o.soakMinutes, log);
        Object.assign(metrics, r.metrics);
        soak[engine] = r.samples;
      } catch (err) {
        errors.push(`SOAK ${engine}: ${(err as Error).message}`);
      }
    }
  }
  const charts: string[] = [];
  if (o.chartsDir !== null) {
    const all: Chart[] = chartsOf(metrics);
    for (const k of ['jobs_table_mb', 'dead_tuples', 'rss_mb'] as const) {
      const series = Object.entries(soak).map(([engine, samples]) => ({
        name: engine,
        points: samples.map((s) => ({ x: `${Math.round(s.t_s / 60)}m`, y: s[k] })),
      }));
      if (series.length > 0)
        all.push({
          file: `soak-${k.replace(/_/g, '-')}`,
          title: `SOAK: ${k.replace(/_/g, ' ')}`,
          yLabel: k,
          xLabel: 'minutes into the run',
          series,
        });
    }
    if (b12Seconds.length > 0) {
      const pts = (k: 'enqueued' | 'drained'): { x: string; y: number }[] =>
        b12Seconds.map((s) => ({ x: `${s.t_s}`, y: s[k] }));
      all.push({
        file: 'b12-throughput',
        title: 'B12: held xmin, jobs per second (snapshot held in the middle phase)',
        yLabel: 'jobs per second',
        xLabel: 'seconds into the run',
        series: [
          { name: 'drained', points: pts('drained') },
          { name: 'enqueued', points: pts('enqueued') },
        ],
      });
    }
    for (const c of all) charts.push(...writeChart(o.chartsDir, c));
    log(`charts: ${charts.length} files in ${o.chartsDir}`);
  }
  return { metrics, errors, soak, charts, b12: b12Seconds };
}
