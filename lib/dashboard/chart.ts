import type { ThroughputPoint } from '../contract/admin.js';
import { html, type SafeHtml } from './html.js';

const MINUTE = 60_000;
const HOUR = 3_600_000;

/** Per-minute totals of the last `minutes` minutes ending at `now` (oldest first). */
export function minuteSeries(points: readonly ThroughputPoint[], now: number, minutes = 60): { minute: number; ok: number; bad: number }[] {
  return bucketSeries(points, now, MINUTE, minutes);
}

/** Totals per `bucketMs` over the last `count` buckets ending at `now` (oldest first); `minute` is each bucket's start. */
export function bucketSeries(points: readonly ThroughputPoint[], now: number, bucketMs: number, count: number): { minute: number; ok: number; bad: number }[] {
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

/**
 * A bar chart drawn as inline SVG (no script, no external asset): completed
 * jobs per minute in green, retried and dead stacked in red.
 */
export function throughputChart(points: readonly ThroughputPoint[], now: number, label: string, window: 'hour' | 'day' = 'hour'): SafeHtml {
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
    return html`<g><title>${t}</title><rect x="${x}" y="${(h - okH).toFixed(1)}" width="${(bw - 2).toFixed(1)}" height="${okH.toFixed(1)}" class="ok"/><rect x="${x}" y="${(h - okH - badH).toFixed(1)}" width="${(bw - 2).toFixed(1)}" height="${badH.toFixed(1)}" class="bad"/></g>`;
  });
  return html`<figure class="chart"><svg viewBox="0 0 ${w} ${h}" width="${w}" height="${h}" role="img" aria-label="${label}"><text x="4" y="11" class="axis">max ${top}/${unit}</text>${bars}</svg>
<figcaption>${label}: ${total} completed, ${failed} retried or dead in the last ${window === 'hour' ? 'hour' : '24 hours'}</figcaption></figure>`;
}
