import { defineOutbox, defineQueue } from '../../lib/nest/index.js';

/** Payload of an `order-created` outbox message, written with the order. */
export interface OrderCreated {
  orderId: number;
}

/** Payload of a confirmation email job. */
export interface ConfirmationEmail {
  orderId: number;
  to: string;
  /** Sent after delivery, or asked for again with `POST /orders/:id/confirmation`. */
  reason: 'delivered' | 'resend';
}

/** The outbox `POST /orders` writes to and `DeliveryHandler` drains. The type binds both ends at compile time. */
export const ORDER_CREATED = defineOutbox<OrderCreated>('order-created');

/** The queue `DeliveryHandler` (and `POST /orders/:id/confirmation`) feed and `ConfirmationEmailHandler` works. */
export const CONFIRMATION_EMAILS = defineQueue<ConfirmationEmail>('confirmation-emails', {
  maxAttempts: 5,
  backoffBaseMs: 1_000,
});

/** The `@Scheduled` report; its jobs go to `scheduled:orders-report`. */
export const REPORT_SCHEDULE = 'orders-report';
