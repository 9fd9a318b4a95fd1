import { InvalidOption } from '../../contract/errors.js';
import type { ExternalTx, QueryRunnerLike, StoreLogger, TxHandle, TxOps } from '../../contract/types.js';

/** How one engine opens, runs and ends its transactions, and joins a caller's. */
export interface TxDriver<H extends TxHandle = TxHandle> {
  /** Opens a `withTx(fn)` handle (BEGIN); the store's guard has run. */
  open(): Promise<H>;
  /** Wraps the callback (SQLite marks the body so plain writes inside it are refused at once). Default: runs it. */
  body?<T>(tx: H, run: () => Promise<T>): Promise<T>;
  /** Whether the handle still needs its COMMIT after the callback returned (SQLite: a revoked handle commits to reject). Default `!tx.finished`. */
  needsCommit?(tx: H): boolean;
  /** `joinManager` after the store's guard, with the engine's own refusal rules (SQLite joins only its own open transaction). */
  join(external: ExternalTx, entry: JoinEntry): TxOps;
}

/**
 * `store.withTx(fn)` on either engine: commit when `fn` resolves, roll back when it rejects.
 * The caller's error always wins: a rollback that fails after it (a dropped connection) is
 * logged as a warning and the caller's error is rethrown unchanged, the same object; the
 * rollback's error never replaces it. (The engine has already discarded the connection; a
 * transaction that never committed is rolled back by the database.)
 */
export async function runTx<H extends TxHandle, T>(
  parts: TxDriver<H>,
  log: { readonly logger: StoreLogger; readonly engine: string },
  fn: (tx: H) => Promise<T>,
): Promise<T> {
  const tx = await parts.open();
  let result: T;
  try {
    result = parts.body ? await parts.body(tx, () => fn(tx)) : await fn(tx);
  } catch (err) {
    if (!tx.finished) {
      await tx.rollback().catch((rollbackErr: unknown) => {
        log.logger.warn(
          `alkstore ${log.engine}: rolling back withTx(fn) after its callback failed also failed (${String(rollbackErr)}); the callback's error is the one thrown`,
        );
      });
    }
    throw err;
  }
  if (parts.needsCommit ? parts.needsCommit(tx) : !tx.finished) await tx.commit();
  return result;
}

/** Which entry point joined the caller's transaction, in error messages. */
export type JoinEntry = 'joinManager' | 'withTx';

/** The one refusal of a caller's transaction handle that cannot be joined, on both engines. */
function noActiveTx(entry: JoinEntry): InvalidOption {
  return new InvalidOption(
    entry === 'withTx' ? 'withTx(external)' : 'joinManager',
    'was given an EntityManager or QueryRunner with no active transaction (or a released QueryRunner); pass the manager given by dataSource.transaction(...) or a QueryRunner after startTransaction()',
  );
}

function isQueryRunner(x: unknown): x is QueryRunnerLike {
  return (
    typeof x === 'object' &&
    x !== null &&
    typeof (x as QueryRunnerLike).query === 'function' &&
    'isTransactionActive' in x
  );
}

/**
 * The QueryRunner behind an EntityManager or QueryRunner, asserted to be inside an active
 * transaction; otherwise `InvalidOption` with the same message on both engines, before any I/O.
 */
export function activeQueryRunner(external: ExternalTx, entry: JoinEntry = 'joinManager'): QueryRunnerLike {
  const runner = isQueryRunner(external) ? external : (external as { queryRunner?: unknown } | null)?.queryRunner;
  if (!isQueryRunner(runner)) throw noActiveTx(entry);
  assertActiveRunner(runner, entry);
  return runner;
}

/** Each operation on a joined transaction re-checks it: the caller may have committed or released it since. */
export function assertActiveRunner(runner: QueryRunnerLike, entry: JoinEntry = 'joinManager'): void {
  if (runner.isTransactionActive !== true || runner.isReleased === true) throw noActiveTx(entry);
}
