import { performance } from 'node:perf_hooks';
import { LeadershipLost } from '../../contract/errors.js';
import type { StoreLogger } from '../../contract/types.js';
import { sleep } from '../../internal/sleep.js';

const FIRST_RESTART_MS = 500;
const MAX_RESTART_MS = 30_000;

/**
 * Runs `loop(signal)` until `signal` aborts, restarting it with exponential
 * backoff when it rejects (a lost scheduler leadership, a database outage),
 * so a background loop never takes the application down with it.
 */
export async function supervise(
  name: string,
  loop: (signal: AbortSignal) => Promise<void>,
  signal: AbortSignal,
  logger: StoreLogger,
): Promise<void> {
  let delay = FIRST_RESTART_MS;
  while (!signal.aborted) {
    const started = performance.now();
    try {
      await loop(signal);
      if (signal.aborted) return;
      // A loop that returns on its own (it should not) is restarted like a failed one.
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof LeadershipLost) logger.warn(`${name}: ${err.message}; restarting in ${delay} ms`);
      else logger.error(`${name} stopped with an error; restarting in ${delay} ms`, err);
    }
    // A loop that ran for a while before failing starts over from the short delay.
    if (performance.now() - started > MAX_RESTART_MS) delay = FIRST_RESTART_MS;
    await sleep(delay, signal);
    delay = Math.min(delay * 2, MAX_RESTART_MS);
  }
}
