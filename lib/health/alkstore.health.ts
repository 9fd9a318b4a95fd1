import { Inject, Injectable, Optional } from '@nestjs/common';
import type { HealthIndicatorResult, HealthIndicatorStatus } from '@nestjs/terminus';
import { InvalidOption } from '../contract/errors.js';
import { SCHEDULER_LOCK } from '../contract/names.js';
import {
  optionalObject,
  requireBoolean,
  requireInt,
  requireNonBlankString,
  requireTimerMs,
  validateStoredName,
} from '../contract/validate.js';
import { Store } from '../nest/store.token.js';
import { queueHandle } from '../dashboard/data.js';
import { AlkstoreBrokersHost } from '../nest/brokers/alkstore-brokers.host.js';
import type { PublisherHealth } from '../publishers/publisher.js';

/** Anything with an outbox name and a publisher health: an `OutboxDispatcher` with a publisher. */
export interface DispatcherHealthSource {
  readonly outbox: string;
  health(): PublisherHealth;
}

/** Per-queue limits: above either, the indicator is down. */
export interface QueueHealthThresholds {
  /** Longest a ready job may wait before it is claimed (ms). */
  maxOldestReadyAgeMs?: number;
  /** Most dead letters tolerated. */
  maxDead?: number;
}

/** Options of {@link AlkstoreHealthIndicator.isHealthy}. */
export interface AlkstoreHealthOptions {
  /** How long the database may take to answer (ms, default 3000). */
  timeoutMs?: number;
  /** Thresholds by stored queue name (outbox-backed ones are `__alkstore_outbox:<name>`). */
  queues?: Readonly<Record<string, QueueHealthThresholds>>;
  /**
   * PostgreSQL: a lost LISTEN connection makes the indicator `down` instead of
   * `degraded` (the store keeps working by polling meanwhile). Default false.
   */
  requireListener?: boolean;
  /** No runner holding the scheduler lock makes the indicator `down` (default false: only reported). */
  requireLeader?: boolean;
  /**
   * Dispatchers with a publisher to report (`OutboxDispatcher`s you run yourself); those of
   * `AlkstoreBrokersModule` are reported without being listed.
   */
  dispatchers?: readonly DispatcherHealthSource[];
  /**
   * A publisher that is not up (its broker unreachable, its publishes failing, its dispatcher
   * stopped) makes the indicator `down` instead of `degraded`. Default false.
   */
  requirePublishers?: boolean;
}

/** What the indicator reports under its key (besides `status`). */
export interface AlkstoreHealthData {
  [field: string]: unknown;
  engine: string;
  database: 'up' | 'down';
  /** PostgreSQL LISTEN: connected, down (polling), or none (SQLite / listen: false). */
  listener: 'connected' | 'down' | 'none' | 'unknown';
  /** The runner holding `__alkstore_scheduler`, null when none, `unknown` when unreadable. */
  schedulerLeader: string | null;
  queues: Record<string, { pending: number; dead: number; oldestReadyAgeMs: number; ok: boolean }>;
  /** Each publisher-backed outbox's publisher: `up`, `degraded` (with why) or `down`. */
  publishers: Record<string, PublisherHealth>;
  /** Why the indicator is not up. */
  problems: string[];
}

class Timeout extends Error {}

function result<Key extends string>(
  key: Key,
  status: HealthIndicatorStatus,
  data: AlkstoreHealthData,
): HealthIndicatorResult<Key, HealthIndicatorStatus, AlkstoreHealthData> {
  const out = {} as Record<Key, { status: HealthIndicatorStatus } & AlkstoreHealthData>;
  out[key] = { status, ...data };
  return out;
}

function within<T>(ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Timeout(`no answer within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

/** The checked options of one `isHealthy` call. */
function healthInput(key: unknown, options: unknown): { timeoutMs: number; queues: [string, QueueHealthThresholds][] } {
  requireNonBlankString('key', key);
  const o = optionalObject<AlkstoreHealthOptions>('health options', options) ?? {};
  const timeoutMs = o.timeoutMs === undefined ? 3_000 : requireTimerMs('timeoutMs', o.timeoutMs);
  if (o.requireListener !== undefined) requireBoolean('requireListener', o.requireListener);
  if (o.requireLeader !== undefined) requireBoolean('requireLeader', o.requireLeader);
  if (o.requirePublishers !== undefined) requireBoolean('requirePublishers', o.requirePublishers);
  if (o.dispatchers !== undefined) {
    if (!Array.isArray(o.dispatchers)) throw new InvalidOption('dispatchers', 'must be an array of OutboxDispatcher');
    for (const [i, d] of o.dispatchers.entries()) {
      if (!d || typeof d.outbox !== 'string' || typeof (d as Partial<DispatcherHealthSource>).health !== 'function')
        throw new InvalidOption(`dispatchers[${i}]`, 'must be an OutboxDispatcher (outbox, health())');
    }
  }
  const queues = Object.entries(optionalObject<Record<string, QueueHealthThresholds>>('queues', o.queues) ?? {}).map(
    ([name, limits]): [string, QueueHealthThresholds] => {
      validateStoredName('queue', name);
      const at = `queues[${JSON.stringify(name)}]`;
      const l = optionalObject<QueueHealthThresholds>(at, limits) ?? {};
      if (l.maxDead !== undefined) requireInt(`${at}.maxDead`, l.maxDead, 0, Number.MAX_SAFE_INTEGER);
      if (l.maxOldestReadyAgeMs !== undefined)
        requireInt(`${at}.maxOldestReadyAgeMs`, l.maxOldestReadyAgeMs, 0, Number.MAX_SAFE_INTEGER);
      return [name, l];
    },
  );
  return { timeoutMs, queues };
}

/**
 * A `@nestjs/terminus` health indicator for the store: database reachable,
 * LISTEN connected (PostgreSQL), scheduler leadership known, and per-queue
 * thresholds on oldest ready age and dead letters. It returns terminus's
 * result shape and needs nothing from terminus at run time.
 *
 * ```ts
 * @Get('health') @HealthCheck()
 * check() { return this.health.check([() => this.alkstore.isHealthy('alkstore', { queues: { emails: { maxDead: 100 } } })]); }
 * ```
 */
@Injectable()
export class AlkstoreHealthIndicator {
  constructor(
    @Inject(Store) private readonly store: Store,
    @Optional() private readonly brokers?: AlkstoreBrokersHost,
  ) {}

  /**
   * Checks the store and reports under `key` (see {@link AlkstoreHealthData}).
   *
   * Options are checked before the database is asked anything; a bad one rejects with
   * `InvalidArgument` (a `RangeError`, code `INVALID_ARGUMENT`) naming it: `key` (not a non-blank
   * string), `health options` (not an object), `timeoutMs` (not an integer in [1, 2^31-1]),
   * `requireListener` / `requireLeader` (not a boolean), `queues` / `queues["<name>"]` (not an
   * object) or `queues["<name>"].maxDead` / `.maxOldestReadyAgeMs` (not an integer >= 0), and
   * `requirePublishers` (not a boolean); `dispatchers` / `dispatchers[i]` (not an array of dispatchers)
   * rejects with `InvalidOption`. A queue name that is not a valid stored name rejects with `InvalidName`.
   */
  async isHealthy<const Key extends string>(
    key: Key,
    options: AlkstoreHealthOptions = {},
  ): Promise<HealthIndicatorResult<Key, HealthIndicatorStatus, AlkstoreHealthData>> {
    const { timeoutMs, queues } = healthInput(key, options);
    const data: AlkstoreHealthData = {
      engine: this.store.engine,
      database: 'down',
      listener: 'unknown',
      schedulerLeader: null,
      queues: {},
      publishers: {},
      problems: [],
    };
    let status: HealthIndicatorStatus = 'up';
    const down = (why: string) => {
      data.problems.push(why);
      status = 'down';
    };
    // Publishers first: a local read, worth reporting even when the database is down.
    for (const [outbox, h] of this.publishers(options.dispatchers)) {
      data.publishers[outbox] = h;
      if (h.status === 'up') continue;
      const why = `publisher of outbox ${JSON.stringify(outbox)} ${h.status}${h.detail ? `: ${h.detail}` : ''}`;
      if (options.requirePublishers) down(why);
      else {
        data.problems.push(why);
        if (status === 'up') status = 'degraded';
      }
    }
    try {
      await within(timeoutMs, this.store.now());
      data.database = 'up';
    } catch (err) {
      down(`database unreachable: ${err instanceof Error ? err.message : String(err)}`);
      return result(key, status, data);
    }
    const admin = this.store.admin();
    data.listener = admin.listener();
    if (data.listener === 'down') {
      if (options.requireListener) down('LISTEN connection down (polling)');
      else {
        data.problems.push('LISTEN connection down (polling)');
        status = 'degraded';
      }
    }
    try {
      const lock = await within(timeoutMs, admin.lock(SCHEDULER_LOCK));
      data.schedulerLeader = lock && !lock.expired ? lock.owner : null;
      if (options.requireLeader && data.schedulerLeader === null) down('no scheduler leader');
    } catch (err) {
      data.schedulerLeader = 'unknown';
      down(`scheduler leadership unknown: ${err instanceof Error ? err.message : String(err)}`);
    }
    for (const [name, limits] of queues) {
      try {
        const s = await within(timeoutMs, queueHandle(this.store, name).stats());
        const tooOld = limits.maxOldestReadyAgeMs !== undefined && s.oldestPendingAgeMs > limits.maxOldestReadyAgeMs;
        const tooDead = limits.maxDead !== undefined && s.dead > limits.maxDead;
        data.queues[name] = {
          pending: s.pending,
          dead: s.dead,
          oldestReadyAgeMs: s.oldestPendingAgeMs,
          ok: !tooOld && !tooDead,
        };
        if (tooOld)
          down(
            `queue ${JSON.stringify(name)}: oldest ready job waited ${s.oldestPendingAgeMs} ms (limit ${limits.maxOldestReadyAgeMs})`,
          );
        if (tooDead) down(`queue ${JSON.stringify(name)}: ${s.dead} dead letters (limit ${limits.maxDead})`);
      } catch (err) {
        down(`queue ${JSON.stringify(name)}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    return result(key, status, data);
  }

  private publishers(listed: readonly DispatcherHealthSource[] | undefined): [string, PublisherHealth][] {
    const out = new Map<string, PublisherHealth>(Object.entries(this.brokers?.publisherHealth() ?? {}));
    for (const d of listed ?? []) out.set(d.outbox, d.health());
    return [...out];
  }
}
