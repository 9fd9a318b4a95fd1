import { renamedOption } from '../../contract/renamed-option.js';
import type { QueueHandlerOptions } from '../interfaces/handler-options.interface.js';

/**
 * `@QueueHandler` / `@Scheduled` options in today's words: the deprecated `visibilityTimeoutMs` becomes
 * `leaseMs` (one warning per process); both set to different values is `InvalidOption` naming both.
 */
export function normalizeHandlerOptions<O extends QueueHandlerOptions>(decorator: string, options: O): O {
  const leaseMs = renamedOption(decorator, options, 'visibilityTimeoutMs', 'leaseMs') as number | undefined;
  const { visibilityTimeoutMs: _old, ...rest } = options;
  return (leaseMs === undefined ? rest : { ...rest, leaseMs }) as O;
}
