import { Arrivals, Counter, indexOf, now, payload, percentile, randomGap, sleep, waitUntil } from './lib/util.js';
import { ENQUEUE_BATCH, type SystemInstance } from './systems/types.js';

export const WORKLOADS = ['B1', 'B1b', 'B1C', 'B2', 'B3', 'B4', 'B5', 'B6', 'B7', 'B9', 'B10'] as const;
export type WorkloadId = (typeof WORKLOADS)[number];

export interface WorkloadConfig {
  /** N: jobs for B1/B1b/B2/B4 publish+replay and B5 throughput. */
  jobs: number;
  /** Latency samples for B3, B4 live and B5 latency. */
  samples: number;
  /** Upper bound of one workload phase (ms); a phase that hits it reports what it measured so far, flagged partial. */
  phaseTimeoutMs: number;
  /** Upper bound of one latency sample (ms); a sample that hits it counts as a timeout. */
  sampleTimeoutMs: number;
  /** Upper bound of one latency phase (ms): a polling system with ~0.5 s wakes stops short of `samples` (its sample count is reported). */
  latencyPhaseMs: number;
}

/** Metric name -> value. Throughputs are per second, latencies milliseconds. */
export type Metrics = Record<string, number>;

/** Latency samples discarded before measuring (first-call costs: prepared statements, JIT, pool connections). */
const WARMUP_SAMPLES = 5;
/** How long a freshly started worker idles before the first latency sample. */
const IDLE_BEFORE_MS = 300;

function rate(count: number, ms: number): number {
  return ms > 0 ? (count * 1000) / ms : Number.NaN;
}

async function timedSequential(
  n: number,
  timeoutMs: number,
  op: (i: number) => Promise<void>,
): Promise<{ done: number; ms: number }> {
  const t0 = now();
  const deadline = t0 + timeoutMs;
  let done = 0;
  for (let i = 0; i < n; i++) {
    await op(i);
    done += 1;
    if (now() > deadline) break;
  }
  return { done, ms: now() - t0 };
}

/** B1: N single enqueues, one commit each, awaited in sequence. */
async function b1(sys: SystemInstance, cfg: WorkloadConfig): Promise<Metrics> {
  const q = await sys.prepareQueue('b1');
  await sys.enqueue(q, payload(-1)); // first call pays connection / statement setup outside the timing
  const r = await timedSequential(cfg.jobs, cfg.phaseTimeoutMs, (i) => sys.enqueue(q, payload(i)));
  return { 'B1.enqueue_per_s': rate(r.done, r.ms), ...(r.done < cfg.jobs ? { 'B1.partial_count': r.done } : {}) };
}

/** Concurrent producers of B1C (web requests, each its own enqueue and commit). */
export const B1C_PRODUCERS = 16;

/**
 * B1C: N single enqueues from 16 concurrent producers (each awaiting its own
 * enqueue, one commit per job), as web requests enqueue. Compared with the
 * 16-client one-row insert commits of the same engine's reference.
 */
async function b1c(sys: SystemInstance, cfg: WorkloadConfig): Promise<Metrics> {
  const q = await sys.prepareQueue('b1c');
  await Promise.all(Array.from({ length: B1C_PRODUCERS }, (_, k) => sys.enqueue(q, payload(-1 - k)))); // pool connections and statements warmed outside the timing
  const per = Math.ceil(cfg.jobs / B1C_PRODUCERS);
  const t0 = now();
  const deadline = t0 + cfg.phaseTimeoutMs;
  const counts = await Promise.all(
    Array.from({ length: B1C_PRODUCERS }, async (_, k) => {
      let n = 0;
      for (let i = 0; i < per && now() < deadline; i++) {
        await sys.enqueue(q, payload(k * per + i));
        n++;
      }
      return n;
    }),
  );
  const done = counts.reduce((a, b) => a + b, 0);
  return {
    'B1C.enqueue_16producers_per_s': rate(done, now() - t0),
    ...(done < per * B1C_PRODUCERS ? { 'B1C.partial_count': done } : {}),
  };
}

/** B1b: N jobs enqueued in batches of ENQUEUE_BATCH with the system's batch call. */
async function b1b(sys: SystemInstance, cfg: WorkloadConfig): Promise<Metrics> {
  if (!sys.enqueueMany) return {};
  const many = sys.enqueueMany;
  const q = await sys.prepareQueue('b1b');
  // One batch of the measured size first, for every system: its statement setup (a multi-row statement is prepared on first use) stays outside the timing.
  await many(
    q,
    Array.from({ length: ENQUEUE_BATCH }, (_, i) => payload(-1 - i)),
  );
  const batches = Math.ceil(cfg.jobs / ENQUEUE_BATCH);
  const r = await timedSequential(batches, cfg.phaseTimeoutMs, (b) => {
    const ps = [];
    for (let i = b * ENQUEUE_BATCH; i < Math.min(cfg.jobs, (b + 1) * ENQUEUE_BATCH); i++) ps.push(payload(i));
    return many(q, ps);
  });
  const jobs = Math.min(cfg.jobs, r.done * ENQUEUE_BATCH);
  return { 'B1b.enqueue_per_s': rate(jobs, r.ms), ...(r.done < batches ? { 'B1b.partial_count': jobs } : {}) };
}

async function preEnqueue(sys: SystemInstance, q: string, n: number): Promise<void> {
  for (let start = 0; start < n; start += ENQUEUE_BATCH) {
    const ps = [];
    for (let i = start; i < Math.min(n, start + ENQUEUE_BATCH); i++) ps.push(payload(i));
    if (sys.enqueueMany) await sys.enqueueMany(q, ps);
    else for (const p of ps) await sys.enqueue(q, p);
  }
}

/** B2: N pre-enqueued jobs drained by a concurrency-10 worker with a no-op handler, timed until every job is completed. */
async function b2(sys: SystemInstance, cfg: WorkloadConfig): Promise<Metrics> {
  const q = await sys.prepareQueue('b2');
  await preEnqueue(sys, q, cfg.jobs);
  const handled = new Counter();
  const t0 = now();
  const w = await sys.startWorker(q, () => {
    handled.add();
  });
  try {
    try {
      await handled.reached(cfg.jobs, cfg.phaseTimeoutMs, 'B2 handlers');
    } catch {
      // A slow poller (pg-boss at its defaults: one job per 2 s poll per worker) reports what it drained, flagged partial.
      const done = await w.completed();
      return { 'B2.drain_per_s': rate(done, now() - t0), 'B2.partial_count': done };
    }
    const left = Math.max(1000, cfg.phaseTimeoutMs - (now() - t0));
    await waitUntil('B2 completions', async () => (await w.completed()) >= cfg.jobs, left, 5);
    return { 'B2.drain_per_s': rate(cfg.jobs, now() - t0) };
  } finally {
    await w.stop();
  }
}

function latencyMetrics(prefix: string, lat: number[], timeouts: number): Metrics {
  return {
    [`${prefix}_p50_ms`]: percentile(lat, 50),
    [`${prefix}_p95_ms`]: percentile(lat, 95),
    [`${prefix}_p99_ms`]: percentile(lat, 99),
    [`${prefix}_samples`]: lat.length,
    ...(timeouts > 0 ? { [`${prefix}_timeouts`]: timeouts } : {}),
  };
}

/**
 * One latency sample at a time: random 5–25 ms gap, `fire(i)` (t0 taken just before),
 * wait until `arrivals` sees sample i. Warm-up samples are discarded.
 */
async function sampleLatency(
  cfg: WorkloadConfig,
  arrivals: Arrivals,
  fire: (i: number, markT0: () => void) => Promise<void>,
): Promise<{ lat: number[]; timeouts: number }> {
  const lat: number[] = [];
  let timeouts = 0;
  const deadline = now() + cfg.latencyPhaseMs;
  for (let i = 0; i < cfg.samples + WARMUP_SAMPLES && now() < deadline; i++) {
    await sleep(randomGap());
    let t0 = now();
    await fire(i, () => {
      t0 = now();
    });
    const t1 = await arrivals.wait(i, cfg.sampleTimeoutMs);
    if (i < WARMUP_SAMPLES) continue;
    if (t1 === null) timeouts += 1;
    else lat.push(t1 - t0);
  }
  return { lat, timeouts };
}

/** B3: an idle running worker; enqueue one job and time until its handler starts. */
async function b3(sys: SystemInstance, cfg: WorkloadConfig): Promise<Metrics> {
  const q = await sys.prepareQueue('b3');
  const arrivals = new Arrivals();
  const w = await sys.startWorker(q, (p) => arrivals.mark(indexOf(p)));
  try {
    await sleep(IDLE_BEFORE_MS);
    const { lat, timeouts } = await sampleLatency(cfg, arrivals, (i, markT0) => sys.enqueue(q, payload(i), markT0));
    return latencyMetrics('B3.wake', lat, timeouts);
  } finally {
    await w.stop();
  }
}

/** B4 (streams): publish throughput, readSince replay throughput, live subscriber latency. */
async function b4(sys: SystemInstance, cfg: WorkloadConfig): Promise<Metrics> {
  const st = sys.streams;
  if (!st) return {};
  await st.publish('b4', payload(-1));
  const pub = await timedSequential(cfg.jobs, cfg.phaseTimeoutMs, async (i) => {
    await st.publish('b4', payload(i));
  });
  const t0 = now();
  const read = await st.replay('b4', 1000);
  const replayMs = now() - t0;
  const arrivals = new Arrivals();
  const sub = await st.subscribe('b4live', (p) => arrivals.mark(indexOf(p)));
  try {
    await sleep(IDLE_BEFORE_MS);
    const { lat, timeouts } = await sampleLatency(cfg, arrivals, async (i) => {
      await st.publish('b4live', payload(i));
    });
    return {
      'B4.publish_per_s': rate(pub.done, pub.ms),
      'B4.replay_per_s': rate(read, replayMs),
      ...latencyMetrics('B4.live', lat, timeouts),
    };
  } finally {
    await sub.stop();
  }
}

/**
 * B5 (outbox end to end): a business row and an outbox message committed in one
 * transaction, delivered by the system's dispatcher. Throughput: N sequential
 * producer transactions while the dispatcher runs, timed until all are
 * delivered. Latency: one message at a time, from just before the commit is
 * issued until the handler is called.
 */
async function b5(sys: SystemInstance, cfg: WorkloadConfig): Promise<Metrics> {
  const ob = sys.outbox;
  if (!ob) return {};
  const arrivals = new Arrivals();
  const handled = new Counter();
  const w = await ob.startDispatcher((p) => {
    arrivals.mark(indexOf(p));
    handled.add();
  });
  try {
    await sleep(IDLE_BEFORE_MS);
    const { lat, timeouts } = await sampleLatency(cfg, arrivals, (i, markT0) => ob.produce(payload(i), markT0));
    const base = handled.value;
    const t0 = now();
    const prod = await timedSequential(cfg.jobs, cfg.phaseTimeoutMs, (i) => ob.produce(payload(1_000_000 + i)));
    const produceMs = now() - t0;
    await handled.reached(base + prod.done, Math.max(1000, cfg.phaseTimeoutMs - produceMs), 'B5 deliveries');
    const total = base + prod.done;
    await waitUntil(
      'B5 completions',
      async () => (await w.completed()) >= total,
      Math.max(1000, cfg.phaseTimeoutMs - (now() - t0)),
      5,
    );
    return {
      'B5.e2e_per_s': rate(prod.done, now() - t0),
      'B5.produce_per_s': rate(prod.done, produceMs),
      ...latencyMetrics('B5.commit_to_handler', lat, timeouts),
    };
  } finally {
    await w.stop();
  }
}

/** B6 (unique jobs): N single enqueues with a uniqueKey, every second one conflicting with the still-pending job before it. */
async function b6(sys: SystemInstance, cfg: WorkloadConfig): Promise<Metrics> {
  const k = sys.keyed;
  if (!k) return {};
  const q = await sys.prepareQueue('b6');
  await k.enqueueUnique(q, 'warm-up', payload(-1));
  const r = await timedSequential(cfg.jobs, cfg.phaseTimeoutMs, (i) =>
    k.enqueueUnique(q, `u${Math.floor(i / 2)}`, payload(i)),
  );
  return {
    'B6.unique_enqueue_per_s': rate(r.done, r.ms),
    ...(r.done < cfg.jobs ? { 'B6.partial_count': r.done } : {}),
  };
}

/** Keys of B7. */
const B7_KEYS = 100;

/** B7 (ordered keys): N pre-enqueued jobs over 100 ordering keys drained by the concurrency-10 worker; each key in order. */
async function b7(sys: SystemInstance, cfg: WorkloadConfig): Promise<Metrics> {
  const k = sys.keyed;
  if (!k) return {};
  const q = await sys.prepareQueue('b7');
  const perKey = Math.max(1, Math.floor(cfg.jobs / B7_KEYS));
  for (let key = 0; key < B7_KEYS; key++) {
    for (let start = 0; start < perKey; start += ENQUEUE_BATCH) {
      const ps = [];
      for (let n = start; n < Math.min(perKey, start + ENQUEUE_BATCH); n++)
        ps.push({ ...(payload(key * perKey + n) as object), key, n });
      await k.enqueueOrdered(q, `key-${key}`, ps);
    }
  }
  const total = perKey * B7_KEYS;
  const last = new Array<number>(B7_KEYS).fill(-1);
  let outOfOrder = 0;
  const handled = new Counter();
  const t0 = now();
  const w = await sys.startWorker(q, (p) => {
    const { key, n } = p as { key: number; n: number };
    if (n !== last[key]! + 1) outOfOrder += 1;
    last[key] = n;
    handled.add();
  });
  try {
    await handled.reached(total, cfg.phaseTimeoutMs, 'B7 handlers');
    const left = Math.max(1000, cfg.phaseTimeoutMs - (now() - t0));
    await waitUntil('B7 completions', async () => (await w.completed()) >= total, left, 5);
    if (outOfOrder > 0) throw new Error(`B7: ${outOfOrder} jobs ran out of key order`);
    return { 'B7.ordered_drain_per_s': rate(total, now() - t0) };
  } finally {
    await w.stop();
  }
}

/** Children per flow of B9. */
export const B9_CHILDREN = 100;
/** Flows of B9's latency phase, one at a time. */
const B9_LATENCY_FLOWS = 5;

/**
 * B9 (fan-out/fan-in): flows of 1 parent × 100 children (children on their own queue, each queue with
 * the concurrency-10 worker). Throughput: N/100 flows enqueued back to back, until every parent ran.
 * Latency: one flow at a time, from the start of its enqueue to its parent's handler.
 */
async function b9(sys: SystemInstance, cfg: WorkloadConfig): Promise<Metrics> {
  const f = sys.flows;
  if (!f) return {};
  const pq = await sys.prepareQueue('b9p');
  const cq = await sys.prepareQueue('b9c');
  const parentsDone = new Counter();
  const doneAt = new Map<number, number>();
  const handler = (p: unknown): void => {
    const x = p as { parent?: number };
    if (typeof x.parent === 'number') {
      doneAt.set(x.parent, now());
      parentsDone.add();
    }
  };
  const wc = await sys.startWorker(cq, handler);
  const wp = await sys.startWorker(pq, handler);
  try {
    const flows = Math.max(5, Math.floor(cfg.jobs / B9_CHILDREN));
    const t0 = now();
    for (let i = 0; i < flows; i++) await f.enqueueFlow(pq, cq, { parent: i }, B9_CHILDREN);
    await parentsDone.reached(flows, cfg.phaseTimeoutMs, 'B9 parents');
    const ms = now() - t0;
    const lat: number[] = [];
    for (let k = 0; k < B9_LATENCY_FLOWS; k++) {
      const i = flows + k;
      const s = now();
      await f.enqueueFlow(pq, cq, { parent: i }, B9_CHILDREN);
      await waitUntil('B9 latency parent', async () => doneAt.has(i), cfg.sampleTimeoutMs, 1);
      lat.push(doneAt.get(i)! - s);
    }
    return {
      'B9.flows_per_s': rate(flows, ms),
      'B9.children_per_s': rate(flows * B9_CHILDREN, ms),
      'B9.flow_p50_ms': percentile(lat, 50),
    };
  } finally {
    await wp.stop();
    await wc.stop();
  }
}

/** Keys of B10. */
const B10_KEYS = 100;

/**
 * B10 (per-key concurrency 1): N pre-enqueued jobs over 100 concurrency keys (each key's jobs
 * enqueued together, so claim order alone would run several of a key at once) drained by the
 * concurrency-10 worker; each handler holds its job 1 ms. Reports jobs/s and the most jobs of one
 * key seen running at once (must be 1).
 */
async function b10(sys: SystemInstance, cfg: WorkloadConfig): Promise<Metrics> {
  const enqueue = sys.keyed?.enqueueConcurrencyKeyed;
  if (!enqueue) return {};
  const q = await sys.prepareQueue('b10');
  const perKey = Math.max(1, Math.floor(cfg.jobs / B10_KEYS));
  for (let key = 0; key < B10_KEYS; key++) {
    for (let start = 0; start < perKey; start += ENQUEUE_BATCH) {
      const ps = [];
      for (let n = start; n < Math.min(perKey, start + ENQUEUE_BATCH); n++)
        ps.push({ ...(payload(key * perKey + n) as object), key, n });
      await enqueue(q, `key-${key}`, ps);
    }
  }
  const total = perKey * B10_KEYS;
  const running = new Array<number>(B10_KEYS).fill(0);
  let maxPerKey = 0;
  const handled = new Counter();
  const t0 = now();
  const w = await sys.startWorker(q, async (p) => {
    const { key } = p as { key: number };
    running[key] = running[key]! + 1;
    maxPerKey = Math.max(maxPerKey, running[key]!);
    await new Promise((r) => setTimeout(r, 1));
    running[key] = running[key]! - 1;
    handled.add();
  });
  try {
    await handled.reached(total, cfg.phaseTimeoutMs, 'B10 handlers');
    const left = Math.max(1000, cfg.phaseTimeoutMs - (now() - t0));
    await waitUntil('B10 completions', async () => (await w.completed()) >= total, left, 5);
    return { 'B10.keyed_drain_per_s': rate(total, now() - t0), 'B10.max_running_per_key': maxPerKey };
  } finally {
    await w.stop();
  }
}

export const RUNNERS: Record<WorkloadId, (sys: SystemInstance, cfg: WorkloadConfig) => Promise<Metrics>> = {
  B1: b1,
  B1b: b1b,
  B1C: b1c,
  B2: b2,
  B3: b3,
  B4: b4,
  B5: b5,
  B6: b6,
  B7: b7,
  B9: b9,
  B10: b10,
};
