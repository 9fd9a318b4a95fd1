import { timingSafeEqual } from 'node:crypto';
import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { UnauthorizedException } from '@nestjs/common';

/** The challenge a refused request gets, so a browser asks for the token (any user name, the token as password). */
export const TOKEN_CHALLENGE = 'Basic realm="alkstore", charset="UTF-8"';

function same(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * The user an `Authorization` header signs in with `token`, or null: `Bearer <token>` (user `token`),
 * or HTTP Basic with any user name and the token as password (that user name). Constant-time compare.
 */
export function tokenUser(authorization: string | string[] | undefined, token: string): string | null {
  const header = typeof authorization === 'string' ? authorization : '';
  if (header.startsWith('Bearer ')) return same(header.slice(7).trim(), token) ? 'token' : null;
  if (!header.startsWith('Basic ')) return null;
  const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
  const i = decoded.indexOf(':');
  if (i < 0 || !same(decoded.slice(i + 1), token)) return null;
  return decoded.slice(0, i) || 'token';
}

interface HeaderTarget {
  setHeader?(name: string, value: string): unknown;
  header?(name: string, value: string): unknown;
}

/** The guard `tokenEnv` builds: the CLI dashboard's Basic-or-Bearer check, answering 401 with the challenge. */
export class DashboardTokenGuard implements CanActivate {
  constructor(private readonly token: string) {}

  canActivate(context: ExecutionContext): boolean {
    const http = context.switchToHttp();
    const req = http.getRequest<{ headers: Record<string, string | string[] | undefined> }>();
    if (tokenUser(req.headers.authorization, this.token) !== null) return true;
    const res = http.getResponse<HeaderTarget>();
    if (typeof res.setHeader === 'function') res.setHeader('www-authenticate', TOKEN_CHALLENGE);
    else res.header?.('www-authenticate', TOKEN_CHALLENGE);
    throw new UnauthorizedException('Sign in with the dashboard token (HTTP Basic password, or Bearer).');
  }
}
