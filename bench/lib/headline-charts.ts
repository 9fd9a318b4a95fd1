/**
 * `--charts` for the headline table: B2 drain by system, and the wake p50 /
 * p99 of every system same-process (B3) beside alkstore's cross-process wake
 * (B3x) and the bare NOTIFY round trips. B12's throughput over time is drawn
 * by the scale runner (bench/scale/index.ts).
 */
import type { Metrics } from '../workloads.js';
import type { Chart, Series } from '../scale/charts.js';

type Summaries = Record<string, Record<string, { median: number }>>;

/** Wake bars above this p50 (a polling system at its defaults) are left out of the chart and named under its x axis. */
const WAKE_CHART_MAX_MS = 100;

export function headlineCharts(summary: Summaries, scale: Metrics | null): Chart[] {
  const charts: Chart[] = [];
  const drain: Series = { name: 'B2 drain (median)', points: [] };
  for (const [sys, s] of Object.entries(summary))
    if (s['B2.drain_per_s']) drain.points.push({ x: sys, y: s['B2.drain_per_s'].median });
  if (drain.points.length > 0) {
    drain.points.sort((a, b) => b.y - a.y);
    charts.push({
      file: 'drain-by-system',
      title: 'B2: drain of pre-enqueued jobs, concurrency 10',
      yLabel: 'jobs per second',
      xLabel: 'system',
      series: [drain],
      kind: 'bar',
    });
  }
  const series: Series[] = [
    { name: 'same-process p50', points: [] },
    { name: 'same-process p99', points: [] },
    { name: 'cross-process p50', points: [] },
    { name: 'cross-process p99', points: [] },
  ];
  for (const [sys, s] of Object.entries(summary)) {
    if (s['B3.wake_p50_ms']) series[0]!.points.push({ x: sys, y: s['B3.wake_p50_ms'].median });
    if (s['B3.wake_p99_ms']) series[1]!.points.push({ x: sys, y: s['B3.wake_p99_ms'].median });
    if (sys === 'ref-postgres' && s['REF.notify_p50_ms']) {
      series[0]!.points.push({ x: 'bare NOTIFY', y: s['REF.notify_p50_ms'].median });
      series[1]!.points.push({ x: 'bare NOTIFY', y: s['REF.notify_p99_ms']!.median });
    }
  }
  for (const engine of ['sqlite', 'postgres'] as const) {
    const p50 = scale?.[`B3x.${engine}.wake_p50_ms`];
    const p99 = scale?.[`B3x.${engine}.wake_p99_ms`];
    if (p50 !== undefined) series[2]!.points.push({ x: `alkstore-${engine}`, y: p50 });
    if (p99 !== undefined) series[3]!.points.push({ x: `alkstore-${engine}`, y: p99 });
  }
  if (scale?.['B3x.postgres.notify_p50_ms'] !== undefined) {
    series[2]!.points.push({ x: 'bare NOTIFY', y: scale['B3x.postgres.notify_p50_ms'] });
    series[3]!.points.push({ x: 'bare NOTIFY', y: scale['B3x.postgres.notify_p99_ms']! });
  }
  // A system that finds new jobs by polling (pg-boss's default 2 s) would flatten every other bar on
  // a linear scale: it is left out of the bars and named under the x axis with its p50.
  const polling = series[0]!.points.filter((p) => p.y > WAKE_CHART_MAX_MS);
  for (const s of series) s.points = s.points.filter((p) => !polling.some((q) => q.x === p.x));
  if (series.some((s) => s.points.length > 0)) {
    const out =
      polling.length > 0
        ? ` (left out, p50 over ${WAKE_CHART_MAX_MS} ms: ${polling.map((p) => `${p.x} ${Math.round(p.y)} ms`).join(', ')})`
        : '';
    charts.push({
      file: 'wake-p50-p99',
      title: 'Wake: enqueue to handler start (B3, B3x)',
      yLabel: 'ms',
      xLabel: `system${out}`,
      series: series.filter((s) => s.points.length > 0),
      kind: 'bar',
    });
  }
  return charts;
}
