import type { Job, Store } from '../../lib/contract/types.js';
import { OutboxDispatcher } from '../../lib/outbox/index.js';
import { withTimeout } from '../lib/util.js';
import { CONCURRENCY, type Handler, type RunningWorker } from './types.js';

/**
 * Dispatcher settings for B5: ten deliveries in flight (the same concurrency
 * every peer worker gets), claims of up to ten, short polls while work flows;
 * idle waits end on the store's commit wake.
 */
export const DISPATCHER_SETTINGS = {
  claimSize: CONCURRENCY,
  concurrency: CONCURRENCY,
  busyPollIntervalMs: 1,
  idlePollIntervalMs: 1000,
  drainTimeoutMs: 2000,
};

/** Starts `new OutboxDispatcher({ store, outbox, handler, settings }).run(signal)`. */
export async function startDispatcher(
  store: Store,
  outbox: string,
  handler: Handler,
  produced: () => number,
): Promise<RunningWorker> {
  const ac = new AbortController();
  const dispatcher = new OutboxDispatcher({
    store,
    outbox,
    handler: async (job: Job) => {
      await handler(job.payload);
    },
    settings: DISPATCHER_SETTINGS,
  });
  const running = dispatcher.run(ac.signal).catch((err: unknown) => {
    if (!ac.signal.aborted) process.stderr.write(`alkstore OutboxDispatcher stopped: ${(err as Error).message}\n`);
  });
  const queue = store.outbox(outbox).queue;
  return {
    async completed() {
      // Delivered and acked = produced minus what is still pending or in flight (acked rows are deleted).
      const s = await queue.stats();
      return produced() - s.pending - s.processing - s.dead;
    },
    async stop() {
      ac.abort();
      await withTimeout('OutboxDispatcher stop', 15_000, running).catch(() => undefined);
    },
  };
}
