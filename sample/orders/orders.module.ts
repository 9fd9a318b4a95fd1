import { Module } from '@nestjs/common';
import { DeliveryHandler } from './delivery.handler.js';
import { OrdersController } from './orders.controller.js';
import { OrdersService } from './orders.service.js';
import { ReportJob } from './report.job.js';

@Module({
  controllers: [OrdersController],
  providers: [OrdersService, DeliveryHandler, ReportJob],
})
export class OrdersModule {}
