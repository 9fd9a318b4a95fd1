/**
 * Health checks for `@nestjs/terminus` (`nestjs-alkstore/nest`): database
 * reachable, LISTEN connected, scheduler leadership, queue thresholds.
 */
export {
  AlkstoreHealthIndicator,
  type AlkstoreHealthData,
  type AlkstoreHealthOptions,
  type QueueHealthThresholds,
} from './alkstore.health.js';
export { AlkstoreHealthModule } from './alkstore-health.module.js';
