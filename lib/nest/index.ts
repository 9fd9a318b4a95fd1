/**
 * alkstore for NestJS: `AlkstoreModule`, the `Store` injection token, the
 * `@OutboxHandler` / `@QueueHandler` / `@Scheduled` decorators, named queue
 * and outbox handles. The only part of
 * alkstore that imports `@nestjs/*`.
 */
export * from './alkstore.constants.js';
export * from './alkstore.module.js';
export { AlkstoreExplorer } from './alkstore.explorer.js';
export { AlkstoreWorkerHost } from './alkstore.worker-host.js';
export { postgresUrlOf } from './alkstore.store-factory.js';
export * from './decorators/index.js';
export * from './errors/index.js';
export * from './interfaces/index.js';
export * from './queue-ref.js';
export { Store, Store as AlkstoreStore } from './store.token.js';
// The contract types a Nest application uses next to the module, so one import path serves both.
export type { Job, JobInfo, Outbox, Queue, StreamEvent, TxOps } from '../contract/types.js';
export type { Jsonified } from '../contract/codec.js';
export { PermanentError } from '../contract/errors.js';
export { QueueWorker, type QueueWorkerOptions } from '../worker/queue-worker.js';
export * from './brokers/index.js';
export {
  Workflow,
  WORKFLOW_METADATA,
  type WorkflowClass,
  type WorkflowMetadata,
  type WorkflowOptions,
} from './workflows.decorator.js';
export { AlkstoreWorkflowsModule, AlkstoreWorkflowsHost, type AlkstoreWorkflowsOptions } from './workflows.module.js';
export { Workflows, type WorkflowContext } from '../workflows/index.js';
