import {
  Module,
  type DynamicModule,
  type InjectionToken,
  type ModuleMetadata,
  type OptionalFactoryDependency,
  type Provider,
} from '@nestjs/common';
import { InvalidOption } from '../../contract/errors.js';
import type { OutboxStore } from '../outbox-store.js';
import { ReliableOutbox } from '../reliable-outbox.js';
import { getReliableOutboxCloserToken, getReliableOutboxToken } from './reliable-sync.constants.js';

/** One `ReliableOutbox` provider for {@link ReliableSyncModule.forFeature}. */
export interface ReliableOutboxRegistration {
  /** Token name: inject with `@InjectReliableOutbox(name)`. Default `"default"`. */
  name?: string;
  /** Modules whose providers `useFactory` needs. */
  imports?: ModuleMetadata['imports'];
  /** Providers passed to `useFactory`. */
  inject?: (InjectionToken | OptionalFactoryDependency)[];
  /** Opens the store, e.g. `() => FileJournalOutboxStore.open({ directory, key })`. */
  useFactory: (...args: never[]) => OutboxStore | Promise<OutboxStore>;
  /**
   * Close the store (if it has `close()`) in `onApplicationShutdown`, after
   * `beforeApplicationShutdown` where you stop your `SyncDriver`s. Default true.
   */
  closeOnShutdown?: boolean;
}

/**
 * Provides `ReliableOutbox` instances to a Nest application. It only opens
 * and closes outboxes: the transport, and so the `SyncDriver`, belong to the
 * application.
 */
@Module({})
export class ReliableSyncModule {
  /** Registers one or more named outboxes in the importing module. */
  static forFeature(registrations: ReliableOutboxRegistration | ReliableOutboxRegistration[]): DynamicModule {
    const list = Array.isArray(registrations) ? registrations : [registrations];
    const seen = new Set<string>();
    const providers: Provider[] = [];
    for (const r of list) {
      const name = r.name ?? 'default';
      if (seen.has(name))
        throw new InvalidOption('ReliableSyncModule.forFeature name', `${JSON.stringify(name)} is registered twice`);
      seen.add(name);
      if (typeof r.useFactory !== 'function')
        throw new InvalidOption(
          `ReliableSyncModule.forFeature[${JSON.stringify(name)}].useFactory`,
          'must be a function',
        );
      const factory = r.useFactory as (...args: unknown[]) => OutboxStore | Promise<OutboxStore>;
      providers.push({
        provide: getReliableOutboxToken(name),
        useFactory: async (...args: unknown[]) => ReliableOutbox.open(await factory(...args)),
        inject: r.inject ?? [],
      });
      const close = r.closeOnShutdown ?? true;
      providers.push({
        provide: getReliableOutboxCloserToken(name),
        useFactory: (outbox: ReliableOutbox) => ({
          async onApplicationShutdown(): Promise<void> {
            const store = outbox.store as OutboxStore & { close?: () => Promise<void> };
            if (close) await store.close?.();
          },
        }),
        inject: [getReliableOutboxToken(name)],
      });
    }
    return {
      module: ReliableSyncModule,
      imports: list.flatMap((r) => r.imports ?? []),
      providers,
      exports: list.map((r) => getReliableOutboxToken(r.name)),
    };
  }
}
