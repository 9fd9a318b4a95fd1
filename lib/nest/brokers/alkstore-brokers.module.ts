import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { InvalidOption } from '../../contract/errors.js';
import { AlkstoreBrokersHost, validateBrokersOptions } from './alkstore-brokers.host.js';
import { ALKSTORE_BROKERS_OPTIONS } from './brokers.constants.js';
import type { AlkstoreBrokersAsyncOptions, AlkstoreBrokersOptions } from './brokers-options.interface.js';
import { InboxEventInterceptor } from './inbox-event.js';

/**
 * Brokers for a Nest application, next to `AlkstoreModule.forRoot` (whose
 * store it uses): outboxes delivered by publishers (`publishers`), and the
 * connections of the `@InboxHandler` consumers (`nats`, `rabbitmq`). Global,
 * so `nestjs-alkstore/nest` and `@InboxEvent` find it from any module.
 *
 * ```ts
 * AlkstoreBrokersModule.forRoot({
 *   nats: { servers: '127.0.0.1:4222' },
 *   publishers: [{ outbox: 'orders', publisher: () => new NatsJetStreamPublisher({ stream: 'ORDERS', subject: 'orders.{type}' }) }],
 * })
 * ```
 */
@Module({})
export class AlkstoreBrokersModule {
  /** Registers the brokers from static options (checked now, before any I/O). */
  static forRoot(options: AlkstoreBrokersOptions): DynamicModule {
    validateBrokersOptions(options);
    return module([], { provide: ALKSTORE_BROKERS_OPTIONS, useValue: options });
  }

  /** Registers the brokers from options a factory builds (`ClientProxy` clients, `ConfigService` values). */
  static forRootAsync(options: AlkstoreBrokersAsyncOptions): DynamicModule {
    if (options === null || typeof options !== 'object' || typeof options.useFactory !== 'function')
      throw new InvalidOption('forRootAsync', 'needs useFactory');
    return module(options.imports ?? [], {
      provide: ALKSTORE_BROKERS_OPTIONS,
      useFactory: options.useFactory as (...args: unknown[]) => AlkstoreBrokersOptions,
      inject: options.inject ?? [],
    });
  }
}

function module(imports: NonNullable<DynamicModule['imports']>, optionsProvider: Provider): DynamicModule {
  return {
    global: true,
    module: AlkstoreBrokersModule,
    imports: [DiscoveryModule, ...imports],
    providers: [optionsProvider, AlkstoreBrokersHost, InboxEventInterceptor],
    exports: [AlkstoreBrokersHost, ALKSTORE_BROKERS_OPTIONS],
  };
}
