import { Logger } from '@nestjs/common';
import type { StoreLogger } from '../../contract/types.js';

/** Nest's `Logger` as a `StoreLogger`: errors print their stack, not `[object Object]`. */
export function nestStoreLogger(context = 'Alkstore'): StoreLogger {
  const logger = new Logger(context);
  return {
    log: (message) => logger.log(message),
    warn: (message) => logger.warn(message),
    error: (message, error) => {
      if (error === undefined) logger.error(message);
      else logger.error(message, error instanceof Error ? (error.stack ?? error.message) : String(error));
    },
  };
}
