import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Scheduled } from '../../lib/nest/index.js';
import { Delivery } from './delivery.entity.js';
import { Order } from './order.entity.js';

/** Schedule name of the report; its spec comes from the config (`@every 10s`). */
export const REPORT_SCHEDULE = 'orders-report';

/** Logs order and delivery counts once per boundary, across all replicas together. */
@Injectable()
export class ReportJob {
  private readonly logger = new Logger(ReportJob.name);
  /** Runs in this process (the `GET /stats` counter). */
  runs = 0;

  constructor(@Inject(DataSource) private readonly dataSource: DataSource) {}

  @Scheduled(REPORT_SCHEDULE, process.env.REPORT_SPEC || '@every 10s')
  async report(): Promise<void> {
    const [orders, deliveries] = await Promise.all([this.dataSource.getRepository(Order).count(), this.dataSource.getRepository(Delivery).count()]);
    this.runs += 1;
    this.logger.log(`report #${this.runs}: ${orders} orders, ${deliveries} deliveries`);
  }
}
