import { InvalidOption } from '../contract/errors.js';
import {
  describeFloor,
  resolveInboxOpts,
  type InboxClaim,
  type InboxEntry,
  type InboxFailure,
  type InboxOpts,
  type InboxSettings,
} from '../contract/inbox.js';
import type { Inbox, TxOps } from '../contract/types.js';
import { requireDurationMs, validateKey, validateName } from '../contract/validate.js';
import { errorText } from './outbox-handle.js';

/** The inbox operations an engine runs outside a caller's transaction (the claim is a `TxOps` op). */
export interface InboxDriver {
  inboxFail(inbox: string, messageId: string, error: string, maxAttempts: number): Promise<InboxFailure>;
  inboxGet(inbox: string, messageId: string): Promise<InboxEntry | null>;
  inboxPrune(inbox: string, olderThanMs: number): Promise<number>;
}

/** Longest stored `lastError` of an inbox entry (characters). */
const MAX_ERROR_CHARS = 2000;

/** Engine-agnostic inbox over an engine's {@link InboxDriver}. */
export class InboxHandle implements Inbox {
  readonly name: string;
  readonly settings: InboxSettings;

  constructor(
    name: string,
    opts: InboxOpts | undefined,
    private readonly driver: InboxDriver,
  ) {
    this.name = validateName('inbox', name);
    this.settings = resolveInboxOpts(opts);
  }

  claim(tx: TxOps, messageId: string): Promise<InboxClaim> {
    if (tx === null || typeof tx !== 'object' || typeof (tx as Partial<TxOps>).inboxClaim !== 'function') {
      return Promise.reject(
        new InvalidOption(
          'tx',
          'must be a transaction: the tx of store.withTx(fn) or of store.joinTransaction(open, fn)',
        ),
      );
    }
    return tx.inboxClaim(this.name, messageId);
  }

  async fail(messageId: string, error: unknown): Promise<InboxFailure> {
    const id = validateKey('messageId', messageId);
    return this.driver.inboxFail(this.name, id, errorText(error).slice(0, MAX_ERROR_CHARS), this.settings.maxAttempts);
  }

  async get(messageId: string): Promise<InboxEntry | null> {
    return this.driver.inboxGet(this.name, validateKey('messageId', messageId));
  }

  async prune(olderThanMs?: number): Promise<number> {
    const floor = this.settings.retentionFloorMs;
    const ms = olderThanMs === undefined ? floor : requireDurationMs('olderThanMs', olderThanMs, { allowZero: true });
    if (ms < floor) {
      throw new InvalidOption(
        'olderThanMs',
        `is ${ms} ms, below the retention floor of inbox ${JSON.stringify(this.name)}: ${floor} ms ` +
          `(${describeFloor(this.settings)}); prune with at least ${floor}, or lower those options`,
      );
    }
    return this.driver.inboxPrune(this.name, ms);
  }
}
