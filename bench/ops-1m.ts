/**
 * How long the dashboard and the CLI take on a large queue (issue 14): fills a
 * queue with N jobs (default 1 000 000: mostly pending over 4 priorities, some
 * scheduled, some dead), mounts the dashboard in a Nest app, and times page
 * loads over HTTP (median of --runs) plus `alkstore stats` as a child process.
 *
 *   npx tsc -p tsconfig.build.json --outDir .tmp/build
 *   node .tmp/build/bench/ops-1m.js [--engine sqlite|postgres] [--jobs N] [--runs R]
 *
 * (Compiled with tsc, not run through tsx: Nest's injection needs the
 * decorator metadata that esbuild does not emit.)
 *
 * A measurement script, not a test: it prints timings and asserts nothing.
 */
import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Injectable, Module, type CanActivate } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AlkstoreDashboardModule } from '../lib/dashboard/index.js';
import { AlkstoreModule } from '../lib/nest/index.js';
import { openStore } from '../lib/open-store.js';
import { Store } from '../lib/index.js';

const { values } = parseArgs({
  options: {
    engine: { type: 'string', default: 'sqlite' },
    jobs: { type: 'string', default: '1000000' },
    runs: { type: 'string', default: '5' },
  },
});
const engine = values.engine === 'postgres' ? 'postgres' : 'sqlite';
const total = Number(values.jobs);
const runs = Number(values.runs);
const PG = process.env.ALKSTORE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const dir = mkdtempSync(join(tmpdir(), 'alkstore-ops-1m-'));
const schema = `ops_1m_${process.pid}`;
const url = engine === 'postgres' ? PG : `sqlite:${join(dir, 'big.db')}`;
const QUEUE = 'big';
const compiled = import.meta.url.endsWith('.js');
const cliCommand = compiled
  ? [fileURLToPath(new URL('../lib/cli/main.js', import.meta.url))]
  : ['--import', 'tsx', fileURLToPath(new URL('../lib/cli/main.ts', import.meta.url))];

@Injectable()
class OpenGuard implements CanActivate {
  canActivate(): boolean {
    return true;
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function fill(): Promise<void> {
  const store = await openStore({ url, schema: engine === 'postgres' ? schema : undefined });
  const q = store.queue(QUEUE, { maxAttempts: 1 });
  const t0 = Date.now();
  const batch = 10_000;
  const dead = Math.min(5_000, Math.floor(total / 100));
  const scheduled = Math.floor(total / 20);
  for (let done = 0; done < total - dead - scheduled; done += batch) {
    const n = Math.min(batch, total - dead - scheduled - done);
    await q.enqueueMany(
      Array.from({ length: n }, (_, i) => ({ n: done + i, to: `user${done + i}@example.com` })),
      { priority: (done / batch) % 4 },
    );
  }
  for (let done = 0; done < scheduled; done += batch) {
    await q.enqueueMany(
      Array.from({ length: Math.min(batch, scheduled - done) }, (_, i) => ({ later: done + i })),
      { delayMs: 86_400_000, priority: 9 },
    );
  }
  const doomed = store.queue('big-dead-src', { maxAttempts: 1 });
  await doomed.enqueueMany(
    Array.from({ length: dead }, (_, i) => ({ d: i })),
    { priority: 100 },
  );
  for (let left = dead; left > 0;) {
    const jobs = await doomed.claimBatch(Math.min(1000, left), 'filler');
    await Promise.all(jobs.map((j) => j.fail(new Error('550 mailbox unavailable'))));
    left -= jobs.length;
  }
  // Workers page: 1 000 jobs held by 10 workers; receipts page: 1 000 receipts; schedule page: fires on the big queue.
  const held = store.queue('big-held');
  await held.enqueueMany(Array.from({ length: 1000 }, (_, i) => ({ h: i })));
  for (let w = 0; w < 10; w++) await held.claimBatch(100, `bench-host:${1000 + w}:abcdef`);
  await store.outbox('big-box').recordReceipts(
    Array.from({ length: 1000 }, (_, i) => ({
      messageId: i + 1,
      receipt: { broker: 'nats-jetstream', stream: 'BIG', seq: i + 1 },
    })),
  );
  // History (issue 29): completed jobs with a result live in job_outcomes, which the history merges with dead jobs.
  const finished = store.queue('big-done');
  await finished.enqueueMany(Array.from({ length: 5000 }, (_, i) => ({ f: i })));
  for (let left = 5000; left > 0;) {
    const jobs = await finished.claimBatch(Math.min(500, left), 'filler');
    await Promise.all(jobs.map((j) => j.ack({ ok: j.id })));
    left -= jobs.length;
  }
  await store.schedule('big-nightly', '@every 1d', QUEUE, { nightly: true });
  for (let i = 0; i < 3; i++) await store.triggerSchedule('big-nightly');
  console.log(
    `filled ${total} jobs on ${engine} in ${((Date.now() - t0) / 1000).toFixed(1)} s (${dead} dead on big-dead-src, ${scheduled} scheduled)`,
  );
  await store.close();
}

async function main(): Promise<void> {
  await fill();
  @Module({
    imports: [
      AlkstoreModule.forRoot({ url, schema: engine === 'postgres' ? schema : undefined, workers: 'off' }),
      AlkstoreDashboardModule.forRoot({ path: '/alkstore', guard: OpenGuard }),
    ],
  })
  class BenchModule {}
  const app = await NestFactory.create(BenchModule, { logger: ['error'] });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  const base = `http://127.0.0.1:${port}/alkstore`;
  const store = app.get(Store);
  const second = (await store.admin().listJobs(QUEUE, { state: 'pending', limit: 50 })).next!;
  const doneId = (await store.admin().searchJobs('big-done', { state: 'finished', limit: 1 })).jobs[0]!.id;
  const pages: [string, string][] = [
    ['queues (/)', `${base}/`],
    ['queue pending, page 1', `${base}/queue?name=${QUEUE}&state=pending`],
    ['queue pending, page 2', `${base}/queue?name=${QUEUE}&state=pending&cursor=${second}`],
    ['queue scheduled', `${base}/queue?name=${QUEUE}&state=scheduled`],
    ['queue all', `${base}/queue?name=${QUEUE}&state=all`],
    ['dead letters of a queue', `${base}/dead?queue=big-dead-src`],
    ['outboxes', `${base}/outboxes`],
    // Search (issue 29): one bounded scan of SEARCH_SCAN_ROWS rows a page, whatever matches.
    ['search by job id', `${base}/queue?name=${QUEUE}&state=all&id=${Math.floor(total / 2)}`],
    [
      'search payload field',
      `${base}/queue?name=${QUEUE}&state=all&payload=${encodeURIComponent(`n = ${total - 100}`)}`,
    ],
    ['search payload, no match', `${base}/queue?name=${QUEUE}&state=all&payload=${encodeURIComponent('n = -1')}`],
    ['search error text (dead)', `${base}/queue?name=big-dead-src&state=dead&error=mailbox`],
    ['job detail', `${base}/job?queue=${QUEUE}&id=${Math.floor(total / 2)}`],
    // Issue 29 leftovers: history, workers, receipts, a schedule's fires (header search on the big queue).
    ['history (finished)', `${base}/queue?name=big-dead-src&state=finished`],
    ['history with outcomes', `${base}/queue?name=big-done&state=finished`],
    ['history, big queue', `${base}/queue?name=${QUEUE}&state=finished`],
    ['completed job detail', `${base}/job?queue=big-done&id=${doneId}`],
    ['workers', `${base}/workers`],
    ['outbox receipts', `${base}/receipts?outbox=big-box`],
    ['schedule with fires', `${base}/schedule?name=big-nightly`],
  ];
  console.log(`\n${engine}, ${total} jobs: median of ${runs} page loads (server time + local HTTP)`);
  for (const [name, href] of pages) {
    const times: number[] = [];
    for (let i = 0; i < runs; i++) {
      const t = performance.now();
      const res = await fetch(href);
      await res.text();
      if (res.status !== 200) throw new Error(`${name}: HTTP ${res.status}`);
      times.push(performance.now() - t);
    }
    console.log(`  ${name.padEnd(26)} ${median(times).toFixed(1).padStart(8)} ms`);
  }
  await app.close();
  const cliTimes: number[] = [];
  for (let i = 0; i < Math.min(runs, 3); i++) {
    const t = performance.now();
    execFileSync(
      process.execPath,
      [...cliCommand, 'stats', '--url', url, ...(engine === 'postgres' ? ['--schema', schema] : [])],
      { stdio: 'pipe' },
    );
    cliTimes.push(performance.now() - t);
  }
  console.log(
    `  ${'alkstore stats (process)'.padEnd(26)} ${median(cliTimes).toFixed(1).padStart(8)} ms (includes node start-up)`,
  );
}

try {
  await main();
} finally {
  if (engine === 'postgres') {
    const pg = (await import('pg')).default;
    const c = new pg.Client({ connectionString: PG });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await c.end();
  }
  rmSync(dir, { recursive: true, force: true });
}
