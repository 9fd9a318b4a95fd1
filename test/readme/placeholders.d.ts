// Names the documentation's examples use for the reader's own code (their
// entities, transports, config). Declared here so the snippet test can
// type-check the examples; nothing in alkstore is declared here.
import type { DynamicModule } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import type { Store } from '../../lib/contract/types.js';

declare global {
  /** The reader's entity and its input type. */
  class Order {
    id: number;
    customer: string;
  }
  type NewOrder = Partial<Order>;
  const order: Order;
  /** A store and a DataSource the reader already has. */
  const store: Store;
  const dataSource: DataSource;
  const connectionString: string;
  /** The reader's transports. */
  function sendEmail(message: { to: string }): Promise<void>;
  const webhook: { post(body: unknown, init: { signal: AbortSignal }): Promise<void> };
  const url: string;
  const id: number;
  const SIZES: readonly number[];
  function resize(payload: unknown, size: number): Promise<void>;
  const socket: { send(bytes: Uint8Array): void; on(event: string, listener: (...args: never[]) => void): void };
  function encode(epoch: number, frame: Uint8Array): Uint8Array;
  const peerId: string;
  const nextEpoch: number;
  const frameBytes: Uint8Array;
  const transport: { send(epoch: number, frame: Uint8Array): Promise<void> };
  /** The reader's generated Prisma client (`prisma generate`), reduced to what the examples use. */
  interface ReaderPrismaTx {
    order: { create(args: { data: { customer: string } }): Promise<Order> };
    $queryRawUnsafe<R = unknown>(query: string, ...values: unknown[]): Promise<R>;
    $executeRawUnsafe(query: string, ...values: unknown[]): Promise<number>;
  }
  const prisma: ReaderPrismaTx & { $transaction<R>(fn: (prismaTx: ReaderPrismaTx) => Promise<R>, options?: { timeout?: number }): Promise<R> };
  const customer: string;
  /** The reader's root module. */
  class AppModule {}
  /** @nestjs/config, which alkstore does not depend on. */
  const ConfigModule: DynamicModule;
  class ConfigService {
    get<T = string>(key: string): T;
  }
}
export {};
