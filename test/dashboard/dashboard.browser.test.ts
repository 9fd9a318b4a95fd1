import 'reflect-metadata';
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import type { BrowserContext, Page } from 'playwright-core';
import { createWorkflows, defineWorkflow } from '../../lib/workflows/index.js';
import { type FreshChromium, launchChromium } from '../helpers/chromium.js';
import { waitFor } from '../helpers/engines.js';
import { HTTP_ADAPTERS } from '../helpers/http-adapters.js';
import { nestEngines, type NestDb } from '../nest/nest-fixtures.js';
import { dashboardApp, TEST_TOKEN, TokenGuard } from './dashboard-app.js';
import { type Store } from '../../lib/index.js';

const SHOTS = resolve(import.meta.dirname, '../../.tmp/screenshots');

let chromium: FreshChromium;
let browser: BrowserContext;

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  chromium = await launchChromium({ width: 1280, height: 900 });
  browser = chromium.browser;
}, 60_000);

afterAll(async () => {
  await chromium?.close();
});

/** Jobs, dead letters, throughput, a schedule, a stream and an outbox, so every page has something to show. */
async function seed(store: Store): Promise<{ xss: number; doomed: number[] }> {
  const emails = store.queue('emails', { maxAttempts: 1 });
  await emails.enqueueMany(Array.from({ length: 6 }, (_, i) => ({ to: `user${i}@example.com` })));
  for (const j of await emails.claimBatch(4, 'w')) await j.ack();
  await emails.enqueue({ to: 'later@example.com' }, { delayMs: 3_600_000 });
  const xss = await emails.enqueue({ subject: '<script>window.__owned = 1</script>' });
  const doomed = [xss, ...(await emails.enqueueMany([{ to: 'bounce-1@example.com' }, { to: 'bounce-2@example.com' }]))];
  for (;;) {
    const j = await emails.claimOne('w');
    if (!j) break;
    if (doomed.includes(j.id)) await j.fail(new Error('550 mailbox unavailable <img src=x onerror=alert(1)>'));
    else await j.ack();
  }
  await store.queue('thumbnails').enqueueMany([{ image: 1 }, { image: 2 }], { priority: 5 });
  await store.schedule('nightly-report', '@every 1d', 'reports', { kind: 'nightly' });
  const s = store.stream('orders');
  for (let i = 0; i < 5; i++) await s.publish({ order: i });
  await s.saveOffset('billing', 5);
  await s.saveOffset('analytics', 2);
  await store.outboxEnqueue('webhooks', { event: 'order.created' });
  return { xss, doomed: doomed.slice(1) };
}

/** The page's `document`, as far as the tests touch it (the test's own TypeScript has no DOM types). */
interface PageDocument {
  dispatchEvent(event: unknown): boolean;
}
/**
 * Sets what `document.visibilityState` says and tells the page. A function, not a string: the strict CSP refuses
 * `eval`, which Playwright uses for string expressions.
 */
async function setVisibility(page: Page, state: 'hidden' | 'visible'): Promise<void> {
  await page.evaluate((s) => {
    const g = globalThis as unknown as { document: PageDocument; Event: new (type: string) => unknown };
    Object.defineProperty(g.document, 'visibilityState', { configurable: true, get: () => s });
    g.document.dispatchEvent(new g.Event('visibilitychange'));
  }, state);
}

/** Submits the action form of `button`, then confirms it on the confirmation page. */
async function actAndConfirm(page: Page, button: string): Promise<void> {
  await Promise.all([page.waitForURL(/\/action$/), page.click(button)]);
  expect(await page.textContent('.confirm')).toMatch(/\?/);
  await Promise.all([page.waitForURL(/done=/), page.click('#confirm')]);
}

for (const engine of nestEngines())
  for (const adapter of HTTP_ADAPTERS) {
    describe(`dashboard in Chromium [${engine.name}, ${adapter}]`, () => {
      let db: NestDb;
      let app: INestApplication;
      let store: Store;
      let base = '';
      let page: Page;
      let seeded: { xss: number; doomed: number[] };

      beforeAll(async () => {
        db = await engine.create();
        ({ app, store } = await dashboardApp(
          db,
          { path: '/alkstore', guard: TokenGuard, liveIntervalMs: 300, actor: () => 'browser-admin' },
          adapter,
        ));
        await app.listen(0, '127.0.0.1');
        const { port } = app.getHttpServer().address() as AddressInfo;
        base = `http://127.0.0.1:${port}/ops/alkstore`;
        seeded = await seed(store);
        await browser.addCookies([{ name: 'admin_token', value: TEST_TOKEN, url: `http://127.0.0.1:${port}` }]);
        page = await browser.newPage();
      }, 60_000);
      afterAll(async () => {
        await page?.close();
        // The browser keeps its connections alive; the server must not wait for them.
        (app?.getHttpServer() as { closeAllConnections?: () => void } | undefined)?.closeAllConnections?.();
        await app?.close();
        await db?.destroy();
      }, 60_000);

      it('shows the queues with counts and a throughput chart, and runs no injected script', async () => {
        await page.goto(base);
        const row = page.locator('tr[data-queue="emails"] td');
        expect(await row.allTextContents()).toEqual(expect.arrayContaining(['emails', '1', '0', '3']));
        expect(await page.locator('.chart svg rect.ok').count()).toBe(60);
        await page.screenshot({ path: join(SHOTS, `queues-${engine.kind}-${adapter}.png`), fullPage: true });
        await page.goto(`${base}/queue?name=emails&state=dead`);
        // A compact row shows the payload on one line, as text.
        expect(await page.textContent(`tr[data-job="${seeded.xss}"] td.line code`)).toContain(
          '<script>window.__owned = 1</script>',
        );
        expect(await page.evaluate(() => (globalThis as { __owned?: number }).__owned)).toBeUndefined();
        // The one script is the live-update script with this response's nonce; the payload's stayed text.
        expect(await page.locator('script').count()).toBe(1);
        expect(await page.locator('script').first().getAttribute('nonce')).not.toBeNull();
        await page.screenshot({ path: join(SHOTS, `queue-${engine.kind}-${adapter}.png`), fullPage: true });
        // The menu leads back home (the mount path itself, which Fastify does not match with a trailing slash).
        await Promise.all([page.waitForURL(base), page.click('header a:text-is("Queues")')]);
        expect(await page.locator('tr[data-queue="emails"]').count()).toBe(1);
      });

      it('redrives a dead job and purges another after confirmation', async () => {
        await page.goto(`${base}/dead?queue=emails`);
        await page.screenshot({ path: join(SHOTS, `dead-${engine.kind}-${adapter}.png`), fullPage: true });
        await actAndConfirm(page, `tr[data-job="${seeded.xss}"] button[data-action="redrive"]`);
        expect(await page.textContent('.flash')).toContain('Retried the job');
        expect(await store.queue('emails').getJob(seeded.xss)).toMatchObject({ state: 'pending', attempts: 0 });
        await actAndConfirm(page, `tr[data-job="${seeded.doomed[0]}"] button[data-action="purge"]`);
        expect(await page.textContent('.flash')).toContain('Deleted the job');
        expect(await store.queue('emails').getJob(seeded.doomed[0]!)).toBeNull();
        expect(await store.queue('emails').getJob(seeded.doomed[1]!)).toMatchObject({ state: 'dead' });
      });

      it('triggers a schedule now and shows streams and outboxes', async () => {
        await page.goto(`${base}/schedules`);
        expect(await page.textContent('tr[data-schedule="nightly-report"]')).toContain('@every 1d');
        await page.screenshot({ path: join(SHOTS, `schedules-${engine.kind}-${adapter}.png`), fullPage: true });
        await actAndConfirm(page, 'tr[data-schedule="nightly-report"] button[data-action="trigger"]');
        expect(await page.textContent('.flash')).toMatch(/Triggered the schedule: job \d+ enqueued/);
        const jobs = await store.admin().listJobs('reports', { state: 'pending' });
        expect(jobs.jobs.map((j) => j.payload)).toEqual([{ kind: 'nightly' }]);
        await page.goto(`${base}/streams`);
        expect(await page.locator('#streams td.warn').textContent()).toBe('3');
        await page.screenshot({ path: join(SHOTS, `streams-${engine.kind}-${adapter}.png`), fullPage: true });
        await page.goto(`${base}/outboxes`);
        expect(await page.textContent('section[data-outbox="webhooks"]')).toContain('1 pending');
        await page.screenshot({ path: join(SHOTS, `outboxes-${engine.kind}-${adapter}.png`), fullPage: true });
      });

      it('keeps the CSRF cookie on the mount path when a crafted link names another', async () => {
        await browser.clearCookies({ name: 'alkstore_csrf' });
        const res = await page.goto(`${base}/x;Path=/;Max-Age=315360000;/alkstore`);
        expect(res?.status()).toBe(404);
        const csrf = (await browser.cookies()).filter((c) => c.name === 'alkstore_csrf');
        expect(
          csrf.map((c) => ({ path: c.path, session: c.expires === -1, httpOnly: c.httpOnly, sameSite: c.sameSite })),
        ).toEqual([{ path: '/ops/alkstore', session: true, httpOnly: true, sameSite: 'Strict' }]);
        // The page's links lead to the dashboard itself.
        await Promise.all([page.waitForURL(base), page.click('header a:text-is("Queues")')]);
      });

      it('opens a job from the list and shows its payload, headers and timeline', async () => {
        const q = store.queue('orders', { maxAttempts: 1 });
        const id = await q.enqueue(
          { orderId: 42, items: [{ sku: 'A-1', qty: 2 }] },
          {
            uniqueKey: 'order-42',
            headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
          },
        );
        const job = (await q.claimOne('worker-eu-1'))!;
        await job.fail(new Error('PaymentDeclined: card ending 4242 was declined\n    at charge (billing.ts:41)'));
        await page.goto(`${base}/queue?name=orders&state=dead`);
        await Promise.all([page.waitForURL(/\/job\?/), page.click(`tr[data-job="${id}"] a.job`)]);
        expect(await page.textContent('#job-state')).toBe('dead');
        expect(await page.textContent('#payload')).toContain('"orderId": 42');
        expect(await page.textContent('#timeline')).toContain('PaymentDeclined');
        expect(await page.textContent('#headers')).toContain('0af7651916cd43dd8448eb211c80319c');
        await page.screenshot({ path: join(SHOTS, `job-${engine.kind}-${adapter}.png`), fullPage: true });
        await actAndConfirm(page, 'button[data-action="redrive"]');
        expect(await page.textContent('#job-state')).toBe('pending');
        expect(await page.textContent('#timeline')).toContain('browser-admin');
      });

      it('searches with the form, keeps the query in the URL, and deletes every match after confirming the count', async () => {
        const q = store.queue('invoices');
        await q.enqueueMany(
          Array.from({ length: 120 }, (_, i) => ({ customer: i % 3 === 0 ? 'acme' : 'globex', n: i })),
        );
        await page.goto(`${base}/queue?name=invoices&state=all`);
        // The search sits in a strip, collapsed until a filter is set.
        expect(await page.isVisible('#search')).toBe(false);
        await page.click('#search-strip summary');
        await page.fill('input[name="payload"]', 'customer = "acme"');
        await Promise.all([page.waitForURL(/payload=/), page.click('#search button[type="submit"]')]);
        expect(new URL(page.url()).searchParams.get('payload')).toBe('customer = "acme"');
        expect(await page.locator('tr[data-job]').count()).toBe(40);
        // A filtered page keeps the strip open, with the bulk actions on every match.
        expect(await page.isVisible('button[data-action="bulk-delete"]')).toBe(true);
        await page.screenshot({ path: join(SHOTS, `search-${engine.kind}-${adapter}.png`) });
        await Promise.all([page.waitForURL(/\/action$/), page.click('button[data-action="bulk-delete"]')]);
        expect(await page.textContent('.confirm')).toContain('Delete 40 jobs');
        await Promise.all([page.waitForURL(/\/bulk\?op=/), page.click('#confirm')]);
        // The live region refreshes the progress until it is done.
        await page.waitForSelector('#bulk[data-state="done"]', { timeout: 30_000 });
        expect(await page.textContent('#bulk-changed')).toBe('40');
        await page.screenshot({ path: join(SHOTS, `bulk-${engine.kind}-${adapter}.png`), fullPage: true });
        expect((await q.stats()).pending).toBe(80);
        await page.goto(`${base}/audit`);
        expect(await page.textContent('#audit')).toContain('bulk-delete-done');
        expect(await page.textContent('#audit')).toContain('browser-admin');
        await page.screenshot({ path: join(SHOTS, `audit-${engine.kind}-${adapter}.png`), fullPage: true });
      });

      it('creates a job from the form, then edits it while it is pending', async () => {
        await page.goto(`${base}/queue?name=emails`);
        await Promise.all([page.waitForURL(/\/new\?/), page.click('#new-job-link')]);
        await page.fill('#payload-input', '{"to": "new@example.com", "html": "<img src=x onerror=window.__owned=1>"}');
        await page.fill('#priority-input', '3');
        await page.screenshot({ path: join(SHOTS, `new-job-${engine.kind}-${adapter}.png`), fullPage: true });
        await Promise.all([page.waitForURL(/\/action$/), page.click('#enqueue')]);
        expect(await page.textContent('.confirm')).toContain('Enqueue a job on queue "emails" with priority 3');
        await Promise.all([page.waitForURL(/done=enqueue/), page.click('#confirm')]);
        const id = Number(new URL(page.url()).searchParams.get('id'));
        expect(await store.queue('emails').getJob(id)).toMatchObject({
          state: 'pending',
          priority: 3,
          payload: { to: 'new@example.com' },
        });
        expect(await page.textContent('#payload')).toContain('onerror');
        await page.click('#edit summary');
        await page.fill('#priority-input', '7');
        await page.fill('#run-at-input', '2999-01-01T00:00:00');
        await page.screenshot({ path: join(SHOTS, `edit-job-${engine.kind}-${adapter}.png`), fullPage: true });
        await Promise.all([page.waitForURL(/\/action$/), page.click('#save-edit')]);
        expect(await page.textContent('.confirm')).toContain(
          `Save job ${id} of queue "emails" with priority 7, to run 2999-01-01T00:00:00.000Z`,
        );
        await Promise.all([page.waitForURL(/done=edit/), page.click('#confirm')]);
        expect(await page.textContent('.flash')).toContain('Saved the edit.');
        expect(await page.textContent('#job-state')).toBe('pending (scheduled)');
        expect(await store.queue('emails').getJob(id)).toMatchObject({
          priority: 7,
          runAt: Date.parse('2999-01-01T00:00:00Z'),
        });
        expect(await page.evaluate(() => (globalThis as { __owned?: number }).__owned)).toBeUndefined();
      });

      it('shows the job history, the live workers, an outbox’s broker receipts and a schedule’s recent fires', async () => {
        const history = store.queue('history', { maxAttempts: 1 });
        await history.enqueueMany([{ n: 1 }, { n: 2 }, { n: 3 }]);
        for (const j of await history.claimBatch(2, 'w')) await j.fail(new Error(`boom ${j.id}`));
        await page.goto(`${base}/queue?name=history`);
        await Promise.all([page.waitForURL(/state=finished/), page.click('nav.states a[data-state="finished"]')]);
        expect(await page.locator('tr[data-job]').count()).toBe(2);
        await page.screenshot({ path: join(SHOTS, `history-${engine.kind}-${adapter}.png`), fullPage: true });
        const held = await store.queue('thumbnails').claimBatch(2, 'web-7:7777:beef01');
        expect(held).toHaveLength(2);
        // The node's heartbeat: its queues, the idle one too, in the fleet table.
        await store.admin().heartbeat({
          nodeId: 'web-7:7777:beef01',
          host: 'web-7',
          pid: 7777,
          version: '0.3.0',
          startedAt: Date.now() - 3_600_000,
          intervalMs: 600_000,
          queues: [
            { queue: 'thumbnails', concurrency: 4, running: 2 },
            { queue: 'emails', concurrency: 2, running: 0 },
          ],
        });
        await Promise.all([page.waitForURL(/\/workers$/), page.click('header a:text-is("Workers")')]);
        const fleet = await page.locator('#fleet tr[data-node="web-7:7777:beef01"]').count();
        expect(fleet).toBe(2);
        const busy = await page
          .locator('#fleet tr[data-node="web-7:7777:beef01"][data-queue="thumbnails"] td')
          .allTextContents();
        expect(busy.map((t) => t.trim())).toEqual(
          expect.arrayContaining(['web-7:7777:beef01', 'web-7', '7777', '0.3.0', 'thumbnails', '4', '2', 'alive']),
        );
        const cells = await page.locator('tr[data-worker="web-7:7777:beef01"] td').allTextContents();
        expect(cells.map((t) => t.trim())).toEqual(
          expect.arrayContaining(['web-7', '7777', 'thumbnails', '2', 'running']),
        );
        await page.screenshot({ path: join(SHOTS, `workers-${engine.kind}-${adapter}.png`), fullPage: true });
        // The node links the jobs it holds now.
        await Promise.all([
          page.waitForURL(/\/workers\?node=/),
          page.click('#fleet tr[data-queue="thumbnails"] td.running a'),
        ]);
        expect(await page.locator('#held tr[data-job]').count()).toBe(2);
        for (const j of held) await j.release();
        await store.admin().forgetNode('web-7:7777:beef01');
        await store.outbox('webhooks').recordReceipts([
          { messageId: 1, receipt: { broker: 'nats-jetstream', stream: 'WEBHOOKS', seq: 12, duplicate: false } },
          {
            messageId: 2,
            receipt: {
              broker: 'rabbitmq',
              exchange: 'webhooks',
              routingKey: 'order.created',
              deliveryTag: 3,
              confirmed: true,
            },
          },
          { messageId: 3, receipt: { broker: 'redis-streams', stream: 'webhooks', entryId: '1764547200000-0' } },
        ]);
        await page.goto(`${base}/outboxes`);
        await Promise.all([page.waitForURL(/\/receipts\?/), page.click('section[data-outbox="webhooks"] a.receipts')]);
        expect(await page.locator('#receipts tr[data-message]').count()).toBe(3);
        expect(await page.textContent('tr[data-message="3"]')).toContain('1764547200000-0');
        await page.screenshot({ path: join(SHOTS, `receipts-${engine.kind}-${adapter}.png`), fullPage: true });
        const fired = await store.triggerSchedule('nightly-report');
        await page.goto(`${base}/schedules`);
        await Promise.all([page.waitForURL(/\/schedule\?name=/), page.click('tr[data-schedule="nightly-report"] a')]);
        expect(await page.locator(`#fires tr[data-job="${fired}"]`).count()).toBe(1);
        await page.screenshot({ path: join(SHOTS, `schedule-${engine.kind}-${adapter}.png`), fullPage: true });
      });

      it('refreshes counts live while the tab is visible and pauses while it is hidden', async () => {
        await page.goto(base);
        await page.waitForSelector('#live-status[data-state="on"]');
        await store.queue('live').enqueueMany([1, 2, 3]);
        const pending = (n: number) =>
          page
            .locator('tr[data-queue="live"] td:nth-child(2)', { hasText: new RegExp(`^${n}$`) })
            .waitFor({ timeout: 15_000 });
        await pending(3);
        // Hidden: the poll stops and says so; visible again: one refresh at once.
        await setVisibility(page, 'hidden');
        expect(await page.getAttribute('#live-status', 'data-state')).toBe('paused');
        await store.queue('live').enqueue(4);
        await setVisibility(page, 'visible');
        await pending(4);
        expect(await page.getAttribute('#live-status', 'data-state')).toBe('on');
      });

      it('pauses and resumes a queue from its controls, and cancels a pending job into the history', async () => {
        const q = store.queue('controls');
        const id = await q.enqueue({ report: 'weekly' });
        await page.goto(`${base}/queue?name=controls`);
        // The controls sit in the collapsed "Charts and limits" strip.
        await page.click('#queue-insights summary');
        await actAndConfirm(page, '#queue-controls button[data-action="pause"]');
        expect(await page.textContent('.flash')).toContain('Paused the queue');
        expect((await q.settings()).paused).toBe(true);
        await page.goto(`${base}/queue?name=controls`);
        expect(await page.textContent('#summary')).toContain('Paused.');
        await page.click('#queue-insights summary');
        await actAndConfirm(page, '#queue-controls button[data-action="resume"]');
        expect((await q.settings()).paused).toBe(false);
        await page.goto(`${base}/job?queue=controls&id=${id}`);
        await actAndConfirm(page, 'button[data-action="cancel"]');
        expect(await page.textContent('.flash')).toContain('Cancelled the job');
        await page.goto(`${base}/queue?name=controls&state=finished`);
        expect(await page.textContent(`tr[data-job="${id}"]`)).toContain('cancelled');
        await page.goto(`${base}/job?queue=controls&id=${id}`);
        expect(await page.textContent('#job-state')).toBe('cancelled');
        expect(await page.locator('button[data-action="cancel"]').count()).toBe(0);
      });

      it("sets and clears a queue's limits from its controls, confirmed", async () => {
        const q = store.queue('limited');
        await q.enqueue({ report: 'daily' });
        await page.goto(`${base}/queue?name=limited`);
        await page.click('#queue-insights summary');
        expect(await page.textContent('#limit-global')).toBe('none');
        await page.fill('#limits-form input[name="concurrencyLimit"]', '2');
        await page.fill('#limits-form input[name="globalConcurrency"]', '8');
        await page.fill('#limits-form input[name="keyRateMax"]', '5');
        await page.fill('#limits-form input[name="keyRatePerMs"]', '1000');
        await actAndConfirm(page, '#queue-controls button[data-action="limits"]');
        expect(await page.textContent('.flash')).toContain('Saved the limits');
        expect(await q.settings()).toMatchObject({
          concurrencyLimit: 2,
          globalConcurrency: 8,
          keyRateLimit: { max: 5, perMs: 1000 },
          rateLimit: null,
        });
        expect(await page.textContent('#limit-key-rate')).toBe('5 per 1000 ms');
        await page.click('#queue-insights summary');
        await page.screenshot({ path: join(SHOTS, `queue-limits-${engine.kind}-${adapter}.png`), fullPage: true });
        // The form comes back filled with the stored values: emptying one field clears that limit only.
        expect(await page.inputValue('#limits-form input[name="globalConcurrency"]')).toBe('8');
        await page.fill('#limits-form input[name="globalConcurrency"]', '');
        await actAndConfirm(page, '#queue-controls button[data-action="limits"]');
        expect(await q.settings()).toMatchObject({
          concurrencyLimit: 2,
          globalConcurrency: null,
          keyRateLimit: { max: 5, perMs: 1000 },
        });
        expect(await page.textContent('#limit-global')).toBe('none');
      });

      it('lists workflow runs with a status filter, shows a run’s step timeline, and cancels a parked run, confirmed', async () => {
        const ns = `browser-wf-${adapter}`;
        const parked = defineWorkflow('fulfil-order', {
          async run(input: { order: number }, ctx) {
            await ctx.step('reserve-stock', () => ({ reserved: input.order }));
            return ctx.waitForSignal('payment-received');
          },
        });
        const quick = defineWorkflow('send-receipt', {
          async run(input: { order: number }, ctx) {
            return ctx.step('render', () => `receipt-${input.order}`);
          },
        });
        const w = createWorkflows(store, { workflows: [parked, quick], namespace: ns, idlePollIntervalMs: 50 });
        try {
          await w.start(parked, { order: 7 }, { id: 'order-7' });
          await w.start(quick, { order: 8 }, { id: 'receipt-8' });
          expect(await w.waitForResult('receipt-8', { timeoutMs: 20_000 })).toBe('receipt-8');
          await waitFor('order-7 waiting', async () =>
            (await w.getStatus('order-7'))?.steps.some((s) => s.state === 'waiting'),
          );
          // The header leads to the workflows page; the namespace tab to this namespace's runs.
          await page.goto(base);
          await Promise.all([page.waitForURL(/\/workflows$/), page.click('header a:text-is("Workflows")')]);
          await Promise.all([page.waitForURL(/ns=/), page.click(`#namespaces a:text-is("${ns}")`)]);
          expect(
            await page
              .locator('#runs tr[data-run]')
              .evaluateAll((rows) =>
                rows.map((r) => `${r.getAttribute('data-run')}:${r.getAttribute('data-state')}`).sort(),
              ),
          ).toEqual(['order-7:running', 'receipt-8:completed']);
          await page.screenshot({ path: join(SHOTS, `workflows-${engine.kind}-${adapter}.png`), fullPage: true });
          await Promise.all([page.waitForURL(/state=completed/), page.click('#states a[data-state="completed"]')]);
          expect(
            await page.locator('#runs tr[data-run]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-run'))),
          ).toEqual(['receipt-8']);
          await Promise.all([page.waitForURL(/state=running/), page.click('#states a[data-state="running"]')]);
          await Promise.all([page.waitForURL(/\/workflow\?/), page.click('#runs tr[data-run="order-7"] a')]);
          expect(await page.textContent('#run-state')).toBe('running');
          expect(
            await page
              .locator('#steps li')
              .evaluateAll((items) =>
                items.map((li) => `${li.getAttribute('data-position')}:${li.getAttribute('data-state')}`),
              ),
          ).toEqual(['0:done', '1:waiting']);
          expect(await page.textContent('#steps')).toContain('reserve-stock');
          expect(await page.textContent('#journal')).toContain('wait for signal payment-received');
          await page.screenshot({ path: join(SHOTS, `workflow-run-${engine.kind}-${adapter}.png`), fullPage: true });
          await Promise.all([
            page.waitForURL(/\/workflow-action$/),
            page.click('button[data-action="workflow-cancel"]'),
          ]);
          expect(await page.textContent('.confirm')).toContain('Cancel workflow run order-7');
          expect((await w.getStatus('order-7'))!.state).toBe('running');
          await Promise.all([page.waitForURL(/wf=cancel&ok=1/), page.click('#confirm')]);
          expect(await page.textContent('#workflow-flash')).toContain('Cancelled the run');
          expect(await page.textContent('#run-state')).toBe('cancelled');
          expect(await page.locator('button[data-action="workflow-cancel"]').count()).toBe(0);
          expect((await w.getStatus('order-7'))!.state).toBe('cancelled');
          await page.goto(`${base}/audit`);
          expect(await page.textContent('#audit')).toContain('workflow-cancel');
        } finally {
          await w.close();
        }
      });

      it('draws a queue’s wait and run time charts and updates them live as jobs finish', async () => {
        const queue = store.queue('latency-live');
        await queue.enqueue({ n: 0 });
        await page.goto(`${base}/queue?name=latency-live`);
        await page.waitForSelector('#live-status[data-state="on"]');
        await page.click('#queue-insights summary');
        expect(await page.locator('figure.latency').count()).toBe(4);
        const caption = page.locator('figure.latency[data-kind="run"] figcaption').first();
        expect(await caption.textContent()).toContain('no job finished in the last hour');
        const jobs = await queue.claimBatch(1, 'w');
        await jobs[0]!.ack();
        // No reload: the live region brings the finished job into the chart.
        await page
          .locator('figure.latency[data-kind="run"] figcaption', { hasText: /1 jobs ran \(claimed to finished\), p50/ })
          .first()
          .waitFor({ timeout: 15_000 });
        expect(await page.locator('figure.latency[data-kind="run"] circle.p50').count()).toBeGreaterThanOrEqual(1);
        await page.screenshot({ path: join(SHOTS, `latency-${engine.kind}-${adapter}.png`), fullPage: true });
      });
    });
  }
