import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { Injectable, type DynamicModule, type INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  AlkstoreBrokersModule,
  AlkstoreModule,
  AlkstoreWorkflowsModule,
  defineQueue,
  InboxHandler,
  InvalidHandler,
  OutboxHandler,
  QueueHandler,
  Scheduled,
  Workflow,
  type HandlerOptions,
} from '../../lib/nest/index.js';

// One options shape for every handler decorator (docs/vocabulary.md): the shared options are checked the
// same way, with the same words, and a bad one fails startup naming the class and the method. Nothing here
// reaches an engine (the checks run before any I/O), so one SQLite file per application is enough.

const dir = mkdtempSync(join(tmpdir(), 'alkstore-handler-options-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

/** A class named `name` whose method `work` carries `decorate`, made a provider. */
function handlerClass(name: string, decorate: MethodDecorator): new () => unknown {
  const cls = {
    [name]: class {
      async work(): Promise<void> {}
      async run(): Promise<null> {
        return null;
      }
    },
  }[name]!;
  decorate(cls.prototype, 'work', Object.getOwnPropertyDescriptor(cls.prototype, 'work')!);
  Injectable()(cls);
  return cls;
}

/** Boots an application with `providers` and `imports` (workers 'manual': nothing connects) and closes it. */
async function boot(providers: (new () => unknown)[], imports: DynamicModule[] = []): Promise<unknown> {
  n += 1;
  let app: INestApplicationContext | undefined;
  try {
    const ref = await Test.createTestingModule({
      imports: [AlkstoreModule.forRoot({ url: `sqlite:${join(dir, `app-${n}.db`)}`, workers: 'manual' }), ...imports],
      providers,
    }).compile();
    app = ref;
    await ref.init();
    return null;
  } catch (err) {
    return err;
  } finally {
    await app?.close().catch(() => undefined);
  }
}

/** Each decorator: the shared options it takes, and an application with one handler given `options`. */
interface Subject {
  readonly decorator: string;
  readonly shared: readonly (keyof HandlerOptions)[];
  /** The application's providers and imports, and the label startup errors name. */
  app(options: Record<string, unknown>): { providers: (new () => unknown)[]; imports: DynamicModule[]; label: string };
}

const ALL: (keyof HandlerOptions)[] = [
  'concurrency',
  'leaseMs',
  'maxAttempts',
  'backoffBaseMs',
  'idlePollIntervalMs',
  'metrics',
];

const subjects: Subject[] = [
  {
    decorator: '@QueueHandler',
    shared: ALL,
    app: (options) => {
      const name = `QueueHandlerApp${n}`;
      return {
        providers: [handlerClass(name, QueueHandler(`ho-queue-${n}`, options) as MethodDecorator)],
        imports: [],
        label: `${name}.work`,
      };
    },
  },
  {
    decorator: '@Scheduled',
    shared: ALL.filter((o) => o !== 'backoffBaseMs'),
    app: (options) => {
      const name = `ScheduledApp${n}`;
      return {
        providers: [handlerClass(name, Scheduled(`ho-schedule-${n}`, '@every 1h', options))],
        imports: [],
        label: `${name}.work`,
      };
    },
  },
  {
    decorator: '@OutboxHandler',
    shared: ALL,
    app: (options) => {
      const name = `OutboxHandlerApp${n}`;
      return {
        providers: [handlerClass(name, OutboxHandler(`ho-outbox-${n}`, options))],
        imports: [],
        label: `${name}.work`,
      };
    },
  },
  {
    decorator: '@InboxHandler',
    shared: ['concurrency', 'maxAttempts'],
    app: (options) => {
      const name = `InboxHandlerApp${n}`;
      const decorate = InboxHandler(`ho-inbox-${n}`, { rabbitmq: { queue: `ho-q-${n}` }, ...options } as never);
      return {
        providers: [handlerClass(name, decorate as MethodDecorator)],
        imports: [AlkstoreBrokersModule.forRoot({})],
        label: `${name}.work`,
      };
    },
  },
  {
    decorator: '@Workflow',
    shared: ['maxAttempts', 'backoffBaseMs'],
    app: (options) => {
      const name = `WorkflowApp${n}`;
      const cls = handlerClass(name, () => undefined);
      Workflow(`ho-workflow-${n}`, options)(cls);
      return {
        providers: [cls],
        imports: [AlkstoreWorkflowsModule.forRoot({ namespace: `ho-${n}` })],
        label: `@Workflow("ho-workflow-${n}") ${name}`,
      };
    },
  },
];

/** Values each shared option refuses, with a word of the reason. */
const BAD: Record<keyof HandlerOptions, unknown[]> = {
  concurrency: [0, -1, 1.5, Number.NaN, '4', Number.POSITIVE_INFINITY],
  leaseMs: [0, -1, Number.NaN, '30000'],
  maxAttempts: [0, -2, 1.5, '3'],
  backoffBaseMs: [-1, Number.NaN, '10', Number.POSITIVE_INFINITY],
  idlePollIntervalMs: [0, -5, 'soon'],
  metrics: [{}, 'prometheus', 1, { observe: () => undefined }],
};

async function startupError(s: Subject, options: Record<string, unknown>): Promise<{ err: unknown; label: string }> {
  const { providers, imports, label } = s.app(options);
  return { err: await boot(providers, imports), label };
}

/** The reason after `<label>: `, so the same mistake can be compared across decorators. */
function reason(err: unknown, label: string): string {
  expect(err).toBeInstanceOf(InvalidHandler);
  const message = (err as Error).message;
  expect(message.startsWith(`${label}: `)).toBe(true);
  return message.slice(label.length + 2);
}

describe('handler options: one shape for every decorator', () => {
  it('every decorator boots with good values of the shared options it takes', async () => {
    const good: Record<keyof HandlerOptions, unknown> = {
      concurrency: 2,
      leaseMs: 40_000,
      maxAttempts: 4,
      backoffBaseMs: 100,
      idlePollIntervalMs: 2_000,
      metrics: false,
    };
    for (const s of subjects) {
      const options = Object.fromEntries(s.shared.map((o) => [o, good[o]]));
      const { err } = await startupError(s, options);
      expect([s.decorator, err]).toEqual([s.decorator, null]);
    }
  });

  it('a bad value of a shared option fails startup naming the class and method, with the same reason on every decorator', async () => {
    for (const option of ALL) {
      for (const value of BAD[option]) {
        const reasons = new Set<string>();
        for (const s of subjects.filter((x) => x.shared.includes(option))) {
          const { err, label } = await startupError(s, { [option]: value });
          const why = reason(err, label);
          expect(why).toMatch(new RegExp(`^option ${option} `));
          expect(((err as Error).cause as { code?: string }).code).toBe('INVALID_OPTION');
          reasons.add(why);
        }
        expect([option, value, [...reasons]]).toEqual([option, value, [[...reasons][0]]]);
      }
    }
  });

  it('a shared option a decorator cannot honour fails startup saying where it is set instead', async () => {
    const cases: [string, keyof HandlerOptions, RegExp][] = [
      ['@Scheduled', 'backoffBaseMs', /option backoffBaseMs is not a @Scheduled option: a schedule stores no backoff/],
      ['@InboxHandler', 'leaseMs', /option leaseMs is not a @InboxHandler option: the broker holds the message/],
      ['@InboxHandler', 'metrics', /option metrics is not a @InboxHandler option/],
      ['@Workflow', 'concurrency', /option concurrency is not a @Workflow option: .*AlkstoreWorkflowsModule\.forRoot/],
      ['@Workflow', 'leaseMs', /option leaseMs is not a @Workflow option: .*AlkstoreWorkflowsModule\.forRoot/],
    ];
    for (const [decorator, option, message] of cases) {
      const s = subjects.find((x) => x.decorator === decorator)!;
      const { err, label } = await startupError(s, { [option]: 1_000 });
      expect(reason(err, label)).toMatch(message);
    }
  });

  it("0.2's option names fail startup naming today's words", async () => {
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['@QueueHandler', { visibilityTimeoutMs: 1_000 }, /option visibilityTimeoutMs .*use leaseMs/],
      ['@Scheduled', { visibilityTimeoutMs: 1_000 }, /option visibilityTimeoutMs .*use leaseMs/],
      [
        '@OutboxHandler',
        { retry: { baseMs: 10 } },
        /option retry .*use maxAttempts, backoffBaseMs, maxBackoffMs and backoffJitter/,
      ],
      ['@OutboxHandler', { batchSize: 10 }, /option batchSize .*use claimSize/],
      ['@OutboxHandler', { maxInFlight: 10 }, /option maxInFlight .*use concurrency/],
      ['@OutboxHandler', { pollIntervalMs: 10 }, /option pollIntervalMs .*use busyPollIntervalMs/],
      ['@InboxHandler', { rabbitmq: { queue: 'q', prefetch: 8 } }, /option rabbitmq\.prefetch is now concurrency/],
      ['@Workflow', { limits: { concurrencyKey: 'workflow' } }, /option limits .*use limitKeys/],
    ];
    for (const [decorator, options, message] of cases) {
      const s = subjects.find((x) => x.decorator === decorator)!;
      const { err, label } = await startupError(s, options);
      expect(reason(err, label)).toMatch(message);
    }
  });

  it("an @OutboxHandler's retry words name themselves in the outbox settings' checks", async () => {
    const s = subjects.find((x) => x.decorator === '@OutboxHandler')!;
    const { err, label } = await startupError(s, { backoffBaseMs: 5_000, maxBackoffMs: 1_000 });
    expect(reason(err, label)).toBe('option backoffBaseMs must not exceed maxBackoffMs');
    const jitter = await startupError(s, { backoffJitter: 1 });
    expect(reason(jitter.err, jitter.label)).toMatch(/^option backoffJitter must be a number in \[0, 1\)/);
  });

  it('@QueueHandler attempts and backoff are the handler options: in queueOpts, or unlike the defineQueue options, they fail startup', async () => {
    const inQueueOpts = handlerClass(
      'RetriesInQueueOpts',
      QueueHandler('ho-retries-a', { queueOpts: { maxAttempts: 3 } } as never) as MethodDecorator,
    );
    const err = await boot([inQueueOpts]);
    expect(reason(err, 'RetriesInQueueOpts.work')).toMatch(/option queueOpts\.maxAttempts is set on the handler/);
    const ref = defineQueue<null>('ho-retries-b', { maxAttempts: 5 });
    const unlike = handlerClass('UnlikeRef', QueueHandler(ref, { maxAttempts: 3 }) as MethodDecorator);
    const err2 = await boot([unlike]);
    expect(reason(err2, 'UnlikeRef.work')).toBe('option maxAttempts is 3 here and 5 in the defineQueue options');
    const same = handlerClass('SameAsRef', QueueHandler(ref, { maxAttempts: 5 }) as MethodDecorator);
    expect(await boot([same])).toBeNull();
  });

  it('@InboxHandler: concurrency is for RabbitMQ, and maxAttempts given twice must agree', async () => {
    const js = handlerClass(
      'JetStreamConcurrency',
      InboxHandler('ho-js', { jetstream: { stream: 'S', consumer: 'c' }, concurrency: 4 }) as MethodDecorator,
    );
    const nats = AlkstoreBrokersModule.forRoot({ nats: { servers: '127.0.0.1:4222' } });
    expect(reason(await boot([js], [nats]), 'JetStreamConcurrency.work')).toMatch(
      /option concurrency is for RabbitMQ sources: a JetStream consumer handles one message at a time/,
    );
    const twice = handlerClass(
      'InboxAttemptsTwice',
      InboxHandler('ho-inbox-twice', { rabbitmq: { queue: 'q' }, maxAttempts: 3 }) as MethodDecorator,
    );
    const brokers = AlkstoreBrokersModule.forRoot({ inboxes: { 'ho-inbox-twice': { maxAttempts: 7 } } });
    expect(reason(await boot([twice], [brokers]), 'InboxAttemptsTwice.work')).toBe(
      "option maxAttempts is 3 here and 7 in AlkstoreBrokersModule's inboxes.ho-inbox-twice; set it once",
    );
  });

  it('an option no decorator takes fails startup listing the ones it does', async () => {
    for (const s of subjects) {
      const { err, label } = await startupError(s, { concurency: 2 });
      expect(reason(err, label)).toMatch(new RegExp(`^option concurency is not a ${s.decorator} option \\(`));
    }
  });
});
