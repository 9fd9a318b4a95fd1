import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { workflowsQueueName } from '../../lib/contract/names.js';
import { type Store } from '../../lib/index.js';
import { nestEngines } from '../nest/nest-fixtures.js';
import { BASE, dashboardClient, withDashboardApp } from './dashboard-app.js';

// The queue that carries workflow runs is shown on the dashboard but never paused or purged from it:
// no Pause button, and a pause or delete posted anyway is refused with the reason, changing nothing.

for (const engine of nestEngines())
  describe(`dashboard, workflows queue [${engine.name}]`, () => {
    let app: INestApplication;
    let store: Store;
    withDashboardApp(engine, (made) => ({ app, store } = made));
    const { get, post } = dashboardClient(() => app);

    it('shows the workflows queue without Pause, and refuses pause and delete on it with the reason', async () => {
      const name = workflowsQueueName(`dash-guard-${engine.kind}`);
      const q = store.queue(name, { maxAttempts: 1 });
      await q.enqueueMany([
        { k: 'run', id: 'a' },
        { k: 'run', id: 'b' },
      ]);
      const [job] = await q.claimBatch(1, 'w1');
      await job!.fail(new Error('boom'));
      await store.queue('plain').enqueue({ n: 1 });

      const index = await get(`${BASE}/`).expect(200);
      const row = (queue: string) =>
        new RegExp(`<tr data-queue="${queue}">[\\s\\S]*?</tr>`).exec(index.text)?.[0] ?? '';
      expect(row(name)).toContain('active');
      expect(row(name)).not.toContain('data-action="pause"');
      expect(row('plain')).toContain('data-action="pause"');
      const page = await get(`${BASE}/queue?name=${encodeURIComponent(name)}`).expect(200);
      expect(page.text).not.toContain('data-action="pause"');
      expect(page.text).toContain('carries workflow runs: not paused from here');

      const refusals: Record<string, string>[] = [
        { action: 'pause', queue: name },
        { action: 'purge-all', queue: name },
        { action: 'purge', queue: name, id: String(job!.id) },
      ];
      for (const fields of refusals) {
        const refused = await post({ ...fields, confirm: 'yes' }, 400);
        expect(refused.text).toContain('carries workflow runs: the dashboard does not');
      }
      expect((await q.settings()).paused).toBe(false);
      expect(await q.stats()).toMatchObject({ pending: 1, dead: 1 });
      // An ordinary queue still pauses from the same form.
      await post({ action: 'pause', queue: 'plain', confirm: 'yes' }, 303);
      expect((await store.queue('plain').settings()).paused).toBe(true);
    });
  });
