import type { StoreLogger } from '../contract/types.js';

/**
 * Keeping passwords out of errors and logs. The engines know the secrets of
 * the connection they open (the password of a URL, of a pool's options);
 * every error leaving `open*Store` and every line reaching the logger passes
 * through {@link scrubSecrets} with them, so neither a message, a `cause`,
 * a stack nor a driver error's own fields can carry one.
 */

const MASK = '***';

/** The password of a URL-shaped string (`scheme://user:password@host…`), raw and percent-decoded; empty when it has none. */
export function urlSecrets(url: unknown): string[] {
  if (typeof url !== 'string') return [];
  const m = /^[A-Za-z][A-Za-z0-9+.-]*:(?:\/\/)?([^/?#]*)@/.exec(url);
  if (!m) return [];
  const colon = m[1].indexOf(':');
  if (colon < 0) return [];
  return secretForms(m[1].slice(colon + 1));
}

/** A password as it may appear in text: raw, percent-decoded and percent-encoded. */
export function secretForms(password: unknown): string[] {
  if (typeof password !== 'string' || password.length === 0) return [];
  const forms = new Set([password]);
  try {
    forms.add(decodeURIComponent(password));
  } catch {
    // not valid percent-encoding: the raw form is all there is
  }
  forms.add(encodeURIComponent(password));
  // Longest first, so a form containing another is masked whole.
  return [...forms].filter((f) => f.length > 0).sort((a, b) => b.length - a.length);
}

function mask(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (out.includes(s)) out = out.split(s).join(MASK);
  return out;
}

/**
 * Replaces every occurrence of a secret in an error's message, stack and
 * string fields, following `cause` and `errors` (AggregateError) chains.
 * Works in place (driver errors are rethrown, not copied) and returns the
 * error; a non-Error throw that contains a secret becomes a plain Error.
 */
export function scrubSecrets<T>(err: T, secrets: readonly string[]): T {
  if (secrets.length === 0) return err;
  if (typeof err === 'string') return mask(err, secrets) as T;
  const seen = new Set<unknown>();
  const visit = (value: unknown, depth: number): void => {
    if (value === null || typeof value !== 'object' || seen.has(value) || depth > 8) return;
    seen.add(value);
    const record = value as Record<string, unknown>;
    for (const key of Reflect.ownKeys(value)) {
      if (typeof key !== 'string') continue;
      let current: unknown;
      try {
        current = record[key];
      } catch {
        continue;
      }
      if (typeof current === 'string') {
        const masked = mask(current, secrets);
        if (masked !== current) {
          try {
            Object.defineProperty(value, key, {
              value: masked,
              writable: true,
              configurable: true,
              enumerable: Object.prototype.propertyIsEnumerable.call(value, key),
            });
          } catch {
            // a frozen field: nothing we can do in place
          }
        }
      } else if (typeof current === 'object') {
        visit(current, depth + 1);
      }
    }
  };
  visit(err, 0);
  return err;
}

/** A logger that masks `secrets` in every message and error it is handed. */
export function scrubbingLogger(logger: StoreLogger, secrets: readonly string[]): StoreLogger {
  if (secrets.length === 0) return logger;
  return {
    log: (message) => logger.log(mask(message, secrets)),
    warn: (message) => logger.warn(mask(message, secrets)),
    error: (message, error) => logger.error(mask(message, secrets), scrubSecrets(error, secrets)),
  };
}
