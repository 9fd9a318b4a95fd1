import { Controller, Get, Header, Inject, Module } from '@nestjs/common';
import * as promClient from 'prom-client';

/** Injection token of the sample's prom-client registry (alkstore's worker metrics are registered on it). */
export const METRICS_REGISTRY = 'sample:metrics-registry';

/** `GET /metrics`: the Prometheus text format of every metric on the registry (alkstore's `alkstore_*` among them). */
@Controller('metrics')
export class MetricsController {
  constructor(@Inject(METRICS_REGISTRY) private readonly registry: promClient.Registry) {}

  @Get()
  @Header('Content-Type', promClient.Registry.PROMETHEUS_CONTENT_TYPE)
  metrics(): Promise<string> {
    return this.registry.metrics();
  }
}

/** Provides the registry (one per application, so tests can build several apps in one process). */
@Module({
  controllers: [MetricsController],
  providers: [{ provide: METRICS_REGISTRY, useFactory: () => new promClient.Registry() }],
  exports: [METRICS_REGISTRY],
})
export class MetricsModule {}
