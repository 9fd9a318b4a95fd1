import { InvalidOption } from '../../contract/errors.js';
import type { QueryRunnerLike, StoreLogger, TxOps } from '../../contract/types.js';

/** An engine-owned transaction: what `store.withTx(fn)` runs `fn` on, and commits or rolls back after it. */
export interface TxHandle extends TxOps {
  commit(): Promise<void>;
  rollback(): Promise<void>;
  readonly finished: boolean;
}

/** How one engine opens, runs and ends its own transactions. */
export interface TxDriver<H extends TxHandle = TxHandle> {
  /** Opens a `withTx(fn)` handle (BEGIN); the store's guard has run. */
  open(): Promise<H>;
  /** Wraps the callback (SQLite marks the body so plain writes inside it are refused at once). Default: runs it. */
  body?<T>(tx: H, run: () => Promise<T>): Promise<T>;
}

/**
 * `store.withTx(fn)` on either engine: commit when `fn` resolves, roll back when it rejects.
 * A transaction the store ended while `fn` ran (closed, or revoked) rejects with that reason.
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
          `alkstore ${log.engine}: rolling back withTx(fn) after its callback failed also failed (${String(rollbackErr)}); ` +
            `the callback's error is the one thrown`,
        );
      });
    }
    throw err;
  }
  // The callback cannot end the transaction itself: one that ended meanwhile was rolled back by the
  // store's close (or, on SQLite, revoked for a lease renewal), and its COMMIT rejects with why.
  await tx.commit();
  return result;
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
 * The QueryRunner of what an `open` function handed `joinTransaction`'s body (`{ queryRunner, handle }`),
 * asserted to be inside an active transaction; otherwise `InvalidOption` with the same message on both
 * engines, before any alkstore statement.
 */
export function joinedRunner(joined: unknown): QueryRunnerLike {
  const runner = (joined as { queryRunner?: unknown } | null)?.queryRunner;
  if (!isQueryRunner(runner) || !('handle' in (joined as object))) {
    throw new InvalidOption(
      'joinTransaction(open)',
      'called its body with something else than { queryRunner, handle }: use an open function of nestjs-alkstore ' +
        "(openTypeOrm, openPrisma, openDrizzle, openKysely, openKnex, openPg), or hand the body your ORM's transaction " +
        'as { queryRunner: { isTransactionActive, query }, handle }',
    );
  }
  if (runner.isTransactionActive !== true || runner.isReleased === true) {
    throw new InvalidOption(
      'joinTransaction(open)',
      "called its body with a queryRunner that has no active transaction (or is released): call the body inside your ORM's transaction, after it began",
    );
  }
  return runner;
}

/** Each operation on a joined transaction re-checks it: the ORM may have committed or released it since. */
export function assertActiveRunner(runner: QueryRunnerLike): void {
  if (runner.isTransactionActive !== true || runner.isReleased === true) {
    throw new InvalidOption(
      'tx',
      'belongs to a joined transaction that has ended (committed, rolled back, or its QueryRunner released), ' +
        'so nothing was written: use tx only inside the function store.joinTransaction runs',
    );
  }
}
