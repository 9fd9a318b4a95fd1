import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

/** `<host>:<pid>:<random>`: unique per application instance, readable in `worker_id` columns. */
export function defaultWorkerId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}
