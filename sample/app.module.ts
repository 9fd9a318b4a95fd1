import { Module, type DynamicModule } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AlkstoreModule } from '../lib/nest/index.js';
import type { SampleConfig } from './config.js';
import { DatabaseModule } from './database.module.js';
import { OpsModule } from './ops/ops.module.js';
import { OrdersModule } from './orders/orders.module.js';

/**
 * The sample: TypeORM and alkstore share one database. alkstore is built
 * from the DataSource, so `POST /orders` can write the order and its outbox
 * message in one TypeORM transaction.
 */
@Module({})
export class AppModule {
  static forRoot(config: SampleConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        DatabaseModule.forRoot(config),
        AlkstoreModule.forRootAsync({
          inject: [DataSource],
          useFactory: (dataSource: DataSource) => ({
            dataSource,
            schema: config.alkstoreSchema,
            idlePollIntervalMs: config.idlePollIntervalMs,
            drainTimeoutMs: config.drainTimeoutMs,
          }),
        }),
        OrdersModule,
        OpsModule.forRoot({ dashboardToken: config.dashboardToken }),
      ],
    };
  }
}
