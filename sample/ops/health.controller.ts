import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import { AlkstoreHealthIndicator } from '../../lib/health/index.js';

/** `GET /health`: 200 while the database answers and the queues are within bounds, else 503. */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly alkstore: AlkstoreHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check(): Promise<HealthCheckResult> {
    return this.health.check([
      () =>
        this.alkstore.isHealthy('alkstore', {
          timeoutMs: 2_000,
          queues: { emails: { maxOldestReadyAgeMs: 300_000, maxDead: 100 }, '__alkstore_outbox:orders': { maxOldestReadyAgeMs: 300_000, maxDead: 100 } },
        }),
    ]);
  }
}
