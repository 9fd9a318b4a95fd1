// PostgreSQL only: group commit of concurrent plain enqueues on the store's own pool (SQLite's writer does its own, writer.ts).
import type { JobWrite } from '../../contract/options.js';
import { stampParams } from './context.js';

/** One enqueue waiting for the group in flight to finish. */
interface Waiting {
  readonly text: string;
  readonly stamp: JobWrite;
  readonly sig: string;
  readonly resolve: (id: number) => void;
  readonly reject: (err: unknown) => void;
}

/** Most enqueues one grouped statement carries; the rest wait for the next. */
export const MAX_GROUP = 1_000;

/**
 * Why concurrent enqueues are grouped: PostgreSQL serializes the commits of
 * transactions that NOTIFY (the commit holds one database-wide lock across its
 * WAL flush), so 16 producers each committing a job and its wake run at the
 * rate of one, not at group-commit rate. Grouping them keeps the wake inside
 * the commit (commit-atomic) and shares one flush, as a group of plain
 * inserts would.
 *
 * How: the first enqueue goes at once, alone (a lone producer pays nothing).
 * Enqueues that arrive while it is in flight wait; when it finishes, they go
 * as consecutive runs of equal stamps, each run one multi-row statement (one
 * commit, one NOTIFY), in the order they were called, so ids follow call
 * order as before. A statement that fails on its data (SQLSTATE classes 22
 * and 23: nothing committed) is retried job by job, so a job is never failed
 * by its neighbour; any other failure (a connection lost, a commit whose
 * outcome is unknown) rejects every job of that statement, as it would each
 * one alone.
 */
export class EnqueueGroup {
  private busy = false;
  private waiting: Waiting[] = [];

  constructor(private readonly send: (texts: readonly string[], stamp: JobWrite) => Promise<number[]>) {}

  add(text: string, stamp: JobWrite): Promise<number> {
    if (this.busy)
      return new Promise<number>((resolve, reject) =>
        this.waiting.push({ text, stamp, sig: signature(stamp), resolve, reject }),
      );
    this.busy = true;
    const first = this.send([text], stamp).then((ids) => ids[0]!);
    first.then(this.next, this.next);
    return first;
  }

  private readonly next = (): void => {
    if (this.waiting.length === 0) {
      this.busy = false;
      return;
    }
    const batch = this.waiting.length <= MAX_GROUP ? this.waiting : this.waiting.slice(0, MAX_GROUP);
    this.waiting = batch === this.waiting ? [] : this.waiting.slice(MAX_GROUP);
    void this.flush(batch).then(this.next);
  };

  private async flush(batch: readonly Waiting[]): Promise<void> {
    for (let i = 0; i < batch.length;) {
      let j = i + 1;
      while (j < batch.length && batch[j]!.sig === batch[i]!.sig) j++;
      await this.run(batch.slice(i, j));
      i = j;
    }
  }

  private async run(run: readonly Waiting[]): Promise<void> {
    try {
      const ids = await this.send(
        run.map((w) => w.text),
        run[0]!.stamp,
      );
      run.forEach((w, k) => w.resolve(ids[k]!));
    } catch (err) {
      if (run.length === 1 || !dataError(err)) {
        for (const w of run) w.reject(err);
        return;
      }
      for (const w of run) {
        try {
          w.resolve((await this.send([w.text], w.stamp))[0]!);
        } catch (e) {
          w.reject(e);
        }
      }
    }
  }
}

/** Jobs with equal signatures may share one multi-row statement: the parameters `enqueueMany` takes besides the payloads. */
function signature(st: JobWrite): string {
  return JSON.stringify([...stampParams(st), st.headersText]);
}

function dataError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('23'));
}
