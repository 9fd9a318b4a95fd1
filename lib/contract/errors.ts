/**
 * Error taxonomy (SPEC §3). Every alkstore error extends {@link AlkstoreError}
 * and carries a stable `code`. "No work", lost locks and refused job-handle
 * operations are values (`null`, `false`), never errors.
 */

/** Stable codes of {@link AlkstoreError} subclasses. */
export type AlkstoreErrorCode =
  | 'PAYLOAD_TOO_LARGE'
  | 'RESERVED_NAME'
  | 'INVALID_NAME'
  | 'CLOSED'
  | 'CODEC'
  | 'DATABASE'
  | 'INVALID_SPEC'
  | 'LEADERSHIP_LOST'
  | 'INVALID_OPTION'
  | 'JOURNAL_CORRUPT'
  | 'PERMANENT'
  | 'MISSING_PEER'
  | 'INCOMPATIBLE_PEER'
  | 'INVALID_HANDLER'
  | 'ALREADY_RUNNING'
  | 'PUBLISH_TIMEOUT'
  | 'STORE_CALL_TIMEOUT'
  | 'INVALID_ARGUMENT'
  | 'DRAIN_LIMIT'
  | 'TRANSACTION_IN_PROGRESS'
  | 'TRANSACTION_TIMEOUT'
  | 'PUBLISH_FAILED'
  | 'NON_DETERMINISTIC_WORKFLOW'
  | 'WORKFLOW_FAILED'
  | 'WORKFLOW_CANCELLED'
  | 'WORKFLOW_TIMEOUT'
  | 'STEP_FAILED'
  | 'UNKNOWN_WORKFLOW'
  | 'WORKFLOW_INTERRUPTED'
  | 'CHILD_WORKFLOW_FAILED'
  | 'RESULT_TIMEOUT'
  | 'JOB_DEAD'
  | 'JOB_CANCELLED'
  | 'INVALID_FLOW';

/** Base class of every error alkstore throws on purpose. */
export class AlkstoreError extends Error {
  constructor(
    readonly code: AlkstoreErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }

  /**
   * `err instanceof AlkstoreError` is also true for {@link InvalidArgument}, which
   * must extend `RangeError` (SPEC §3) and so cannot extend this class: one
   * `instanceof` check catches every refusal alkstore makes on purpose.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (this === AlkstoreError && value instanceof InvalidArgument) return true;
    return Function.prototype[Symbol.hasInstance].call(this, value);
  }
}

/**
 * A payload exceeds its limit, raised before any write or round trip: a notify
 * payload over the engine's limit (PostgreSQL: 8000 bytes; `channel` names the
 * channel), or a queue, outbox, stream or schedule payload whose JSON is over
 * the store's `maxPayloadBytes` (default 1 MiB; `channel` is then what was
 * refused, e.g. `payload`).
 */
export class PayloadTooLarge extends AlkstoreError {
  constructor(
    readonly channel: string,
    readonly bytes: number,
    readonly limit: number,
    message = `notify payload on channel ${JSON.stringify(channel)} is ${bytes} bytes; the limit is ${limit}`,
  ) {
    super('PAYLOAD_TOO_LARGE', message);
  }

  /** A queue, outbox, stream or schedule payload over the store's `maxPayloadBytes`. */
  static payload(what: string, bytes: number, limit: number): PayloadTooLarge {
    return new PayloadTooLarge(
      what,
      bytes,
      limit,
      `${what} is ${bytes} bytes as JSON; the limit is ${limit} (the maxPayloadBytes store option)`,
    );
  }

  /** {@link payload}, found before encoding: its strings alone are `atLeast` bytes (`bytes` is that lower bound). */
  static atLeast(what: string, atLeast: number, limit: number): PayloadTooLarge {
    return new PayloadTooLarge(
      what,
      atLeast,
      limit,
      `${what} is more than ${limit} bytes as JSON (its strings alone are at least ${atLeast}); the limit is ${limit} (the maxPayloadBytes store option)`,
    );
  }
}

/** A name uses the reserved prefix `__alkstore_`. */
export class ReservedName extends AlkstoreError {
  constructor(
    readonly kind: string,
    readonly value: string,
  ) {
    super('RESERVED_NAME', `${kind} name ${JSON.stringify(value)} uses the reserved prefix "__alkstore_"`);
  }
}

/** A name is empty, whitespace-only or not a string. */
export class InvalidName extends AlkstoreError {
  constructor(
    readonly kind: string,
    readonly value: unknown,
    reason = 'must be a non-empty string',
  ) {
    super('INVALID_NAME', `${kind} name ${describe(value)} ${reason}`);
  }
}

/** The store (or the receiver) was closed; later calls get this error. */
export class Closed extends AlkstoreError {
  constructor(what = 'store') {
    super('CLOSED', `the ${what} is closed`);
  }
}

/** A payload does not survive JSON (BigInt, a cycle, a non-finite number, undefined at the top), or stored bytes do not decode. */
export class Codec extends AlkstoreError {
  constructor(what: string, reason: string, options?: { cause?: unknown }) {
    super('CODEC', `${what}: ${reason}`, options);
  }
}

/** The database failed; the engine's error is kept as `cause`. */
export class Database extends AlkstoreError {
  constructor(operation: string, cause: unknown) {
    super('DATABASE', `${operation} failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/**
 * A schedule spec is neither `@every <n><s|m|h|d>` (n > 0) nor a valid cron
 * expression, never fires, or its time zone is unknown. The message names the
 * spec (and the zone).
 */
export class InvalidSpec extends AlkstoreError {
  constructor(
    readonly spec: unknown,
    reason = 'is neither "@every <n><s|m|h|d>" with n > 0 nor a cron expression of 5 or 6 fields',
  ) {
    super('INVALID_SPEC', `schedule spec ${describe(spec)} ${reason}`);
  }
}

/** The scheduler runner failed to renew the leadership lock and stopped ticking. */
export class LeadershipLost extends AlkstoreError {
  constructor(readonly owner: string) {
    super(
      'LEADERSHIP_LOST',
      `scheduler runner ${JSON.stringify(owner)} lost the leadership lock "__alkstore_scheduler"`,
    );
  }
}

/** An option object has a field of the wrong shape. Names the field, never echoes a secret value. */
export class InvalidOption extends AlkstoreError {
  constructor(
    readonly field: string,
    reason: string,
  ) {
    super('INVALID_OPTION', `option ${field} ${reason}`);
  }
}

/**
 * Thrown by a delivery handler to say "retrying cannot help": the message is
 * dead-lettered at once instead of retried. Code `PERMANENT`.
 */
export class PermanentError extends AlkstoreError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('PERMANENT', message, options);
  }
}

/**
 * A broker publisher did not get the broker's acknowledgment: not connected
 * yet, nacked, returned as unroutable, closed mid-publish, a durability wait
 * that fell short. Code `PUBLISH_FAILED`; the dispatcher retries it.
 */
export class PublishFailed extends AlkstoreError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('PUBLISH_FAILED', message, options);
  }
}

/** A worker loop (an outbox dispatcher) was started while it runs, or a second `recv()` was called while one is pending. */
export class AlreadyRunning extends AlkstoreError {
  constructor(
    readonly what: string,
    state: 'running' | 'pending' = 'running',
  ) {
    super('ALREADY_RUNNING', `${what} is already ${state}`);
  }
}

/**
 * A plain (non-transactional) store write was called inside the async context
 * of a transaction that holds the same SQLite store's write path
 * (`withTx(fn)`, `joinTransaction`), where it
 * would wait for the commit that waits for it. Refused at once, before any
 * write; the message names the transaction's own method to use instead
 * (`tx.enqueue`, …). SQLite only: a PostgreSQL store runs such a write on
 * another connection.
 */
export class TransactionInProgress extends AlkstoreError {
  constructor(
    /** The refused call, e.g. `enqueue`. */
    readonly operation: string,
    /** The transaction that holds the write path, e.g. `withTx(fn)`. */
    readonly holder: string,
  ) {
    super(
      'TRANSACTION_IN_PROGRESS',
      `${operation} was called inside the open ${holder} transaction of the same SQLite store, where it ` +
        `would wait for that transaction to commit: use the transaction's own method (tx.${txMethodOf(operation)}) ` +
        `so the write commits with it, or call it after the transaction ends`,
    );
  }
}

function txMethodOf(operation: string): string {
  const known = ['enqueue', 'outboxEnqueue', 'publish', 'publishWithKey', 'notify', 'saveOffset'];
  return known.includes(operation) ? operation : 'enqueue / outboxEnqueue / publish / notify / saveOffset';
}

/**
 * An application transaction on a SQLite store (`withTx(fn)`,
 * `joinTransaction`) held the store's write path while one of its workers'
 * lease renewals waited for a quarter of that lease, so it was rolled back:
 * every write it made is gone, nothing of it commits, and its handle refuses
 * further use. Keep transactions that run beside workers shorter than a
 * quarter of the shortest lease (or give the queue a longer lease).
 */
export class TransactionTimeout extends AlkstoreError {
  constructor(
    /** The transaction, e.g. `withTx(fn)`. */
    readonly holder: string,
    /** How long it had held the write path when it was rolled back. */
    readonly heldMs: number,
    /** The lease of the renewal that waited. */
    readonly leaseMs: number,
  ) {
    super(
      'TRANSACTION_TIMEOUT',
      `the ${holder} transaction held the SQLite store's write path for ${Math.round(heldMs)} ms while a ` +
        `worker's lease renewal waited (a renewal waits at most a quarter of its ${leaseMs} ms lease), so it ` +
        `was rolled back and none of its writes commit: keep transactions beside workers shorter than a quarter ` +
        `of the shortest lease, or give the queue a longer lease`,
    );
  }
}

/**
 * A call argument, or a field of a per-call options object, has the wrong type
 * or is out of its bounds (SPEC §3: durations, instants, counts, offsets, ids,
 * priorities, timer options). It is a `RangeError`, as SPEC §3 asks of
 * programmer errors on numbers, with the stable code `INVALID_ARGUMENT`, and
 * `instanceof AlkstoreError` holds for it too. The message names the argument,
 * what is wrong and the bound; it never echoes a string value.
 */
export class InvalidArgument extends RangeError {
  readonly code = 'INVALID_ARGUMENT' as const;
  constructor(
    /** The argument or option field, e.g. `priority` or `jobs[3].id`. */
    readonly argument: string,
    /** What is wrong, with the bound, e.g. `must be an integer in [1, 10000]`. */
    readonly problem: string,
  ) {
    super(`${argument} ${problem}`);
    this.name = 'InvalidArgument';
  }
}

/** Longest name or key (in characters) an error message quotes in full. */
const QUOTE_LIMIT = 80;

function describe(value: unknown): string {
  if (typeof value === 'string') {
    return value.length <= QUOTE_LIMIT
      ? JSON.stringify(value)
      : `${JSON.stringify(value.slice(0, QUOTE_LIMIT))}… (${Buffer.byteLength(value, 'utf8')} bytes)`;
  }
  if (value === undefined) return 'undefined';
  if (typeof value === 'bigint') return `${value}n`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * `waitForResult` / `enqueueAndWait` gave up: no outcome of the job committed within `timeoutMs`.
 * The job itself is untouched (it may still run and complete); wait again, or cancel it.
 */
export class ResultTimeout extends AlkstoreError {
  constructor(
    readonly jobId: number,
    readonly timeoutMs: number,
  ) {
    super(
      'RESULT_TIMEOUT',
      `no outcome of job ${jobId} within timeoutMs ${timeoutMs}; the job is left as it is (wait again, or cancel it)`,
    );
  }
}

/** The awaited job went dead: `lastError` is its final error text (`job.fail`, exhausted retries, expiry). */
export class JobDead extends AlkstoreError {
  constructor(
    readonly jobId: number,
    readonly lastError: string | null,
  ) {
    super('JOB_DEAD', `job ${jobId} is dead: ${lastError ?? 'no error recorded'}`);
  }
}

/**
 * The awaited job was cancelled (`queue.cancel…`); also the reason of the `AbortSignal` a worker
 * hands the handler of a job cancelled while it runs.
 */
export class JobCancelled extends AlkstoreError {
  constructor(readonly jobId: number) {
    super('JOB_CANCELLED', `job ${jobId} was cancelled`);
  }
}

/**
 * A flow (`enqueueFlow`, or `enqueue` with `dependsOn`) that cannot run, refused before any write:
 * a cycle, a job depending on itself, an unknown `ref`, a dependency id that is missing or already
 * dead or cancelled. `target` names the job (its path in the flow) or the dependency id.
 */
export class InvalidFlow extends AlkstoreError {
  constructor(
    readonly target: string,
    reason: string,
  ) {
    super('INVALID_FLOW', `${target} ${reason}`);
  }
}
