import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import type { BrowserContext, Page } from 'playwright-core';
import { type FreshChromium, launchChromium } from '../helpers/chromium.js';
import { waitFor } from '../helpers/engines.js';
import { nestEngines, type NestDb } from '../nest/nest-fixtures.js';
import { dashboardApp, TEST_TOKEN, TokenGuard } from './dashboard-app.js';
import { type Store } from '../../lib/index.js';

// Dashboard v3 in a real Chromium (fresh profile) at an operator's 1400×1000 screen, on both engines.

let chromium: FreshChromium;
let browser: BrowserContext;

beforeAll(async () => {
  chromium = await launchChromium({ width: 1400, height: 1000 });
  browser = chromium.browser;
}, 60_000);

afterAll(async () => {
  await chromium?.close();
});

/** The page's elements as far as the tests read them (the test's TypeScript has no DOM types). */
interface Box {
  getBoundingClientRect(): { top: number; bottom: number };
}

for (const engine of nestEngines())
  describe(`dashboard v3 in Chromium [${engine.name}]`, () => {
    let db: NestDb;
    let app: INestApplication;
    let store: Store;
    let base = '';
    let page: Page;

    beforeAll(async () => {
      db = await engine.create();
      ({ app, store } = await dashboardApp(db, { path: '/alkstore', guard: TokenGuard, actor: () => 'browser-admin' }));
      await app.listen(0, '127.0.0.1');
      const { port } = app.getHttpServer().address() as AddressInfo;
      base = `http://127.0.0.1:${port}/ops/alkstore`;
      await browser.addCookies([{ name: 'admin_token', value: TEST_TOKEN, url: `http://127.0.0.1:${port}` }]);
      page = await browser.newPage();
    }, 60_000);
    afterAll(async () => {
      await page?.close();
      (app?.getHttpServer() as { closeAllConnections?: () => void } | undefined)?.closeAllConnections?.();
      await app?.close();
      await db?.destroy();
    }, 60_000);

    it('fits at least 25 job rows on the first 1400×1000 screen of a queue page', async () => {
      const q = store.queue('screen', { maxAttempts: 1 });
      await q.enqueueMany(
        Array.from({ length: 60 }, (_, i) => ({
          orderId: i,
          customer: { id: `c-${i}`, tier: 'gold' },
          note: 'x'.repeat(300),
        })),
        { headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } },
      );
      const j = await waitFor('a claim', () => q.claimOne('w'));
      await j.fail(new Error('ETIMEDOUT connecting to 10.0.0.7:5432\n    at TCPConnectWrap.afterConnect'));
      await page.goto(`${base}/queue?name=screen&state=all`);
      const visible = await page.$$eval(
        'table.jobs tbody tr',
        (rows) => rows.filter((r) => (r as unknown as Box).getBoundingClientRect().bottom <= 1000).length,
      );
      expect(visible).toBeGreaterThanOrEqual(25);
      // The strip opens on a click and shows the charts and limits.
      expect(await page.isVisible('#queue-limits')).toBe(false);
      await page.click('#queue-insights summary');
      expect(await page.isVisible('#queue-limits')).toBe(true);
    });

    it('selects rows and cancels them through the confirmation', async () => {
      const q = store.queue('picks');
      const [a, b] = await q.enqueueMany([{ n: 1 }, { n: 2 }, { n: 3 }]);
      await page.goto(`${base}/queue?name=picks&state=all`);
      await page.check(`input[name="ids"][value="${a}"]`);
      await page.check(`input[name="ids"][value="${b}"]`);
      await page.click('button[data-action="selected-cancel"]');
      expect(await page.textContent('.confirm')).toContain(`Cancel the 2 selected jobs`);
      await page.click('#confirm');
      await page.waitForURL(/done=selected-cancel&n=2/);
      expect(await q.getJob(a!)).toMatchObject({ state: 'cancelled' });
      expect(await q.getJob(b!)).toMatchObject({ state: 'cancelled' });
    });
  });
