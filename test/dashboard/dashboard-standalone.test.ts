import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { serveDashboard, type StandaloneDashboard } from '../../lib/dashboard/standalone.js';
import { contractEngines, type EngineDb } from '../helpers/engines.js';

const TOKEN = 'standalone-pages-0123456789';

for (const engine of contractEngines()) {
  describe(`standalone dashboard pages [${engine.name}]`, () => {
    let db: EngineDb;
    let store: Store;
    let dash: StandaloneDashboard;
    beforeAll(async () => {
      db = await engine.create();
      store = await db.open();
      dash = await serveDashboard(store, { token: TOKEN, port: 0 });
    }, 60_000);
    afterAll(async () => {
      await dash?.close();
      await db?.destroy();
    }, 60_000);

    it('serves the history, new-job, workers, receipts and schedule pages as the module does', async () => {
      await store.schedule('standalone-nightly', '@every 1d', 'standalone-reports', { kind: 'nightly' });
      const fired = await store.triggerSchedule('standalone-nightly');
      await store.queue('standalone-reports').claimBatch(1, 'ops-host:31337:c0ffee');
      const headers = { authorization: `Bearer ${TOKEN}` };
      const text = async (path: string, status = 200) => {
        const res = await fetch(`${dash.url}${path}`, { headers });
        expect(res.status).toBe(status);
        return res.text();
      };
      expect(await text('/queue?name=standalone-reports&state=finished')).toContain('history (finished)');
      expect(await text('/new?queue=standalone-reports')).toContain('name="payload"');
      expect(await text('/workers')).toContain('data-worker="ops-host:31337:c0ffee"');
      expect(await text('/receipts?outbox=standalone-box')).toContain('No receipts stored for this outbox.');
      expect(await text('/schedule?name=standalone-nightly')).toContain(`data-job="${fired}"`);
    });
  });
}
