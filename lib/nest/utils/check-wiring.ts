import type { DiscoveryService } from '@nestjs/core';
import { InvalidOption } from '../../contract/errors.js';
import type { StoreLogger } from '../../contract/types.js';
import { featureHandleNames, handlerSitesSoFar, injectionSitesSoFar, type HandleKind } from '../alkstore.registry.js';

/** The names the root module lists (`queues`, `outboxes`). */
export type ListedHandles = Record<HandleKind, ReadonlyMap<string, unknown>>;

/** What one application's explorer found. */
export interface Found {
  /** Names with a discovered handler in this application. */
  handled: Record<HandleKind, ReadonlySet<string>>;
  /** Workers start on their own (`workers: 'auto'`; not `'off'`, not the testing kit's `'manual'`). */
  workers: boolean;
}

/**
 * What the root module provides for the token `Object`: the design type
 * TypeScript emits for a constructor parameter typed with an interface or an
 * `import type` (`import type { Store } from 'nestjs-alkstore'`). Nest would fail on
 * it with a generic "can't resolve dependencies"; with this placeholder the
 * application gets as far as {@link refuseUntypedParameters}, which says what
 * to import instead.
 */
export const UNTYPED_PARAMETER = Object.freeze({ alkstore: 'untyped constructor parameter' });

/**
 * A provider or controller whose constructor has a parameter Nest can only
 * see as `Object` (no `@Inject` token, not `@Optional`) would get
 * {@link UNTYPED_PARAMETER}: refuse it, naming the class and the parameter.
 */
export function refuseUntypedParameters(discovery: DiscoveryService): void {
  for (const w of [...discovery.getProviders(), ...discovery.getControllers()]) {
    const cls = w.metatype;
    if (typeof cls !== 'function' || !w.isDependencyTreeStatic()) continue;
    const types = (Reflect.getMetadata('design:paramtypes', cls) as unknown[] | undefined) ?? [];
    const explicit = new Set(
      ((Reflect.getMetadata('self:paramtypes', cls) as { index: number }[] | undefined) ?? []).map((d) => d.index),
    );
    const optional = new Set((Reflect.getMetadata('optional:paramtypes', cls) as number[] | undefined) ?? []);
    const at = types.findIndex((t, i) => t === Object && !explicit.has(i) && !optional.has(i));
    if (at === -1) continue;
    throw new InvalidOption(
      `${cls.name} constructor parameter ${at}`,
      'has no runtime type Nest could inject: it is typed with an interface or with `import type`. For the ' +
        "store, write `import { Store } from 'nestjs-alkstore'` (a class Nest injects; `import type { Store " +
        '}` erases it); for a queue or outbox, @InjectQueue(name) / @InjectOutbox(name); for anything else, @Inject(token)',
    );
  }
}

/** Every class (and its base classes) that is a provider or controller of this application. */
function appClasses(discovery: DiscoveryService): Set<object> {
  const out = new Set<object>();
  for (const w of [...discovery.getProviders(), ...discovery.getControllers()]) {
    let cls: unknown = w.metatype ?? (w.instance as { constructor?: unknown } | null)?.constructor;
    while (typeof cls === 'function' && cls !== Function.prototype) {
      out.add(cls);
      cls = Object.getPrototypeOf(cls);
    }
  }
  return out;
}

function label(kind: HandleKind, name: string): string {
  return `${kind} ${JSON.stringify(name)}`;
}

/**
 * Mistakes Nest itself would not report, checked at bootstrap:
 * - `@InjectQueue(name)` / `@InjectOutbox(name)` in a class of this
 *   application for a name no handler, `queues`/`outboxes` list or
 *   `forFeature` declares: an error naming the class, the parameter and the
 *   fix (`queues: ['audit']`);
 * - a handler method whose class is not a provider of this application (no
 *   worker would ever run its queue): one warning per method, naming it.
 */
export function checkWiring(
  discovery: DiscoveryService,
  listed: ListedHandles | undefined,
  found: Found,
  logger: StoreLogger,
): void {
  const classes = appClasses(discovery);
  const sites = handlerSitesSoFar();
  const declared = (kind: HandleKind, name: string): boolean =>
    found.handled[kind].has(name) ||
    sites.some((s) => s.kind === kind && s.name === name) ||
    (listed?.[kind].has(name) ?? false) ||
    featureHandleNames(kind).has(name);
  for (const inj of injectionSitesSoFar()) {
    if (!classes.has(inj.cls) || declared(inj.kind, inj.name)) continue;
    const cls = (inj.cls as { name?: string }).name || 'a class';
    const list = inj.kind === 'queue' ? 'queues' : 'outboxes';
    throw new InvalidOption(
      list,
      `does not name ${label(inj.kind, inj.name)}, which ${cls} injects (${inj.where}, ` +
        `@Inject${inj.kind === 'queue' ? 'Queue' : 'Outbox'}(${JSON.stringify(inj.name)})) and no ` +
        `@${inj.kind === 'queue' ? 'QueueHandler' : 'OutboxHandler'} handles: add \`${list}: ` +
        `[${JSON.stringify(inj.name)}]\` to AlkstoreModule.forRoot (or AlkstoreModule.forFeature in ${cls}'s module), or check the name`,
    );
  }
  if (!found.workers) return;
  const warned = new Set<string>();
  for (const site of sites) {
    if (classes.has(site.cls) || found.handled[site.kind].has(site.name) || warned.has(site.label)) continue;
    warned.add(site.label);
    const cls = site.label.slice(0, site.label.lastIndexOf('.'));
    logger.warn(
      `${site.label} is the ${site.decorator} of ${label(site.kind, site.name)}, but ${cls} is not a provider ` +
        `of this application, so nothing handles ${label(site.kind, site.name)}: add ${cls} to a module's providers`,
    );
  }
}
