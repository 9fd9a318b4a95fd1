import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import { outboxQueueName } from '../../lib/contract/names.js';
import { AlkstoreHealthIndicator } from '../../lib/health/index.js';
import { CONFIRMATION_EMAILS, ORDER_CREATED } from '../orders/handles.js';

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
          queues: {
            [CONFIRMATION_EMAILS.name]: { maxOldestReadyAgeMs: 300_000, maxDead: 100 },
            [outboxQueueName(ORDER_CREATED.name)]: { maxOldestReadyAgeMs: 300_000, maxDead: 100 },
          },
        }),
    ]);
  }
}
