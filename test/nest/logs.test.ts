import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, Module, type LoggerService } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { PermanentError } from '../../lib/contract/errors.js';
import type { Job } from '../../lib/contract/types.js';
import { AlkstoreModule, OutboxHandler, QueueHandler } from '../../lib/nest/index.js';
import { waitFor } from '../helpers/engines.js';
import { nestEngines, type NestDb } from './nest-fixtures.js';
import { Store } from '../../lib/index.js';

/** Nest's logger, kept: level, message, and whatever came with it (a stack, the context). */
class CapturingLogger implements LoggerService {
  readonly lines: { level: string; message: string; extra: string }[] = [];
  private keep(level: string, message: unknown, params: unknown[]): void {
    this.lines.push({ level, message: String(message), extra: params.map(String).join(' | ') });
  }
  log(message: unknown, ...params: unknown[]): void {
    this.keep('log', message, params);
  }
  warn(message: unknown, ...params: unknown[]): void {
    this.keep('warn', message, params);
  }
  error(message: unknown, ...params: unknown[]): void {
    this.keep('error', message, params);
  }
  debug(): void {}
  verbose(): void {}
  about(jobId: number): { level: string; message: string; extra: string }[] {
    return this.lines.filter((l) => new RegExp(`\\bjob ${jobId}\\b`).test(l.message));
  }
}

const calls = { outbox: 0 };

@Injectable()
class LogWorkers {
  @QueueHandler('logs-permanent')
  async permanent(): Promise<void> {
    throw new PermanentError('mailbox does not exist');
  }

  @QueueHandler('logs-exhausted', { maxAttempts: 2, backoffBaseMs: 10 })
  async exhausted(job: Job): Promise<void> {
    throw new Error(`boom on attempt ${job.attempts}`);
  }

  @OutboxHandler('logs-outbox')
  async deliver(): Promise<void> {
    calls.outbox += 1;
    throw new PermanentError('recipient rejected');
  }
}

@Module({ imports: [AlkstoreModule.forFeature({ queues: ['logs-feature'] })] })
class LogsFeatureModule {}

for (const engine of nestEngines()) {
  describe(`log lines (${engine.name})`, () => {
    let db: NestDb;
    let app: TestingModule;
    const logger = new CapturingLogger();

    beforeAll(async () => {
      db = await engine.create();
      // No `logger` option: alkstore logs through Nest's Logger, which the testing module routes here.
      app = await Test.createTestingModule({
        imports: [AlkstoreModule.forRoot(db.moduleOptions({ idlePollIntervalMs: 500 })), LogsFeatureModule],
        providers: [LogWorkers],
      })
        .setLogger(logger)
        .compile();
      await app.init();
    });
    afterAll(async () => {
      await app?.close();
      await db.destroy();
    });

    it('a PermanentError in a @QueueHandler logs one WARN line naming the queue, the job and the reason, without a stack', async () => {
      const queue = app.get(Store).queue('logs-permanent');
      const id = await queue.enqueue({});
      await waitFor('the dead letter', async () => (await queue.getJob(id))?.state === 'dead');
      const lines = await waitFor('its log line', () => (logger.about(id).length > 0 ? logger.about(id) : null));
      expect(lines).toHaveLength(1);
      expect(lines[0]!.level).toBe('warn');
      expect(lines[0]!.message).toBe(
        `@QueueHandler LogWorkers.permanent: job ${id} of queue "logs-permanent" dead-lettered (permanent: mailbox does not exist)`,
      );
      expect(lines[0]!.message + lines[0]!.extra).not.toMatch(/\n\s+at /);
    });

    it('a job that exhausts its attempts logs each failure, then one WARN dead-letter line', async () => {
      const queue = app.get(Store).queue('logs-exhausted');
      const id = await queue.enqueue({});
      await waitFor('the dead letter', async () => (await queue.getJob(id))?.state === 'dead', 20_000);
      const lines = await waitFor('the dead-letter line', () => {
        const about = logger.about(id);
        return about.some((l) => l.level === 'warn') ? about : null;
      });
      const warns = lines.filter((l) => l.level === 'warn');
      expect(warns).toHaveLength(1);
      expect(warns[0]!.message).toContain(
        `job ${id} of queue "logs-exhausted" dead-lettered (exhausted after 2 attempts: boom on attempt 2)`,
      );
      // The failures themselves are errors, with their stack.
      expect(lines.filter((l) => l.level === 'error')).toHaveLength(2);
    });

    it('a PermanentError in an @OutboxHandler logs one WARN line naming the outbox, the job and the reason, without a stack', async () => {
      const id = await app.get(Store).outboxEnqueue('logs-outbox', { n: 1 });
      const lines = await waitFor(
        'its log line',
        () => (logger.about(id).length > 0 ? logger.about(id) : null),
        20_000,
      );
      // Give a duplicate line a chance to show up: the outcome is recorded before the line, so the row is dead by now.
      expect((await app.get(Store).outbox('logs-outbox').queue.getJob(id))?.state).toBe('dead');
      expect(calls.outbox).toBeGreaterThanOrEqual(1);
      expect(lines).toHaveLength(1);
      expect(lines[0]!.level).toBe('warn');
      expect(lines[0]!.message).toBe(
        `outbox "logs-outbox": job ${id} of queue "__alkstore_outbox:logs-outbox" dead-lettered (permanent: recipient rejected)`,
      );
      expect(lines[0]!.extra).not.toMatch(/\n\s+at /);
    });

    it('logs each lifecycle line once, with forRoot and forFeature in one application', () => {
      const initialized = logger.lines.filter((l) => l.message === 'AlkstoreModule dependencies initialized');
      expect(initialized).toHaveLength(1);
      const lifecycle = logger.lines.filter((l) => l.level === 'log').map((l) => `${l.extra} ${l.message}`);
      expect(lifecycle.filter((line, i) => lifecycle.indexOf(line) !== i)).toEqual([]);
    });
  });
}
