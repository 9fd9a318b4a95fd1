import { Module, type DynamicModule, type FactoryProvider, type Provider } from '@nestjs/common';
import { DiscoveryModule, DiscoveryService } from '@nestjs/core';
import { InvalidOption } from '../contract/errors.js';
import { validateName } from '../contract/names.js';
import type { QueueOpts } from '../contract/options.js';
import {
  ALKSTORE_LISTED_HANDLES,
  ALKSTORE_MODULE_OPTIONS,
  ALKSTORE_OWN_HANDLES,
  getOutboxToken,
  getQueueToken,
} from './alkstore.constants.js';
import { AlkstoreExplorer } from './alkstore.explorer.js';
import { declaredHandles, injectionSitesSoFar, recordFeatureHandles, type HandleKind } from './alkstore.registry.js';
import { openStoreFromOptions } from './alkstore.store-factory.js';
import { AlkstoreWorkerHost } from './alkstore.worker-host.js';
import type {
  AlkstoreFeatureOptions,
  AlkstoreModuleAsyncOptions,
  AlkstoreModuleOptions,
  AlkstoreOptionsFactory,
} from './interfaces/alkstore-options.interface.js';
import { Store } from './store.token.js';
import { ModuleOrm } from './orm/module-orm.js';
import { UNTYPED_PARAMETER } from './utils/check-wiring.js';
import { nestStoreLogger } from './utils/nest-logger.js';
import { discoverOwnHandles, type OwnHandles } from './utils/own-handles.js';

const storeProvider: Provider = {
  provide: Store,
  useFactory: (options: AlkstoreModuleOptions) => openStoreFromOptions(options, options?.logger ?? nestStoreLogger()),
  inject: [ALKSTORE_MODULE_OPTIONS],
};

const coreProviders: Provider[] = [storeProvider, AlkstoreExplorer, AlkstoreWorkerHost, ModuleOrm];
const coreExports = [Store, ModuleOrm, ALKSTORE_MODULE_OPTIONS];

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
  /**
   * Registers the store from static options, plus a `Queue` / `Outbox`
   * provider for every queue and outbox a handler names and every one in
   * `queues` / `outboxes`.
   */
  static forRoot(options: AlkstoreModuleOptions & AlkstoreFeatureOptions): DynamicModule {
    const { queues, outboxes, ...moduleOptions } = options;
    return rootModule([DiscoveryModule], [{ provide: ALKSTORE_MODULE_OPTIONS, useValue: moduleOptions }], {
      queues,
      outboxes,
    });
  }

  /** Registers the store from options built by a factory, a class, or an existing provider. */
  static forRootAsync(options: AlkstoreModuleAsyncOptions): DynamicModule {
    return rootModule([DiscoveryModule, ...(options.imports ?? [])], asyncOptionsProviders(options), options);
  }

  /**
   * Provides named `Queue` / `Outbox` handles in one module (tokens
   * `getQueueToken(name)` / `getOutboxToken(name)`). `forRoot` already
   * provides every handled or listed name globally; this is for handles no
   * handler names, scoped to a module.
   */
  static forFeature(features: AlkstoreFeatureOptions): DynamicModule {
    const listed = listedHandles(features);
    for (const kind of ['queue', 'outbox'] as const) recordFeatureHandles(kind, listed[kind].keys());
    const providers = handleProviders(listed, false);
    return { module: AlkstoreFeatureModule, providers, exports: providers.map((p) => p.provide) };
  }
}

/**
 * The module `forFeature` returns: handles only. Its own class, so features
 * never hold a second explorer or worker host, and Nest's
 * "AlkstoreModule dependencies initialized" line stays one per application.
 */
@Module({})
export class AlkstoreFeatureModule {}

type HandleMap = Map<string, QueueOpts | undefined>;

function rootModule(
  imports: DynamicModule['imports'],
  optionsProviders: Provider[],
  features: AlkstoreFeatureOptions,
): DynamicModule {
  const listed = listedHandles(features);
  let handles: FactoryProvider[] | undefined;
  // The tokens are read when Nest scans the module, after every handler class was defined (and recorded by
  // its decorator): `forRoot(...)` itself may be evaluated before the files that define handlers. Nest needs
  // them before anything is discovered, so they may include names of another application in the process;
  // what each handle is made with comes from this application's own discovery (ALKSTORE_OWN_HANDLES).
  const lazyHandles = (): FactoryProvider[] => (handles ??= handleProviders(names(listed), true));
  return {
    global: true,
    module: AlkstoreModule,
    imports,
    get providers(): Provider[] {
      return [
        ...optionsProviders,
        ...coreProviders,
        { provide: ALKSTORE_LISTED_HANDLES, useValue: listed },
        {
          provide: ALKSTORE_OWN_HANDLES,
          useFactory: (discovery: DiscoveryService): OwnHandles => discoverOwnHandles(discovery),
          inject: [DiscoveryService],
        },
        { provide: Object, useValue: UNTYPED_PARAMETER },
        ...lazyHandles(),
      ];
    },
    get exports(): NonNullable<DynamicModule['exports']> {
      return [...coreExports, Object, ...lazyHandles().map((p) => p.provide)];
    },
  };
}

/** Validates the listed names now (a typed error naming the handle, before any I/O). */
function listedHandles(features: AlkstoreFeatureOptions): Record<HandleKind, HandleMap> {
  const out: Record<HandleKind, HandleMap> = { queue: new Map(), outbox: new Map() };
  const add = (kind: HandleKind, list: unknown): void => {
    if (list === undefined) return;
    if (!Array.isArray(list))
      throw new InvalidOption(
        `${kind === 'queue' ? 'queues' : 'outboxes'}`,
        'must be an array of names or { name, opts }',
      );
    for (const h of list as unknown[]) {
      const name = typeof h === 'string' ? h : (h as { name?: unknown } | null)?.name;
      validateName(kind, name);
      const opts = typeof h === 'string' ? undefined : (h as { opts?: QueueOpts }).opts;
      out[kind].set(name as string, opts ?? out[kind].get(name as string));
    }
  };
  add('queue', features.queues);
  add('outbox', features.outboxes);
  return out;
}

/**
 * The names to provide a token for: what handlers declared, what the module
 * lists (with its options), plus every name an `@InjectQueue` /
 * `@InjectOutbox` uses: Nest then resolves it, and the explorer explains at
 * bootstrap a name nothing declares (instead of Nest's generic "can't resolve
 * dependencies"). Options of declared names are left to the application's
 * own discovery.
 */
function names(listed: Record<HandleKind, HandleMap>): Record<HandleKind, HandleMap> {
  const out: Record<HandleKind, HandleMap> = {
    queue: new Map([...declaredHandles('queue').keys()].map((n) => [n, undefined])),
    outbox: new Map([...declaredHandles('outbox').keys()].map((n) => [n, undefined])),
  };
  for (const site of injectionSitesSoFar()) {
    if (out[site.kind].has(site.name)) continue;
    try {
      validateName(site.kind, site.name);
      out[site.kind].set(site.name, undefined);
    } catch {
      // An invalid injected name gets no provider: Nest's error names its token.
    }
  }
  for (const kind of ['queue', 'outbox'] as const) {
    for (const [name, opts] of listed[kind]) out[kind].set(name, opts ?? out[kind].get(name));
  }
  return out;
}

/**
 * One provider per handle. `own`: the root module's, whose options not listed come from this
 * application's discovered handlers (`forFeature` handles have only their listed options).
 */
function handleProviders(
  handles: Record<HandleKind, HandleMap>,
  own: boolean,
): (FactoryProvider & { provide: string })[] {
  const inject = own ? [Store, ALKSTORE_OWN_HANDLES] : [Store];
  const optsOf = (
    kind: HandleKind,
    name: string,
    listedOpts: QueueOpts | undefined,
    found: OwnHandles | undefined,
  ): QueueOpts | undefined => listedOpts ?? found?.[kind].get(name);
  return [
    ...[...handles.queue].map(([name, opts]) => ({
      provide: getQueueToken(name),
      useFactory: (store: Store, found?: OwnHandles) => store.queue(name, optsOf('queue', name, opts, found)),
      inject,
    })),
    ...[...handles.outbox].map(([name, opts]) => ({
      provide: getOutboxToken(name),
      useFactory: (store: Store, found?: OwnHandles) => store.outbox(name, optsOf('outbox', name, opts, found)),
      inject,
    })),
  ];
}

function asyncOptionsProviders(options: AlkstoreModuleAsyncOptions): Provider[] {
  if (options.useFactory) {
    return [
      {
        provide: ALKSTORE_MODULE_OPTIONS,
        useFactory: options.useFactory as (...args: unknown[]) => AlkstoreModuleOptions,
        inject: options.inject ?? [],
      },
    ];
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
