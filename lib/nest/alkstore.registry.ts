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
