import { InvalidOption } from '../contract/errors.js';
import { validateKey } from '../contract/validate.js';

/** The default outbox key when a store holds one outbox only. */
export const DEFAULT_OUTBOX_KEY = 'default';

export function checkKey(key: unknown): string {
  if (key === undefined) return DEFAULT_OUTBOX_KEY;
  return validateKey('outbox key', key);
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]{0,39}$/;

/** Table and schema names are spliced into SQL, so only plain identifiers are accepted. */
export function checkIdentifier(field: string, value: unknown, fallback: string): string {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !IDENT.test(value)) {
    throw new InvalidOption(
      field,
      'must be a plain SQL identifier (letters, digits, underscore; at most 40 characters)',
    );
  }
  return value;
}
