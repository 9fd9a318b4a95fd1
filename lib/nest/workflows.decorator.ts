import { SetMetadata } from '@nestjs/common';
import type { WorkflowContext } from '../workflows/types.js';
import type { WorkflowLimitKeys, WorkflowSchedule } from '../workflows/define.js';

/** Metadata key of `@Workflow` classes. */
export const WORKFLOW_METADATA = 'alkstore:workflow';

/** What `@Workflow` records on its class. */
export interface WorkflowMetadata {
  readonly name: string;
  readonly version: number;
  /** Start runs on this schedule (see `defineWorkflow`'s `schedule`). */
  readonly schedule?: string | WorkflowSchedule;
  /** The run's limit keys (see `defineWorkflow`'s `limits`). */
  readonly limits?: WorkflowLimitKeys;
}

/** The shape of a `@Workflow` class: a provider with `run(input, ctx)` (see `alkstore/workflows`). */
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
 * `limits` (`{ concurrencyKey: 'workflow' }`, or a function of the input) counts every pass of a run
 * against the limits given to `AlkstoreWorkflowsModule.forRoot({ limits })` (docs/workflows.md, Limits).
 */
export function Workflow(
  name: string,
  opts: { version?: number; schedule?: string | WorkflowSchedule; limits?: WorkflowLimitKeys } = {},
): ClassDecorator {
  return SetMetadata(WORKFLOW_METADATA, {
    name,
    version: opts.version ?? 1,
    ...(opts.schedule === undefined ? {} : { schedule: opts.schedule }),
    ...(opts.limits === undefined ? {} : { limits: opts.limits }),
  } satisfies WorkflowMetadata);
}
