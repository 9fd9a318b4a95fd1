import { MetadataScanner, type DiscoveryService } from '@nestjs/core';
import type { QueueOpts } from '../../contract/options.js';
import { OUTBOX_HANDLER_METADATA, QUEUE_HANDLER_METADATA } from '../alkstore.constants.js';
import type { HandleKind } from '../alkstore.registry.js';
import type { OutboxHandlerMetadata, QueueHandlerMetadata } from '../interfaces/handler-options.interface.js';
import { readMethodMetadata } from './append-metadata.js';

/** The queue options each handled queue or outbox declares, read from this application's own providers. */
export type OwnHandles = Record<HandleKind, ReadonlyMap<string, QueueOpts | undefined>>;

/**
 * What the handler decorators of this application's providers and controllers declare: read from their
 * classes (no instance needed, so handle factories can use it before the explorer runs). Another Nest
 * application in the same process has its own container, so its handlers never show up here.
 */
export function discoverOwnHandles(discovery: DiscoveryService): OwnHandles {
  const out: Record<HandleKind, Map<string, QueueOpts | undefined>> = { queue: new Map(), outbox: new Map() };
  const add = (kind: HandleKind, name: unknown, opts: QueueOpts | undefined): void => {
    if (typeof name !== 'string') return;
    if (!out[kind].has(name) || (out[kind].get(name) === undefined && opts !== undefined)) out[kind].set(name, opts);
  };
  const scanner = new MetadataScanner();
  for (const w of [...discovery.getProviders(), ...discovery.getControllers()]) {
    const cls: unknown = w.metatype;
    const proto = typeof cls === 'function' ? (cls.prototype as object | undefined) : undefined;
    if (!proto) continue;
    for (const methodName of scanner.getAllMethodNames(proto)) {
      const method: unknown = (proto as Record<string, unknown>)[methodName];
      for (const m of readMethodMetadata<QueueHandlerMetadata>(QUEUE_HANDLER_METADATA, method))
        add('queue', m.queue, m.options.queueOpts);
      for (const m of readMethodMetadata<OutboxHandlerMetadata>(OUTBOX_HANDLER_METADATA, method))
        add('outbox', m.outbox, m.opts);
    }
  }
  return out;
}
