import { InvalidArgument, InvalidOption } from '../../contract/errors.js';
import {
  asOption,
  optionalObject,
  requireArray,
  requireBoolean,
  requireCount,
  requireInt,
  requireTimerMs,
  validateKey,
  validateName,
  validatePgSchema,
} from '../../contract/validate.js';
import { messageIdPrefixOption } from '../../internal/message-id.js';
import { retentionPeriods } from '../../internal/retention-runner.js';
import { runnerTimings } from '../../internal/scheduler-runner.js';
import { validateJobMetrics } from '../../metrics/job-metrics.js';
import type { AlkstoreModuleOptions, WorkersMode } from '../interfaces/alkstore-options.interface.js';
import { refuseRenamed } from '../../contract/renamed-option.js';

/**
 * Checks `AlkstoreModule` options with the shared validation module before the
 * store opens: {@link InvalidOption} naming the field and its bound (an
 * `InvalidName` for a bad `workerId`). Never echoes `url`: it may hold a password.
 */
export function validateModuleOptions(options: AlkstoreModuleOptions): AlkstoreModuleOptions {
  if (options === null || typeof options !== 'object')
    throw new InvalidOption('AlkstoreModule options', 'must be an object');
  if (options.url !== undefined && (typeof options.url !== 'string' || options.url.length === 0))
    throw new InvalidOption('url', 'must be a non-empty string');
  if (options.schema !== undefined) validatePgSchema('schema', options.schema);
  asOption(() => {
    for (const field of ['migrate', 'scheduler', 'reusePool'] as const) {
      if (options[field] !== undefined) requireBoolean(field, options[field]);
    }
    if (options.poolSize !== undefined) requireCount('poolSize', options.poolSize, 10_000);
    if (options.pollIntervalMs !== undefined) requireTimerMs('pollIntervalMs', options.pollIntervalMs);
    if (options.idlePollIntervalMs !== undefined) requireTimerMs('idlePollIntervalMs', options.idlePollIntervalMs);
    if (options.drainTimeoutMs !== undefined) requireTimerMs('drainTimeoutMs', options.drainTimeoutMs, 0);
  });
  messageIdPrefixOption(options.messageIdPrefix);
  workersMode(options.workers);
  if (options.workerId !== undefined) validateKey('worker', options.workerId);
  if (options.heartbeatIntervalMs !== undefined && options.heartbeatIntervalMs !== false)
    asOption(() => requireInt('heartbeatIntervalMs', options.heartbeatIntervalMs, 100, 600_000));
  try {
    runnerTimings({ lockTtlMs: options.schedulerLockTtlMs, renewIntervalMs: options.schedulerRenewIntervalMs });
  } catch (err) {
    // Name the module's own fields, not the runner's.
    if (err instanceof InvalidArgument)
      throw new InvalidOption(
        err.argument === 'lockTtlMs' ? 'schedulerLockTtlMs' : 'schedulerRenewIntervalMs',
        err.problem,
      );
    throw err;
  }
  if (options.nestSchedule !== undefined && options.nestSchedule !== 'cluster')
    throw new InvalidOption('nestSchedule', "must be 'cluster' or left out");
  if (options.scheduleOwner !== undefined) validateKey('owner', options.scheduleOwner);
  validateObservabilityOptions(options);
  if (options.orm !== undefined && typeof options.orm !== 'function') {
    throw new InvalidOption(
      'orm',
      'must be the open of your ORM from nestjs-alkstore (openPrisma(prisma), openDrizzle(db), openKysely(db), ' +
        'openKnex(knex), openPg(pool), openTypeOrm(dataSource)), set in AlkstoreModule.forRootAsync({ inject: ' +
        '[your client], useFactory: (client) => ({ url, orm: openPrisma(client) }) })',
    );
  }
  return options;
}

/** `metrics`, `metricsIntervalMs`, `tracing` and `retention`. */
function validateObservabilityOptions(options: AlkstoreModuleOptions): void {
  if (options.metrics !== undefined) validateJobMetrics('metrics', options.metrics);
  const retention = options.retention;
  asOption(() => {
    if (options.metricsIntervalMs !== undefined) requireTimerMs('metricsIntervalMs', options.metricsIntervalMs);
    if (options.tracing !== undefined) requireBoolean('tracing', options.tracing);
    if (retention === false || retention === undefined) return;
    const r = optionalObject<NonNullable<typeof retention>>('retention', retention) ?? {};
    if (r.intervalMs !== undefined) requireTimerMs('retention.intervalMs', r.intervalMs);
    if (r.queues !== undefined) for (const q of requireArray('retention.queues', r.queues)) validateName('queue', q);
    if (r.outboxes !== undefined)
      for (const o of requireArray('retention.outboxes', r.outboxes)) validateName('outbox', o);
    if (r.inboxes !== undefined) for (const i of requireArray('retention.inboxes', r.inboxes)) validateName('inbox', i);
    retentionPeriods(r, 'retention.');
  });
}

/**
 * The `workers` option as a mode: `'auto'` (default), `'manual'` or `'off'`. The booleans of 0.2 are
 * refused, naming the mode that replaces each (`true`: `'auto'`, `false`: `'off'`).
 */
export function workersMode(v: unknown): WorkersMode {
  if (v === undefined || v === 'auto' || v === 'manual' || v === 'off') return v ?? 'auto';
  if (v === true || v === false) {
    refuseRenamed('AlkstoreModule', `workers: ${String(v)}`, `workers: '${v ? 'auto' : 'off'}'`);
  }
  throw new InvalidOption(
    'workers',
    `must be 'auto', 'manual' or 'off', got ${typeof v === 'string' ? JSON.stringify(v.slice(0, 32)) : typeof v}`,
  );
}
