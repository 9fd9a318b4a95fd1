import { AlkstoreError } from '../contract/errors.js';

/** An error as the journal keeps it: enough to rethrow it the same way on every replay. */
export interface JournaledError {
  readonly name: string;
  readonly message: string;
  /** The `code` of an error that had one (an `AlkstoreError`, a Node system error), else null. */
  readonly code: string | null;
  /** The error's stack where it was thrown (at most 4 000 characters), when it had one. */
  readonly stack?: string;
}

/**
 * A replay asked for a different step than the journal holds at that position: the workflow's code
 * changed under a running run. Nothing of that position runs; the run fails with this error. Deploy such
 * a change as a new `version` so that old runs finish on the old code. Code `NON_DETERMINISTIC_WORKFLOW`.
 */
export class NonDeterministicWorkflow extends AlkstoreError {
  constructor(
    readonly runId: string,
    /** The 0-based position of the call in the run (every `ctx` call takes one). */
    readonly position: number,
    /** What the code asked for, e.g. `step "charge"`. */
    readonly requested: string,
    /** What the journal holds there, e.g. `step "reserve"`. */
    readonly journaled: string,
  ) {
    super(
      'NON_DETERMINISTIC_WORKFLOW',
      `workflow run ${JSON.stringify(runId)} asked for ${requested} at position ${position}, but its journal ` +
        `holds ${journaled} there: the code changed under a running run (give the new code a new version)`,
    );
  }
}

/**
 * A step failed on its last attempt (or threw a `PermanentError`). Thrown inside `run` at the step's call,
 * the same way on every replay, so the workflow can catch it and compensate. Code `STEP_FAILED`.
 */
export class StepFailed extends AlkstoreError {
  constructor(
    readonly step: string,
    readonly attempts: number,
    /** The step's own error, as journaled. */
    readonly error: JournaledError,
  ) {
    super(
      'STEP_FAILED',
      `step ${JSON.stringify(step)} failed after ${attempts} attempt${attempts === 1 ? '' : 's'}: ${error.name}: ${error.message}`,
    );
  }
}

/**
 * A child run that `ctx.waitAll` waited for failed or was cancelled: thrown inside the parent's `run` at
 * the `waitAll` call, the same way on every replay, so the parent can compensate. `error` is what ended
 * the child. Code `CHILD_WORKFLOW_FAILED`.
 */
export class ChildWorkflowFailed extends AlkstoreError {
  constructor(
    readonly childId: string,
    readonly workflow: string,
    /** `failed` or `cancelled`. */
    readonly state: string,
    readonly error: JournaledError,
  ) {
    super(
      'CHILD_WORKFLOW_FAILED',
      `child workflow run ${JSON.stringify(childId)}${workflow ? ` (${workflow})` : ''} ` +
        `${state === 'failed' ? 'failed' : 'was cancelled'}: ${error.name}: ${error.message}`,
    );
  }
}

/** `waitForResult` of a run that failed: `error` is what ended it. Code `WORKFLOW_FAILED`. */
export class WorkflowFailed extends AlkstoreError {
  constructor(
    readonly runId: string,
    readonly error: JournaledError,
  ) {
    super('WORKFLOW_FAILED', `workflow run ${JSON.stringify(runId)} failed: ${error.name}: ${error.message}`);
  }
}

/** `waitForResult` of a cancelled run. Code `WORKFLOW_CANCELLED`. */
export class WorkflowCancelled extends AlkstoreError {
  constructor(readonly runId: string) {
    super('WORKFLOW_CANCELLED', `workflow run ${JSON.stringify(runId)} was cancelled`);
  }
}

/** `waitForResult` gave up: the run had not finished within `timeoutMs`. Code `WORKFLOW_TIMEOUT`. */
export class WorkflowTimeout extends AlkstoreError {
  constructor(
    readonly runId: string,
    readonly timeoutMs: number,
    /** False when no run with this id had even started. */
    readonly started: boolean,
  ) {
    super(
      'WORKFLOW_TIMEOUT',
      `workflow run ${JSON.stringify(runId)} ${started ? 'did not finish' : 'was not started'} within ${timeoutMs} ms`,
    );
  }
}

/** A workflow name (or a run's name and version) that no definition given to `createWorkflows` has. Code `UNKNOWN_WORKFLOW`. */
export class UnknownWorkflow extends AlkstoreError {
  constructor(
    readonly workflow: string,
    readonly version: number | null,
    known: readonly string[],
  ) {
    super(
      'UNKNOWN_WORKFLOW',
      `workflow ${JSON.stringify(workflow)}${version === null ? '' : ` version ${version}`} is not defined ` +
        `here (known: ${known.length === 0 ? 'none' : known.join(', ')}); pass its definition to createWorkflows`,
    );
  }
}

/**
 * A pass of a run ended without an outcome: this worker stopped during a step, or other writers kept
 * journaling the run's positions first. The run's job is retried (another pass resumes where the journal
 * ends); nothing of the run is lost. Code `WORKFLOW_INTERRUPTED`.
 */
export class WorkflowInterrupted extends AlkstoreError {
  constructor(
    readonly runId: string,
    reason: string,
  ) {
    super('WORKFLOW_INTERRUPTED', `workflow run ${JSON.stringify(runId)}: ${reason}; its job is retried`);
  }
}

/** The journal form of a thrown value. */
/** Longest stack a journaled error keeps. */
const MAX_STACK_CHARS = 4_000;

export function journalError(err: unknown): JournaledError {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return {
      name: err.name || 'Error',
      message: err.message,
      code: typeof code === 'string' ? code : null,
      ...(typeof err.stack === 'string' ? { stack: err.stack.slice(0, MAX_STACK_CHARS) } : {}),
    };
  }
  let message: string;
  try {
    message = typeof err === 'string' ? err : (JSON.stringify(err) ?? String(err));
  } catch {
    message = String(err);
  }
  return { name: 'Error', message, code: null };
}
