import type { Store } from '../contract/types.js';
import { queueHandle } from '../dashboard/data.js';
import type { CliIo, Parsed } from './cli.js';
import { Outcome } from './open-db.js';
import { table } from './table.js';

interface Helpers {
  iso(ms: number | null): string;
  emit(json: unknown, human: string): void;
}

const NOT_FOUND = 3;
const FAILED = 1;
/** A redrive left some dead jobs dead: a live job holds their unique key (EXIT.conflict). */
const CONFLICT = 4;

/**
 * `dead list | redrive | purge` on a queue or an outbox's backing queue.
 * redrive and purge first count what they would change: `--dry-run` stops
 * there; on a terminal the operator confirms (`--yes` skips the question).
 */
export async function deadCommand(
  store: Store,
  p: Parsed,
  io: CliIo,
  sub: 'list' | 'redrive' | 'purge',
  { iso, emit }: Helpers,
): Promise<number> {
  const queue = p.queue!;
  if (sub === 'list') {
    const page = await store.admin().listJobs(queue, { state: 'dead', limit: p.limit, cursor: p.cursor });
    emit(
      page,
      `${table(
        ['id', 'attempts', 'died', 'last error', 'payload'],
        page.jobs.map((j) => [j.id, j.attempts, iso(j.diedAt), j.lastError ?? '', JSON.stringify(j.payload)]),
      )}${page.next ? `\nmore: --cursor ${page.next}` : ''}`,
    );
    return 0;
  }
  const q = queueHandle(store, queue);
  const verb = sub === 'redrive' ? 'redrive' : 'purge';
  let targets: number | number[];
  if (p.all) targets = (await q.stats()).dead;
  else {
    const jobs = await Promise.all(p.ids.map((id) => q.getJob(id)));
    targets = p.ids.filter((_, i) => jobs[i]?.state === 'dead');
  }
  const count = typeof targets === 'number' ? targets : targets.length;
  const what = `${count} dead job${count === 1 ? '' : 's'} of ${p.queueLabel}${Array.isArray(targets) && count > 0 ? ` (id ${targets.join(', ')})` : ''}`;
  if (p.dryRun) {
    emit(
      {
        dryRun: true,
        [sub === 'redrive' ? 'wouldRedrive' : 'wouldPurge']: count,
        ids: Array.isArray(targets) ? targets : undefined,
      },
      `would ${verb} ${what}; nothing changed (--dry-run)`,
    );
    return count === 0 && !p.all ? NOT_FOUND : 0;
  }
  if (count === 0 && !p.all) throw new Outcome(NOT_FOUND, `none of the given ids is a dead job of ${p.queueLabel}`);
  if (count > 0 && io.confirm !== undefined && !p.yes) {
    const ok = await io.confirm(`${verb} ${what}${sub === 'purge' ? ' (deleted for good)' : ''}? [y/N] `);
    if (!ok) throw new Outcome(FAILED, `not confirmed: nothing changed (pass --yes to skip the question)`);
  }
  const ids = Array.isArray(targets) ? targets : [];
  if (sub === 'redrive') {
    const r = p.all ? await store.admin().retryAllDead(queue) : await q.retryDead(ids);
    const held =
      r.conflicts === 0
        ? ''
        : `; ${r.conflicts} stayed dead, their unique key held by a live job: ${r.conflictIds.join(' ')}`;
    emit(
      { redriven: r.moved, conflicts: r.conflicts, conflictIds: r.conflictIds },
      `redrove ${r.moved} dead job${r.moved === 1 ? '' : 's'} of ${p.queueLabel}${held}`,
    );
    if (r.conflicts > 0) return CONFLICT;
    return r.moved === 0 && !p.all ? NOT_FOUND : 0;
  }
  const n = p.all ? await store.admin().purgeAllDead(queue) : await q.purgeDead(ids);
  emit({ purged: n }, `purged ${n} dead job${n === 1 ? '' : 's'} of ${p.queueLabel}`);
  return n === 0 && !p.all ? NOT_FOUND : 0;
}
