import { Injectable, Logger } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import type { Job } from '../../lib/index.js';
import { Scheduled } from '../../lib/nest/index.js';
import { Delivery } from './delivery.entity.js';
import { REPORT_SCHEDULE } from './handles.js';
import { Order } from './order.entity.js';
import { Report } from './report.entity.js';

/**
 * The report's spec, fixed when this file is loaded (a decorator argument): `REPORT_SPEC`, default every minute.
 * Either `@every <n><s|m|h|d>` or a cron expression, e.g. `REPORT_SPEC='0 7 * * 1-5'` (07:00 on weekdays;
 * `@Scheduled` also takes `{ timeZone: 'Europe/Berlin' }`).
 */
export const REPORT_SPEC = process.env.REPORT_SPEC || '@every 1m';

/** Counts orders and deliveries once per boundary, across all replicas together, into a `reports` row. */
@Injectable()
export class ReportJob {
  private readonly logger = new Logger(ReportJob.name);

  constructor(
    @InjectRepository(Order) private readonly orders: Repository<Order>,
    @InjectRepository(Delivery) private readonly deliveries: Repository<Delivery>,
    @InjectRepository(Report) private readonly reports: Repository<Report>,
  ) {}

  @Scheduled(REPORT_SCHEDULE, REPORT_SPEC)
  async report(job: Job): Promise<void> {
    const [orders, deliveries] = await Promise.all([this.orders.count(), this.deliveries.count()]);
    // jobId is unique: a fire that runs twice reports once.
    await this.reports.createQueryBuilder().insert().values({ jobId: job.id, orders, deliveries }).orIgnore().execute();
    this.logger.log(`report (job ${job.id}): ${orders} orders, ${deliveries} deliveries`);
  }
}
