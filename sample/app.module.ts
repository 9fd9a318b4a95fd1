import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Module, type DynamicModule } from '@nestjs/common';
import { APP_PIPE } from '@nestjs/core';
import { TypeOrmModule, type TypeOrmModuleOptions } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Registry } from 'prom-client';
import { createPrometheusMetrics } from '../lib/metrics/index.js';
import { AlkstoreModule } from '../lib/nest/index.js';
import type { SampleConfig } from './config.js';
import { OpsModule } from './ops/ops.module.js';
import { ENTITIES } from './orders/entities.js';
import { METRICS_REGISTRY, MetricsModule } from './metrics/metrics.module.js';
import { OrdersModule } from './orders/orders.module.js';
import { SampleValidationPipe } from './validation.pipe.js';

/** TypeORM options: PostgreSQL when `databaseUrl` says so, else the SQLite file alkstore shares. */
export function typeOrmOptions(config: SampleConfig): TypeOrmModuleOptions {
  if (config.databaseUrl) {
    return {
      type: 'postgres',
      url: config.databaseUrl,
      schema: config.databaseSchema,
      entities: ENTITIES,
      synchronize: true,
    };
  }
  mkdirSync(dirname(config.sqlitePath), { recursive: true });
  return {
    type: 'better-sqlite3',
    database: config.sqlitePath,
    entities: ENTITIES,
    synchronize: true,
    enableWAL: true,
  };
}

/**
 * The sample: TypeORM (through `@nestjs/typeorm`) and alkstore share one
 * database. alkstore is built from the application's DataSource, so
 * `POST /orders` writes the order and its outbox message in one TypeORM
 * transaction. Every request body and parameter is validated (a global
 * `ValidationPipe`, which first refuses a body nested too deep): bad input
 * is a 400, never a 500.
 * `GET /metrics` serves the workers' Prometheus metrics.
 */
@Module({})
export class AppModule {
  static forRoot(config: SampleConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        TypeOrmModule.forRoot(typeOrmOptions(config)),
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
        OpsModule.forRoot({ dashboardToken: config.dashboardToken }),
      ],
      providers: [
        { provide: APP_PIPE, useValue: new SampleValidationPipe({ whitelist: true, forbidNonWhitelisted: true }) },
      ],
    };
  }
}
