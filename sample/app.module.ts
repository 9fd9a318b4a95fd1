import { Module, type DynamicModule } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Registry } from 'prom-client';
import { createPrometheusMetrics } from '../lib/metrics/index.js';
import { AlkstoreModule } from '../lib/nest/index.js';
import type { SampleConfig } from './config.js';
import { DatabaseModule } from './database.module.js';
import { METRICS_REGISTRY, MetricsModule } from './metrics/metrics.module.js';
import { OrdersModule } from './orders/orders.module.js';

/**
 * The sample: TypeORM and alkstore share one database. alkstore is built
 * from the DataSource, so `POST /orders` can write the order and its outbox
 * message in one TypeORM transaction. `GET /metrics` serves the workers'
 * Prometheus metrics.
 */
@Module({})
export class AppModule {
  static forRoot(config: SampleConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        DatabaseModule.forRoot(config),
        MetricsModule,
        AlkstoreModule.forRootAsync({
          imports: [MetricsModule],
          inject: [DataSource, METRICS_REGISTRY],
          useFactory: async (dataSource: DataSource, registry: Registry) => ({
            dataSource,
            // Every worker reports to the registry GET /metrics serves.
            metrics: await createPrometheusMetrics({ registry }),
            schema: config.alkstoreSchema,
            idlePollIntervalMs: config.idlePollIntervalMs,
            drainTimeoutMs: config.drainTimeoutMs,
          }),
        }),
        OrdersModule,
      ],
    };
  }
}
