import type { StoreLogger } from '../../contract/types.js';
import type { DiscoveredTimeout } from './explore-nest-schedule.js';

/**
 * `@Timeout` methods under `nestSchedule: 'cluster'`: once per process, the
 * given delay after bootstrap, as with `@nestjs/schedule` (a one-shot start-up
 * task is per replica by nature). Cleared on shutdown if not yet run.
 */
export class NestTimeouts {
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(private readonly logger: StoreLogger) {}

  start(timeouts: readonly DiscoveredTimeout[]): void {
    for (const t of timeouts) {
      this.timers.push(
        setTimeout(() => {
          t.call().catch((err: unknown) => this.logger.error(`@Timeout ${t.label} failed`, err));
        }, t.timeoutMs),
      );
    }
  }

  stop(): void {
    for (const timer of this.timers.splice(0)) clearTimeout(timer);
  }
}
