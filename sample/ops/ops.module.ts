import { Logger, Module, type DynamicModule } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { AlkstoreDashboardModule } from '../../lib/dashboard/index.js';
import { AlkstoreHealthModule } from '../../lib/health/index.js';
import { DashboardTokenGuard } from './dashboard-token.guard.js';
import { HealthController } from './health.controller.js';

/** Operations for the sample: the dashboard at /alkstore (token guard) and GET /health. */
@Module({})
export class OpsModule {
  static forRoot(options: { dashboardToken?: string }): DynamicModule {
    const token = options.dashboardToken && options.dashboardToken.length >= 16 ? options.dashboardToken : null;
    if (!token)
      new Logger('Alkstore').log(
        'dashboard at /alkstore is locked: set ALKSTORE_DASHBOARD_TOKEN (16+ characters) to open it',
      );
    return {
      module: OpsModule,
      imports: [
        TerminusModule.forRoot({ logger: false }),
        AlkstoreHealthModule,
        AlkstoreDashboardModule.forRoot({ path: '/alkstore', guard: new DashboardTokenGuard(token) }),
      ],
      controllers: [HealthController],
    };
  }
}
