import type { DynamicModule, ModuleMetadata, Provider } from '@nestjs/common';
import { Test, type TestingModule, type TestingModuleBuilder } from '@nestjs/testing';
import { ALKSTORE_MODULE_OPTIONS } from '../alkstore.constants.js';
import { AlkstoreExplorer } from '../alkstore.explorer.js';
import { AlkstoreModule } from '../alkstore.module.js';
import { AlkstoreWorkerHost } from '../alkstore.worker-host.js';
import type { AlkstoreFeatureOptions, AlkstoreModuleOptions } from '../interfaces/alkstore-options.interface.js';
import { Store } from '../store.token.js';
import { AlkstoreTestKit } from './alkstore-test-kit.js';
import type { AlkstoreTestDatabase } from './test-database.js';

/** Options of {@link AlkstoreTesting.createTestingModule}. */
export interface AlkstoreTestingModuleOptions extends Pick<ModuleMetadata, 'imports' | 'controllers'> {
  /** The isolated database (see `createTestDatabase`). */
  database: AlkstoreTestDatabase;
  /** Providers under test (handler classes among them). */
  providers?: Provider[];
  /** More `AlkstoreModule` options (logger, queues, outboxes...); `url` and `schema` come from `database`. */
  alkstore?: Omit<AlkstoreModuleOptions, 'url' | 'schema' | 'dataSource' | 'workers'> & AlkstoreFeatureOptions;
}

/** A compiled, initialised testing module with its kit. */
export interface AlkstoreTestingModule {
  readonly module: TestingModule;
  readonly kit: AlkstoreTestKit;
  /** Closes the module (and the store). The database stays until `database.drop()`. */
  close(): Promise<void>;
}

/**
 * Entry points of `nestjs-alkstore/testing`.
 *
 * - `manual(builder)`: an application's own module setup (`AlkstoreModule`
 *   registered however it likes), with handlers that never run on their
 *   own: tests call `kit.drain()`. Schedules are still stored and fired.
 * - `createTestingModule({ database, imports, providers })`: the quick form
 *   for handler classes, on an isolated database.
 */
export const AlkstoreTesting = {
  /** Switches the application under test to manual mode; `compile()` and `init()` as usual, then `AlkstoreTestKit.from(app)`. */
  manual(builder: TestingModuleBuilder): TestingModuleBuilder {
    return builder.overrideProvider(AlkstoreWorkerHost).useFactory({
      factory: (options: AlkstoreModuleOptions, store: Store, explorer: AlkstoreExplorer) =>
        new AlkstoreWorkerHost({ ...options, workers: 'manual' }, store, explorer),
      inject: [ALKSTORE_MODULE_OPTIONS, Store, AlkstoreExplorer],
    });
  },

  /** Builds, compiles and initialises `AlkstoreModule.forRoot` on `database` with the given modules and providers, in manual mode. */
  async createTestingModule(options: AlkstoreTestingModuleOptions): Promise<AlkstoreTestingModule> {
    const root: DynamicModule = AlkstoreModule.forRoot({ ...options.alkstore, ...options.database.moduleOptions() });
    const builder = Test.createTestingModule({
      imports: [root, ...(options.imports ?? [])],
      providers: options.providers ?? [],
      controllers: options.controllers ?? [],
    });
    const module = await AlkstoreTesting.manual(builder).compile();
    await module.init();
    return { module, kit: AlkstoreTestKit.from(module), close: () => module.close() };
  },
};
