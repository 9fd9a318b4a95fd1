/**
 * DBOS Transact 5 for B11 (bench/b11-workflows.ts), run as a child on the Node 24 of bench/peers:
 *
 *   <peer node> --import tsx bench/peers/dbos.ts <runs> <samples> <variant default|fast>
 *
 * The same shape and measurement as B11's alkstore workflows: a workflow of 5 plain steps started
 * on a DBOS queue with workerConcurrency 10 (a durable start: the run is a row, a queue runner
 * claims it); latency is S sequential samples of the start call to the first step's function
 * starting, throughput R starts then waiting for the R completions, as steps/s. Its system tables
 * live in a fresh schema of the bench database, dropped afterwards. `default` keeps the queue's
 * polling interval (1 s), `fast` sets its documented `minPollingIntervalMs` to 10 ms. Prints one
 * JSON line: { version, variant, stepsPerS, p50, p95 }. One untimed run precedes the samples (see below). One DBOS per process (its API is static).
 */
import { readFileSync } from 'node:fs';
import { PG_URL, uniqueId } from '../lib/util.js';
import { dropSchema } from '../lib/pg.js';

/** The part of DBOS's static API this uses, typed structurally (the package lives in bench/peers only). */
interface Dbos {
  setConfig(c: Record<string, unknown>): void;
  launch(): Promise<void>;
  shutdown(o?: { workflowCompletionTimeoutMS?: number }): Promise<void>;
  registerWorkflow<A extends unknown[], R>(f: (...a: A) => Promise<R>, c?: { name?: string }): (...a: A) => Promise<R>;
  registerQueue(name: string, o?: Record<string, unknown>): Promise<unknown>;
  runStep<R>(f: () => Promise<R>, c?: { name?: string }): Promise<R>;
  startWorkflow<A extends unknown[], R>(
    f: (...a: A) => Promise<R>,
    p?: { queueName?: string },
  ): (...a: A) => Promise<unknown>;
}

const [runsArg, samplesArg, variantArg] = process.argv.slice(2);
const RUNS = Number(runsArg ?? 200);
const SAMPLES = Number(samplesArg ?? 100);
const FAST = variantArg === 'fast';
const STEPS = 5;
const CONCURRENCY = 10;
const POLL_MS = FAST ? 10 : undefined;

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

async function until(check: () => boolean, what: string, timeoutMs = 600_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

const spec = '@dbos-inc/dbos-sdk';
const { DBOS } = (await import(spec)) as { DBOS: Dbos };
const version = (
  JSON.parse(readFileSync(new URL('./node_modules/@dbos-inc/dbos-sdk/package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;
const schema = uniqueId('b11_dbos');

let firstStep: (() => void) | null = null;
let completed = 0;
const noop = async (): Promise<void> => undefined;
const wf = DBOS.registerWorkflow(
  async () => {
    await DBOS.runStep(
      async () => {
        firstStep?.();
      },
      { name: 's0' },
    );
    for (let s = 1; s < STEPS; s++) await DBOS.runStep(noop, { name: `s${s}` });
    completed += 1;
    return null;
  },
  { name: 'b11' },
);

DBOS.setConfig({
  name: 'alkstore-b11',
  systemDatabaseUrl: PG_URL,
  systemDatabaseSchemaName: schema,
  logLevel: 'error',
  // The bench's own alkstore pool is 10 connections.
  systemDatabasePoolSize: 10,
});
try {
  await DBOS.launch();
  const queue = 'b11';
  await DBOS.registerQueue(queue, {
    workerConcurrency: CONCURRENCY,
    ...(POLL_MS ? { minPollingIntervalMs: POLL_MS } : {}),
  });
  const start = DBOS.startWorkflow(wf, { queueName: queue });
  // One untimed run first: a queue registered after launch is picked up by the queue runner's next
  // reconcile (once a second), which would otherwise land on the first sample.
  await start();
  await until(() => completed >= 1, 'the warm-up run');
  const latencies: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const seen = new Promise<void>((r) => (firstStep = r));
    const t0 = performance.now();
    await start();
    await seen;
    latencies.push(performance.now() - t0);
  }
  firstStep = null;
  await until(() => completed >= SAMPLES + 1, 'the latency runs');
  const before = completed;
  const t0 = performance.now();
  // Started all at once, as the plain queue's jobs are enqueued in bulk (B11 does the same for alkstore).
  await Promise.all(Array.from({ length: RUNS }, () => start()));
  await until(() => completed - before >= RUNS, 'the workflow runs');
  const elapsed = performance.now() - t0;
  process.stdout.write(
    `${JSON.stringify({
      version,
      variant: FAST
        ? `queue, workerConcurrency ${CONCURRENCY}, minPollingIntervalMs ${POLL_MS}`
        : `queue, workerConcurrency ${CONCURRENCY}, default polling (1 s)`,
      stepsPerS: (RUNS * STEPS) / (elapsed / 1000),
      p50: pct(latencies, 50),
      p95: pct(latencies, 95),
    })}\n`,
  );
} finally {
  await DBOS.shutdown({ workflowCompletionTimeoutMS: 5000 }).catch(() => undefined);
  await dropSchema(schema);
}
process.exit(0);
