/**
 * The one WARN line a dead-lettered job gets, from the queue worker and the
 * outbox dispatcher alike: who, which job, why. No stack: a `PermanentError`
 * is a decision, not a crash, and the reason is kept as the row's `lastError`.
 */
export function deadLetterLine(where: string, jobId: number, reason: string): string {
  return `${where}: job ${jobId} dead-lettered (${reason})`;
}
