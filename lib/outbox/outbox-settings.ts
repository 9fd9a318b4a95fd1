import { InvalidOption } from '../contract/errors.js';
import { refuseRenamed, renamedOption } from '../contract/renamed-option.js';
import { asOption, MAX_BATCH, requireCount, requireTimerMs } from '../contract/validate.js';
import { DEFAULT_RETRY_SETTINGS, type RetrySettings, validateRetrySettings } from './retry-policy.js';

/**
 * Delivery ordering. `unordered`: nothing is promised. `per-key`: messages
 * enqueued with the same `orderingKey` are delivered one at a time in enqueue
 * order (the store hands out only the oldest live message of a key; a retried
 * one keeps its key blocked). Messages without a key stay unordered.
 */
export type OutboxOrdering = 'unordered' | 'per-key';

/** Every field of {@link OutboxSettings}. Durations in milliseconds. */
export interface OutboxSettingsInit {
  /** Claim size: most rows one claim statement takes (also bounded by free `concurrency` slots). */
  readonly claimSize: number;
  /** Lease of a claim; renewed every `leaseMs / 2` while a row is in flight. Also the outcome-write retry budget. */
  readonly leaseMs: number;
  /** Concurrency: most rows this dispatcher holds at once (delivering, or waiting for their outcome write). */
  readonly concurrency: number;
  /** A delivery still running after this long is a transient failure (`timeout`); the handler's signal aborts. */
  readonly publishTimeoutMs: number;
  /** Busy poll: the wait after a claim that came back short (some rows, fewer than asked) while work is flowing. */
  readonly busyPollIntervalMs: number;
  /** Poll interval when the last claim found nothing (a commit wakes the loop earlier). */
  readonly idlePollIntervalMs: number;
  /** On shutdown, how long in-flight deliveries may still finish (0: not at all). */
  readonly drainTimeoutMs: number;
  /** A store call (claim, renew, outcome write, stats) still pending after this long counts as failed. */
  readonly storeTimeoutMs: number;
  /** How often `pending` / `oldestPendingAgeMs` are sampled from `queue.stats()` (only when metrics are set). */
  readonly statsIntervalMs: number;
  /** `unordered` (default) or `per-key` (see {@link OutboxOrdering}). */
  readonly ordering: OutboxOrdering;
  /** Retry policy of transient failures. */
  readonly retry: RetrySettings;
}

/** What {@link OutboxSettings.create} accepts: any subset; missing fields take the defaults. */
export type OutboxSettingsInput = Partial<Omit<OutboxSettingsInit, 'retry'>> & {
  readonly retry?: Partial<RetrySettings>;
};

/** Old name (0.2, refused) → new name of every renamed setting. */
const RENAMED = { batchSize: 'claimSize', maxInFlight: 'concurrency', pollIntervalMs: 'busyPollIntervalMs' } as const;

/** Defaults of {@link OutboxSettings}; docs/outbox.md explains each choice. */
export const DEFAULT_OUTBOX_SETTINGS: OutboxSettingsInit = Object.freeze({
  claimSize: 32,
  leaseMs: 30_000,
  concurrency: 64,
  publishTimeoutMs: 10_000,
  busyPollIntervalMs: 100,
  idlePollIntervalMs: 1_000,
  drainTimeoutMs: 10_000,
  storeTimeoutMs: 5_000,
  statsIntervalMs: 10_000,
  ordering: 'unordered',
  retry: DEFAULT_RETRY_SETTINGS,
});

const TOP_FIELDS = Object.keys(DEFAULT_OUTBOX_SETTINGS) as (keyof OutboxSettingsInit)[];
const RETRY_FIELDS = Object.keys(DEFAULT_RETRY_SETTINGS) as (keyof RetrySettings)[];

/** Environment variable suffix of each field, read by {@link OutboxSettings.fromEnv}. */
const ENV_NAMES: Record<string, string> = {
  claimSize: 'CLAIM_SIZE',
  leaseMs: 'LEASE_MS',
  concurrency: 'CONCURRENCY',
  publishTimeoutMs: 'PUBLISH_TIMEOUT_MS',
  busyPollIntervalMs: 'BUSY_POLL_INTERVAL_MS',
  idlePollIntervalMs: 'IDLE_POLL_INTERVAL_MS',
  drainTimeoutMs: 'DRAIN_TIMEOUT_MS',
  storeTimeoutMs: 'STORE_TIMEOUT_MS',
  statsIntervalMs: 'STATS_INTERVAL_MS',
  ordering: 'ORDERING',
  'retry.baseMs': 'RETRY_BASE_MS',
  'retry.maxDelayMs': 'RETRY_MAX_DELAY_MS',
  'retry.maxAttempts': 'RETRY_MAX_ATTEMPTS',
  'retry.jitter': 'RETRY_JITTER',
};

/** The variables of 0.2 (refused, naming the new variable) and the field each set. */
const OLD_ENV_NAMES: Record<string, keyof typeof RENAMED> = {
  BATCH_SIZE: 'batchSize',
  MAX_IN_FLIGHT: 'maxInFlight',
  POLL_INTERVAL_MS: 'pollIntervalMs',
};

/**
 * The dispatcher's settings: immutable, validated when built. Every invalid
 * field is an {@link InvalidOption} (code `INVALID_OPTION`) naming the field;
 * messages never echo the value.
 *
 * ```ts
 * const s = OutboxSettings.create({ claimSize: 16, concurrency: 32, retry: { maxAttempts: 8 } });
 * const fromEnv = OutboxSettings.fromEnv('ORDERS_OUTBOX_'); // ORDERS_OUTBOX_CLAIM_SIZE, …
 * ```
 */
export class OutboxSettings implements OutboxSettingsInit {
  readonly claimSize!: number;
  readonly leaseMs!: number;
  readonly concurrency!: number;
  readonly publishTimeoutMs!: number;
  readonly busyPollIntervalMs!: number;
  readonly idlePollIntervalMs!: number;
  readonly drainTimeoutMs!: number;
  readonly storeTimeoutMs!: number;
  readonly statsIntervalMs!: number;
  readonly ordering!: OutboxOrdering;
  readonly retry!: RetrySettings;

  /** Validates `input` over the defaults. @throws InvalidOption naming the first bad field */
  constructor(input: OutboxSettingsInput = {}) {
    const merged = resolve(input);
    Object.assign(this, merged);
    Object.freeze(this);
  }

  /** Same as the constructor; an {@link OutboxSettings} passes through unchanged. */
  static create(input: OutboxSettings | OutboxSettingsInput = {}): OutboxSettings {
    return input instanceof OutboxSettings ? input : new OutboxSettings(input);
  }

  /**
   * Reads `${prefix}CLAIM_SIZE`, `${prefix}LEASE_MS`, `${prefix}CONCURRENCY`,
   * `${prefix}PUBLISH_TIMEOUT_MS`, `${prefix}BUSY_POLL_INTERVAL_MS`,
   * `${prefix}IDLE_POLL_INTERVAL_MS`, `${prefix}DRAIN_TIMEOUT_MS`,
   * `${prefix}STORE_TIMEOUT_MS`, `${prefix}STATS_INTERVAL_MS`, `${prefix}ORDERING`,
   * `${prefix}RETRY_BASE_MS`, `${prefix}RETRY_MAX_DELAY_MS`,
   * `${prefix}RETRY_MAX_ATTEMPTS`, `${prefix}RETRY_JITTER` from `env`; unset or
   * empty variables fall back to `base`, then to the defaults. The names of 0.2
   * (`BATCH_SIZE`, `MAX_IN_FLIGHT`, `POLL_INTERVAL_MS`) are refused, naming the new variable.
   * This is the only code in alkstore that reads the environment, and only when called.
   *
   * @throws InvalidOption naming the variable (never its value) when a value is malformed or out of range
   */
  static fromEnv(
    prefix: string,
    env: Readonly<Record<string, string | undefined>> = process.env,
    base: OutboxSettingsInput = {},
  ): OutboxSettings {
    if (typeof prefix !== 'string') throw new InvalidOption('prefix', 'must be a string');
    const top: Record<string, unknown> = { ...base };
    const retry: Record<string, unknown> = { ...(base.retry ?? {}) };
    for (const [field, suffix] of Object.entries(ENV_NAMES)) {
      const variable = `${prefix}${suffix}`;
      const raw = env[variable];
      if (raw === undefined || raw.trim() === '') continue;
      const value = parseEnvValue(field, variable, raw.trim());
      if (field.startsWith('retry.')) retry[field.slice('retry.'.length)] = value;
      else top[field] = value;
    }
    for (const [suffix, old] of Object.entries(OLD_ENV_NAMES)) {
      const variable = `${prefix}${suffix}`;
      if ((env[variable]?.trim() ?? '') !== '')
        refuseRenamed('OutboxSettings.fromEnv', variable, `${prefix}${ENV_NAMES[RENAMED[old]]!}`);
    }
    try {
      return new OutboxSettings({ ...top, retry } as OutboxSettingsInput);
    } catch (err) {
      // Rename the field to the variable that set it; a field from `base` keeps its own name.
      if (err instanceof InvalidOption) {
        const variable = `${prefix}${ENV_NAMES[err.field] ?? ''}`;
        if (ENV_NAMES[err.field] !== undefined && env[variable] !== undefined && env[variable]?.trim() !== '') {
          throw new InvalidOption(variable, err.message.slice(`option ${err.field} `.length));
        }
      }
      throw err;
    }
  }

  /** A plain copy, e.g. for logging (settings hold no secrets). */
  toJSON(): OutboxSettingsInit {
    return { ...this, retry: { ...this.retry } };
  }
}

function parseEnvValue(field: string, variable: string, raw: string): unknown {
  if (field === 'ordering') return raw;
  if (field === 'retry.jitter') {
    if (!/^(\d+(\.\d*)?|\.\d+)$/.test(raw)) throw new InvalidOption(variable, 'must be a decimal number in [0, 1)');
    return Number(raw);
  }
  if (!/^\d+$/.test(raw)) throw new InvalidOption(variable, 'must be a non-negative integer (milliseconds or a count)');
  const n = Number(raw);
  if (!Number.isSafeInteger(n)) throw new InvalidOption(variable, 'is too large');
  return n;
}

function resolve(given: OutboxSettingsInput): OutboxSettingsInit {
  if (given === null || typeof given !== 'object') throw new InvalidOption('settings', 'must be an object');
  for (const key of Object.keys(given)) {
    if (!(TOP_FIELDS as string[]).includes(key) && !(key in RENAMED))
      throw new InvalidOption(key, 'is not an outbox setting');
  }
  // A setting of 0.2 is refused, naming today's word.
  for (const [old, next] of Object.entries(RENAMED)) renamedOption('OutboxSettings', given, old, next);
  const input: Record<string, unknown> = { ...given };
  const retryIn = (given.retry ?? {}) as Partial<RetrySettings>;
  if (retryIn === null || typeof retryIn !== 'object') throw new InvalidOption('retry', 'must be an object');
  for (const key of Object.keys(retryIn)) {
    if (!(RETRY_FIELDS as string[]).includes(key)) throw new InvalidOption(`retry.${key}`, 'is not a retry setting');
  }
  const d = DEFAULT_OUTBOX_SETTINGS;
  const pick = <K extends keyof OutboxSettingsInit>(k: K): OutboxSettingsInit[K] =>
    (input[k] ?? d[k]) as OutboxSettingsInit[K];
  const s: OutboxSettingsInit = {
    claimSize: pick('claimSize'),
    leaseMs: pick('leaseMs'),
    concurrency: pick('concurrency'),
    publishTimeoutMs: pick('publishTimeoutMs'),
    busyPollIntervalMs: pick('busyPollIntervalMs'),
    idlePollIntervalMs: pick('idlePollIntervalMs'),
    drainTimeoutMs: pick('drainTimeoutMs'),
    storeTimeoutMs: pick('storeTimeoutMs'),
    statsIntervalMs: pick('statsIntervalMs'),
    ordering: pick('ordering'),
    retry: Object.freeze({
      baseMs: retryIn.baseMs ?? d.retry.baseMs,
      maxDelayMs: retryIn.maxDelayMs ?? d.retry.maxDelayMs,
      maxAttempts: retryIn.maxAttempts ?? d.retry.maxAttempts,
      jitter: retryIn.jitter ?? d.retry.jitter,
    }),
  };

  if (s.ordering !== 'unordered' && s.ordering !== 'per-key')
    throw new InvalidOption('ordering', 'must be "unordered" or "per-key"');
  asOption(() => {
    requireCount('claimSize', s.claimSize, MAX_BATCH);
    requireCount('concurrency', s.concurrency);
    for (const f of [
      'leaseMs',
      'publishTimeoutMs',
      'busyPollIntervalMs',
      'idlePollIntervalMs',
      'storeTimeoutMs',
      'statsIntervalMs',
    ] as const)
      requireTimerMs(f, s[f]);
    requireTimerMs('drainTimeoutMs', s.drainTimeoutMs, 0);
  });
  // A delivery must be able to finish inside its lease, or every slow publish is a duplicate.
  if (s.leaseMs <= s.publishTimeoutMs) throw new InvalidOption('leaseMs', 'must be greater than publishTimeoutMs');
  // Renewals run every leaseMs/2; one that takes up to storeTimeoutMs must still land before the deadline.
  if (s.storeTimeoutMs * 2 > s.leaseMs) throw new InvalidOption('storeTimeoutMs', 'must be at most half of leaseMs');
  if (s.idlePollIntervalMs < s.busyPollIntervalMs)
    throw new InvalidOption('idlePollIntervalMs', `must be at least ${'busyPollIntervalMs'}`);
  validateRetrySettings(s.retry);
  return s;
}
