import { validateName } from '../contract/names.js';
import type { QueueOpts } from '../contract/options.js';

/** Queue or outbox. */
export type HandleKind = 'queue' | 'outbox';

/**
 * Names the handler decorators saw, filled at class-definition time.
 *
 * `forRoot` must list its providers before Nest has instantiated anything,
 * so it cannot wait for the explorer (which needs instances). Decorators run
 * when their class is defined, which is when its file is imported: by the
 * time Nest scans the root module, every handler class of the application
 * has been defined and recorded here. Invalid names are left out, so the
 * explorer still reports them with the class and method that used them.
 */
const declared: Record<HandleKind, Map<string, QueueOpts | undefined>> = { queue: new Map(), outbox: new Map() };

/** Records that a handler works `name`; the first options given for it stay. */
export function declareHandle(kind: HandleKind, name: unknown, opts?: QueueOpts): void {
  try {
    validateName(kind, name);
  } catch {
    return;
  }
  const names = declared[kind];
  const key = name as string;
  if (!names.has(key) || (names.get(key) === undefined && opts !== undefined)) names.set(key, opts);
}

/** The names recorded so far, with the queue options their handler declared. */
export function declaredHandles(kind: HandleKind): ReadonlyMap<string, QueueOpts | undefined> {
  return declared[kind];
}

/** Where a handler decorator was applied: `Class.method`, and the queue or outbox it names. */
export interface HandlerSite {
  readonly kind: HandleKind;
  readonly name: string;
  readonly cls: object;
  readonly label: string;
  readonly decorator: string;
}

/** Where `@InjectQueue` / `@InjectOutbox` was applied: the class and the parameter or property. */
export interface InjectionSite {
  readonly kind: HandleKind;
  readonly name: string;
  readonly cls: object;
  /** `constructor parameter 0` or `property emails`. */
  readonly where: string;
}

const handlerSites: HandlerSite[] = [];
const injectionSites: InjectionSite[] = [];
const featureNames: Record<HandleKind, Set<string>> = { queue: new Set(), outbox: new Set() };

function classOf(target: object): { cls: object; name: string } {
  // A method or property decorator gets the prototype (instance members) or the class itself (static ones).
  const cls = typeof target === 'function' ? target : (target as { constructor: object }).constructor;
  return { cls, name: (cls as { name?: string }).name || 'anonymous class' };
}

/** A method decorator that records where a handler of `name` was declared (for the bootstrap check). */
export function recordHandlerSite(kind: HandleKind, name: string, decorator: string): MethodDecorator {
  return (target, property) => {
    const { cls, name: className } = classOf(target);
    handlerSites.push({ kind, name, cls, label: `${className}.${String(property)}`, decorator });
  };
}

/** Records an `@InjectQueue` / `@InjectOutbox` use; the root module provides a handle for it so the bootstrap check can explain a missing declaration. */
export function recordInjection(
  kind: HandleKind,
  name: string,
  target: object,
  property: string | symbol | undefined,
  index: number | undefined,
): void {
  const { cls } = classOf(target);
  injectionSites.push({
    kind,
    name,
    cls,
    where: index === undefined ? `property ${String(property)}` : `constructor parameter ${index}`,
  });
}

/** Records the names a `forFeature` provides. */
export function recordFeatureHandles(kind: HandleKind, names: Iterable<string>): void {
  for (const n of names) featureNames[kind].add(n);
}

/** Every handler decorator site recorded so far. */
export function handlerSitesSoFar(): readonly HandlerSite[] {
  return handlerSites;
}

/** Every injection site recorded so far. */
export function injectionSitesSoFar(): readonly InjectionSite[] {
  return injectionSites;
}

/** Names provided by some `forFeature`. */
export function featureHandleNames(kind: HandleKind): ReadonlySet<string> {
  return featureNames[kind];
}
