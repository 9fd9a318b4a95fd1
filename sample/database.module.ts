import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Global, Inject, Injectable, Module, type DynamicModule, type OnApplicationShutdown } from '@nestjs/common';
import { DataSource, type DataSourceOptions } from 'typeorm';
import type { SampleConfig } from './config.js';
import { Delivery } from './orders/delivery.entity.js';
import { Order } from './orders/order.entity.js';

export const SAMPLE_CONFIG = 'sample:config';

/** TypeORM options: PostgreSQL when `databaseUrl` says so, else the SQLite file alkstore shares. */
export function dataSourceOptions(config: SampleConfig): DataSourceOptions {
  const entities = [Order, Delivery];
  if (config.databaseUrl) {
    return { type: 'postgres', url: config.databaseUrl, schema: config.databaseSchema, entities };
  }
  mkdirSync(dirname(config.sqlitePath), { recursive: true });
  return { type: 'better-sqlite3', database: config.sqlitePath, entities, enableWAL: true };
}

/** Destroys the DataSource last: alkstore drains its handlers (which use it) in the earlier shutdown phase. */
@Injectable()
class DataSourceCloser implements OnApplicationShutdown {
  constructor(@Inject(DataSource) private readonly dataSource: DataSource) {}

  async onApplicationShutdown(): Promise<void> {
    if (this.dataSource.isInitialized) await this.dataSource.destroy();
  }
}

/** Provides the TypeORM `DataSource` under its class, the way @nestjs/typeorm does. */
@Global()
@Module({})
export class DatabaseModule {
  static forRoot(config: SampleConfig): DynamicModule {
    return {
      module: DatabaseModule,
      providers: [
        { provide: SAMPLE_CONFIG, useValue: config },
        {
          provide: DataSource,
          useFactory: async () => {
            // Synchronize after initialize: a PostgreSQL schema must exist before TypeORM creates tables in it.
            const dataSource = await new DataSource({ ...dataSourceOptions(config), synchronize: false }).initialize();
            if (config.databaseUrl && config.databaseSchema) {
              await dataSource.query(`CREATE SCHEMA IF NOT EXISTS "${config.databaseSchema.replace(/"/g, '""')}"`);
            }
            await dataSource.synchronize();
            return dataSource;
          },
        },
        DataSourceCloser,
      ],
      exports: [DataSource, SAMPLE_CONFIG],
    };
  }
}
