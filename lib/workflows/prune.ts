import type { Store } from '../contract/types.js';
import { retentionDriverOf } from '../internal/retention-runner.js';
import { loadJournal, readIndex, type Names } from './journal.js';
import { deleteRun, finishedBefore, foldCounts, insertRun } from './runs.js';
import { workflowSqlOf, type WorkflowSql } from './sql-seam.js';

/** Runs pruned per batch (each batch: one read of the finished-runs index, then a few deletes per run). */
const PRUNE_BATCH = 500;

function sqlOf(store: Store): WorkflowSql {
  return workflowSqlOf(store as object)!;
}

/**
 * Removes what the runs of namespace `names` that finished before `horizon` (epoch ms, database
 * clock) left behind, and resolves to how many runs it removed:
 *
 * - each run's once-only guards (inbox `<ns>:journal`, ids `<id>#…`) and its id guard (inbox
 *   `<ns>:runs`), so the id is free again;
 * - its journal, the stream `<ns>:run:<id>`, with its head row;
 * - its row in the runs table (found through the index of finished runs by end time), its count and
 *   its step rows (in one transaction).
 *
 * Guards and journal go first, the row last: a crash between the steps leaves a row that is pruned
 * again on the next call. Then the counts' delta rows are folded.
 */
export async function pruneRuns(store: Store, names: Names, horizon: number): Promise<number> {
  const driver = retentionDriverOf(store);
  const sql = sqlOf(store);
  let total = 0;
  for (;;) {
    const gone = await finishedBefore(sql, names.ns, horizon, PRUNE_BATCH);
    if (gone.length === 0) break;
    const ids = gone.map((r) => r.id);
    if (driver) {
      await driver.forgetGuards(names.journalInbox, [], ids);
      await driver.forgetGuards(names.runsInbox, ids, []);
    }
    for (const id of ids) {
      if (driver) await driver.dropStream(names.runStream(id));
      await store.withTx((tx) => deleteRun(workflowSqlOf(tx as object)!, names.ns, id));
    }
    total += gone.length;
    if (gone.length < PRUNE_BATCH) break;
  }
  await store.withTx((tx) => foldCounts(workflowSqlOf(tx as object)!, names.ns));
  return total;
}

/**
 * Moves the runs index of 0.2 (the stream `<ns>:runs`) into the runs table, then trims it: each run
 * it lists gets its row (its input and parent from its journal), unless it has one. Runs started on
 * 0.2 then list, count, prune and continue like the others. Resolves to how many rows it added; once
 * the stream is empty it costs one read.
 */
export async function adoptLegacyIndex(store: Store, names: Names): Promise<number> {
  const index = await readIndex(store, names);
  if (index.last === 0) return 0;
  let added = 0;
  for (const r of index.runs) {
    const j = await loadJournal(store, names, r.id);
    if (!j.start) continue;
    const start = j.start;
    const end = j.end;
    const ok = await store.withTx(async (tx) => {
      const sql = workflowSqlOf(tx as object)!;
      return insertRun(sql, names.ns, {
        id: r.id,
        workflow: r.workflow,
        version: r.version,
        input: start.input,
        parentId: start.parentId ?? null,
        state: j.state,
        createdAt: r.startedAt,
        finishedAt: j.finishedAt,
        ...(end?.state === 'failed' ? { error: end.error } : {}),
        ...(end?.state === 'completed' ? { result: end.result } : {}),
      });
    });
    if (ok) added += 1;
  }
  await store.stream(names.runsStream).trimTo(index.last);
  return added;
}
