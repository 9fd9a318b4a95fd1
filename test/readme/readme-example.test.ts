// The README's headline Nest example, run as printed: only its imports are
// pointed at the sources and its database file at a temp dir.
import 'reflect-metadata';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplicationContext, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { DataSource } from 'typeorm';
import { Store } from '../../lib/nest/index.js';
import { waitFor } from '../helpers/engines.js';
import { entryPointSources, snippets } from './extract.js';

interface OrderRow {
  id: number;
  customer: string;
  status: string;
}
interface Example {
  AppModule: Type;
  OrdersService: Type<{ create(customer: string): Promise<OrderRow> }>;
  Order: Type;
}

const dir = mkdtempSync(join(tmpdir(), 'alkstore-readme-'));
const outDir = join(process.cwd(), '.tmp', `readme-${process.pid}`);

function headlineSource(): string {
  const nest = snippets().find((s) => s.file === 'README.md' && s.code.includes('AlkstoreModule.forRootAsync'));
  if (!nest) throw new Error('README.md has no Nest example with AlkstoreModule.forRootAsync');
  let code = nest.code;
  for (const [specifier, source] of entryPointSources()) {
    const rel = relative(outDir, join(process.cwd(), source)).replace(/\.ts$/, '.js');
    code = code.split(`from '${specifier}'`).join(`from '${rel.startsWith('.') ? rel : `./${rel}`}'`);
  }
  expect(code).toContain("database: './data/app.db'");
  return code.replace("database: './data/app.db'", `database: ${JSON.stringify(join(dir, 'app.db'))}`);
}

describe('the README Nest example', () => {
  let app: INestApplicationContext;
  let example: Example;

  beforeAll(async () => {
    mkdirSync(outDir, { recursive: true });
    const file = join(outDir, 'headline.ts');
    writeFileSync(file, headlineSource());
    example = (await import(file)) as Example;
    app = await NestFactory.createApplicationContext(example.AppModule, { logger: false });
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(outDir, { recursive: true, force: true });
  });

  it('create() saves the order; the outbox handler feeds the emails queue; its handler confirms the order', async () => {
    const order = await app.get(example.OrdersService).create('Ada');
    expect(order).toMatchObject({ customer: 'Ada', status: 'new' });
    const orders = app.get<DataSource>((await import('typeorm')).DataSource).getRepository<OrderRow>(example.Order);
    await waitFor('the order to be confirmed', async () => (await orders.findOneBy({ id: order.id }))?.status === 'confirmed');
    const store = app.get(Store);
    await waitFor('the emails job to be acked', async () => {
      const stats = await store.queue('emails').stats();
      return stats.pending === 0 && stats.processing === 0;
    });
    expect(await store.queue('emails').stats()).toMatchObject({ dead: 0 });
    expect(await store.outbox('order-created').queue.stats()).toMatchObject({ pending: 0, processing: 0, dead: 0 });
  });

  it('the order row and its outbox message commit together, or neither does', async () => {
    const { AlkstoreTransactions } = await import('../../lib/nest/index.js');
    const orders = app.get<DataSource>((await import('typeorm')).DataSource).getRepository<OrderRow>(example.Order);
    const before = await orders.count();
    const attempt = app.get(AlkstoreTransactions).run(async (tx, em) => {
      await em.save(em.create(example.Order, { customer: 'Ghost' }));
      await tx.outboxEnqueue('order-created', { orderId: -1 });
      throw new Error('payment declined');
    });
    await expect(attempt).rejects.toThrow('payment declined');
    expect(await orders.count()).toBe(before);
    expect(await orders.countBy({ customer: 'Ghost' })).toBe(0);
    expect(await app.get(Store).outbox('order-created').queue.stats()).toMatchObject({ pending: 0, processing: 0 });
  });
});
