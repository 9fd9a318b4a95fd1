import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ConfirmationEmailHandler } from './confirmation-email.handler.js';
import { DeliveryHandler } from './delivery.handler.js';
import { ENTITIES } from './entities.js';
import { OrdersController } from './orders.controller.js';
import { OrdersService } from './orders.service.js';
import { ReportJob } from './report.job.js';

/** No `AlkstoreModule.forFeature` needed: the root module provides every queue and outbox a handler names. */
@Module({
  imports: [TypeOrmModule.forFeature(ENTITIES)],
  controllers: [OrdersController],
  providers: [OrdersService, DeliveryHandler, ConfirmationEmailHandler, ReportJob],
})
export class OrdersModule {}
