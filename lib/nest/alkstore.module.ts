import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { InvalidOption } from '../contract/errors.js';
import type { QueueOpts } from '../contract/options.js';
import { ALKSTORE_MODULE_OPTIONS, getOutboxToken, getQueueToken } from './alkstore.constants.js';
import { AlkstoreExplorer } from './alkstore.explorer.js';
import { openStoreFromOptions } from './alkstore.store-factory.js';
import { AlkstoreWorkerHost } from './alkstore.worker-host.js';
import type { AlkstoreModuleAsyncOptions, AlkstoreModuleOptions, AlkstoreOptionsFactory } from './interfaces/alkstore-options.interface.js';
import { Store } from './store.token.js';
import { AlkstoreTransactions } from './typeorm/alkstore-transactions.service.js';
import { nestStoreLogger } from './utils/nest-logger.js';

/** A named handle for `AlkstoreModule.forFeature`: a name, or a name with queue options. */
export type FeatureHandle = string | { name: string; opts?: QueueOpts };

/** Options of `AlkstoreModule.forFeature`. */
export interface AlkstoreFeatureOptions {
  /** Queues injectable with `@InjectQueue(name)`. */
  queues?: FeatureHandle[];
  /** Outboxes injectable with `@InjectOutbox(name)`. */
  outboxes?: FeatureHandle[];
}

const storeProvider: Provider = {
  provide: Store,
  useFactory: (options: AlkstoreModuleOptions) => openStoreFromOptions(options, options?.logger ?? nestStoreLogger()),
  inject: [ALKSTORE_MODULE_OPTIONS],
};

const coreProviders: Provider[] = [storeProvider, AlkstoreExplorer, AlkstoreWorkerHost, AlkstoreTransactions];
const coreExports = [Store, AlkstoreTransactions, ALKSTORE_MODULE_OPTIONS];

/**
 * The alkstore module: opens one `Store` (injectable as `Store`), runs the
 * `@OutboxHandler`, `@QueueHandler` and `@Scheduled` methods of the
 * application, and drains them on `app.close()`.
 *
 * Register it once with `forRoot` / `forRootAsync` (global); use `forFeature`
 * in any module for `@InjectQueue` / `@InjectOutbox` handles. Feature
 * registrations never start a second explorer: only the root holds it.
 */
@Module({})
export class AlkstoreModule {
  /** Registers the store from static options. */
  static forRoot(options: AlkstoreModuleOptions): DynamicModule {
    return {
      global: true,
      module: AlkstoreModule,
      imports: [DiscoveryModule],
      providers: [{ provide: ALKSTORE_MODULE_OPTIONS, useValue: options }, ...coreProviders],
      exports: coreExports,
    };
  }

  /** Registers the store from options built by a factory, a class, or an existing provider. */
  static forRootAsync(options: AlkstoreModuleAsyncOptions): DynamicModule {
    return {
      global: true,
      module: AlkstoreModule,
      imports: [DiscoveryModule, ...(options.imports ?? [])],
      providers: [...asyncOptionsProviders(options), ...coreProviders],
      exports: coreExports,
    };
  }

  /** Provides named `Queue` / `Outbox` handles (tokens `getQueueToken(name)` / `getOutboxToken(name)`). */
  static forFeature(features: AlkstoreFeatureOptions): DynamicModule {
    const providers: Provider[] = [
      ...(features.queues ?? []).map(handle).map(({ name, opts }) => ({
        provide: getQueueToken(name),
        useFactory: (store: Store) => store.queue(name, opts),
        inject: [Store],
      })),
      ...(features.outboxes ?? []).map(handle).map(({ name, opts }) => ({
        provide: getOutboxToken(name),
        useFactory: (store: Store) => store.outbox(name, opts),
        inject: [Store],
      })),
    ];
    return { module: AlkstoreModule, providers, exports: providers.map((p) => (p as { provide: string }).provide) };
  }
}

function handle(h: FeatureHandle): { name: string; opts?: QueueOpts } {
  return typeof h === 'string' ? { name: h } : h;
}

function asyncOptionsProviders(options: AlkstoreModuleAsyncOptions): Provider[] {
  if (options.useFactory) {
    return [{ provide: ALKSTORE_MODULE_OPTIONS, useFactory: options.useFactory as (...args: unknown[]) => AlkstoreModuleOptions, inject: options.inject ?? [] }];
  }
  const factoryClass = options.useClass ?? options.useExisting;
  if (!factoryClass) throw new InvalidOption('forRootAsync', 'needs one of useFactory, useClass or useExisting');
  const fromFactory: Provider = {
    provide: ALKSTORE_MODULE_OPTIONS,
    useFactory: (factory: AlkstoreOptionsFactory) => factory.createAlkstoreOptions(),
    inject: [factoryClass],
  };
  return options.useClass ? [fromFactory, { provide: options.useClass, useClass: options.useClass }] : [fromFactory];
}
