import type { Job } from '../contract/types.js';
import { errorText } from './outbox-handle.js';

/**
 * The one WARN line a dead-lettered job gets, from every worker: where, which
 * job, why. No stack: a `PermanentError` is a decision, not a crash, and the
 * reason is also kept as the row's `lastError`.
 */
export function deadLetterLine(
  where: string,
  job: Pick<Job, 'attempts'>,
  reason: 'permanent' | 'exhausted',
  error: unknown,
): string {
  const head = reason === 'permanent' ? 'permanent' : `exhausted after ${job.attempts} attempts`;
  const text = errorText(error);
  // The outbox dispatcher already words its dead-letter error this way.
  return `${where} dead-lettered (${text.startsWith(head) ? text : `${head}: ${text}`})`;
}
