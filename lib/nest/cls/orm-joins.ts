import { drizzlePgJoined, drizzleSqliteJoined, isDrizzlePg, isDrizzleSqlite } from '../../adapters/drizzle.js';
import { assertSameEngine } from '../../adapters/join.js';
import { isPrismaTx, prismaJoined } from '../../adapters/prisma.js';
import { InvalidOption } from '../../contract/errors.js';
import type { ExternalTx, Store } from '../../contract/types.js';
import { loadPeer } from '../../internal/load-peer.js';

/**
 * The {@link ClsJoin} for `@nestjs-cls/transactional-adapter-prisma`: alkstore's statements run on the
 * CLS transaction's Prisma client (`$queryRawUnsafe` / `$executeRawUnsafe`), so they commit or roll
 * back with it. Prisma 7 with a driver adapter (`@prisma/adapter-pg`, `@prisma/adapter-better-sqlite3`).
 *
 * ```ts
 * new AlkstoreTransactionalAdapter({ adapter: new TransactionalAdapterPrisma({ prismaInjectionToken: PrismaClient, sqlFlavor: 'postgresql' }), join: prismaClsJoin });
 * ```
 */
export function prismaClsJoin(client: unknown, isActive: () => boolean): ExternalTx {
  if (!isPrismaTx(client)) {
    throw new InvalidOption(
      'prismaClsJoin(client)',
      'must be a Prisma transaction client ($queryRawUnsafe, $executeRawUnsafe): use prismaClsJoin with new TransactionalAdapterPrisma({ prismaInjectionToken }), and drizzleClsJoin with Drizzle',
    );
  }
  return prismaJoined(client, isActive).queryRunner;
}

/**
 * The {@link ClsJoin} for Drizzle: on PostgreSQL the transaction object of
 * `@nestjs-cls/transactional-adapter-drizzle-orm` (node-postgres, postgres.js); on SQLite the
 * better-sqlite3 database of {@link DrizzleSqliteTransactionalAdapter} (Drizzle's own better-sqlite3
 * transactions are synchronous and cannot await, so the community adapter cannot run there).
 *
 * ```ts
 * new AlkstoreTransactionalAdapter({ adapter: new TransactionalAdapterDrizzleOrm({ drizzleInstanceToken: DRIZZLE }), join: drizzleClsJoin });
 * ```
 */
export async function drizzleClsJoin(client: unknown, isActive: () => boolean, store: Store): Promise<ExternalTx> {
  const sqlite = isDrizzleSqlite(client);
  if (!sqlite && !isDrizzlePg(client)) {
    throw new InvalidOption(
      'drizzleClsJoin(client)',
      'must be a Drizzle transaction (TransactionalAdapterDrizzleOrm, PostgreSQL) or a Drizzle better-sqlite3 database (DrizzleSqliteTransactionalAdapter, SQLite); use prismaClsJoin with Prisma',
    );
  }
  assertSameEngine('drizzleClsJoin', 'client', sqlite ? 'sqlite' : 'postgres', store);
  const { sql } = await loadPeer('drizzle-orm', () => import('drizzle-orm'), 'for drizzleClsJoin');
  return (
    sqlite
      ? drizzleSqliteJoined(sql, client, isActive)
      : drizzlePgJoined(sql, client as Parameters<typeof drizzlePgJoined>[1], isActive)
  ).queryRunner;
}
