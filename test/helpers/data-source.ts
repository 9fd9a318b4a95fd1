import { DataSource } from 'typeorm';
import { PG_URL, type EngineDb, type EngineFixture } from './engines.js';

/** A TypeORM DataSource on the same database as `db` (the SQLite file, or the test PostgreSQL with `db`'s schema first on the path). */
export async function openDataSource(engine: EngineFixture, db: EngineDb): Promise<DataSource> {
  const ds =
    engine.kind === 'sqlite'
      ? new DataSource({ type: 'better-sqlite3', database: db.location, entities: [] })
      : new DataSource({ type: 'postgres', url: PG_URL, schema: db.location, poolSize: 2, entities: [] });
  await ds.initialize();
  return ds;
}
