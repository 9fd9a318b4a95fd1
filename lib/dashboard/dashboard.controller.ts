import { All, Controller, Get, Inject, Post, Req, Res, UseGuards, type CanActivate, type Type } from '@nestjs/common';
import { DashboardService, type DashboardReply, type DashboardRequest } from './dashboard.service.js';

/** The response methods used, on Express (`status`/`setHeader`) or Fastify (`code`/`header`). */
interface ReplyTarget {
  status?(code: number): unknown;
  code?(code: number): unknown;
  setHeader?(name: string, value: string): unknown;
  header?(name: string, value: string): unknown;
  send(body?: string): unknown;
}

function send(res: ReplyTarget, reply: DashboardReply): void {
  if (typeof res.status === 'function') res.status(reply.status);
  else res.code?.(reply.status);
  for (const [name, value] of Object.entries(reply.headers)) {
    if (typeof res.setHeader === 'function') res.setHeader(name, value);
    else res.header?.(name, value);
  }
  res.send(reply.body);
}

/**
 * Unknown paths under the mount, up to 8 segments deep. Express 5
 * (path-to-regexp: `*rest`) and Fastify (find-my-way: `*`, last only) share no
 * wildcard syntax, but both read named segments. Deeper paths get the app's own
 * 404, which says nothing about the dashboard either.
 */
const CATCH_ALL = Array.from({ length: 8 }, (_, depth) =>
  Array.from({ length: depth + 1 }, (_, i) => `:s${i}`).join('/'),
);

/**
 * Builds the dashboard's controller at `path`, behind `guard` when given.
 * One class per mount: the path is part of the class's route metadata.
 */
export function createDashboardController(path: string, guard: Type<CanActivate> | CanActivate | null): Type<unknown> {
  @Controller(path)
  class AlkstoreDashboardController {
    constructor(@Inject(DashboardService) private readonly dashboard: DashboardService) {}

    @Get()
    async queues(@Req() req: DashboardRequest, @Res() res: ReplyTarget): Promise<void> {
      send(res, await this.dashboard.page(req, ''));
    }

    @Get('queue')
    async queue(@Req() req: DashboardRequest, @Res() res: ReplyTarget): Promise<void> {
      send(res, await this.dashboard.page(req, 'queue'));
    }

    @Get('job')
    async job(@Req() req: DashboardRequest, @Res() res: ReplyTarget): Promise<void> {
      send(res, await this.dashboard.page(req, 'job'));
    }

    @Get('payload')
    async payload(@Req() req: DashboardRequest, @Res() res: ReplyTarget): Promise<void> {
      send(res, await this.dashboard.payload(req));
    }

    @Get('new')
    async newJob(@Req() req: DashboardRequest, @Res() res: ReplyTarget): Promise<void> {
      send(res, await this.dashboard.page(req, 'new'));
    }

    @Get('workers')
    async workers(@Req() req: DashboardRequest, @Res() res: ReplyTarget): Promise<void> {
      send(res, await this.dashboard.page(req, 'workers'));
    }

    @Get('receipts')
    async receipts(@Req() req: DashboardRequest, @Res() res: ReplyTarget): Promise<void> {
      send(res, await this.dashboard.page(req, 'receipts'));
    }

    @Get('schedule')
    async schedule(@Req() req: DashboardRequest, @Res() res: ReplyTarget): Promise<void> {
      send(res, await this.dashboard.page(req, 'schedule'));
    }

    @Get('audit')
    async audit(@Req() req: DashboardRequest, @Res() res: ReplyTarget): Promise<void> {
      send(res, await this.dashboard.page(req, 'audit'));
    }

    @Get('bulk')
    async bulk(@Req() req: DashboardRequest, @Res() res: ReplyTarget): Promise<void> {
      send(res, await this.dashboard.page(req, 'bulk'));
    }

    @Get('dead')
    async dead(@Req() req: DashboardRequest, @Res() res: ReplyTarget): Promise<void> {
      send(res, await this.dashboard.page(req, 'dead'));
    }

    @Get('schedules')
    async schedules(@Req() req: DashboardRequest, @Res() res: ReplyTarget): Promise<void> {
      send(res, await this.dashboard.page(req, 'schedules'));
    }

    @Get('streams')
    async streams(@Req() req: DashboardRequest, @Res() res: ReplyTarget): Promise<void> {
      send(res, await this.dashboard.page(req, 'streams'));
    }

    @Get('outboxes')
    async outboxes(@Req() req: DashboardRequest, @Res() res: ReplyTarget): Promise<void> {
      send(res, await this.dashboard.page(req, 'outboxes'));
    }

    @Post('action')
    async action(@Req() req: DashboardRequest, @Res() res: ReplyTarget): Promise<void> {
      send(res, await this.dashboard.action(req));
    }

    // Anything else under the mount path still goes through the guard first.
    @All(CATCH_ALL)
    async other(@Req() req: DashboardRequest, @Res() res: ReplyTarget): Promise<void> {
      send(res, await this.dashboard.notFound(req));
    }
  }
  if (guard) UseGuards(guard)(AlkstoreDashboardController);
  return AlkstoreDashboardController;
}
