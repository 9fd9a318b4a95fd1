import { encodePayload } from '../contract/codec.js';
import { InvalidOption } from '../contract/errors.js';
import { validateKey, validateName } from '../contract/names.js';
import { DEFAULT_QUEUE_OPTS, requirePositiveInt, requirePositiveMs, resolveJobStamp } from '../contract/options.js';
import { parseCatchUp, parseScheduleSpec, type ScheduleSpec } from '../contract/schedule-spec.js';
import type { CatchUpPolicy, ScheduleOpts } from '../contract/types.js';

/** A validated `store.schedule(...)` call, the same on both engines; nothing is written before it is built. */
export interface ScheduleInput {
  name: string;
  parsed: ScheduleSpec;
  queue: string;
  payloadText: string;
  priority: number;
  maxAttempts: number | null;
  expiresInMs: number | null;
  startAt: number | null;
  catchUp: CatchUpPolicy;
  owner: string | null;
}

/** Validates every argument of `schedule(...)` before any I/O (loads croner for a cron spec). */
export async function scheduleInput(name: string, spec: string, queue: string, payload: unknown, opts: ScheduleOpts = {}): Promise<ScheduleInput> {
  const validName = validateName('schedule', name);
  if (opts === null || typeof opts !== 'object') throw new InvalidOption('opts', 'must be an object of schedule options');
  const parsed = await parseScheduleSpec(spec, opts.timeZone ?? 'UTC');
  const input: ScheduleInput = {
    name: validName,
    parsed,
    queue: validateName('queue', queue),
    payloadText: encodePayload(payload),
    priority: opts.priority === undefined ? 0 : resolveJobStamp(DEFAULT_QUEUE_OPTS, { priority: opts.priority }).priority,
    maxAttempts: opts.maxAttempts === undefined ? null : requirePositiveInt('maxAttempts', opts.maxAttempts),
    expiresInMs: opts.expiresInMs === undefined ? null : requirePositiveMs('expiresInMs', opts.expiresInMs),
    startAt: null,
    catchUp: parseCatchUp(opts.catchUp),
    owner: opts.owner === undefined || opts.owner === null ? null : validateKey('owner', opts.owner),
  };
  if (opts.startAt !== undefined) {
    if (typeof opts.startAt !== 'number' || !Number.isFinite(opts.startAt) || Math.abs(opts.startAt) > 8.64e15) {
      throw new RangeError(`startAt must be epoch milliseconds, got ${String(opts.startAt)}`);
    }
    input.startAt = Math.floor(opts.startAt);
  }
  return input;
}
