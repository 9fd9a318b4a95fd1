import { Module, type DynamicModule, type OnModuleInit, type Provider } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { Store } from '../nest/store.token.js';
import { createDashboardController } from './dashboard.controller.js';
import { resolveDashboardOptions, type AlkstoreDashboardOptions } from './dashboard.options.js';
import { DashboardService } from './dashboard.service.js';
import { ensureFastifyFormParser } from './fastify-form.js';

/**
 * Makes the app's HTTP adapter read the dashboard's forms. Runs at
 * `onModuleInit`, when the adapter is known (a testing module is compiled
 * before it gets one) and Fastify still accepts content-type parsers.
 */
class DashboardHttpSetup implements OnModuleInit {
  constructor(
    private readonly adapterHost: HttpAdapterHost | undefined,
    private readonly actionRoute: string,
  ) {}

  onModuleInit(): void {
    const adapter = this.adapterHost?.httpAdapter;
    if (adapter?.getType() === 'fastify') ensureFastifyFormParser(adapter.getInstance(), this.actionRoute);
  }
}

/**
 * The operator dashboard: queues, jobs, dead letters, schedules, streams and
 * outboxes, server-rendered by the application's own HTTP server at the path
 * it chooses, on Nest's Express or Fastify adapter. Reads through `Store`
 * (from `AlkstoreModule`) and `store.admin()`; no script, no CDN.
 *
 * It refuses to start without an access rule: pass a Nest `guard` (it decides
 * every request under the path) or `readOnly: true`. Actions are POST only,
 * CSRF-checked, and confirmed on a second page. It reads its own forms when
 * the app runs without a body parser (`bodyParser: false`).
 *
 * ```ts
 * AlkstoreDashboardModule.forRoot({ path: '/alkstore', guard: AdminGuard })
 * ```
 */
@Module({})
export class AlkstoreDashboardModule {
  static forRoot(options: AlkstoreDashboardOptions): DynamicModule {
    const resolved = resolveDashboardOptions(options);
    const providers: Provider[] = [
      {
        provide: DashboardService,
        useFactory: (store: Store) => new DashboardService(store, resolved),
        inject: [Store],
      },
      {
        provide: DashboardHttpSetup,
        useFactory: (host: HttpAdapterHost | undefined) => new DashboardHttpSetup(host, `${resolved.path}/action`),
        inject: [{ token: HttpAdapterHost, optional: true }],
      },
    ];
    if (typeof resolved.guard === 'function') providers.push(resolved.guard);
    return {
      module: AlkstoreDashboardModule,
      controllers: [createDashboardController(resolved.path, resolved.guard)],
      providers,
    };
  }
}
