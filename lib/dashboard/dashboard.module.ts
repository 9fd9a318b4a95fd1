import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { Store } from '../nest/store.token.js';
import { createDashboardController } from './dashboard.controller.js';
import { resolveDashboardOptions, type AlkstoreDashboardOptions } from './dashboard.options.js';
import { DashboardService } from './dashboard.service.js';

/**
 * The operator dashboard: queues, jobs, dead letters, schedules, streams and
 * outboxes, server-rendered by the application's own HTTP server at the path
 * it chooses. Reads through `Store` (from `AlkstoreModule`) and
 * `store.admin()`; no script, no CDN.
 *
 * It refuses to start without an access rule: pass a Nest `guard` (it decides
 * every request under the path) or `readOnly: true`. Actions are POST only,
 * CSRF-checked, and confirmed on a second page.
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
      { provide: DashboardService, useFactory: (store: Store) => new DashboardService(store, resolved), inject: [Store] },
    ];
    if (typeof resolved.guard === 'function') providers.push(resolved.guard);
    return {
      module: AlkstoreDashboardModule,
      controllers: [createDashboardController(resolved.path, resolved.guard)],
      providers,
    };
  }
}
