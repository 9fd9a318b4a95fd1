/**
 * `nestjs-alkstore/nest`: `AlkstoreModule`, the `@OutboxHandler` / `@QueueHandler` /
 * `@Scheduled` / `@InboxHandler` / `@Workflow` decorators, named queue and outbox handles,
 * the brokers, workflows, reliable-sync and health modules, and the `@nestjs-cls/transactional`
 * adapter. The `Store` token, the contract types and the errors come from the root,
 * `nestjs-alkstore`. The only entry that imports `@nestjs/*`.
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
export { Store as AlkstoreStore } from './store.token.js';
export * from './brokers/index.js';
export {
  Workflow,
  WORKFLOW_METADATA,
  type WorkflowClass,
  type WorkflowMetadata,
  type WorkflowOptions,
} from './workflows.decorator.js';
export { AlkstoreWorkflowsModule, AlkstoreWorkflowsHost, type AlkstoreWorkflowsOptions } from './workflows.module.js';
export { ReliableSyncModule, type ReliableOutboxRegistration } from '../reliable-sync/nest/reliable-sync.module.js';
export { InjectReliableOutbox } from '../reliable-sync/nest/inject-reliable-outbox.decorator.js';
export { getReliableOutboxToken } from '../reliable-sync/nest/reliable-sync.constants.js';
export * from './cls/index.js';
export * from '../health/index.js';
