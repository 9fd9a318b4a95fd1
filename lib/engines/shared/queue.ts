import { encodePayload } from '../../contract/codec.js';
import { bulkItems, contextHeadersText, validateUniqueKey } from '../../contract/job-extras.js';
import { resolveJobStamp, type JobOpts, type JobWrite, type QueueOpts } from '../../contract/options.js';
import { resolveLimits, withSourcedKeys, type QueueLimits } from '../../contract/limits.js';
import { resolveRateLimit } from '../../contract/queue-settings.js';
import type {
  BulkJob,
  ClaimOpts,
  Job,
  JobInfo,
  ListDeadOpts,
  Queue,
  QueueSettings,
  QueueStats,
  RateLimit,
  RedriveResult,
  WakeReceiver,
} from '../../contract/types.js';
import {
  ackBatchInput,
  claimInput,
  jobIdsInput,
  listDeadInput,
  requireArray,
  requireBatchSize,
  requireJobId,
} from '../../contract/validate.js';
import { HANDOFF, handoffCandidate, type HandoffPoint, type HandoffSlot } from '../../internal/handoff.js';
import { isFollowingClaim, withNextDue } from '../../internal/next-due.js';
import { ClaimedJob } from './job.js';
import {
  cancelWakeChannel,
  enqueueAndWaitInput,
  progressWakeChannel,
  resultWakeChannel,
  waitForOutcome,
  waitInput,
  type WaitOpts,
} from '../../contract/results.js';
import { validateKey } from '../../contract/validate.js';
import type { QueueDriver, ReceiptWrite } from './queue-driver.js';
import type { DeliveredAcker, ReceiptRows } from '../../internal/outbox-handle.js';
import { InvalidOption } from '../../contract/errors.js';
import {
  dependsOnFlow,
  FLOW_HEADER,
  hasDependencies,
  planFlow,
  type FlowJob,
  type FlowNode,
} from '../../contract/flows.js';
import type { CancelTarget } from '../../contract/results.js';

/** Where the handle keeps its driver (internal: the driver-level tests reach it here). */
export const QUEUE_DRIVER: unique symbol = Symbol('alkstore.queueDriver');

/** The driver under a queue handle of this package (internal: the driver-level tests), or null for anything else. */
export function queueDriverOf(queue: Queue): QueueDriver | null {
  return queue instanceof QueueHandle ? queue[QUEUE_DRIVER] : null;
}

/**
 * The queue handle of either engine (docs/semantics.md, Queues): every argument is checked and
 * every option resolved here, before any I/O, the same on both engines; the data operations are
 * the engine's {@link QueueDriver}.
 */
export class QueueHandle implements Queue, DeliveredAcker {
  readonly name: string;
  readonly opts: Readonly<Required<QueueOpts>>;
  /** Where this store's idle workers of the queue register for local hand-off (internal; null when `localHandoff` is off). */
  readonly [HANDOFF]: HandoffPoint | null;
  readonly [QUEUE_DRIVER]: QueueDriver;

  constructor(driver: QueueDriver, opts: Required<QueueOpts>) {
    this[QUEUE_DRIVER] = driver;
    this.name = driver.queue;
    this.opts = Object.freeze({ ...opts });
    this[HANDOFF] = driver.handoff ? driver.handoff.point(driver.queue) : null;
  }

  private get driver(): QueueDriver {
    return this[QUEUE_DRIVER];
  }

  /** The queue's stamp when a job gives no options: the same every time but for the hook's context headers, so resolved once. */
  private plainStamp: JobWrite | null = null;

  private stampOf(opts: JobOpts | undefined): JobWrite {
    const hook = this.driver.enqueueHeaders;
    if (opts !== undefined) return resolveJobStamp(this.opts, opts, hook);
    const plain = (this.plainStamp ??= Object.freeze(resolveJobStamp(this.opts, undefined, null)));
    if (hook === null) return plain;
    // Only the headers can differ (the active trace span's context): the rest is not resolved again.
    const headersText = contextHeadersText(hook);
    return headersText === plain.headersText ? plain : { ...plain, headersText };
  }

  async enqueue(payload: unknown, opts?: JobOpts): Promise<number> {
    if (hasDependencies(opts)) return (await this.enqueueFlow(dependsOnFlow(payload, opts))).id;
    const d = this.driver;
    d.guard();
    const stamp = withSourcedKeys(this.stampOf(opts), this.opts.limitKeys, payload);
    const text = encodePayload(payload, 'payload', d.maxPayloadBytes);
    const handoff = d.handoff;
    // Reserved synchronously, before anything is sent: two enqueues never over-fill a worker.
    const slot =
      handoff !== null && handoff.has(this.name) && handoffCandidate(stamp) ? handoff.reserve(this.name) : null;
    if (slot === null) return d.insertOne(text, stamp);
    return handOff(d, text, stamp, slot);
  }

  async enqueueMany(payloads: readonly unknown[], opts?: JobOpts): Promise<number[]> {
    const d = this.driver;
    d.guard();
    const list = requireArray('payloads', payloads);
    if (hasDependencies(opts)) throw noDependsOn('enqueueMany');
    const stamp = this.stampOf(opts);
    const texts = list.map((p, i) => encodePayload(p, `payloads[${i}]`, d.maxPayloadBytes));
    if (texts.length === 0) return [];
    // Keys from the payloads may differ per job: each goes in with its own stamp, in order.
    const limitKeys = this.opts.limitKeys;
    const stamps =
      limitKeys === null ? null : list.map((p, i) => withSourcedKeys(stamp, limitKeys, p, `payloads[${i}]`));
    if (stamp.uniqueKey !== null && texts.length > 1) {
      // One key is one job, so the call is one enqueue: the first payload (with `replace`, the last,
      // which the holder would end with). Item by item, a holder acked by another process between
      // two items would let a later item create a second job, and the call return two ids.
      const i = stamp.replace ? texts.length - 1 : 0;
      const id = await d.insertOne(texts[i]!, stamps?.[i] ?? stamp);
      return texts.map(() => id);
    }
    if (stamps !== null) return d.insertBulk(texts.map((text, i) => ({ text, stamp: stamps[i]! })));
    return d.insert(texts, stamp);
  }

  async enqueueBulk(jobs: readonly BulkJob[]): Promise<number[]> {
    const d = this.driver;
    d.guard();
    const list = bulkItems<BulkJob>(jobs);
    if (list.some((j) => hasDependencies(j.opts))) throw noDependsOn('enqueueBulk');
    const items = list.map((j, i) => ({
      text: encodePayload(j.payload, `jobs[${i}].payload`, d.maxPayloadBytes),
      stamp: withSourcedKeys(this.stampOf(j.opts), this.opts.limitKeys, j.payload, `jobs[${i}].payload`),
    }));
    if (items.length === 0) return [];
    return d.insertBulk(items);
  }

  async claimOne(workerId?: string, opts?: ClaimOpts): Promise<Job | null> {
    const [job] = await this.claimBatch(1, workerId, opts);
    return job ?? null;
  }

  async claimBatch(max: number, workerId?: string, opts?: ClaimOpts): Promise<Job[]> {
    const d = this.driver;
    d.guard();
    requireBatchSize('max', max);
    const { workerId: worker, leaseMs } = claimInput(workerId, opts);
    const c = await d.claim(max, leaseMs, worker, isFollowingClaim(opts));
    const jobs: Job[] = c.rows.map((row) => new ClaimedJob(d, row));
    return jobs.length < max ? withNextDue(jobs, c.nextDueInMs) : jobs;
  }

  async ackBatch(jobs: readonly Pick<Job, 'id' | 'claimToken'>[]): Promise<number> {
    return this.acked(jobs, null);
  }

  /**
   * The outbox's ack with receipts (`Outbox.ackDelivered`, which validated the receipts): the acks and
   * the receipt upserts in one write of the engine.
   */
  async ackDelivered(
    jobs: readonly Pick<Job, 'id' | 'claimToken'>[],
    outbox: string,
    receipts: ReceiptRows,
  ): Promise<number> {
    return this.acked(jobs, { outbox, rows: receipts });
  }

  private async acked(jobs: readonly Pick<Job, 'id' | 'claimToken'>[], receipts: ReceiptWrite | null): Promise<number> {
    const d = this.driver;
    d.guard();
    const { ids, tokens } = ackBatchInput(jobs);
    if (ids.length === 0) return 0;
    // A job something depends on is acked through its outcome path (which settles its dependents); the rest as before.
    if (jobs.some((j) => j instanceof ClaimedJob && j.headers[FLOW_HEADER] !== undefined)) {
      if (receipts !== null) await d.putReceipts(receipts);
      let n = 0;
      const rest: Pick<Job, 'id' | 'claimToken'>[] = [];
      for (const j of jobs) {
        if (j instanceof ClaimedJob && j.headers[FLOW_HEADER] !== undefined) n += (await j.ack()) ? 1 : 0;
        else rest.push(j);
      }
      return n + (rest.length > 0 ? await this.acked(rest, null) : 0);
    }
    // Only our own handles are trusted to say "no ordering key"; anything else takes the checking path.
    const n = await d.ackBatch(
      ids.map((id, i) => ({
        id,
        claimToken: tokens[i]!,
        plain: jobs[i] instanceof ClaimedJob && jobs[i].orderingKey === null,
      })),
      receipts,
    );
    // Latencies of our own handles (an ack that lost its claim still counts its time: a display figure).
    d.outcomes.record(
      this.name,
      'completed',
      n,
      n > 0 ? jobs.flatMap((j) => (j instanceof ClaimedJob ? [ClaimedJob.timesOf(j)] : [])).slice(0, n) : [],
    );
    return n;
  }

  async enqueueFlow(flow: FlowJob): Promise<FlowNode> {
    const d = this.driver;
    d.guard();
    const plan = planFlow(flow, this.name, {
      queueOpts: (q) => (q === this.name ? { ...this.opts } : d.queueOptsOf(q)),
      enqueueHeaders: d.enqueueHeaders,
      maxPayloadBytes: d.maxPayloadBytes,
    });
    return d.insertFlow(plan);
  }

  async cancelFlow(parentId: number): Promise<number> {
    const d = this.driver;
    d.guard();
    const id = requireJobId('parentId', parentId);
    // Everything first, then the flow part: a dependent ended cancelled is not failed by its child's cancel.
    const below = await d.liveDescendants(id);
    const ended: number[] = [];
    if ((await d.cancelJobs({ id })) > 0) ended.push(id);
    for (const j of below) if ((await d.cancelIn(j.queue, j.id)) > 0) ended.push(j.id);
    if (ended.length > 0) await d.settleFlows(ended);
    return ended.length;
  }

  async cancel(id: number): Promise<boolean> {
    this.driver.guard();
    const target = { id: requireJobId('id', id) };
    return (await cancelAndSettle(this.driver, target)) > 0;
  }

  async cancelByKey(uniqueKey: string): Promise<boolean> {
    this.driver.guard();
    const target = { uniqueKey: validateUniqueKey(uniqueKey) };
    return (await cancelAndSettle(this.driver, target)) > 0;
  }

  async cancelByOrderingKey(orderingKey: string): Promise<number> {
    this.driver.guard();
    const target = { orderingKey: validateKey('orderingKey', orderingKey) };
    return cancelAndSettle(this.driver, target);
  }

  async cancelledAmong(ids: readonly number[]): Promise<number[]> {
    this.driver.guard();
    const list = requireArray('ids', ids).map((id, i) => requireJobId(`ids[${i}]`, id));
    return list.length === 0 ? [] : this.driver.cancelledAmong(list);
  }

  listenCancels(): WakeReceiver {
    this.driver.guard();
    return this.driver.listenOn(cancelWakeChannel(this.name));
  }

  listenProgress(): WakeReceiver {
    this.driver.guard();
    return this.driver.listenOn(progressWakeChannel(this.name));
  }

  async waitForResult(id: number, opts?: WaitOpts): Promise<unknown> {
    this.driver.guard();
    const w = waitInput(id, opts);
    return waitForOutcome(
      () => this.driver.listenOn(resultWakeChannel(this.name)),
      (i) => this.getJob(i),
      w.id,
      w.timeoutMs,
    );
  }

  async enqueueAndWait(payload: unknown, opts?: JobOpts & WaitOpts): Promise<unknown> {
    this.driver.guard();
    const { jobOpts, timeoutMs } = enqueueAndWaitInput(opts);
    return this.waitForResult(await this.enqueue(payload, jobOpts), { timeoutMs });
  }

  async getJob(id: number): Promise<JobInfo | null> {
    this.driver.guard();
    const info = await this.driver.getJob(requireJobId('id', id));
    if (info?.state !== 'pending') return info;
    // Only a pending job may be waiting for dependencies: one more read, never on the plain path.
    const waiting = await this.driver.pendingDependencies(info.id);
    return waiting > 0 ? { ...info, state: 'waiting-children', pendingDependencies: waiting } : info;
  }

  async getJobByKey(uniqueKey: string): Promise<JobInfo | null> {
    this.driver.guard();
    return this.driver.getJobByKey(validateUniqueKey(uniqueKey));
  }

  async pause(): Promise<void> {
    this.driver.guard();
    return this.driver.setPaused(true);
  }

  async resume(): Promise<void> {
    this.driver.guard();
    return this.driver.setPaused(false);
  }

  async setRateLimit(limit: RateLimit | null): Promise<void> {
    this.driver.guard();
    return this.driver.setRateLimit(resolveRateLimit(limit));
  }

  async setLimits(limits: QueueLimits): Promise<void> {
    this.driver.guard();
    return this.driver.setLimits(resolveLimits(limits));
  }

  async settings(): Promise<QueueSettings> {
    this.driver.guard();
    return this.driver.settings();
  }

  async sweepExpired(): Promise<{ expired: number; purged: number }> {
    this.driver.guard();
    return this.driver.sweepExpired();
  }

  async listDead(opts?: ListDeadOpts): Promise<JobInfo[]> {
    this.driver.guard();
    const { before, after, limit } = listDeadInput(opts);
    return this.driver.listDead(before, after, limit);
  }

  async retryDead(ids: readonly number[]): Promise<RedriveResult> {
    this.driver.guard();
    const list = jobIdsInput(ids);
    if (list.length === 0) return { moved: 0, conflicts: 0, conflictIds: [] };
    return this.driver.retryDead(list);
  }

  async purgeDead(ids: readonly number[]): Promise<number> {
    this.driver.guard();
    const list = jobIdsInput(ids);
    if (list.length === 0) return 0;
    return this.driver.purgeDead(list);
  }

  async stats(): Promise<QueueStats> {
    this.driver.guard();
    return this.driver.stats();
  }

  listen(): WakeReceiver {
    this.driver.guard();
    return this.driver.listen();
  }
}

/** A cancel, then its flow part: the dependents of what it ended apply their policy (by id; other targets through the queue's sweep repair). */
async function cancelAndSettle(driver: QueueDriver, target: CancelTarget): Promise<number> {
  const n = await driver.cancelJobs(target);
  if (n > 0 && 'id' in target) await driver.settleFlows([target.id]);
  return n;
}

function noDependsOn(op: string): InvalidOption {
  return new InvalidOption(
    `${op} dependsOn`,
    'is not taken here; enqueue jobs with dependencies one by one with enqueue(payload, { dependsOn }) or as one flow with enqueueFlow',
  );
}

/** Inserts the job claimed by `slot`'s worker, or pending when the queue's settings or the clock say no; exactly one of deliver/cancel. */
async function handOff(driver: QueueDriver, text: string, stamp: JobWrite, slot: HandoffSlot): Promise<number> {
  let r: Awaited<ReturnType<QueueDriver['insertHandingOff']>>;
  try {
    r = await driver.insertHandingOff(text, stamp, slot.workerId, slot.leaseMs);
  } catch (err) {
    slot.cancel();
    throw err;
  }
  if (r.claimed !== null) slot.deliver(new ClaimedJob(driver, r.claimed));
  else slot.cancel();
  return r.id;
}
