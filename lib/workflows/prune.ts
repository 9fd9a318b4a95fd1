import type { Store } from '../contract/types.js';
import { retentionDriverOf } from '../internal/retention-runner.js';
import { encodeIndexEntry, readIndex, type Names } from './journal.js';

/**
 * Removes what the runs of namespace `names` that finished before `horizon` (epoch ms, database
 * clock) left behind, and resolves to how many runs it removed:
 *
 * - each run's once-only guards (inbox `<ns>:journal`, ids `<id>#…`) and its id guard (inbox
 *   `<ns>:runs`), so the id is free again;
 * - its journal, the stream `<ns>:run:<id>`, with its head row;
 * - its entries in the runs index `<ns>:runs`: a `pruned` entry is added, and the index is trimmed
 *   up to the first entry of the oldest run it still lists (a run that stays running holds back the
 *   trim of the entries after it).
 *
 * Guards go first: a crash between the steps leaves a run that is pruned again on the next call.
 * On a `Store` that is not one of this package's, only the journal's events are trimmed, as before.
 */
export async function pruneRuns(store: Store, names: Names, horizon: number): Promise<number> {
  const driver = retentionDriverOf(store);
  const index = await readIndex(store, names);
  const gone = index.runs.filter((r) => r.state !== 'running' && r.finishedAt !== null && r.finishedAt <= horizon);
  if (gone.length > 0 && driver) {
    await driver.forgetGuards(
      names.journalInbox,
      [],
      gone.map((r) => r.id),
    );
    await driver.forgetGuards(
      names.runsInbox,
      gone.map((r) => r.id),
      [],
    );
  }
  for (const r of gone) {
    if (driver) await driver.dropStream(names.runStream(r.id));
    else await trimAll(store, names.runStream(r.id));
    await store.stream(names.runsStream).publishWithKey(r.id, encodeIndexEntry({ state: 'pruned' }));
  }
  const kept = new Set(gone.map((r) => r.id));
  let cut = index.last;
  for (const r of index.runs) if (!kept.has(r.id)) cut = Math.min(cut, r.firstOffset - 1);
  if (cut > 0) await store.stream(names.runsStream).trimTo(cut);
  return gone.length;
}

/** Trims every event of a stream (its head row stays). */
async function trimAll(store: Store, name: string): Promise<void> {
  const stream = store.stream(name);
  let last = 0;
  for (let batch = await stream.readSince(0, 1000); batch.length > 0; batch = await stream.readSince(last, 1000))
    last = batch[batch.length - 1]!.offset;
  if (last > 0) await stream.trimTo(last);
}
