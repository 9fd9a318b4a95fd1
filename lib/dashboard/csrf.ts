import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** Name of the CSRF cookie (HttpOnly, SameSite=Strict, scoped to the mount path). */
export const CSRF_COOKIE = 'alkstore_csrf';

/**
 * Signed double-submit tokens: the cookie holds a random nonce, every form
 * holds HMAC(secret, nonce). A POST is accepted only when the form's token is
 * the HMAC of the cookie's nonce, so a cross-site page can neither read the
 * token nor forge one (even if it could plant a cookie).
 */
export class CsrfTokens {
  private readonly secret: Buffer;

  constructor(secret?: string) {
    this.secret = secret === undefined ? randomBytes(32) : Buffer.from(secret, 'utf8');
  }

  newNonce(): string {
    return randomBytes(24).toString('base64url');
  }

  tokenFor(nonce: string): string {
    return createHmac('sha256', this.secret).update(nonce, 'utf8').digest('base64url');
  }

  verify(nonce: string | undefined, token: unknown): boolean {
    if (!nonce || typeof token !== 'string' || token.length === 0 || token.length > 128) return false;
    const want = Buffer.from(this.tokenFor(nonce), 'utf8');
    const got = Buffer.from(token, 'utf8');
    return want.length === got.length && timingSafeEqual(want, got);
  }
}

/** The value of one cookie in a `Cookie` header. */
export function readCookie(header: string | string[] | undefined, name: string): string | undefined {
  const text = Array.isArray(header) ? header.join('; ') : header;
  if (!text) return undefined;
  for (const part of text.split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) {
      const v = part.slice(i + 1).trim();
      return /^[A-Za-z0-9_-]{1,64}$/.test(v) ? v : undefined;
    }
  }
  return undefined;
}

/**
 * Whether a state-changing request comes from the dashboard's own pages: a browser's
 * `Sec-Fetch-Site`, when sent, says same-origin (or none: typed or bookmarked), and an `Origin`,
 * when sent, names this host. `Origin: null` (a sandboxed frame, a `data:` or `file:` page, a
 * cross-origin redirect) is never the dashboard's own page: refused, as is more than one `Origin`.
 */
export function sameOriginRequest(headers: Readonly<Record<string, string | string[] | undefined>>): boolean {
  const site = headers['sec-fetch-site'];
  if (typeof site === 'string' && site !== 'same-origin' && site !== 'none') return false;
  const origin = headers.origin;
  if (origin === undefined) return true;
  if (typeof origin !== 'string' || origin === 'null') return false;
  try {
    return new URL(origin).host === headers.host;
  } catch {
    return false;
  }
}
