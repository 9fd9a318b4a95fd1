/**
 * Makes the dashboard screenshots in docs/img/ (shown in the README and docs/operations.md) from a
 * real store: a fresh SQLite file, real jobs run by a small worker loop for `--minutes` so the
 * throughput and latency charts have real minutes, the standalone dashboard server, and real
 * Chromium (playwright-core, /usr/bin/chromium, a fresh profile directory).
 *
 *   npm run screenshots            (= npx tsx scripts/dashboard-screenshots.ts --minutes 3 --out docs/img)
 *
 * test/dashboard/screenshots.browser.test.ts runs it with `--minutes 0` into a scratch folder on every
 * test run: every page answers 200, and the test checks that it makes exactly the dashboard images
 * docs/img holds and the docs show, each a 1280-pixel-wide PNG of at most 128 kB.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { Page } from 'playwright-core';
import { serveDashboard } from '../lib/dashboard/standalone.js';
import { openStore } from '../lib/open-store.js';
import type { Store } from '../lib/contract/types.js';
import { createWorkflows, defineWorkflow } from '../lib/workflows/index.js';
import { launchChromium } from '../test/helpers/chromium.js';

const { values } = parseArgs({
  options: { minutes: { type: 'string', default: '3' }, out: { type: 'string', default: 'docs/img' } },
});
const OUT = resolve(values.out!);
const MINUTES = Number(values.minutes);
const TOKEN = 'screenshots-token-0123456789';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Emails and thumbnails worked for a few minutes with run times of a few ms to a second; some retried, a few dead. */
async function work(store: Store, until: number): Promise<void> {
  const emails = store.queue('emails', { maxAttempts: 2, backoffBaseMs: 200 });
  const thumbs = store.queue('thumbnails');
  let n = 0;
  while (Date.now() < until) {
    await emails.enqueueMany(Array.from({ length: 12 }, () => ({ to: `user${n++}@example.com`, template: 'welcome' })));
    await thumbs.enqueueMany(
      Array.from({ length: 4 }, (_, i) => ({ image: `img-${n}-${i}.png`, width: 320 })),
      { priority: 5 },
    );
    // Leave the jobs waiting a little, as a busy queue does.
    await sleep(200 + Math.random() * 800);
    for (const q of [emails, thumbs]) {
      const jobs = await q.claimBatch(16, `web-1:${process.pid}:screens`);
      await Promise.all(
        jobs.map(async (j) => {
          await sleep(q === thumbs ? 300 + Math.random() * 700 : 5 + Math.random() * 120);
          if (q === emails && Math.random() < 0.06) await j.retry(new Error('421 try again later'));
          else await j.ack();
        }),
      );
    }
  }
}

async function seed(store: Store): Promise<{ dead: number; pending: number; done: number; flow: number }> {
  const emails = store.queue('emails', { maxAttempts: 1 });
  const doomed = await emails.enqueueMany([
    { to: 'bounce-1@example.com' },
    { to: 'bounce-2@example.com', subject: '<script>alert(1)</script>' },
  ]);
  for (const j of await emails.claimBatch(2, 'web-1:4242:seed'))
    await j.fail(
      new Error('550 mailbox unavailable\n    at deliver (mailer.ts:42:11)\n    at Worker.run (worker.ts:17:5)'),
    );
  const reports = store.queue('reports');
  const done = await reports.enqueue({ report: 'monthly', month: '2026-11' }, { uniqueKey: 'monthly-2026-11' });
  const job = (await reports.claimOne('reports-1:77:seed'))!;
  await job.progress({ percent: 100, rows: 18_204 });
  await job.ack({ url: 's3://reports/2026-11.pdf', rows: 18_204 });
  const cancelled = await reports.enqueue({ report: 'weekly' });
  await reports.cancel(cancelled);
  const pending = await store
    .queue('thumbnails')
    .enqueue({ image: 'hero.png', width: 1280 }, { delayMs: 3_600_000, orderingKey: 'site-7' });
  // Held claims for the workers page.
  const held = store.queue('video');
  await held.enqueueMany(Array.from({ length: 6 }, (_, i) => ({ video: i })));
  await held.claimBatch(3, 'encoder-1:5150:a1b2c3');
  await held.claimBatch(2, 'encoder-2:5151:d4e5f6');
  await store.schedule('nightly-report', '0 2 * * *', 'reports', { kind: 'nightly' });
  await store.schedule('cleanup', '@every 1h', 'maintenance', { kind: 'cleanup' });
  for (let i = 0; i < 3; i++) await store.triggerSchedule('nightly-report');
  const s = store.stream('orders');
  for (let i = 0; i < 8; i++) await s.publish({ order: i });
  await s.saveOffset('billing', 8);
  await s.saveOffset('analytics', 5);
  await store.outboxEnqueue('webhooks', { event: 'order.created', order: 7 });
  await store.outbox('webhooks').recordReceipts(
    Array.from({ length: 5 }, (_, i) => ({
      messageId: 100 + i,
      receipt: { broker: 'nats-jetstream', stream: 'WEBHOOKS', seq: 900 + i },
    })),
  );
  // A flow: a report waiting on three rendered pages, one of them dead (the flow's page screenshot).
  const flow = await store.queue('monthly-report').enqueueFlow({
    payload: { report: 'monthly', month: '2026-11' },
    children: [1, 2, 3].map((page) => ({ queue: 'render', payload: { page } })),
    onChildDead: 'continue',
  });
  const render = store.queue('render', { maxAttempts: 1 });
  const pages = await render.claimBatch(2, 'render-1:6060:f1f2f3');
  await pages[0]!.ack({ url: 'https://cdn.example/page-1.png' });
  await pages[1]!.fail(new Error('page 2: font "Inter" not found'));
  // A node of the fleet view that stopped heartbeating (another heartbeats just before the screenshots).
  const admin = store.admin();
  await admin.heartbeat({
    nodeId: 'encoder-1:5150:a1b2c3',
    host: 'encoder-1',
    pid: 5150,
    version: '0.3.0',
    startedAt: Date.now() - 7_200_000,
    intervalMs: 100,
    queues: [{ queue: 'video', concurrency: 3, running: 3 }],
  });
  return { dead: doomed[1]!, pending, done, flow: flow.id };
}

/**
 * Workflow runs in the default namespace, run by a real workflow worker: two completed, one failed after
 * its first step, one parked on a signal (the run page's screenshot). Returns the parked run's id.
 */
async function workflows(store: Store): Promise<string> {
  const fulfil = defineWorkflow('fulfil-order', {
    async run(input: { order: number; sku: string }, ctx) {
      await ctx.step('reserve-stock', () => ({ sku: input.sku, reserved: 1 }));
      await ctx.step('charge-card', () => ({ charge: `ch_${input.order}`, amount: 4_200 }));
      const shipped = await ctx.waitForSignal<{ carrier: string }>('shipped');
      return ctx.step('send-receipt', () => ({ order: input.order, carrier: shipped?.carrier ?? null }));
    },
  });
  const refund = defineWorkflow('refund-order', {
    async run(input: { order: number }, ctx) {
      await ctx.step('load-order', () => ({ order: input.order }));
      throw new Error(`order ${input.order} was never charged`);
    },
  });
  const w = createWorkflows(store, { workflows: [fulfil, refund], idlePollIntervalMs: 50 });
  try {
    for (const order of [1040, 1041, 1042])
      await w.start(fulfil, { order, sku: `SKU-${order % 7}` }, { id: `order-${order}` });
    await w.start(refund, { order: 977 }, { id: 'refund-977' });
    const deadline = Date.now() + 60_000;
    const parked = async (id: string) => (await w.getStatus(id))?.steps.some((s) => s.state === 'waiting') === true;
    while (!(await parked('order-1040')) || !(await parked('order-1041')) || !(await parked('order-1042'))) {
      if (Date.now() > deadline) throw new Error('the workflow runs did not park on their signal within 60 s');
      await sleep(50);
    }
    await w.signal('order-1040', 'shipped', { carrier: 'DHL' });
    await w.signal('order-1041', 'shipped', { carrier: 'UPS' });
    await w.waitForResult('order-1040', { timeoutMs: 30_000 });
    await w.waitForResult('order-1041', { timeoutMs: 30_000 });
    await w.waitForResult('refund-977', { timeoutMs: 30_000 }).catch(() => undefined);
    return 'order-1042';
  } finally {
    await w.close();
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'alkstore-screens-'));
  const store = await openStore({ url: `sqlite:${join(dir, 'screens.db')}` });
  try {
    const ids = await seed(store);
    const parkedRun = await workflows(store);
    console.log(`running jobs for ${MINUTES} min so the charts have real minutes…`);
    await work(store, Date.now() + MINUTES * 60_000);
    // Limits on the thumbnails queue (after the work, so its charts are not shaped by them), for its controls' screenshot.
    await store
      .queue('thumbnails')
      .setLimits({ concurrencyLimit: 2, globalConcurrency: 8, keyRateLimit: { max: 30, perMs: 60_000 } });
    await store.admin().heartbeat({
      nodeId: 'web-1:4242:a1b2c3',
      host: 'web-1',
      pid: 4242,
      version: '0.3.0',
      startedAt: Date.now() - 3_600_000,
      intervalMs: 10_000,
      queues: [
        { queue: 'emails', concurrency: 16, running: 0 },
        { queue: 'thumbnails', concurrency: 4, running: 0 },
      ],
    });
    const dash = await serveDashboard(store, { token: TOKEN, port: 0, liveIntervalMs: 60_000 });
    mkdirSync(OUT, { recursive: true });
    const chromium = await launchChromium({ width: 1280, height: 900 }, { username: 'ops-ana', password: TOKEN });
    const browser = chromium.browser;
    const page: Page = browser.pages()[0] ?? (await browser.newPage());
    // The queue page folds its search, bulk actions, charts and limits into collapsed strips.
    const openStrip = async (id: 'search-strip' | 'queue-insights'): Promise<void> => {
      const summary = page.locator(`details#${id}:not([open]) > summary`);
      if ((await summary.count()) > 0) await summary.click();
    };
    const shot = async (name: string, path: string, full = true, strip?: 'queue-insights'): Promise<void> => {
      const res = await page.goto(`${dash.url}${path}`);
      if (res?.status() !== 200) throw new Error(`${path}: HTTP ${res?.status()}`);
      if (strip) await openStrip(strip);
      await page.screenshot({ path: join(OUT, `${name}.png`), fullPage: full });
      console.log(`  ${name}.png  ${path}`);
    };
    // Actions first, so the audit log and the bulk page have something to show.
    await page.goto(`${dash.url}/queue?name=emails&state=dead`);
    await openStrip('search-strip');
    await page.click('button[data-action="bulk-retry"]');
    await page.click('#confirm');
    await page.waitForSelector('[data-state="done"]', { timeout: 30_000 });
    await page.screenshot({ path: join(OUT, 'dashboard-bulk.png'), fullPage: true });
    console.log('  dashboard-bulk.png');
    for (const j of await store.queue('emails', { maxAttempts: 1 }).claimBatch(100, 'web-1:4242:seed')) {
      if (j.id === ids.dead)
        await j.fail(
          new Error('550 mailbox unavailable <img src=x onerror=alert(1)>\n    at deliver (mailer.ts:42:11)'),
        );
      else await j.ack();
    }
    await page.goto(`${dash.url}/`);
    await page.click('tr[data-queue="video"] button[data-action="pause"]');
    await page.click('#confirm');

    await shot('dashboard', '/');
    await shot('dashboard-queue', '/queue?name=emails&state=dead');
    await shot('dashboard-charts', '/queue?name=thumbnails', true, 'queue-insights');
    await shot('dashboard-job', `/job?queue=emails&id=${ids.dead}`);
    await shot('dashboard-completed-job', `/job?queue=reports&id=${ids.done}`);
    await shot('dashboard-history', '/queue?name=reports&state=finished');
    await shot(
      'dashboard-search',
      `/queue?name=emails&state=all&payload=${encodeURIComponent('template = "welcome"')}`,
      false,
    );
    await shot('dashboard-dead', '/dead?queue=emails');
    await shot('dashboard-schedules', '/schedules');
    await shot('dashboard-schedule', '/schedule?name=nightly-report');
    await shot('dashboard-streams', '/streams');
    await shot('dashboard-outboxes', '/outboxes');
    await shot('dashboard-receipts', '/receipts?outbox=webhooks');
    await shot('dashboard-workers', '/workers');
    await shot('dashboard-flow', `/job?queue=monthly-report&id=${ids.flow}`);
    await shot('dashboard-new-job', '/new?queue=emails');
    await shot('dashboard-edit-job', `/job?queue=thumbnails&id=${ids.pending}`);
    await shot('dashboard-audit', '/audit');
    await shot('dashboard-workflows', '/workflows');
    await shot('dashboard-workflow-run', `/workflow?ns=alkstore.workflows&id=${parkedRun}`);
    const res = await page.goto(`${dash.url}/queue?name=thumbnails`);
    if (res?.status() !== 200) throw new Error(`/queue?name=thumbnails: HTTP ${res?.status()}`);
    await openStrip('queue-insights');
    await page.locator('#queue-controls').scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(OUT, 'dashboard-queue-limits.png') });
    console.log('  dashboard-queue-limits.png  /queue?name=thumbnails (limits set)');
    await chromium.close();
    await dash.close();
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
