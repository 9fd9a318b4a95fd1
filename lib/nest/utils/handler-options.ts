import { InvalidOption } from '../../contract/errors.js';
import {
  asOption,
  requireCount,
  requireDurationMs,
  requireMaxAttempts,
  requireTimerMs,
} from '../../contract/validate.js';
import { validateJobMetrics } from '../../metrics/job-metrics.js';
import { OutboxSettings, type OutboxSettingsInput } from '../../outbox/index.js';
import type { HandlerOptions, OutboxHandlerOptions } from '../interfaces/handler-options.interface.js';

/** What one decorator takes, and what it says about the names it does not. */
export interface HandlerOptionsShape {
  /** The shared {@link HandlerOptions} it honours. */
  readonly shared: readonly (keyof HandlerOptions)[];
  /** Its own options. */
  readonly own: readonly string[];
  /** Names it no longer takes, with the words to use instead (0.2's names, other decorators' words). */
  readonly renamed?: Readonly<Record<string, string>>;
  /** Shared options it cannot honour, with where they are set instead. */
  readonly elsewhere?: Readonly<Record<string, string>>;
}

/**
 * Checks a handler decorator's options before anything runs: every key is one the decorator takes, and
 * every shared option has a usable value. Throws `InvalidOption` naming the option; the explorer wraps
 * it with the class and method.
 */
export function checkHandlerOptions(decorator: string, options: unknown, shape: HandlerOptionsShape): void {
  if (options === undefined) return;
  if (options === null || typeof options !== 'object' || Array.isArray(options))
    throw new InvalidOption('options', `of ${decorator} must be an object`);
  const o = options as Record<string, unknown>;
  const known = [...shape.shared, ...shape.own] as string[];
  for (const key of Object.keys(o)) {
    if (o[key] === undefined || known.includes(key)) continue;
    const name = key.slice(0, 64);
    const renamed = shape.renamed?.[key];
    if (renamed !== undefined)
      throw new InvalidOption(name, `is not a ${decorator} option: use ${renamed} (docs/vocabulary.md)`);
    const elsewhere = shape.elsewhere?.[key];
    if (elsewhere !== undefined) throw new InvalidOption(name, `is not a ${decorator} option: ${elsewhere}`);
    throw new InvalidOption(name, `is not a ${decorator} option (${known.join(', ')})`);
  }
  checkSharedValues(o as HandlerOptions);
}

/** The shared options' values: the same checks, and the same messages, for every decorator. */
function checkSharedValues(o: HandlerOptions): void {
  asOption(() => {
    if (o.concurrency !== undefined) requireCount('concurrency', o.concurrency);
    if (o.leaseMs !== undefined) requireTimerMs('leaseMs', o.leaseMs);
    if (o.maxAttempts !== undefined) requireMaxAttempts('maxAttempts', o.maxAttempts);
    if (o.backoffBaseMs !== undefined) requireDurationMs('backoffBaseMs', o.backoffBaseMs, { allowZero: true });
    if (o.idlePollIntervalMs !== undefined) requireTimerMs('idlePollIntervalMs', o.idlePollIntervalMs);
  });
  if (o.metrics !== undefined && o.metrics !== false) validateJobMetrics('metrics', o.metrics);
}

/** Every shared option, in the order the docs list them. */
export const ALL_SHARED: readonly (keyof HandlerOptions)[] = [
  'concurrency',
  'leaseMs',
  'maxAttempts',
  'backoffBaseMs',
  'idlePollIntervalMs',
  'metrics',
];

/** The names the outbox's settings use for the retry section, and the handlers' words for them. */
const OUTBOX_RETRY_WORDS: Readonly<Record<string, string>> = {
  'retry.maxAttempts': 'maxAttempts',
  'retry.baseMs': 'backoffBaseMs',
  'retry.maxDelayMs': 'maxBackoffMs',
  'retry.jitter': 'backoffJitter',
};

/** What `@OutboxHandler` takes. */
export const OUTBOX_HANDLER_SHAPE: HandlerOptionsShape = {
  shared: ALL_SHARED,
  own: [
    'claimSize',
    'publishTimeoutMs',
    'busyPollIntervalMs',
    'drainTimeoutMs',
    'storeTimeoutMs',
    'statsIntervalMs',
    'ordering',
    'maxBackoffMs',
    'backoffJitter',
  ],
  renamed: {
    retry: 'maxAttempts, backoffBaseMs, maxBackoffMs and backoffJitter',
    batchSize: 'claimSize',
    maxInFlight: 'concurrency',
    pollIntervalMs: 'busyPollIntervalMs',
    visibilityTimeoutMs: 'leaseMs',
  },
};

/**
 * The dispatcher settings of an `@OutboxHandler`'s options (`metrics` left out), validated; an error
 * names the handler's word (`backoffBaseMs`, not the settings' `retry.baseMs`).
 */
export function outboxSettingsInput(o: OutboxHandlerOptions, defaults: OutboxSettingsInput = {}): OutboxSettingsInput {
  const { metrics: _metrics, maxAttempts, backoffBaseMs, maxBackoffMs, backoffJitter, ...rest } = o;
  const retry = {
    ...(maxAttempts === undefined ? {} : { maxAttempts }),
    ...(backoffBaseMs === undefined ? {} : { baseMs: backoffBaseMs }),
    ...(maxBackoffMs === undefined ? {} : { maxDelayMs: maxBackoffMs }),
    ...(backoffJitter === undefined ? {} : { jitter: backoffJitter }),
  };
  const input: OutboxSettingsInput = { ...defaults, ...rest, ...(Object.keys(retry).length > 0 ? { retry } : {}) };
  try {
    OutboxSettings.create(input);
  } catch (err) {
    if (!(err instanceof InvalidOption)) throw err;
    const field = OUTBOX_RETRY_WORDS[err.field] ?? err.field;
    let reason = err.message.slice(`option ${err.field} `.length);
    for (const [setting, word] of Object.entries(OUTBOX_RETRY_WORDS)) reason = reason.split(setting).join(word);
    throw new InvalidOption(field, reason);
  }
  return input;
}
