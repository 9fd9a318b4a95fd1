/**
 * The second, smaller sample: no Nest and no TypeORM. A knex application on
 * one SQLite file (or PostgreSQL) places orders with `store.joinTransaction(openKnex(db), …)`: the
 * order row and its outbox message commit together, and a `QueueWorker` on
 * the outbox delivers each message once its order committed.
 *
 *   npx -y tsx sample/knex-orders.ts [sqlite:./data/knex-orders.db | postgres://…] [orders=5]
 */
import knex, { type Knex } from 'knex';
import { openStore } from '../lib/open-store.js';
import { openKnex } from '../lib/adapters/index.js';
import type { Store } from '../lib/contract/types.js';
import { QueueWorker } from '../lib/worker/queue-worker.js';

/** What one run did: the orders placed, and the order ids the worker delivered. */
export interface KnexSampleResult {
  placed: number[];
  rolledBack: number;
  delivered: number[];
}

function knexFor(url: string): Knex {
  if (url.startsWith('postgres')) return knex({ client: 'pg', connection: url });
  return knex({
    client: 'better-sqlite3',
    connection: { filename: url.replace(/^sqlite:/, '') },
    useNullAsDefault: true,
  });
}

/** Places `count` orders (and one that rolls back), delivers their messages, and stops. */
export async function runKnexSample(
  url: string,
  count: number,
  options: { schema?: string } = {},
): Promise<KnexSampleResult> {
  const store: Store = await openStore({ url, ...(options.schema ? { schema: options.schema } : {}) });
  const db = knexFor(url);
  const table = options.schema ? `${options.schema}.knex_orders` : 'knex_orders';
  const delivered: number[] = [];
  const worker = new QueueWorker({
    queue: store.outbox('knex-order-placed').queue,
    name: 'knex-order-placed',
    concurrency: 4,
    idlePollIntervalMs: 1_000,
    drainTimeoutMs: 5_000,
    workerId: 'knex-sample',
    logger: { log: () => undefined, warn: (m) => console.warn(m), error: (m) => console.error(m) },
    handler: async (job) => {
      delivered.push((job.payload as { orderId: number }).orderId);
    },
  });
  try {
    if (!(await db.schema.hasTable(options.schema ? 'knex_orders' : table).catch(() => false))) {
      await (options.schema ? db.schema.withSchema(options.schema) : db.schema).createTable('knex_orders', (t) => {
        t.increments('id');
        t.string('customer').notNullable();
      });
    }
    worker.start();
    const placed: number[] = [];
    for (let i = 0; i < count; i++) {
      const id = await store.joinTransaction(openKnex(db), async (tx, trx) => {
        const [row] = await trx(table)
          .insert({ customer: `customer ${i}` })
          .returning<{ id: number }[]>('id');
        await tx.outboxEnqueue('knex-order-placed', { orderId: row!.id });
        return row!.id;
      });
      placed.push(id);
    }
    // A failed business step: neither the row nor its message survives.
    let rolledBack = 0;
    await store
      .joinTransaction(openKnex(db), async (tx, trx) => {
        const [row] = await trx(table).insert({ customer: 'rolled back' }).returning<{ id: number }[]>('id');
        await tx.outboxEnqueue('knex-order-placed', { orderId: row!.id });
        throw new Error('payment declined');
      })
      .catch(() => (rolledBack += 1));
    const deadline = Date.now() + 30_000;
    while (delivered.length < placed.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    return { placed, rolledBack, delivered: [...delivered].sort((a, b) => a - b) };
  } finally {
    await worker.stop();
    await db.destroy();
    await store.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const url = process.argv[2] ?? 'sqlite:./data/knex-orders.db';
  const result = await runKnexSample(url, Number(process.argv[3] ?? 5));
  console.log(
    `placed orders ${result.placed.join(', ')}; ${result.rolledBack} rolled back; delivered ${result.delivered.join(', ')}`,
  );
}
