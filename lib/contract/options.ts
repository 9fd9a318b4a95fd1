import type { EnvelopeInit } from './envelope.js';
import type { ChildPolicy } from './flows.js';
import { InvalidOption } from './errors.js';
import {
  resolveJobExtras,
  type EnqueueHeadersHook,
  type JobExtras,
  type JobHeaders,
  type OnConflict,
} from './job-extras.js';
import { explicitLimitKeys, resolveKeySources, type KeySources, type LimitKeys } from './limits.js';
import { renamedOption } from './renamed-option.js';
import {
  optionalObject,
  requireBatchSize,
  requireDurationMs,
  requireInstantMs,
  requireMaxAttempts,
  requirePriority,
} from './validate.js';

/**
 * Queue-level options, stamped on each job row at enqueue and never looked up
 * later (SPEC §5). All durations in milliseconds.
 */
export interface QueueOpts {
  /** Lease: how long a claim holds a job before it may be reclaimed. Default 300 000 (outbox-backed: 60 000). */
  leaseMs?: number;
  /** Claims allowed before a job goes dead. Default 3 (outbox-backed: 5). */
  maxAttempts?: number;
  /** Base of the equal-jitter exponential retry delay. Default 5 000. */
  backoffBaseMs?: number;
  /** How long dead rows are kept before `sweepExpired` deletes them. Default `null`: forever. */
  deadLetterRetentionMs?: number | null;
  /**
   * How long outcome records (a completed job's result and last progress, a cancellation) are kept
   * before `sweepExpired` deletes them; `null`: forever. Default 604 800 000 (7 days). Unlike the
   * options above it is not stamped at enqueue: the handle that writes the outcome (the worker's
   * queue, or the one `cancel` is called on) stamps it on the record then.
   */
  resultRetentionMs?: number | null;
  /**
   * Where a job's `concurrencyKey` and `rateLimitKey` come from when its enqueue names none:
   * `'payload.<field>'` or `(payload) => string` each, resolved at enqueue on this handle
   * (docs/limits.md). Default null: none.
   */
  limitKeys?: KeySources | null;
}

/** Per-job options (SPEC §5). */
export interface EnqueueOpts {
  /**
   * Ids of jobs (any queue) this job waits for (docs/flows.md): it is `waiting-children`, never
   * claimed, until every one is acked. Only `enqueue` and `tx.enqueue` take it (or use `enqueueFlow`).
   */
  dependsOn?: readonly number[];
  /** With `dependsOn`: what the job does when a dependency dies. Default `'fail'`. */
  onChildDead?: ChildPolicy;
  /** Run no earlier than now + delayMs (database clock). Wins over `runAt`. */
  delayMs?: number;
  /** Run no earlier than this instant (epoch milliseconds). */
  runAt?: number;
  /** Higher runs first. Default 0. */
  priority?: number;
  /** Overrides the queue's `maxAttempts` for this job. */
  maxAttempts?: number;
  /** The job expires (goes dead on `sweepExpired`, is never claimed) this long after enqueue. */
  expiresInMs?: number;
  /**
   * String metadata stored with the job and handed back as `Job.headers`
   * (correlation id, causation id, `traceparent`). At most 8 KB of names and
   * values in all (UTF-8); anything else is a RangeError before any write.
   */
  headers?: JobHeaders;
  /**
   * Deduplication key (SPEC §10): while a job of this queue with the key is
   * pending or processing, another enqueue with it writes nothing and resolves
   * to the existing job's id. Free again once that job is acked, cancelled or
   * dead. At most 1024 UTF-8 bytes (`InvalidName` otherwise).
   */
  uniqueKey?: string;
  /**
   * With `uniqueKey`: `'keep'` (default) leaves the live job as it is;
   * `'replace'` replaces the payload, headers and run time of a still-pending
   * job (debounce). A job already processing is never changed.
   */
  onConflict?: OnConflict;
  /**
   * Ordered key (SPEC §10): among this queue's jobs with the same key only the
   * oldest live one (enqueue order) can be claimed; the next becomes claimable
   * once it is acked, cancelled or dead. A retried job keeps its key blocked.
   */
  orderingKey?: string;
  /**
   * The message envelope (seed 004): type, version, content type, correlation
   * and causation ids, stored as the headers `message-type`, `message-version`,
   * `content-type`, `correlation-id` and `causation-id` (they win over
   * same-named `headers`). Publishers map them to the broker's headers;
   * `readEnvelope(id, job.headers)` reads them back typed.
   */
  envelope?: EnvelopeInit;
  /**
   * Per-key concurrency (docs/limits.md): at most the queue's `concurrencyLimit` (default 1) jobs
   * with this key processing at once, across every process, enforced in the claim. Wins over the
   * queue's `concurrencyKey` source. At most 1024 UTF-8 bytes.
   */
  concurrencyKey?: string;
  /**
   * Per-key rate limit (docs/limits.md): claims of jobs with this key count against the queue's
   * `keyRateLimit`. Wins over the queue's `rateLimitKey` source.
   */
  rateLimitKey?: string;
}

/** Options accepted where a job is enqueued by queue name (transaction handles, outboxes). */
export type JobOpts = EnqueueOpts & Omit<QueueOpts, 'resultRetentionMs' | 'limitKeys'>;

/** Defaults for plain queues. */
export const DEFAULT_QUEUE_OPTS: Readonly<Required<QueueOpts>> = Object.freeze({
  leaseMs: 300_000,
  maxAttempts: 3,
  backoffBaseMs: 5_000,
  deadLetterRetentionMs: null,
  resultRetentionMs: 604_800_000,
  limitKeys: null,
});

/** Defaults for outbox-backed queues. */
export const OUTBOX_QUEUE_OPTS: Readonly<Required<QueueOpts>> = Object.freeze({
  leaseMs: 60_000,
  maxAttempts: 5,
  backoffBaseMs: 5_000,
  deadLetterRetentionMs: null,
  resultRetentionMs: 604_800_000,
  limitKeys: null,
});

/** What is written onto a job row: the resolved stamp, identical on both engines. */
export interface JobStamp {
  priority: number;
  maxAttempts: number;
  visibilityTimeoutMs: number;
  backoffBaseMs: number;
  deadLetterRetentionMs: number | null;
  /** Delay from the database's now, or null when `runAtMs` decides. */
  delayMs: number | null;
  /** Absolute ready time (epoch ms), used only when `delayMs` is null; null means "now". */
  runAtMs: number | null;
  /** Expiry relative to the database's now at enqueue, or null for never. */
  expiresInMs: number | null;
}

/** A stamp plus the validated headers and keys. */
export type JobWrite = JobStamp & JobExtras & LimitKeys;

/**
 * Validates queue options ({@link InvalidArgument} naming the field and its bound) and fills defaults.
 */
export function resolveQueueOpts(
  opts: QueueOpts | undefined,
  defaults: Readonly<Required<QueueOpts>> = DEFAULT_QUEUE_OPTS,
): Required<QueueOpts> {
  const o = optionalObject<QueueOpts>('queue opts', opts) ?? {};
  const lease = renamedOption('queue', o, 'visibilityTimeoutMs', 'leaseMs');
  const leaseMs = lease === undefined ? defaults.leaseMs : requireDurationMs('leaseMs', lease);
  return {
    leaseMs,
    maxAttempts: o.maxAttempts === undefined ? defaults.maxAttempts : requireMaxAttempts('maxAttempts', o.maxAttempts),
    backoffBaseMs:
      o.backoffBaseMs === undefined
        ? defaults.backoffBaseMs
        : requireDurationMs('backoffBaseMs', o.backoffBaseMs, { allowZero: true }),
    deadLetterRetentionMs: retentionOpt(
      'deadLetterRetentionMs',
      o.deadLetterRetentionMs,
      defaults.deadLetterRetentionMs,
    ),
    resultRetentionMs: retentionOpt('resultRetentionMs', o.resultRetentionMs, defaults.resultRetentionMs),
    limitKeys: o.limitKeys === undefined ? defaults.limitKeys : resolveKeySources(o.limitKeys),
  };
}

/** A retention option: undefined means "the default"; an explicit null means "keep forever". */
function retentionOpt(name: string, v: number | null | undefined, dflt: number | null): number | null {
  if (v === undefined) return dflt;
  return v === null ? null : requireDurationMs(name, v, { allowZero: true });
}

/**
 * Resolves what is stamped on a job row: explicit per-job options win over the
 * queue's options, which win over the defaults; `headers` is the store's
 * `enqueueHeaders` hook (null: none). Pure; both engines call it.
 */
export function resolveJobStamp(
  queueOpts: Required<QueueOpts>,
  opts: JobOpts | undefined,
  headers: EnqueueHeadersHook | null = null,
): JobWrite {
  const o = optionalObject<JobOpts>('job opts', opts) ?? {};
  // Only undefined (absent) means "the queue's value"; null is refused like every other
  // wrongly typed option (SPEC §3), as for priority and delayMs.
  // resultRetentionMs is not stamped (the outcome's writer reads it): left out of the stamp.
  // The key sources need the payload: the handle applies them (withSourcedKeys).
  const {
    resultRetentionMs: _unstamped,
    limitKeys: _sources,
    ...q
  } = resolveQueueOpts(
    {
      // A job's own lease wins over the queue's; the 0.2 name is refused, naming leaseMs.
      ...(renamedOption('job', o, 'visibilityTimeoutMs', 'leaseMs') === undefined
        ? { leaseMs: queueOpts.leaseMs }
        : { leaseMs: o.leaseMs }),
      maxAttempts: o.maxAttempts === undefined ? queueOpts.maxAttempts : o.maxAttempts,
      backoffBaseMs: o.backoffBaseMs === undefined ? queueOpts.backoffBaseMs : o.backoffBaseMs,
      deadLetterRetentionMs:
        o.deadLetterRetentionMs === undefined ? queueOpts.deadLetterRetentionMs : o.deadLetterRetentionMs,
    },
    queueOpts,
  );
  const priority = o.priority === undefined ? 0 : requirePriority('priority', o.priority);
  const delayMs = o.delayMs === undefined ? null : requireDurationMs('delayMs', o.delayMs, { allowZero: true });
  // Checked even when delayMs wins, so a bad runAt is never silently ignored.
  const runAt = o.runAt === undefined ? null : requireInstantMs('runAt', o.runAt);
  const runAtMs = delayMs === null ? runAt : null;
  const expiresInMs = o.expiresInMs === undefined ? null : requireDurationMs('expiresInMs', o.expiresInMs);
  // The stamp keeps the storage form: the lease as `visibilityTimeoutMs` (the row's column), once.
  const { leaseMs, ...stamped } = q;
  return {
    priority,
    ...stamped,
    visibilityTimeoutMs: leaseMs,
    delayMs,
    runAtMs,
    expiresInMs,
    ...resolveJobExtras(o, headers),
    ...explicitLimitKeys(o),
  };
}

/** A positive duration argument (ttl, extend, visibility). Prefer `requireDurationMs` from the validation module. */
export function requirePositiveMs(name: string, v: unknown): number {
  return requireDurationMs(name, v);
}

/** A non-negative duration argument. Prefer `requireDurationMs(name, v, { allowZero: true })`. */
export function requireNonNegativeMs(name: string, v: unknown): number {
  return requireDurationMs(name, v, { allowZero: true });
}

/** A batch size or limit (1..10 000). Prefer `requireBatchSize` from the validation module. */
export function requirePositiveInt(name: string, v: unknown): number {
  return requireBatchSize(name, v);
}

/** Validates that an option is a non-empty string; {@link InvalidOption} naming the field. */
export function requireString(field: string, v: unknown): string {
  if (typeof v !== 'string' || v.length === 0) throw new InvalidOption(field, 'must be a non-empty string');
  return v;
}
