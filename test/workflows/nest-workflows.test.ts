import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, type LoggerService, type ModuleMetadata, type Provider } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import type { TxOps } from '../../lib/contract/types.js';
import { AlkstoreModule, AlkstoreWorkflowsModule, Workflow } from '../../lib/nest/index.js';
import type { DataSource, EntityManager } from 'typeorm';
import { nestEngines, Widget, type NestDb, type NestEngine } from '../nest/nest-fixtures.js';
import { waitFor } from '../helpers/engines.js';
import { Store } from '../../lib/index.js';
import { Workflows, type WorkflowContext } from '../../lib/workflows/index.js';

@Injectable()
class Greeter {
  greet(name: string): string {
    return `hello ${name}`;
  }
}

@Workflow('greeting', { version: 2 })
@Injectable()
class GreetingWorkflow {
  constructor(private readonly greeter: Greeter) {}

  async run(input: { name: string }, ctx: WorkflowContext): Promise<string> {
    const text = await ctx.step('compose', () => this.greeter.greet(input.name));
    await ctx.transaction('record', async (tx: TxOps) => {
      await tx.publishWithKey('greetings', ctx.runId, { text });
    });
    const reply = await ctx.waitForSignal<string>('reply');
    return `${text} / ${reply ?? 'no reply'} (v${ctx.version})`;
  }
}

@Workflow('heartbeat', { schedule: '@every 1s' })
@Injectable()
class HeartbeatWorkflow {
  async run(_input: null, ctx: WorkflowContext): Promise<string> {
    return ctx.step('beat', () => `beat ${ctx.runId}`);
  }
}

let widgetAttempts = 0;

@Workflow('widget-order')
@Injectable()
class WidgetWorkflow {
  async run(input: { name: string }, ctx: WorkflowContext<EntityManager>): Promise<number> {
    return ctx.transaction('insert-widget', async (tx, em) => {
      widgetAttempts += 1;
      const row = await em.save(Widget, { name: input.name });
      await tx.publishWithKey('widget-events', ctx.runId, { id: row.id });
      if (widgetAttempts === 1) throw new Error('the first attempt fails after its writes');
      return row.id;
    });
  }
}

/** Steps of `serial-report` running right now, and the most seen at once. */
const serial = { now: 0, peak: 0 };

@Workflow('serial-report', { limitKeys: { concurrencyKey: 'workflow' } })
@Injectable()
class SerialReportWorkflow {
  async run(input: { n: number }, ctx: WorkflowContext): Promise<number> {
    return ctx.step('render', async () => {
      serial.now += 1;
      serial.peak = Math.max(serial.peak, serial.now);
      await new Promise((r) => setTimeout(r, 30));
      serial.now -= 1;
      return input.n;
    });
  }
}

/** Boots one application per describe block on a fresh database: `imports` and `providers` from the database. */
function bootApp(
  engine: NestEngine,
  build: (db: NestDb) => Promise<{ imports: ModuleMetadata['imports']; providers: Provider[] }>,
): () => { app: TestingModule; db: NestDb } {
  let db!: NestDb;
  let app!: TestingModule;
  beforeAll(async () => {
    db = await engine.create();
    app = await Test.createTestingModule(await build(db)).compile();
    await app.init();
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await db?.destroy();
  }, 60_000);
  return () => ({ app, db });
}

for (const engine of nestEngines()) {
  describe(`AlkstoreWorkflowsModule with transaction: 'orm' (${engine.name})`, () => {
    let dataSource!: DataSource;
    const booted = bootApp(engine, async (db) => {
      dataSource = await db.dataSource();
      return {
        imports: [
          AlkstoreModule.forRoot({ dataSource, schema: db.moduleOptions().schema }),
          AlkstoreWorkflowsModule.forRoot({
            namespace: 'nest-wf-orm',
            idlePollIntervalMs: 50,
            backoffBaseMs: 10,
            transaction: 'orm',
          }),
        ],
        providers: [WidgetWorkflow],
      };
    });

    it("a transactional step's ORM rows, its alkstore writes and its journal entry commit together: the failed attempt leaves nothing, the retry commits once", async () => {
      widgetAttempts = 0;
      const { app } = booted();
      const workflows = app.get(Workflows);
      const store = app.get(Store);
      const { id } = await workflows.start('widget-order', { name: 'journaled-widget' });
      const widgetId = await workflows.waitForResult<number>(id, { timeoutMs: 20_000 });
      expect(widgetAttempts).toBe(2);
      expect(await dataSource.getRepository(Widget).findBy({ name: 'journaled-widget' })).toEqual([
        { id: widgetId, name: 'journaled-widget' },
      ]);
      expect((await store.stream('widget-events').readSince(0)).map((e) => e.payload)).toEqual([{ id: widgetId }]);
    });
  });

  describe(`AlkstoreWorkflowsModule (${engine.name})`, () => {
    const booted = bootApp(engine, async (db) => ({
      imports: [
        AlkstoreModule.forRoot(db.moduleOptions()),
        AlkstoreWorkflowsModule.forRoot({ namespace: 'nest-wf', idlePollIntervalMs: 50 }),
      ],
      providers: [Greeter, GreetingWorkflow, HeartbeatWorkflow],
    }));

    it("@Workflow({ schedule }) starts runs from the module's scheduler, with a run id per fire", async () => {
      const { app } = booted();
      const workflows = app.get(Workflows);
      const store = app.get(Store);
      await workflows.ready();
      expect((await store.listSchedules()).schedules.map((x) => [x.name, x.spec])).toContainEqual([
        'nest-wf:schedule:heartbeat',
        '@every 1s',
      ]);
      await waitFor(
        'a scheduled heartbeat completed',
        async () => (await workflows.list({ workflow: 'heartbeat', state: 'completed' })).length > 0,
        20_000,
      );
      const [run] = await workflows.list({ workflow: 'heartbeat', state: 'completed' });
      expect(run!.id).toMatch(/^cron:heartbeat:\d+$/);
      await expect(workflows.waitForResult(run!.id)).resolves.toBe(`beat ${run!.id}`);
    });

    it('finds @Workflow providers, injects Workflows, and runs them with their injected dependencies', async () => {
      const { app } = booted();
      const workflows = app.get(Workflows);
      const store = app.get(Store);
      const { id } = await workflows.start('greeting', { name: 'Ada' }, { id: 'greet-ada' });
      await workflows.signal(id, 'reply', 'hi back');
      await expect(workflows.waitForResult(id, { timeoutMs: 20_000 })).resolves.toBe('hello Ada / hi back (v2)');
      expect((await store.stream('greetings').readSince(0)).filter((e) => e.key === id)).toHaveLength(1);
      expect((await workflows.getStatus(id))!.version).toBe(2);
    });
  });

  describe(`@Workflow({ limits }) (${engine.name})`, () => {
    const booted = bootApp(engine, async (db) => ({
      imports: [
        AlkstoreModule.forRoot(db.moduleOptions()),
        AlkstoreWorkflowsModule.forRoot({
          namespace: 'nest-wf-limits',
          idlePollIntervalMs: 50,
          concurrency: 4,
          limits: { concurrencyLimit: 1 },
        }),
      ],
      providers: [SerialReportWorkflow],
    }));

    it("counts every run's passes against the module's limits: runs of the type never overlap, and all complete", async () => {
      const workflows = booted().app.get(Workflows);
      await workflows.ready();
      const ids = await Promise.all(
        [1, 2, 3, 4].map(async (n) => (await workflows.start('serial-report', { n }, { id: `report-${n}` })).id),
      );
      for (const [k, id] of ids.entries())
        await expect(workflows.waitForResult(id, { timeoutMs: 20_000 })).resolves.toBe(k + 1);
      expect(serial.peak).toBe(1);
    });
  });
}

// The class's maxAttempts is its steps' default.
@Workflow('declined-payment', { maxAttempts: 2 })
@Injectable()
class DeclinedPaymentWorkflow {
  async run(_input: null, ctx: WorkflowContext): Promise<string> {
    await ctx.step('charge', () => {
      throw new Error('card declined');
    });
    return 'never';
  }
}

/** Nest's logger, kept: level, message and what came with it (the stack of an error). */
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
}

for (const engine of nestEngines()) {
  describe(`@Workflow failures in the log (${engine.name})`, () => {
    let db!: NestDb;
    let app!: TestingModule;
    const logger = new CapturingLogger();
    beforeAll(async () => {
      db = await engine.create();
      // No `logger` option: the workflows log through Nest's Logger, which the testing module routes here.
      app = await Test.createTestingModule({
        imports: [
          AlkstoreModule.forRoot(db.moduleOptions()),
          AlkstoreWorkflowsModule.forRoot({ namespace: 'nest-wf-logs', idlePollIntervalMs: 50, backoffBaseMs: 10 }),
        ],
        providers: [DeclinedPaymentWorkflow],
      })
        .setLogger(logger)
        .compile();
      await app.init();
    }, 60_000);
    afterAll(async () => {
      await app?.close();
      await db?.destroy();
    }, 60_000);

    it("a failing step's attempts are WARN lines and the failed run an ERROR line with its id, the error and its stack", async () => {
      const workflows = app.get(Workflows);
      const { id } = await workflows.start('declined-payment', null, { id: 'pay-1' });
      await expect(workflows.waitForResult(id, { timeoutMs: 20_000 })).rejects.toThrow(/card declined/);
      await waitFor('the failed run is logged', () => logger.lines.some((l) => l.level === 'error'));
      const lines = logger.lines.filter((l) => l.message.includes('run "pay-1"'));
      expect(lines.map((l) => [l.level, l.message.replace(/retrying at \S+/, 'retrying at <t>')])).toEqual([
        [
          'warn',
          'workflow "declined-payment" run "pay-1": step "charge" failed on attempt 1/2 (Error: card declined); retrying at <t>',
        ],
        [
          'warn',
          'workflow "declined-payment" run "pay-1": step "charge" failed on attempt 2/2 (Error: card declined); the step failed for good',
        ],
        [
          'error',
          'workflow "declined-payment" run "pay-1" failed: StepFailed: step "charge" failed after 2 attempts: Error: card declined',
        ],
      ]);
      expect(lines[2]!.extra).toContain('StepFailed: step "charge" failed after 2 attempts');
      expect(lines[2]!.extra).toMatch(/\n\s+at /);
    });
  });
}
