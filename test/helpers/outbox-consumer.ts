import type { Queue } from '../../lib/contract/types.js';

/**
 * Drains an outbox queue beside concurrent producers (claimBatch + ackBatch),
 * collecting each message's `payload.id`. `stop()` lets it finish what is
 * pending and resolves to every id it delivered, in delivery order.
 */
export function drainIdsConcurrently(outbox: Queue): { stop(): Promise<number[]> } {
  const delivered: number[] = [];
  let draining = true;
  const loop = (async () => {
    while (draining || (await outbox.stats()).pending > 0) {
      const jobs = await outbox.claimBatch(100, 'consumer');
      for (const j of jobs) delivered.push((j.payload as { id: number }).id);
      if (jobs.length > 0) await outbox.ackBatch(jobs);
      else await new Promise((r) => setTimeout(r, 5));
    }
  })();
  return {
    async stop() {
      draining = false;
      await loop;
      return delivered;
    },
  };
}
