/**
 * `--charts`: line charts of the scale curves as SVG (a small writer, no
 * plotting library), converted to PNG with headless Chromium when one is
 * installed (`chromium` on PATH or CHROMIUM_PATH). Written to a gitignored
 * folder (bench/charts/ by default).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Metrics } from '../workloads.js';

export interface Series {
  name: string;
  points: { x: string; y: number }[];
}

export interface Chart {
  file: string;
  title: string;
  yLabel: string;
  xLabel: string;
  series: Series[];
  /** `bar`: grouped bars per x category (systems); default `line`. */
  kind?: 'line' | 'bar';
}

const W = 720;
const H = 460;
const M = { left: 70, right: 170, top: 44, bottom: 90 };
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b'];

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function niceMax(v: number): number {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function fmt(v: number): string {
  if (v >= 1000) return `${Math.round(v / 100) / 10}k`.replace('.0k', 'k');
  if (v >= 10) return String(Math.round(v));
  return String(Math.round(v * 100) / 100);
}

/** The SVG text of one chart: categorical x (in the order first seen), linear y from 0. */
export function svgChart(c: Chart): string {
  const xs: string[] = [];
  for (const s of c.series) for (const p of s.points) if (!xs.includes(p.x)) xs.push(p.x);
  const ymax = niceMax(Math.max(...c.series.flatMap((s) => s.points.map((p) => p.y)).filter(Number.isFinite)) * 1.05);
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  const xAt = (x: string): number => M.left + (xs.length === 1 ? pw / 2 : (xs.indexOf(x) * pw) / (xs.length - 1));
  const yAt = (y: number): number => M.top + ph - (y / ymax) * ph;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="#fff"/>`,
    `<text x="${W / 2 - M.right / 2 + M.left / 2}" y="24" text-anchor="middle" font-size="15" font-weight="bold">${esc(c.title)}</text>`,
  ];
  for (let i = 0; i <= 5; i++) {
    const y = (ymax * i) / 5;
    out.push(`<line x1="${M.left}" x2="${M.left + pw}" y1="${yAt(y)}" y2="${yAt(y)}" stroke="#ddd"/>`);
    out.push(`<text x="${M.left - 8}" y="${yAt(y) + 4}" text-anchor="end">${fmt(y)}</text>`);
  }
  const xLabelAt = (x: string): number =>
    c.kind === 'bar' ? M.left + (xs.indexOf(x) + 0.5) * (pw / Math.max(1, xs.length)) : xAt(x);
  const every = c.kind === 'bar' ? 1 : Math.max(1, Math.ceil(xs.length / 12));
  xs.forEach((x, k) => {
    if (k % every !== 0) return;
    const rot = c.kind === 'bar' && xs.length > 6 ? ` transform="rotate(20 ${xLabelAt(x)} ${M.top + ph + 16})"` : '';
    out.push(
      `<text x="${xLabelAt(x)}" y="${M.top + ph + 16}" text-anchor="${rot ? 'start' : 'middle'}"${rot} font-size="${c.kind === 'bar' ? 10 : 12}">${esc(x)}</text>`,
    );
  });
  out.push(`<line x1="${M.left}" x2="${M.left}" y1="${M.top}" y2="${M.top + ph}" stroke="#333"/>`);
  out.push(`<line x1="${M.left}" x2="${M.left + pw}" y1="${M.top + ph}" y2="${M.top + ph}" stroke="#333"/>`);
  out.push(`<text x="${M.left + pw / 2}" y="${H - 12}" text-anchor="middle">${esc(c.xLabel)}</text>`);
  out.push(
    `<text transform="translate(18 ${M.top + ph / 2}) rotate(-90)" text-anchor="middle">${esc(c.yLabel)}</text>`,
  );
  const slot = pw / Math.max(1, xs.length);
  const barW = (slot * 0.8) / Math.max(1, c.series.length);
  c.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length]!;
    const pts = s.points.filter((p) => Number.isFinite(p.y));
    if (c.kind === 'bar') {
      for (const p of pts) {
        const x = M.left + xs.indexOf(p.x) * slot + slot * 0.1 + i * barW;
        out.push(
          `<rect x="${x}" y="${yAt(p.y)}" width="${barW}" height="${M.top + ph - yAt(p.y)}" fill="${color}"><title>${esc(`${s.name} ${p.x}: ${p.y}`)}</title></rect>`,
        );
      }
    } else {
      out.push(
        `<polyline fill="none" stroke="${color}" stroke-width="2.5" points="${pts.map((p) => `${xAt(p.x)},${yAt(p.y)}`).join(' ')}"/>`,
      );
      for (const p of pts)
        out.push(
          `<circle cx="${xAt(p.x)}" cy="${yAt(p.y)}" r="4" fill="${color}"><title>${esc(`${s.name} ${p.x}: ${p.y}`)}</title></circle>`,
        );
    }
    const ly = M.top + 10 + i * 20;
    out.push(
      `<line x1="${W - M.right + 14}" x2="${W - M.right + 38}" y1="${ly}" y2="${ly}" stroke="${color}" stroke-width="3"/>`,
    );
    out.push(`<text x="${W - M.right + 44}" y="${ly + 4}">${esc(s.name)}</text>`);
  });
  out.push('</svg>');
  return out.join('\n');
}

function chromium(): string | null {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH;
  for (const p of ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'])
    if (existsSync(p)) return p;
  return null;
}

/** Writes `<file>.svg` and, with Chromium, `<file>.png`; resolves to the files written. */
export function writeChart(dir: string, c: Chart): string[] {
  mkdirSync(dir, { recursive: true });
  const svg = resolve(dir, `${c.file}.svg`);
  writeFileSync(svg, svgChart(c));
  const files = [svg];
  const bin = chromium();
  if (bin) {
    const png = resolve(dir, `${c.file}.png`);
    try {
      execFileSync(
        bin,
        [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--hide-scrollbars',
          `--window-size=${W},${H}`,
          `--screenshot=${png}`,
          `file://${svg}`,
        ],
        { stdio: 'ignore', timeout: 60_000 },
      );
      if (existsSync(png)) files.push(png);
    } catch {
      // SVG only
    }
  }
  return files;
}

/**
 * Charts of every curve in `metrics`: keys `<W>.<engine>[.<variant>].<metric>@<point>`
 * become one chart per (W, metric) with a series per engine/variant.
 */
export function chartsOf(metrics: Metrics): Chart[] {
  const groups = new Map<string, Map<string, { x: string; y: number }[]>>();
  for (const [k, v] of Object.entries(metrics)) {
    const m = /^([A-Z0-9]+)\.([a-z]+(?:\.[a-z_]+)?)\.([a-z0-9_]+)@(.+)$/.exec(k);
    if (!m) continue;
    const [, w, series, metric, x] = m;
    if (/@(start|end|max|autovacuum_end)$/.test(k)) continue;
    if (w === 'B12' && /_(mb|tuples)$/.test(metric!)) continue; // sizes: start / during / after in the table, not a curve
    const key = `${w}.${metric}`;
    if (!groups.has(key)) groups.set(key, new Map());
    const g = groups.get(key)!;
    if (!g.has(series!)) g.set(series!, []);
    g.get(series!)!.push({ x: x!, y: v });
  }
  const charts: Chart[] = [];
  for (const [key, g] of groups) {
    const [w, metric] = key.split('.') as [string, string];
    const unit = metric.endsWith('_ms') ? 'ms' : metric.endsWith('_per_s') ? 'per second' : '';
    charts.push({
      file: key.replace(/\./g, '-').toLowerCase(),
      title: `${w}: ${metric.replace(/_/g, ' ')}`,
      yLabel: unit || metric,
      xLabel: w === 'FLEET' ? 'worker processes' : w === 'B12' ? 'phase (snapshot held during)' : 'jobs on the queue',
      series: [...g].map(([name, points]) => ({ name, points })),
    });
  }
  return charts;
}
