import type { SqliteLiveness } from './liveness.js';
import type { EnqueueHeadersHook } from '../../contract/job-extras.js';
import type { QueueOpts } from '../../contract/options.js';
import type { ProgressWrites } from '../../contract/results.js';
import type { WakeReceiver } from '../../contract/types.js';
import type { HandoffRegistry } from '../../internal/handoff.js';
import type { OutcomeCounter } from '../../internal/outcome-counter.js';
import type { SqliteConn } from './connection.js';
import type { WriteCtx } from './writer.js';

/** What the mechanism modules need from the store: its write and read paths, wakes, and the queue-opts registry. */
export interface SqliteCore {
  /** Dead worker detection (the `workerLiveness` store option; file stores only); null when off. */
  readonly liveness: SqliteLiveness | null;
  /**
   * One write transaction on the store's write connection (async mutex, busy retried).
   * `lazySync`: claims only, the commit need not wait for its fsync (claimDurability).
   * `urgentLeaseMs`: a lease renewal of that lease (see `Writer.writeUrgent`).
   */
  write<T>(op: string, fn: (ctx: WriteCtx) => T, lazySync?: boolean, urgentLeaseMs?: number): Promise<T>;
  /** A read of committed data (the read connection; `:memory:` reads wait for the write connection). */
  read<T>(op: string, fn: (conn: SqliteConn) => T): Promise<T>;
  /** A receiver on any channel, reserved engine channels included (no name validation). */
  wakes(channel: string): WakeReceiver;
  readonly random: () => number;
  /** Buffered throughput counts (dashboard), written every few seconds. */
  readonly outcomes: OutcomeCounter;
  /** Progress writes not landed yet (written at close). */
  readonly progressWrites: ProgressWrites;
  /** Idle workers of this store that plain enqueues may hand jobs to (`localHandoff`); null when off. */
  readonly handoff: HandoffRegistry | null;
  /** Largest payload JSON in UTF-8 bytes (the `maxPayloadBytes` store option). */
  readonly maxPayloadBytes: number;
  /** Context headers added to every enqueue (the `enqueueHeaders` store option); null: none. */
  readonly enqueueHeaders: EnqueueHeadersHook | null;
  /** Opts registered for a queue name by `store.queue(name, opts)`, else `defaults`. */
  registeredQueueOpts(queue: string, defaults: Readonly<Required<QueueOpts>>): Required<QueueOpts>;
}
