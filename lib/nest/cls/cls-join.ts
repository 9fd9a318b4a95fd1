import { drizzlePgJoined, drizzleSqliteJoined, isDrizzlePg, isDrizzleSqlite } from '../../adapters/drizzle.js';
import { assertSameEngine } from '../../adapters/join.js';
import { isPrismaTx, prismaJoined } from '../../adapters/prisma.js';
import { isEntityManager, typeOrmEngineOf, typeOrmJoined } from '../../adapters/typeorm.js';
import { InvalidOption } from '../../contract/errors.js';
import type { EngineKind, JoinedTx } from '../../contract/types.js';
import { loadPeer } from '../../internal/load-peer.js';

const AT = 'AlkstoreTransactionalAdapter';

/**
 * The transaction client a `@nestjs-cls/transactional` adapter opened, as the store joins it: a
 * Prisma transaction client, a Drizzle transaction (PostgreSQL) or better-sqlite3 database (SQLite),
 * or a TypeORM `EntityManager`, each the way its `open` of `nestjs-alkstore` joins it; active while
 * `isActive()`. A client of the other engine than the store, or of another ORM, is refused
 * (`InvalidOption`) before any alkstore statement.
 */
export async function clsJoined(
  client: unknown,
  isActive: () => boolean,
  engine: EngineKind,
): Promise<JoinedTx<unknown>> {
  if (isPrismaTx(client)) return prismaJoined(client, isActive);
  const drizzleSqlite = isDrizzleSqlite(client);
  if (drizzleSqlite || isDrizzlePg(client)) {
    assertSameEngine(AT, 'client', drizzleSqlite ? 'sqlite' : 'postgres', engine);
    const { sql } = await loadPeer('drizzle-orm', () => import('drizzle-orm'), `for ${AT}`);
    return drizzleSqlite
      ? drizzleSqliteJoined(sql, client, isActive)
      : drizzlePgJoined(sql, client as Parameters<typeof drizzlePgJoined>[1], isActive);
  }
  if (isEntityManager(client) && client.queryRunner) {
    const own = typeOrmEngineOf(client.connection);
    if (own !== null) assertSameEngine(AT, 'client', own, engine);
    return typeOrmJoined(client, isActive);
  }
  throw new InvalidOption(
    `${AT}(adapter)`,
    'opened a transaction whose client alkstore cannot join: wrap the adapter of TypeORM (TransactionalAdapterTypeOrm), ' +
      'Prisma (TransactionalAdapterPrisma), Drizzle on PostgreSQL (TransactionalAdapterDrizzleOrm) or Drizzle ' +
      'on SQLite (DrizzleSqliteTransactionalAdapter); with any other ORM use store.joinTransaction with that ' +
      "ORM's open from nestjs-alkstore",
  );
}
