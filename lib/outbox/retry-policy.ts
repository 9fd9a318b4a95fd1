import { InvalidArgument, InvalidOption } from '../contract/errors.js';
import {
  asOption,
  MAX_ATTEMPTS,
  requireFunction,
  requireInt,
  requireMaxAttempts,
  requireRandomDraw,
} from '../contract/validate.js';

/** Longest retry delay a setting may ask for: one year (the store bounds now + a delay by 8.64e15). */
const MAX_RETRY_DELAY_MS = 365 * 24 * 3_600_000;

/** How a delivery attempt failed. A timeout is transient: the publish may simply have been slow. */
export type FailureKind = 'transient' | 'permanent' | 'timeout';

import type { DeadReason } from '../worker/worker-observer.js';

export type { DeadReason };

/** What to do with a failed delivery. */
export type RetryDecision =
  { readonly kind: 'retry'; readonly delayMs: number } | { readonly kind: 'dead'; readonly reason: DeadReason };

/** The retry section of the dispatcher settings. All durations in milliseconds. */
export interface RetrySettings {
  /** Delay after the first failed attempt; doubles per attempt. */
  readonly baseMs: number;
  /** Cap of any single delay. */
  readonly maxDelayMs: number;
  /** Attempts (claims) allowed before a transient failure dead-letters the message. */
  readonly maxAttempts: number;
  /** Fraction in [0, 1) by which a delay is randomly shortened, so retries of one outage spread out. */
  readonly jitter: number;
}

/** Defaults of {@link RetrySettings}; see docs/outbox.md for the reasoning. */
export const DEFAULT_RETRY_SETTINGS: RetrySettings = Object.freeze({
  baseMs: 1_000,
  maxDelayMs: 300_000,
  maxAttempts: 5,
  jitter: 0.2,
});

/**
 * Validates a complete retry section, throwing {@link InvalidOption} naming the
 * field (prefixed with `path`, e.g. `retry.jitter`). Never echoes the value.
 */
export function validateRetrySettings(r: RetrySettings, path = 'retry.'): RetrySettings {
  if (r === null || typeof r !== 'object')
    throw new InvalidOption(path.replace(/\.$/, '') || 'retry', 'must be an object');
  asOption(() => {
    requireInt(`${path}baseMs`, r.baseMs, 1, MAX_RETRY_DELAY_MS);
    requireInt(`${path}maxDelayMs`, r.maxDelayMs, 1, MAX_RETRY_DELAY_MS);
    requireInt(`${path}maxAttempts`, r.maxAttempts, 1, MAX_ATTEMPTS);
  });
  if (typeof r.jitter !== 'number' || !Number.isFinite(r.jitter) || r.jitter < 0 || r.jitter >= 1) {
    throw new InvalidOption(`${path}jitter`, 'must be a number in [0, 1)');
  }
  if (r.baseMs > r.maxDelayMs) throw new InvalidOption(`${path}baseMs`, `must not exceed ${path}maxDelayMs`);
  return r;
}

/**
 * The dispatcher's retry policy: pure, with no I/O and no clock. It answers
 * with a delay, never an instant; the store applies the delay against the
 * database clock (`job.retry(err, delayMs)`), so a worker's clock skew can
 * never hot-loop a row or park it in the future.
 *
 * Delay for attempt `n` (the claim that just failed, counting from 1):
 * `exp = min(baseMs * 2^(n-1), maxDelayMs)`, `delay = floor(exp * (1 - jitter * random))`,
 * so a delay lies in `(exp * (1 - jitter), exp]` and never exceeds `maxDelayMs`.
 */
export class RetryPolicy {
  readonly settings: RetrySettings;

  /**
   * @param settings validated like the settings' retry section ({@link InvalidOption} naming the field)
   * @param random source of uniform numbers in [0, 1); inject a constant in tests
   * @throws InvalidOption naming the settings field; InvalidArgument naming `random` when it is not a function
   */
  constructor(
    settings: RetrySettings = DEFAULT_RETRY_SETTINGS,
    private readonly random: () => number = Math.random,
  ) {
    this.settings = Object.freeze({ ...validateRetrySettings(settings) });
    requireFunction('random', random);
  }

  /**
   * Decides what happens after attempt `attempts` failed.
   * @param attempts claims so far, the failed one included (`job.attempts`)
   * @param failure how it failed; `permanent` dead-letters at once
   * @param maxAttempts a lower cap from the message itself (its stamped `job.maxAttempts`); the smaller cap wins
   * @throws InvalidArgument (a `RangeError`, code `INVALID_ARGUMENT`) naming `attempts` (not a positive safe
   *   integer), `failure` (not a {@link FailureKind}) or `maxAttempts` (not an integer in [1, 2^31-1]), or
   *   `random` (see {@link delayMs})
   */
  decide(attempts: number, failure: FailureKind, maxAttempts?: number): RetryDecision {
    requireAttempts(attempts);
    if (!FAILURE_KINDS.includes(failure)) {
      throw new InvalidArgument(
        'failure',
        `must be one of ${FAILURE_KINDS.join(', ')}, got ${typeof failure === 'string' ? 'another string' : typeof failure}`,
      );
    }
    if (maxAttempts !== undefined) requireMaxAttempts('maxAttempts', maxAttempts);
    if (failure === 'permanent') return { kind: 'dead', reason: 'permanent' };
    const cap =
      maxAttempts === undefined ? this.settings.maxAttempts : Math.min(this.settings.maxAttempts, maxAttempts);
    if (attempts >= cap) return { kind: 'dead', reason: 'exhausted' };
    return { kind: 'retry', delayMs: this.delayMs(attempts) };
  }

  /**
   * The delay after failed attempt `attempts` (see the class comment).
   * @throws InvalidArgument naming `attempts` (not a positive safe integer) or `random` (the source returned
   *   anything but a number in [0, 1))
   */
  delayMs(attempts: number): number {
    requireAttempts(attempts);
    const { baseMs, maxDelayMs, jitter } = this.settings;
    // 2^(n-1) overflows to Infinity for huge n; min() clamps it to the cap.
    const exp = Math.min(baseMs * 2 ** (attempts - 1), maxDelayMs);
    const r = requireRandomDraw('random', this.random());
    return Math.floor(exp * (1 - jitter * r));
  }
}

const FAILURE_KINDS: readonly FailureKind[] = ['transient', 'permanent', 'timeout'];

function requireAttempts(attempts: unknown): void {
  requireInt('attempts', attempts, 1, Number.MAX_SAFE_INTEGER);
}
