import { Delivery } from './delivery.entity.js';
import { Order } from './order.entity.js';
import { Report } from './report.entity.js';
import { SentEmail } from './sent-email.entity.js';

/** The sample's TypeORM entities. */
export const ENTITIES = [Order, Delivery, SentEmail, Report];
