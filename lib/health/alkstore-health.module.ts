import { Module } from '@nestjs/common';
import { AlkstoreHealthIndicator } from './alkstore.health.js';

/**
 * Provides {@link AlkstoreHealthIndicator} (the `Store` comes from the global
 * `AlkstoreModule`). Import it next to `TerminusModule`.
 */
@Module({ providers: [AlkstoreHealthIndicator], exports: [AlkstoreHealthIndicator] })
export class AlkstoreHealthModule {}
