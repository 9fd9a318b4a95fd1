import { SetMetadata } from '@nestjs/common';
import type { WorkflowContext } from '../workflows/types.js';
import type { WorkflowLimitKeys, WorkflowSchedule } from '../workflows/define.js';
import type { HandlerOptions } from './interfaces/handler-options.interface.js';

/** Metadata key of `@Workflow` classes. */
export const WORKFLOW_METADATA = 'alkstore:workflow';

/**
 * Options of `@Workflow(name, options)`. Of the shared handler options a workflow takes `maxAttempts`
 * and `backoffBaseMs`, the defaults of its steps (a step's own options win); one queue carries every
 * run, so `concurrency`, `leaseMs` and `idlePollIntervalMs` are set for all workflows on
 * `AlkstoreWorkflowsModule.forRoot`.
 */
export interface WorkflowOptions extends Pick<HandlerOptions, 'maxAttempts' | 'backoffBaseMs'> {
  /** Positive integer (default 1). Give each incompatible change a new one (see `defineWorkflow`). */
  readonly version?: number;
  /** Start runs on this schedule (see `defineWorkflow`'s `schedule`). */
  readonly schedule?: string | WorkflowSchedule;
  /** The keys the module's `limits` count every pass of a run by (see `defineWorkflow`'s `limitKeys`). */
  readonly limitKeys?: WorkflowLimitKeys;
}

/** What `@Workflow` records on its class. */
export interface WorkflowMetadata {
  readonly name: string;
  readonly options: WorkflowOptions;
}

/** The shape of a `@Workflow` class: a provider with `run(input, ctx)` (see `nestjs-alkstore/workflows`). */
export interface WorkflowClass<I = unknown, O = unknown, X = unknown> {
  run(input: I, ctx: WorkflowContext<X>): Promise<O>;
}

/**
 * Declares a provider class as a durable workflow: its `run(input, ctx)` is the workflow's code
 * (`ctx.step`, `ctx.transaction`, `ctx.sleep`, `ctx.waitForSignal`, docs/workflows.md).
 * `AlkstoreWorkflowsModule` finds it; the class must be a provider of the application. Give each
 * incompatible change a new `version` and keep the old class (with the old version) while its runs finish.
 * `schedule` (`'0 * * * *'` or `{ cron, timeZone, input }`) starts runs on a cron, once per fire across
 * the fleet (the module's scheduler), with the run id `cron:<name>:<boundary ms>`.
 * `limitKeys` (`{ concurrencyKey: 'workflow' }`, or a function of the input) counts every pass of a run
 * against the limits given to `AlkstoreWorkflowsModule.forRoot({ limits })` (docs/workflows.md, Limits).
 * `maxAttempts` and `backoffBaseMs` are its steps' defaults. Options are checked when the module starts:
 * a bad one fails startup naming the class.
 */
export function Workflow(name: string, options: WorkflowOptions = {}): ClassDecorator {
  return SetMetadata(WORKFLOW_METADATA, { name, options } satisfies WorkflowMetadata);
}
