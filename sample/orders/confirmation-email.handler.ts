import { Injectable, Logger } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import type { Job } from '../../lib/index.js';
import { QueueHandler } from '../../lib/nest/index.js';
import { CONFIRMATION_EMAILS, type ConfirmationEmail } from './handles.js';
import { SentEmail } from './sent-email.entity.js';

/** "Sends" confirmation emails (records them). `@QueueHandler(CONFIRMATION_EMAILS)` only accepts a `Job<ConfirmationEmail>`. */
@Injectable()
export class ConfirmationEmailHandler {
  private readonly logger = new Logger(ConfirmationEmailHandler.name);

  constructor(@InjectRepository(SentEmail) private readonly sent: Repository<SentEmail>) {}

  @QueueHandler(CONFIRMATION_EMAILS, { concurrency: 2 })
  async send(job: Job<ConfirmationEmail>): Promise<void> {
    const { orderId, to, reason } = job.payload;
    // jobId is unique: a job that runs twice (at-least-once) sends once.
    await this.sent.createQueryBuilder().insert().values({ orderId, to, reason, jobId: job.id }).orIgnore().execute();
    this.logger.log(`confirmation email for order ${orderId} (${reason}, job ${job.id})`);
  }
}
