/**
 * Scale workloads of `npm run bench` (alkstore only, one engine at a time):
 * cost as queues grow, fleets, fairness between processes, memory and a soak.
 * Sizes follow `--scale` (1 = 10k / 100k / 1M jobs).
 */
import type { Metrics } from '../workloads.js';
import { depthWorkload } from './depth.js';
import { concurrentEnqueueWorkload } from './enqueue.js';
import { fairWorkload } from './fair.js';
import type { ScaleEngine } from './env.js';
import { statsWorkload } from './stats.js';

export const SCALE_WORKLOADS = ['STATS', 'B1C', 'DEPTH', 'FAIR'] as const;
export type ScaleWorkloadId = (typeof SCALE_WORKLOADS)[number];

export interface ScaleOptions {
  /** Multiplier of the 10k / 100k / 1M size points. */
  scale: number;
  engines: ScaleEngine[];
  /** Jobs per round of B1C. */
  jobs: number;
  /** Alternating rounds of before/after comparisons (B1C, FAIR). */
  rounds: number;
  /** Seconds of one FAIR round. */
  fairSeconds: number;
}

type Runner = (engine: ScaleEngine, o: ScaleOptions, log: (m: string) => void) => Promise<Metrics>;

const RUNNERS: Record<ScaleWorkloadId, Runner> = {
  STATS: (e, o, log) => statsWorkload(e, o.scale, log),
  B1C: async (e, o, log) => ({
    ...(await concurrentEnqueueWorkload(e, o.jobs, Math.max(2, o.rounds * 2), log)),
    ...(e === 'postgres' ? await concurrentEnqueueWorkload(e, o.jobs, Math.max(2, o.rounds * 2), log, true) : {}),
  }),
  DEPTH: (e, o, log) => depthWorkload(e, o.scale, log),
  // SQLite only: PostgreSQL queues its lock waiters itself.
  FAIR: async (e, o, log) => (e === 'sqlite' ? fairWorkload(o.fairSeconds, o.rounds, log) : {}),
};

export async function runScale(workloads: readonly ScaleWorkloadId[], o: ScaleOptions, log: (m: string) => void): Promise<{ metrics: Metrics; errors: string[] }> {
  const metrics: Metrics = {};
  const errors: string[] = [];
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
  return { metrics, errors };
}
