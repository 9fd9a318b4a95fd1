import { PermanentError } from '../contract/errors.js';

/** Whether `err` says retrying cannot help: a `PermanentError`, also one from another copy of the package. */
export function isPermanent(err: unknown): boolean {
  return err instanceof PermanentError || (err instanceof Error && (err as { code?: unknown }).code === 'PERMANENT');
}
