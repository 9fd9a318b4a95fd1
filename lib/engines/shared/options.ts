import { InvalidOption } from '../../contract/errors.js';
import type { EnqueueHeadersHook } from '../../contract/job-extras.js';
import type { StoreLogger } from '../../contract/types.js';
import { renamedOption } from '../../contract/renamed-option.js';
import { messageIdPrefixOption } from '../../internal/message-id.js';
import {
  asOption,
  maxPayloadBytesOption,
  requireBoolean,
  requireFunction,
  requireTimerMs,
} from '../../contract/validate.js';

/**
 * The options every engine takes, declared once: `openStore`, `openSqliteStore` and
 * `openPostgresStore` extend it with their own (docs/semantics.md, Store options).
 */
export interface CommonStoreOptions {
  /**
   * Wake fallback (ms): how often the store looks for commits that no push wake told it about.
   * SQLite: its watcher checks `PRAGMA data_version` for commits by other connections and
   * processes this often, only while something listens (default 1). PostgreSQL: every receiver
   * is woken this often while LISTEN is unavailable (down, disabled, or behind a
   * transaction-mode pooler without `listenUrl`) (default 1000).
   */
  wakeFallbackMs?: number;
  /**
   * How claims commit (default `'deferred'`). `'deferred'`: a claim's commit does not wait for
   * its own flush to disk (PostgreSQL: `synchronous_commit = off` for that transaction; SQLite
   * with `synchronous: 'full'`: a `NORMAL` connection, fsynced right after on a background
   * thread); the next durable commit, usually the job's ack, flushes it. A crash of this process
   * loses nothing; only a crash of the database server or a power loss in that short window can
   * undo a claim, and then the job is pending again with that attempt uncounted (delivered again,
   * as at-least-once allows). Enqueues, acks, retries and every other write stay durable before
   * they resolve. `'immediate'`: claims wait for their flush like every other write.
   */
  claimDurability?: 'deferred' | 'immediate';
  /**
   * Local hand-off (default true): while a worker of this store is idle on a queue (a free
   * slot, its last claim came back short), a plain `queue.enqueue` of this store (no ordering or
   * unique key, due now, not in a transaction) on a queue that is neither paused nor rate-limited
   * inserts the job already claimed by that worker and gives it straight to it: no claim
   * statement and no wake, so the handler starts one round trip sooner. The job then runs in this
   * process even when workers of other processes are idle too. `false`: every enqueue inserts a
   * pending job and workers claim it (docs/semantics.md, Queues, Local hand-off).
   */
  localHandoff?: boolean;
  /**
   * Reclaim the jobs of a worker whose process died well before their lease runs out (default
   * true; docs/semantics.md, Leases, "Dead workers"). A claim made with a worker id registers that
   * id as held by this process: on PostgreSQL a shared advisory lock on the store's LISTEN
   * connection (none without one: `listen: false`, or a transaction-mode pooler with no
   * `listenUrl`), on SQLite the process id and start time. Every few hundred milliseconds a store
   * that claims looks for registered ids no live process holds and ends their jobs' leases now; the
   * next claim takes them as it takes a lapsed lease. `false`: a dead worker's jobs wait for their
   * lease, as before.
   */
  workerLiveness?: boolean;
  /**
   * Largest queue, outbox, stream or schedule payload, in UTF-8 bytes of its JSON text
   * (default 1 048 576, 1 MiB; at most 2^30). A larger payload is `PayloadTooLarge` at the
   * call, before any write.
   */
  maxPayloadBytes?: number;
  /**
   * Adds context headers to every enqueue of this store, e.g. `withTraceContext` from
   * `nestjs-alkstore/observability` (after `loadOpenTelemetry()`). `openStore` sets it for you when
   * `@opentelemetry/api` is installed and `tracing` is not false. Default none.
   */
  enqueueHeaders?: EnqueueHeadersHook;
  /** Random source in [0, 1) of the retry backoff jitter (SPEC §5). Default `Math.random`; tests inject one to pin delays. */
  random?: () => number;
  /** Where the store logs. Default: silent except warnings and errors to stderr. */
  logger?: StoreLogger;
  /**
   * A readable prefix of this store's outbox message ids, e.g. the service's name: `orders` gives
   * `orders:<storeId>:<rowId>` instead of `<storeId>:<rowId>` (`Outbox.messageId`). 1 to 64
   * characters of `A-Z a-z 0-9 . _ -`; default none. The store id alone already makes the ids
   * unique across stores; the prefix makes them readable in a broker's UI and a consumer's inbox.
   * Changing it changes the id of every message not yet acked: a message published just before
   * the change and published again after it is not deduplicated (docs/brokers.md, Message ids).
   */
  messageIdPrefix?: string;
}

/** {@link CommonStoreOptions} validated, with the engine's defaults filled in. */
export interface ResolvedCommonOptions {
  wakeFallbackMs: number;
  claimDurability: 'deferred' | 'immediate';
  localHandoff: boolean;
  workerLiveness: boolean;
  maxPayloadBytes: number;
  enqueueHeaders: EnqueueHeadersHook | null;
  random: () => number;
  logger: StoreLogger;
  messageIdPrefix: string | null;
}

/** Validates the common options before any I/O (`InvalidOption`/`InvalidArgument` naming the option). */
export function resolveCommonOptions(
  o: CommonStoreOptions,
  defaults: { wakeFallbackMs: number; logger: StoreLogger },
): ResolvedCommonOptions {
  if (o.wakeFallbackMs !== undefined) requireTimerMs('wakeFallbackMs', o.wakeFallbackMs);
  const logger = o.logger ?? defaults.logger;
  const wake = renamedOption('store', o, 'pollIntervalMs', 'wakeFallbackMs') as number | undefined;
  const claimDurability = o.claimDurability ?? 'deferred';
  if (claimDurability !== 'deferred' && claimDurability !== 'immediate') {
    throw new InvalidOption(
      'claimDurability',
      `must be "deferred" or "immediate", got ${JSON.stringify(claimDurability)}`,
    );
  }
  return {
    wakeFallbackMs: wake ?? defaults.wakeFallbackMs,
    claimDurability,
    localHandoff: o.localHandoff === undefined ? true : asOption(() => requireBoolean('localHandoff', o.localHandoff)),
    workerLiveness:
      o.workerLiveness === undefined ? true : asOption(() => requireBoolean('workerLiveness', o.workerLiveness)),
    maxPayloadBytes: maxPayloadBytesOption(o.maxPayloadBytes),
    enqueueHeaders:
      o.enqueueHeaders === undefined
        ? null
        : asOption(() => requireFunction<EnqueueHeadersHook>('enqueueHeaders', o.enqueueHeaders)),
    random: o.random === undefined ? Math.random : asOption(() => requireFunction<() => number>('random', o.random)),
    logger,
    messageIdPrefix: messageIdPrefixOption(o.messageIdPrefix),
  };
}
