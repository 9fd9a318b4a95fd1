import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { Closed } from '../../lib/contract/errors.js';
import type { Job } from '../../lib/contract/types.js';
import { AlkstoreDashboardModule } from '../../lib/dashboard/index.js';
import { AlkstoreModule, QueueHandler } from '../../lib/nest/index.js';
import { waitFor } from '../helpers/engines.js';
import { HTTP_ADAPTERS, httpApp } from '../helpers/http-adapters.js';
import { nestEngines } from './nest-fixtures.js';
import { Store } from '../../lib/index.js';

const handled: unknown[] = [];

@Injectable()
class Greeter {
  @QueueHandler('greetings')
  async greet(job: Job): Promise<void> {
    handled.push(job.payload);
  }
}

// The worker host and the HTTP server share the app's lifecycle: both must start and stop on either adapter.
for (const engine of nestEngines())
  for (const adapter of HTTP_ADAPTERS) {
    describe(`AlkstoreModule with workers in a Nest app [${engine.name}, ${adapter}]`, () => {
      it('handles jobs next to the dashboard, and app.close() stops the workers and closes the store', async () => {
        const db = await engine.create();
        try {
          const moduleRef = await Test.createTestingModule({
            imports: [
              AlkstoreModule.forRoot(db.moduleOptions({ drainTimeoutMs: 1_000 })),
              AlkstoreDashboardModule.forRoot({ readOnly: true }),
            ],
            providers: [Greeter],
          }).compile();
          const app = await httpApp(moduleRef, adapter, { logger: ['error', 'warn'] });
          const store = app.get(Store);
          let closing = 0;
          try {
            handled.length = 0;
            await store.queue('greetings').enqueue({ hello: adapter });
            await waitFor('the handler', () => handled.length === 1);
            expect(handled).toEqual([{ hello: adapter }]);
            const page = await request(app.getHttpServer()).get('/alkstore/dead').expect(200);
            expect(page.text).toContain('<h1>Dead letters</h1>');
          } finally {
            closing = Date.now();
            await app.close();
          }
          expect(Date.now() - closing).toBeLessThan(5_000);
          expect(() => store.queue('greetings')).toThrow(Closed);
        } finally {
          await db.destroy();
        }
      });
    });
  }
