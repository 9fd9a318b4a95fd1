import { InvalidOption } from '../contract/errors.js';
import type { EngineKind, JoinedTx, TxOpen, TxOpenContext } from '../contract/types.js';
import { assertSameEngine } from './join.js';
import { returnsRows } from './placeholders.js';
import { adapterRunner, whileActive, type AdapterResult } from './runner.js';

const OPEN = 'openPrisma';

/** What alkstore uses of a Prisma transaction client: raw statements, passed to the driver as written. */
export interface PrismaTxLike {
  $queryRawUnsafe<R = unknown>(query: string, ...values: unknown[]): PromiseLike<R>;
  $executeRawUnsafe(query: string, ...values: unknown[]): PromiseLike<number>;
}

/** Options of Prisma's interactive transactions (`prisma.$transaction(fn, options)`). */
export interface PrismaTransactionOptions {
  maxWait?: number;
  timeout?: number;
  isolationLevel?: string;
}

/** A Prisma client (Prisma 7 with a driver adapter): interactive `$transaction(async (prismaTx) => …)`. */
export interface PrismaClientLike {
  $transaction(...args: never[]): Promise<unknown>;
}

/** The transaction client Prisma hands `prisma.$transaction(fn)`'s callback. */
export type PrismaTxOf<P extends PrismaClientLike> = P extends {
  $transaction(fn: (prismaTx: infer X) => Promise<unknown>, ...rest: never[]): unknown;
}
  ? X
  : never;

function isClient(p: unknown): p is PrismaClientLike & PrismaTxLike {
  return isPrismaTx(p) && typeof (p as Partial<PrismaClientLike>).$transaction === 'function';
}

/** The provider Prisma's client was generated for (`postgresql`, `sqlite`, …), when it says. */
function engineOf(p: object): EngineKind | null {
  const provider =
    (p as { _activeProvider?: unknown })._activeProvider ??
    (p as { _engineConfig?: { activeProvider?: unknown } })._engineConfig?.activeProvider;
  if (provider === 'sqlite') return 'sqlite';
  if (provider === 'postgresql' || provider === 'postgres') return 'postgres';
  return null;
}

/** alkstore's statements on a Prisma transaction client (`$queryRawUnsafe` for rows, `$executeRawUnsafe` for counts), active while `isActive()`. */
export function prismaJoined<X extends PrismaTxLike>(
  prismaTx: X,
  isActive: () => boolean,
  source?: object,
): JoinedTx<X> {
  const run = async (sql: string, params: unknown[]): Promise<AdapterResult> => {
    if (returnsRows(sql)) {
      const rows = (await prismaTx.$queryRawUnsafe<Record<string, unknown>[]>(sql, ...params)) ?? [];
      return { records: rows, affected: rows.length };
    }
    return { records: [], affected: await prismaTx.$executeRawUnsafe(sql, ...params) };
  };
  return { queryRunner: adapterRunner(run, isActive, null, source), handle: prismaTx };
}

/** A Prisma transaction client (or client): it has the raw-statement methods alkstore runs on. */
export function isPrismaTx(p: unknown): p is PrismaTxLike {
  const c = p as Partial<PrismaTxLike> | null;
  return (
    typeof c === 'object' &&
    c !== null &&
    typeof c.$queryRawUnsafe === 'function' &&
    typeof c.$executeRawUnsafe === 'function'
  );
}

/**
 * The `open` of a Prisma interactive transaction, for
 * `store.joinTransaction(openPrisma(prisma), async (tx, prismaTx) => …)`: each transaction is
 * `prisma.$transaction(async (prismaTx) => …, options)`, and alkstore's writes through `tx` run on
 * its connection (`$queryRawUnsafe` / `$executeRawUnsafe`) and commit with your business writes
 * through `prismaTx`, or vanish with them; wakes fire on commit. Prisma 7 with `@prisma/adapter-pg`
 * on a PostgreSQL store, `@prisma/adapter-better-sqlite3` on a SQLite one. `options` go to
 * `$transaction` (its `timeout` counts from when the transaction opens, after any wait for the
 * SQLite store's write path). Anything else than a Prisma client is refused at once (`InvalidOption`).
 *
 * ```ts
 * await store.joinTransaction(openPrisma(prisma), async (tx, prismaTx) => {
 *   const order = await prismaTx.order.create({ data: { customer } });
 *   await tx.outboxEnqueue('deliveries', { orderId: order.id });
 * });
 * ```
 */
export function openPrisma<P extends PrismaClientLike>(
  prisma: P,
  options?: PrismaTransactionOptions,
): TxOpen<PrismaTxOf<P>> {
  if (!isClient(prisma))
    throw new InvalidOption(
      `${OPEN}(prisma)`,
      'must be a Prisma client (new PrismaClient({ adapter })), with $transaction and $queryRawUnsafe',
    );
  const engine = engineOf(prisma);
  return async <T>(body: (joined: JoinedTx<PrismaTxOf<P>>) => Promise<T>, store: TxOpenContext) => {
    if (engine !== null) assertSameEngine(OPEN, 'prisma', engine, store.engine);
    return (
      prisma.$transaction as (fn: (prismaTx: unknown) => Promise<T>, options?: PrismaTransactionOptions) => Promise<T>
    )(
      (prismaTx) =>
        whileActive((isActive) => body(prismaJoined(prismaTx as PrismaTxOf<P> & PrismaTxLike, isActive, prisma))),
      options,
    );
  };
}
