import { InvalidOption } from '../contract/errors.js';
import type { TxOps } from '../contract/types.js';
import { asOption, requireDurationMs, requireMaxAttempts, validateKey } from '../contract/validate.js';
import { keyFromSource } from '../contract/limits.js';
import type { WorkflowContext, WorkflowDefinition } from './types.js';
import type { Jsonified } from '../contract/codec.js';

/** What `defineWorkflow` takes besides the name. */
export interface WorkflowSpec<I, O, X> {
  /** Positive integer (default 1). Bump it for a change that reorders, adds or removes calls. */
  readonly version?: number;
  /**
   * Start a run on this schedule (a cron expression like `'0 * * * *'` or `'@every 1h'`, or the
   * object form with a time zone and an input). Runs fire once across the fleet (the store's
   * leader-elected scheduler, `store.runSchedules`) with the run id `cron:<name>:<boundary ms>`.
   */
  readonly schedule?: string | WorkflowSchedule<I>;
  /**
   * The keys the queue's limits count this workflow's runs by (docs/workflows.md, "Limits"):
   * computed once when a run starts, journaled with its start, and stamped on every job that
   * advances the run. Set the limits themselves with the `limits` option of `createWorkflows`.
   */
  readonly limitKeys?: WorkflowLimitKeys<I>;
  /** Default attempts of this workflow's steps (a step's own `maxAttempts` wins; default `createWorkflows`'). */
  readonly maxAttempts?: number;
  /** Default backoff base (ms) of this workflow's steps (a step's own wins; default `createWorkflows`'). */
  readonly backoffBaseMs?: number;
  run(input: Jsonified<I>, ctx: WorkflowContext<X>): Promise<O>;
}

/** The object form of a workflow's `schedule`. */
export interface WorkflowSchedule<I = unknown> {
  /** Cron expression (needs `croner`) or `@every <duration>`. */
  readonly cron: string;
  /** IANA zone the cron expression is read in (default `UTC`). */
  readonly timeZone?: string;
  /** The input of every scheduled run (default null). */
  readonly input?: I;
}

/**
 * Where a run's limit keys come from: `'workflow'` is the workflow's name (one key per workflow
 * type), a function computes the key from the run's input and must return a non-blank string.
 */
export type WorkflowKeySource<I = unknown> = 'workflow' | ((input: I) => string);

/** The `limitKeys` of a workflow definition: each absent key gives the run no such key. */
export interface WorkflowLimitKeys<I = unknown> {
  /** Counted against the queue's `concurrencyLimit` (1 unless set): passes of one key running at once, across the fleet. */
  readonly concurrencyKey?: WorkflowKeySource<I>;
  /** Counted against the queue's `keyRateLimit`: passes of one key started per window, across the fleet. */
  readonly rateLimitKey?: WorkflowKeySource<I>;
}

/** Largest workflow name, in UTF-8 bytes. */
export const MAX_WORKFLOW_NAME_BYTES = 200;

/** Checks a workflow name: a non-blank, well-formed key of at most 200 UTF-8 bytes. */
export function validateWorkflowName(name: unknown): string {
  const n = validateKey('workflow name', name);
  if (Buffer.byteLength(n, 'utf8') > MAX_WORKFLOW_NAME_BYTES)
    throw new InvalidOption('workflow name', `must be at most ${MAX_WORKFLOW_NAME_BYTES} UTF-8 bytes`);
  return n;
}

/**
 * Defines a workflow (the plain API; `@Workflow` classes in Nest): its name, its version and its code.
 * Checked at once: a blank name, a version that is not a positive integer or a missing `run` is an
 * `InvalidOption` / `InvalidName` naming it.
 *
 * ```ts
 * const greet = defineWorkflow('greet', {
 *   version: 1,
 *   async run(input: { name: string }, ctx) {
 *     const text = await ctx.step('compose', () => `hello ${input.name}`);
 *     await ctx.sleep('1 s');
 *     return text;
 *   },
 * });
 * ```
 */
export function defineWorkflow<I = unknown, O = unknown, X = TxOps>(
  name: string,
  spec: WorkflowSpec<I, O, X>,
): WorkflowDefinition<I, O, X> {
  const n = validateWorkflowName(name);
  if (spec === null || typeof spec !== 'object')
    throw new InvalidOption(`workflow ${JSON.stringify(n)}`, 'needs { version, run(input, ctx) }');
  const version = spec.version ?? 1;
  if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 1)
    throw new InvalidOption(`version of workflow ${JSON.stringify(n)}`, 'must be a positive integer');
  if (typeof spec.run !== 'function')
    throw new InvalidOption(`run of workflow ${JSON.stringify(n)}`, 'must be a function (input, ctx) => Promise');
  const run = spec.run.bind(spec);
  const schedule = spec.schedule === undefined ? undefined : validateSchedule(n, spec.schedule);
  if ((spec as { limits?: unknown }).limits !== undefined)
    throw new InvalidOption(`limits of workflow ${JSON.stringify(n)}`, 'is now limitKeys (docs/vocabulary.md)');
  const limitKeys = spec.limitKeys === undefined ? undefined : validateLimitKeys(n, spec.limitKeys);
  const at = ` of workflow ${JSON.stringify(n)}`;
  const maxAttempts =
    spec.maxAttempts === undefined
      ? undefined
      : asOption(() => requireMaxAttempts(`maxAttempts${at}`, spec.maxAttempts));
  const backoffBaseMs =
    spec.backoffBaseMs === undefined
      ? undefined
      : asOption(() => requireDurationMs(`backoffBaseMs${at}`, spec.backoffBaseMs, { allowZero: true }));
  return Object.freeze({
    name: n,
    version,
    run,
    ...(schedule ? { schedule } : {}),
    ...(limitKeys ? { limitKeys } : {}),
    ...(maxAttempts === undefined ? {} : { maxAttempts }),
    ...(backoffBaseMs === undefined ? {} : { backoffBaseMs }),
  });
}

function validateLimitKeys<I>(name: string, l: WorkflowLimitKeys<I>): WorkflowLimitKeys<I> {
  if (l === null || typeof l !== 'object' || Array.isArray(l))
    throw new InvalidOption(
      `limitKeys of workflow ${JSON.stringify(name)}`,
      "must be { concurrencyKey?, rateLimitKey? }, each 'workflow' or (input) => string",
    );
  for (const k of Object.keys(l)) {
    if (k !== 'concurrencyKey' && k !== 'rateLimitKey')
      throw new InvalidOption(
        `limitKeys.${k.slice(0, 64)} of workflow ${JSON.stringify(name)}`,
        'is not a workflow limit key (concurrencyKey, rateLimitKey)',
      );
    const v = (l as Record<string, unknown>)[k];
    if (v !== undefined && v !== 'workflow' && typeof v !== 'function')
      throw new InvalidOption(
        `limitKeys.${k} of workflow ${JSON.stringify(name)}`,
        "must be 'workflow' (the workflow's name) or a function (input) => string",
      );
  }
  return Object.freeze({ ...l });
}

/**
 * A run's limit keys from its definition and input, before any I/O: `InvalidArgument` naming the
 * key and the workflow when a key function throws or returns a non-string, `InvalidName` for a
 * blank or oversized key.
 */
export function runLimitKeys(
  def: { readonly name: string; readonly limitKeys?: WorkflowLimitKeys<never> },
  input: unknown,
): { concurrencyKey?: string; rateLimitKey?: string } {
  const l = def.limitKeys;
  if (!l) return {};
  const at = `the input of workflow ${JSON.stringify(def.name)}`;
  const one = (
    field: 'concurrencyKey' | 'rateLimitKey',
    src: WorkflowKeySource<never> | undefined,
  ): string | undefined =>
    src === undefined
      ? undefined
      : src === 'workflow'
        ? validateKey(field, def.name)
        : typeof src === 'function'
          ? keyFromSource(field, src as (payload: unknown) => string, input, at)
          : (() => {
              throw new InvalidOption(
                `limitKeys.${field} of workflow ${JSON.stringify(def.name)}`,
                "must be 'workflow' (the workflow's name) or a function (input) => string",
              );
            })();
  const concurrencyKey = one('concurrencyKey', l.concurrencyKey);
  const rateLimitKey = one('rateLimitKey', l.rateLimitKey);
  return {
    ...(concurrencyKey === undefined ? {} : { concurrencyKey }),
    ...(rateLimitKey === undefined ? {} : { rateLimitKey }),
  };
}

function validateSchedule<I>(name: string, s: string | WorkflowSchedule<I>): WorkflowSchedule<I> {
  const o = typeof s === 'string' ? { cron: s } : s;
  if (o === null || typeof o !== 'object' || typeof o.cron !== 'string' || o.cron.trim() === '') {
    throw new InvalidOption(
      `schedule of workflow ${JSON.stringify(name)}`,
      "must be a cron expression ('0 * * * *', '@every 1h') or { cron, timeZone?, input? }",
    );
  }
  if (o.timeZone !== undefined && typeof o.timeZone !== 'string')
    throw new InvalidOption(`schedule.timeZone of workflow ${JSON.stringify(name)}`, 'must be an IANA zone name');
  return Object.freeze({ ...o });
}
