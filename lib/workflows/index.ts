/**
 * Durable workflows over one `Store` (`nestjs-alkstore/workflows`, no Nest needed): `defineWorkflow` and
 * `createWorkflows`. A run's steps are journaled in the store itself (a stream per run, each entry under
 * a once-only inbox guard in the transaction that completes the step) and advanced by jobs of an
 * engine-derived queue (`__alkstore_workflows:<namespace>`), so a run survives any crash and resumes on any worker (docs/workflows.md).
 */
export {
  defineWorkflow,
  validateWorkflowName,
  MAX_WORKFLOW_NAME_BYTES,
  type WorkflowSpec,
  type WorkflowSchedule,
  type WorkflowLimitKeys,
  type WorkflowKeySource,
} from './define.js';
export {
  createPrometheusWorkflowMetrics,
  runTraceIds,
  type WorkflowMetrics,
  type PrometheusWorkflowMetricsOptions,
} from './instrument.js';
export { createWorkflows, Workflows, MAX_RUN_ID_BYTES } from './workflows.js';
export { durationMs, type Duration } from './duration.js';
export {
  ChildWorkflowFailed,
  NonDeterministicWorkflow,
  StepFailed,
  WorkflowFailed,
  WorkflowCancelled,
  WorkflowTimeout,
  UnknownWorkflow,
  WorkflowInterrupted,
  type JournaledError,
} from './errors.js';
export type * from './types.js';
