import {
  LATENCY_BOUNDS_MS,
  latencyQuantile,
  sumLatency,
  type LatencyStats,
  type ThroughputPoint,
} from '../contract/admin.js';
import { html, type SafeHtml } from './html.js';

const MINUTE = 60_000;
const HOUR = 3_600_000;

/** Per-minute totals of the last `minutes` minutes ending at `now` (oldest first). */
export function minuteSeries(
  points: readonly ThroughputPoint[],
  now: number,
  minutes = 60,
): { minute: number; ok: number; bad: number }[] {
  return bucketSeries(points, now, MINUTE, minutes);
}

/** Totals per `bucketMs` over the last `count` buckets ending at `now` (oldest first); `minute` is each bucket's start. */
export function bucketSeries(
  points: readonly ThroughputPoint[],
  now: number,
  bucketMs: number,
  count: number,
): { minute: number; ok: number; bad: number }[] {
  const last = Math.floor(now / bucketMs) * bucketMs;
  const first = last - (count - 1) * bucketMs;
  const series = Array.from({ length: count }, (_, i) => ({ minute: first + i * bucketMs, ok: 0, bad: 0 }));
  for (const p of points) {
    const i = Math.floor((p.minute - first) / bucketMs);
    if (i < 0 || i >= count) continue;
    series[i]!.ok += p.completed;
    series[i]!.bad += p.retried + p.dead;
  }
  return series;
}

/** Height of the time axis under a chart's plot. */
const AXIS_H = 14;

/**
 * The time axis under a chart: the start of the first, every quarter's and the last bucket, as
 * `HH:MM` (the zone named on the last label, and in every bar's title).
 */
export function timeAxis(starts: readonly number[], w: number, top: number): SafeHtml {
  const n = starts.length;
  if (n === 0) return html``;
  const bw = w / n;
  const picks = [...new Set([0, Math.round(n / 4), Math.round(n / 2), Math.round((3 * n) / 4), n - 1])];
  return html`<g class="time-axis"
    >${picks.map((i) => {
      const last = i === n - 1;
      const x = last ? w - 2 : i === 0 ? 2 : i * bw + bw / 2;
      const label = `${new Date(starts[i]!).toISOString().slice(11, 16)}${last ? ' UTC' : ''}`;
      return html`<line x1="${x.toFixed(1)}" x2="${x.toFixed(1)}" y1="${top}" y2="${top + 3}" class="tick" /><text
          x="${x.toFixed(1)}"
          y="${top + AXIS_H - 2}"
          class="axis time"
          text-anchor="${last ? 'end' : i === 0 ? 'start' : 'middle'}"
          >${label}</text
        >`;
    })}</g
  >`;
}

/**
 * A bar chart drawn as inline SVG (no script, no external asset): completed
 * jobs per minute in green, retried and dead stacked in red.
 */
export function throughputChart(
  points: readonly ThroughputPoint[],
  now: number,
  label: string,
  window: 'hour' | 'day' = 'hour',
): SafeHtml {
  const series = window === 'hour' ? minuteSeries(points, now) : bucketSeries(points, now, HOUR, 24);
  const unit = window === 'hour' ? 'min' : 'h';
  const w = 600;
  const h = 120;
  const top = Math.max(1, ...series.map((s) => s.ok + s.bad));
  const bw = w / series.length;
  const total = series.reduce((a, s) => a + s.ok, 0);
  const failed = series.reduce((a, s) => a + s.bad, 0);
  const bars = series.map((s, i) => {
    const okH = (s.ok / top) * (h - 14);
    const badH = (s.bad / top) * (h - 14);
    const x = (i * bw + 1).toFixed(1);
    const t = `${new Date(s.minute).toISOString().slice(11, 16)} UTC${window === 'day' ? ' (1 h)' : ''}: ${s.ok} completed, ${s.bad} retried/dead`;
    return html`<g
      ><title>${t}</title
      ><rect
        x="${x}"
        y="${(h - okH).toFixed(1)}"
        width="${(bw - 2).toFixed(1)}"
        height="${okH.toFixed(1)}"
        class="ok" /><rect
        x="${x}"
        y="${(h - okH - badH).toFixed(1)}"
        width="${(bw - 2).toFixed(1)}"
        height="${badH.toFixed(1)}"
        class="bad"
    /></g>`;
  });
  return html`<figure class="chart">
    <svg viewBox="0 0 ${w} ${h + AXIS_H}" width="${w}" height="${h + AXIS_H}" role="img" aria-label="${label}">
      <text x="4" y="11" class="axis">max ${top}/${unit}</text>
      ${bars}${timeAxis(
        series.map((x) => x.minute),
        w,
        h,
      )}
    </svg>
    <figcaption>
      ${label}: ${total} completed, ${failed} retried or dead in the last ${window === 'hour' ? 'hour' : '24 hours'}
    </figcaption>
  </figure>`;
}

/** Per-bucket latency over the last `count` buckets of `bucketMs` (oldest first): the kind's stats summed per bucket. */
export function latencySeries(
  points: readonly ThroughputPoint[],
  kind: 'wait' | 'run',
  now: number,
  bucketMs: number,
  count: number,
): { start: number; stats: LatencyStats }[] {
  const last = Math.floor(now / bucketMs) * bucketMs;
  const first = last - (count - 1) * bucketMs;
  const per: LatencyStats[][] = Array.from({ length: count }, () => []);
  for (const p of points) {
    const i = Math.floor((p.minute - first) / bucketMs);
    if (i >= 0 && i < count) per[i]!.push(p[kind]);
  }
  return per.map((all, i) => ({ start: first + i * bucketMs, stats: sumLatency(all) }));
}

/** A duration for an axis or a tooltip: 850 ms, 1.2 s, 3.5 min, 1.1 h. */
export function msText(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  if (ms < 3_600_000) return `${(ms / 60_000).toFixed(1)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

/**
 * Wait or run time as inline SVG: the p50 (line) and p95 (dashed line) of each minute (last hour)
 * or hour (last day), estimated from the stored histogram, on a log scale from 1 ms to the top
 * bucket. A bucket with no finished job has no point.
 */
export function latencyChart(
  points: readonly ThroughputPoint[],
  kind: 'wait' | 'run',
  now: number,
  label: string,
  window: 'hour' | 'day' = 'hour',
): SafeHtml {
  const series =
    window === 'hour' ? latencySeries(points, kind, now, MINUTE, 60) : latencySeries(points, kind, now, HOUR, 24);
  const w = 600;
  const h = 120;
  const topMs = LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1]!;
  const y = (ms: number): number => {
    const f = Math.log10(Math.max(1, ms)) / Math.log10(topMs);
    return h - 4 - Math.min(1, f) * (h - 18);
  };
  const bw = w / series.length;
  const line = (q: number): string =>
    series
      .map((s, i) => {
        const v = latencyQuantile(s.stats, q);
        return v === null ? null : `${(i * bw + bw / 2).toFixed(1)},${y(v).toFixed(1)}`;
      })
      .filter((p): p is string => p !== null)
      .join(' ');
  const dots = series.map((s, i) => {
    const p50 = latencyQuantile(s.stats, 0.5);
    if (p50 === null) return html``;
    const p95 = latencyQuantile(s.stats, 0.95)!;
    const t =
      `${new Date(s.start).toISOString().slice(11, 16)} UTC${window === 'day' ? ' (1 h)' : ''}: ${s.stats.count} ` +
      `jobs, p50 ${msText(p50)}, p95 ${msText(p95)}, mean ${msText(s.stats.sumMs / s.stats.count)}`;
    return html`<g
      ><title>${t}</title
      ><circle cx="${(i * bw + bw / 2).toFixed(1)}" cy="${y(p50).toFixed(1)}" r="2" class="p50" /><circle
        cx="${(i * bw + bw / 2).toFixed(1)}"
        cy="${y(p95).toFixed(1)}"
        r="2"
        class="p95"
    /></g>`;
  });
  const all = sumLatency(series.map((s) => s.stats));
  const p50 = latencyQuantile(all, 0.5);
  const p95 = latencyQuantile(all, 0.95);
  const grid = [10, 1000, 60_000].map(
    (ms) =>
      html`<line x1="0" x2="${w}" y1="${y(ms).toFixed(1)}" y2="${y(ms).toFixed(1)}" class="grid" /><text
          x="4"
          y="${(y(ms) - 2).toFixed(1)}"
          class="axis"
          >${msText(ms)}</text
        >`,
  );
  const what = kind === 'wait' ? 'waited (due to claimed)' : 'ran (claimed to finished)';
  const summary =
    all.count === 0
      ? `no job finished in the last ${window === 'hour' ? 'hour' : '24 hours'}`
      : `${all.count} jobs ${what}, p50 ${msText(p50!)}, p95 ${msText(p95!)} in the last ${window === 'hour' ? 'hour' : '24 hours'}`;
  return html`<figure class="chart latency" data-kind="${kind}">
    <svg viewBox="0 0 ${w} ${h + AXIS_H}" width="${w}" height="${h + AXIS_H}" role="img" aria-label="${label}">
      <text x="4" y="11" class="axis">p50 — p95 - - (log scale)</text>
      ${grid}
      <polyline points="${line(0.5)}" class="p50" />
      <polyline points="${line(0.95)}" class="p95" />
      ${dots}${timeAxis(
        series.map((x) => x.start),
        w,
        h,
      )}
    </svg>
    <figcaption>${label}: ${summary}</figcaption>
  </figure>`;
}
