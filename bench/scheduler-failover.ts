// Scheduler failover on PostgreSQL (docs/nest.md "Failover"), one run, printed as JSON lines:
//   node --import tsx bench/scheduler-failover.ts [lockTtlMs=60000]
// 1. graceful: leader A stops (abort), standby B takes over; how long until B leads, and how late
//    B fires the next three boundaries of a 1-second cron schedule.
// 2. crash: a leader process is SIGKILLed; how long no runner leads, and how many jobs the new
//    leader enqueues at once for the missed boundaries (catch-up 'all').
import { spawn } from 'node:child_process';
import { openPostgresStore } from '../lib/engines/postgres/index.js';
import { pgAvailable, pgExec } from './lib/pg.js';
import { PG_URL } from './lib/util.js';

const ttl = Number(process.argv[2] ?? 60_000);
const unavailable = await pgAvailable();
if (unavailable) {
  console.log(`skipped: ${unavailable}`);
  process.exit(0);
}
const schema = `bench_failover_${Date.now().toString(36)}`;
const a = await openPostgresStore({ connectionString: PG_URL, schema });
const b = await openPostgresStore({ connectionString: PG_URL, schema });
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
async function until(check: () => Promise<boolean>, timeoutMs = ttl + 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await sleep(5);
  }
}
const pending = async (q: string): Promise<number> => (await a.queue(q).stats()).pending;
const leader = async (): Promise<string | undefined> => (await a.listSchedules()).leader?.owner;
async function enqueuedAts(q: string): Promise<number[]> {
  const jobs = await a.queue(q).claimBatch(10_000, 'bench');
  const at = await Promise.all(jobs.map(async (j) => (await a.queue(q).getJob(j.id))!.enqueuedAt));
  return at.sort((x, y) => x - y);
}

try {
  await a.schedule('graceful', '* * * * * *', 'q-graceful', null);
  const stopA = new AbortController();
  const runA = a.runSchedules(stopA.signal, { owner: 'A', lockTtlMs: ttl });
  await until(async () => (await leader()) === 'A');
  const stopB = new AbortController();
  const runB = b.runSchedules(stopB.signal, { owner: 'B', lockTtlMs: ttl });
  await until(async () => (await pending('q-graceful')) >= 3);
  stopA.abort();
  await runA;
  const stoppedAt = await a.now();
  const boundary = Math.floor(stoppedAt / 1000) * 1000 + 1000;
  await until(async () => (await leader()) === 'B');
  const ledAt = await a.now();
  await until(async () => (await a.getSchedule('graceful'))!.nextFireAt > boundary + 2_000);
  const late = (await enqueuedAts('q-graceful'))
    .filter((t) => t >= boundary)
    .slice(0, 3)
    .map((t, i) => t - (boundary + i * 1000));
  console.log(
    JSON.stringify({
      scenario: 'graceful stop',
      lockTtlMs: ttl,
      newLeaderAfterMs: ledAt - stoppedAt,
      nextBoundariesLateMs: late,
    }),
  );
  stopB.abort();
  await runB;
  await a.unschedule('graceful');

  await a.schedule('crash', '* * * * * *', 'q-crash', null);
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'bench/lib/scheduler-leader.ts', PG_URL, schema, String(ttl)],
    { stdio: 'inherit' },
  );
  await until(async () => (await leader()) === 'crashing-leader');
  const stopB2 = new AbortController();
  const runB2 = b.runSchedules(stopB2.signal, { owner: 'B', lockTtlMs: ttl });
  await until(async () => (await pending('q-crash')) >= 2);
  child.kill('SIGKILL');
  const killedAt = await a.now();
  await until(async () => (await leader()) === 'B');
  const ledAt2 = await a.now();
  await sleep(1_500);
  const after = (await enqueuedAts('q-crash')).filter((t) => t >= killedAt);
  const burst = after.filter((t) => t === after[0]).length;
  console.log(
    JSON.stringify({
      scenario: 'leader SIGKILLed',
      lockTtlMs: ttl,
      noLeaderForMs: ledAt2 - killedAt,
      firstTickJobs: burst,
      catchUp: 'all',
    }),
  );
  stopB2.abort();
  await runB2;
} finally {
  await a.close();
  await b.close();
  await pgExec(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
}
