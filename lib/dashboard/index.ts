/**
 * The alkstore operator dashboard for NestJS (`nestjs-alkstore/dashboard`): mount
 * `AlkstoreDashboardModule.forRoot({ path, guard })` next to `AlkstoreModule`.
 */
export { AlkstoreDashboardModule } from './dashboard.module.js';
export type { AlkstoreDashboardOptions } from './dashboard.options.js';
export { CSRF_COOKIE } from './csrf.js';
export type { DashboardRole, DashboardRoles } from './dashboard.options.js';
export type { AuditEntry } from './audit.js';
