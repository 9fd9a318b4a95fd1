/**
 * Health checks for `@nestjs/terminus` (`alkstore/health`): database
 * reachable, LISTEN connected, scheduler leadership, queue thresholds.
 */
export {
  AlkstoreHealthIndicator,
  type AlkstoreHealthData,
  type AlkstoreHealthOptions,
  type QueueHealthThresholds,
} from './alkstore.health.js';
export { AlkstoreHealthModule } from './alkstore-health.module.js';
