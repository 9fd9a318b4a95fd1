import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { Injectable, Module, type INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Store as ContractStore } from '../../lib/contract/types.js';
import { AlkstoreModule, InjectOutbox, InjectQueue, QueueHandler } from '../../lib/nest/index.js';
import { MemoryLogger } from './nest-fixtures.js';
import { Store, type Job, type Outbox, type Queue } from '../../lib/index.js';

const dir = mkdtempSync(join(tmpdir(), 'alkstore-boot-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const url = (): string => `sqlite:${join(dir, `app-${++n}.db`)}`;

/** Boots a Nest application context around `module` and closes it; resolves to the startup error, if any. */
async function boot(module: new () => unknown): Promise<unknown> {
  let app: INestApplicationContext | undefined;
  try {
    const ref = await Test.createTestingModule({ imports: [module] }).compile();
    app = ref;
    await ref.init();
    return null;
  } catch (err) {
    return err;
  } finally {
    await app?.close().catch(() => undefined);
  }
}

@Injectable()
class Orphan {
  @QueueHandler('orphan-jobs')
  async work(job: Job): Promise<void> {
    void job;
  }
}

@Injectable()
class EnqueuesOrphanJobs {
  constructor(@InjectQueue('orphan-jobs') readonly jobs: Queue) {}
}

@Injectable()
class InjectsAudit {
  constructor(
    readonly store: Store,
    @InjectQueue('audit') readonly audit: Queue,
  ) {}
}

@Injectable()
class InjectsUndeclaredOutbox {
  constructor(@InjectOutbox('ledger') readonly ledger: Outbox) {}
}

@Injectable()
class TypeOnlyStore {
  // What `import type { Store } from 'nestjs-alkstore'` compiles to: the parameter's design type is Object.
  constructor(readonly store: ContractStore) {}
}

describe('Nest bootstrap mistakes are named at startup', () => {
  it('a second forRoot in one application is refused, naming forRoot and forFeature', async () => {
    @Module({ imports: [AlkstoreModule.forRoot({ url: url(), workers: 'off' })] })
    class FeatureWithItsOwnRoot {}
    @Module({ imports: [AlkstoreModule.forRoot({ url: url(), workers: 'off' }), FeatureWithItsOwnRoot] })
    class App {}
    const err = await boot(App);
    expect(err).toMatchObject({ code: 'INVALID_OPTION' });
    expect((err as Error).message).toContain('AlkstoreModule.forRoot is registered 2 times in this application');
    expect((err as Error).message).toContain('AlkstoreModule.forFeature');
  });

  it('one forRoot, imported by several modules, boots', async () => {
    const root = AlkstoreModule.forRoot({ url: url(), workers: 'off' });
    @Module({ imports: [root] })
    class Feature {}
    @Module({ imports: [root, Feature] })
    class App {}
    expect(await boot(App)).toBeNull();
  });

  it('a handler class that is not a provider gets one warning naming class, method and queue', async () => {
    const logger = new MemoryLogger();
    @Module({ imports: [AlkstoreModule.forRoot({ url: url(), logger })], providers: [EnqueuesOrphanJobs] })
    class App {}
    expect(await boot(App)).toBeNull();
    const warnings = logger.lines.filter((l) => l.includes('Orphan.work'));
    expect(warnings).toEqual([
      'warn Orphan.work is the @QueueHandler of queue "orphan-jobs", but Orphan is not a provider of this application, so nothing handles queue "orphan-jobs": add Orphan to a module\'s providers',
    ]);
  });

  it('no warning when the handler class is a provider', async () => {
    const logger = new MemoryLogger();
    @Module({ imports: [AlkstoreModule.forRoot({ url: url(), logger })], providers: [Orphan, EnqueuesOrphanJobs] })
    class App {}
    expect(await boot(App)).toBeNull();
    expect(logger.lines.filter((l) => l.includes('Orphan.work'))).toEqual([]);
  });

  it('@InjectQueue of a queue nothing declares is an error naming class, parameter and `queues: [...]`', async () => {
    @Module({ imports: [AlkstoreModule.forRoot({ url: url(), workers: 'off' })], providers: [InjectsAudit] })
    class App {}
    const err = await boot(App);
    expect(err).toMatchObject({ code: 'INVALID_OPTION' });
    expect((err as Error).message).toContain('InjectsAudit injects (constructor parameter 1, @InjectQueue("audit"))');
    expect((err as Error).message).toContain('add `queues: ["audit"]` to AlkstoreModule.forRoot');
  });

  it('@InjectOutbox of an outbox nothing declares names `outboxes: [...]`', async () => {
    @Module({ imports: [AlkstoreModule.forRoot({ url: url(), workers: 'off' })], providers: [InjectsUndeclaredOutbox] })
    class App {}
    expect((await boot(App)) as Error).toMatchObject({
      message: expect.stringContaining('add `outboxes: ["ledger"]`'),
    });
  });

  it('listing the queue in forRoot (or forFeature) makes the same injection boot', async () => {
    @Module({
      imports: [AlkstoreModule.forRoot({ url: url(), workers: 'off', queues: ['audit'] })],
      providers: [InjectsAudit],
    })
    class Listed {}
    expect(await boot(Listed)).toBeNull();
    @Module({ imports: [AlkstoreModule.forFeature({ queues: ['audit'] })], providers: [InjectsAudit] })
    class Feature {}
    @Module({ imports: [AlkstoreModule.forRoot({ url: url(), workers: 'off' }), Feature] })
    class WithFeature {}
    expect(await boot(WithFeature)).toBeNull();
  });

  it('a Store parameter typed by `import type` is an error that says to import Store from alkstore/nest', async () => {
    @Module({ imports: [AlkstoreModule.forRoot({ url: url(), workers: 'off' })], providers: [TypeOnlyStore] })
    class App {}
    const err = await boot(App);
    expect(err).toMatchObject({ code: 'INVALID_OPTION' });
    expect((err as Error).message).toContain('TypeOnlyStore constructor parameter 0 has no runtime type');
    expect((err as Error).message).toContain("import { Store } from 'nestjs-alkstore'");
  });
});
