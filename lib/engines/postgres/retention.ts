import { THROUGHPUT_RETENTION_MS } from '../../internal/admin-paging.js';
import type { RetentionDriver } from '../../internal/retention-runner.js';
import type { PgContext } from './context.js';
import { num } from './connection.js';
import { RETENTION_BATCH } from './retention.sql.js';

/** The retention runner's store-wide deletes on PostgreSQL: autocommit statements, each at most a batch, repeated while full. */
export function postgresRetentionDriver(ctx: PgContext): RetentionDriver {
  const r = ctx.sql.retention;
  const counted = async (sql: Parameters<PgContext['exec']['run']>[0], values: readonly unknown[]): Promise<number> => {
    ctx.guard();
    return num((await ctx.exec.run<{ n: string }>(sql, values)).rows[0]?.n ?? 0);
  };
  /** Repeats a batch statement while it removes a full batch (a first prune of a long history). */
  const batched = async (sql: Parameters<PgContext['exec']['run']>[0], values: readonly unknown[]): Promise<number> => {
    let total = 0;
    for (;;) {
      const n = await counted(sql, values);
      total += n;
      if (n < RETENTION_BATCH) return total;
    }
  };
  return {
    async sweepQueueNames() {
      ctx.guard();
      return (await ctx.exec.run<{ v: string }>(r.sweepQueueNames, [])).rows.map((x) => x.v);
    },
    retireOutcomes: () => counted(r.retireOutcomePartitions, []),
    // Whole id ranges leave by dropping their partition; what is left (the default partition, the ranges still in use) by DELETE.
    pruneReceipts: async (olderThanMs) =>
      (await counted(r.retireReceiptPartitions, [olderThanMs])) + (await batched(r.pruneReceipts, [olderThanMs])),
    pruneInbox: (inbox, olderThanMs) => batched(r.pruneInbox, [inbox, olderThanMs]),
    async pruneLocks() {
      ctx.guard();
      return (await ctx.exec.run(r.pruneLocks, [])).rowCount;
    },
    async pruneNodes(olderThanMs) {
      ctx.guard();
      return (await ctx.exec.run(r.pruneNodes, [olderThanMs])).rowCount;
    },
    trimStreamByAge: (stream, olderThanMs) => batched(r.trimByAge, [stream, olderThanMs]),
    async pruneMinutes() {
      ctx.guard();
      return (await ctx.exec.run(ctx.sql.admin.pruneMinutes, [THROUGHPUT_RETENTION_MS])).rowCount;
    },
    pruneWakes: () => Promise.resolve(0),
    async dropStream(stream) {
      ctx.guard();
      // The head row first: a publisher of the stream that has not committed yet is waited for, so no
      // event of it survives the head (its offsets would collide with the restarted ones).
      await ctx.inTransaction(async (exec) => {
        await exec.run(r.lockHead, [stream]);
        await exec.run(r.dropStream, [stream]);
      });
    },
    async forgetGuards(inbox, ids, owners) {
      ctx.guard();
      let n = 0;
      if (ids.length > 0) n += (await ctx.exec.run(r.forgetIds, [inbox, ids])).rowCount;
      if (owners.length > 0) n += (await ctx.exec.run(r.forgetGuards, [inbox, owners])).rowCount;
      return n;
    },
  };
}
