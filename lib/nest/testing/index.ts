/**
 * `nestjs-alkstore/testing`: run an application's alkstore handlers in tests on an
 * isolated database, on demand. `createTestDatabase()` makes a SQLite file
 * or PostgreSQL schemas nobody else uses; `AlkstoreTesting.manual(builder)`
 * keeps handlers from running on their own; `AlkstoreTestKit` drains the
 * queues (`drain()`) and lists what is enqueued (`enqueued(queue)`).
 * Needs `@nestjs/testing`.
 */
export { AlkstoreTestKit, DrainLimit, type DrainOptions, type DrainResult } from './alkstore-test-kit.js';
export { AlkstoreTesting, type AlkstoreTestingModule, type AlkstoreTestingModuleOptions } from './alkstore-testing.js';
export { createTestDatabase, type AlkstoreTestDatabase, type TestDatabaseOptions } from './test-database.js';
