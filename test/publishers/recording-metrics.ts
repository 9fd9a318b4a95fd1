import type { OutboxMetrics } from '../../lib/outbox/outbox-metrics.js';

/** Counts what a publisher-backed dispatcher reports. */
export class RecordingMetrics implements OutboxMetrics {
  duplicates = 0;
  late = 0;
  published_ = 0;
  deadReasons: string[] = [];
  claimed(): void {}
  published(): void {
    this.published_ += 1;
  }
  retried(): void {}
  dead(reason: string): void {
    this.deadReasons.push(reason);
  }
  publishDuration(): void {}
  pending(): void {}
  oldestPendingAgeMs(): void {}
  brokerDuplicate(): void {
    this.duplicates += 1;
  }
  lateConfirm(): void {
    this.late += 1;
  }
}

/** A logger that keeps its warning and error lines. */
export function recordingLogger(): {
  lines: string[];
  log: (m: string) => void;
  warn: (m: string) => void;
  error: (m: string) => void;
} {
  const lines: string[] = [];
  return { lines, log: () => undefined, warn: (m) => lines.push(m), error: (m) => lines.push(m) };
}
