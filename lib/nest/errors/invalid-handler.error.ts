import { AlkstoreError } from '../../contract/errors.js';

/**
 * A decorated handler cannot run: a duplicate outbox, queue or schedule name,
 * an invalid name or spec. Thrown at startup; the message names the class and
 * method (both of them, for a duplicate). Code `INVALID_HANDLER`.
 */
export class InvalidHandler extends AlkstoreError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('INVALID_HANDLER', message, options);
  }
}
