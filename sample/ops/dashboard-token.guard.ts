import { timingSafeEqual } from 'node:crypto';
import { UnauthorizedException, type CanActivate, type ExecutionContext } from '@nestjs/common';

/**
 * HTTP Basic auth for the dashboard: any user name, the password is the token.
 * The browser asks for it. Without a configured token, nobody gets in.
 */
export class DashboardTokenGuard implements CanActivate {
  private readonly token: Buffer | null;

  /** `token`: from `ALKSTORE_DASHBOARD_TOKEN`; null refuses everyone. */
  constructor(token: string | null) {
    this.token = token ? Buffer.from(token, 'utf8') : null;
  }

  canActivate(context: ExecutionContext): boolean {
    const http = context.switchToHttp();
    const header = http.getRequest<{ headers: Record<string, string | undefined> }>().headers.authorization ?? '';
    const m = /^Basic ([A-Za-z0-9+/=]+)$/.exec(header);
    const password = m
      ? Buffer.from(m[1]!, 'base64')
          .toString('utf8')
          .replace(/^[^:]*:/, '')
      : '';
    const given = Buffer.from(password, 'utf8');
    if (this.token && given.length === this.token.length && timingSafeEqual(given, this.token)) return true;
    // header(): Express's response and Fastify's reply both have it (setHeader is Express only).
    http
      .getResponse<{ header(name: string, value: string): unknown }>()
      .header('WWW-Authenticate', 'Basic realm="alkstore dashboard", charset="UTF-8"');
    throw new UnauthorizedException(
      this.token ? 'wrong dashboard token' : 'the dashboard is off: set ALKSTORE_DASHBOARD_TOKEN (16+ characters)',
    );
  }
}
