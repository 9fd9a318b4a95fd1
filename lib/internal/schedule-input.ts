import { encodePayload } from '../contract/codec.js';
import { parseCatchUp, type ScheduleSpec } from '../contract/schedule-spec.js';
import { parseScheduleSpec } from './load-cron.js';
import type { CatchUpPolicy, ScheduleOpts } from '../contract/types.js';
import { optionalKey, optionalObject, scheduleOptsInput, validateName } from '../contract/validate.js';

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
export async function scheduleInput(
  name: unknown,
  spec: unknown,
  queue: unknown,
  payload: unknown,
  opts: unknown,
  maxPayloadBytes?: number,
): Promise<ScheduleInput> {
  const validName = validateName('schedule', name);
  const o = optionalObject<ScheduleOpts>('schedule opts', opts) ?? {};
  const parsed = await parseScheduleSpec(spec, o.timeZone ?? 'UTC');
  return {
    name: validName,
    parsed,
    queue: validateName('queue', queue),
    payloadText: encodePayload(payload, 'payload', maxPayloadBytes),
    ...scheduleOptsInput(opts),
    catchUp: parseCatchUp(o.catchUp),
    owner: o.owner === null ? null : (optionalKey('owner', o.owner) ?? null),
  };
}
