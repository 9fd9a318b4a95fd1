import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Outbox, Queue } from '../../lib/contract/types.js';
import {
  AlkstoreModule,
  type AlkstoreModuleOptions,
  type AlkstoreOptionsFactory,
  getOutboxToken,
  getQueueToken,
  InjectOutbox,
  InjectQueue,
  postgresUrlOf,
} from '../../lib/nest/index.js';
import { describePg } from '../helpers/engines.js';
import { nestEngines, nestPostgres, nestSqlite, type NestDb } from './nest-fixtures.js';
import { Store } from '../../lib/index.js';

@Injectable()
class UsesStore {
  constructor(readonly store: Store) {}
}

@Injectable()
class UsesHandles {
  constructor(
    @InjectQueue('emails') readonly emails: Queue,
    @InjectOutbox('events') readonly events: Outbox,
  ) {}
}

@Module({
  imports: [
    AlkstoreModule.forFeature({ queues: [{ name: 'emails', opts: { maxAttempts: 7 } }], outboxes: ['events'] }),
  ],
  providers: [UsesHandles],
})
class FeatureModule {}

for (const engine of nestEngines()) {
  describe(`AlkstoreModule (${engine.name})`, () => {
    let db: NestDb;
    beforeAll(async () => {
      db = await engine.create();
    });
    afterAll(async () => {
      await db.destroy();
    });

    it('injects the opened store by the Store class token', async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [AlkstoreModule.forRoot(db.moduleOptions())],
        providers: [UsesStore],
      }).compile();
      await moduleRef.init();
      try {
        const { store } = moduleRef.get(UsesStore);
        expect(store.engine).toBe(engine.kind);
        expect(moduleRef.get(Store)).toBe(store);
        const id = await store.queue('injected').enqueue({ hello: 'world' });
        expect((await store.queue('injected').getJob(id))?.payload).toEqual({ hello: 'world' });
      } finally {
        await moduleRef.close();
      }
    });

    it('provides forFeature queue and outbox handles by name', async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [AlkstoreModule.forRoot(db.moduleOptions()), FeatureModule],
      }).compile();
      await moduleRef.init();
      try {
        const handles = moduleRef.get(UsesHandles);
        expect(handles.emails.name).toBe('emails');
        expect(handles.emails.opts.maxAttempts).toBe(7);
        expect(handles.events.name).toBe('events');
        expect(moduleRef.get(getQueueToken('emails'), { strict: false })).toBe(handles.emails);
        expect(moduleRef.get(getOutboxToken('events'), { strict: false })).toBe(handles.events);
        const id = await handles.emails.enqueue({ to: 'a@example.com' });
        expect((await handles.emails.getJob(id))?.maxAttempts).toBe(7);
      } finally {
        await moduleRef.close();
      }
    });

    it('builds options with forRootAsync useFactory and inject', async () => {
      @Injectable()
      class Config {
        options(): AlkstoreModuleOptions {
          return db.moduleOptions();
        }
      }
      @Module({ providers: [Config], exports: [Config] })
      class ConfigModule {}
      const moduleRef = await Test.createTestingModule({
        imports: [
          AlkstoreModule.forRootAsync({
            imports: [ConfigModule],
            inject: [Config],
            useFactory: async (config: Config) => config.options(),
          }),
        ],
        providers: [UsesStore],
      }).compile();
      await moduleRef.init();
      try {
        expect(moduleRef.get(UsesStore).store.engine).toBe(engine.kind);
      } finally {
        await moduleRef.close();
      }
    });

    it('builds options with forRootAsync useClass', async () => {
      @Injectable()
      class OptionsFactory implements AlkstoreOptionsFactory {
        createAlkstoreOptions(): AlkstoreModuleOptions {
          return db.moduleOptions();
        }
      }
      const moduleRef = await Test.createTestingModule({
        imports: [AlkstoreModule.forRootAsync({ useClass: OptionsFactory })],
        providers: [UsesStore],
      }).compile();
      await moduleRef.init();
      try {
        expect(moduleRef.get(UsesStore).store.engine).toBe(engine.kind);
      } finally {
        await moduleRef.close();
      }
    });

    it('closes the store on app.close()', async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [AlkstoreModule.forRoot(db.moduleOptions())],
      }).compile();
      await moduleRef.init();
      const store = moduleRef.get(Store);
      await moduleRef.close();
      expect(store.closed).toBe(true);
      await expect((async () => store.queue('after-close').enqueue(1))()).rejects.toThrow(/closed/);
    });

    it('opens the store next to a TypeORM DataSource and never destroys it', async () => {
      const dataSource = await db.dataSource();
      const moduleRef = await Test.createTestingModule({
        imports: [AlkstoreModule.forRoot({ dataSource, schema: db.moduleOptions().schema })],
        providers: [UsesStore],
      }).compile();
      await moduleRef.init();
      const store = moduleRef.get(UsesStore).store;
      expect(store.engine).toBe(engine.kind);
      await moduleRef.close();
      expect(dataSource.isInitialized).toBe(true);
    });
  });
}

describe('AlkstoreModule options', () => {
  it('builds a PostgreSQL connection string from a DataSource without a url', async () => {
    const { DataSource } = await import('typeorm');
    const dataSource = new DataSource({
      type: 'postgres',
      host: 'db.internal',
      port: 6543,
      username: 'app@corp',
      password: 'p w/d',
      database: 'orders',
    });
    const url = new URL(postgresUrlOf(dataSource));
    expect(url.hostname).toBe('db.internal');
    expect(url.port).toBe('6543');
    expect(decodeURIComponent(url.username)).toBe('app@corp');
    expect(decodeURIComponent(url.password)).toBe('p w/d');
    expect(url.pathname).toBe('/orders');
    expect(postgresUrlOf(new DataSource({ type: 'postgres', url: 'postgres://x@y/z' }))).toBe('postgres://x@y/z');
  });

  it('refuses a TypeORM DataSource on an in-memory SQLite database, saying why', async () => {
    const { DataSource } = await import('typeorm');
    const dataSource = new DataSource({ type: 'better-sqlite3', database: ':memory:' });
    const compiling = Test.createTestingModule({ imports: [AlkstoreModule.forRoot({ dataSource })] }).compile();
    await expect(compiling).rejects.toThrow(/in-memory database/);
  });

  it('refuses options that name no database', async () => {
    await expect(Test.createTestingModule({ imports: [AlkstoreModule.forRoot({})] }).compile()).rejects.toThrow(/url/);
  });

  it("with workers: 'off', starts no handler and still provides the store", async () => {
    const db = await nestSqlite.create();
    try {
      const moduleRef = await Test.createTestingModule({
        imports: [AlkstoreModule.forRoot(db.moduleOptions({ workers: 'off' }))],
      }).compile();
      await moduleRef.init();
      expect(moduleRef.get(Store).engine).toBe('sqlite');
      await moduleRef.close();
    } finally {
      await db.destroy();
    }
  });
});

describePg('AlkstoreModule on a TypeORM DataSource with reusePool', () => {
  it('runs the store on the DataSource pool and leaves the pool open after close', async () => {
    const db = await nestPostgres.create();
    try {
      const dataSource = await db.dataSource();
      const moduleRef = await Test.createTestingModule({
        imports: [AlkstoreModule.forRoot({ dataSource, reusePool: true, schema: db.moduleOptions().schema })],
      }).compile();
      await moduleRef.init();
      const store = moduleRef.get(Store);
      const id = await store.queue('pooled').enqueue({ ok: true });
      expect((await store.queue('pooled').getJob(id))?.payload).toEqual({ ok: true });
      await moduleRef.close();
      expect(await dataSource.query('select 1 as one')).toEqual([{ one: 1 }]);
    } finally {
      await db.destroy();
    }
  });
});
