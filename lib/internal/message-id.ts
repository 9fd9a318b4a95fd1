import { InvalidOption } from '../contract/errors.js';

/**
 * What a store reads from its meta table at open: its id, and the highest outbox row id enqueued
 * before the store had one.
 */
export interface StoreIdentity {
  /** A random UUID made when the store's tables were created (or when a store without one first opened). */
  readonly storeId: string;
  /**
   * Rows at or below this id were enqueued before the store had an id: they keep the bare row id
   * they were (or would have been) published with, so their retries still dedupe against it.
   */
  readonly legacyMaxRowId: number;
}

/** Meta key of the store id (SQLite `__alkstore_meta`, PostgreSQL `<schema>.meta`). */
export const STORE_ID_KEY = 'store_id';
/** Meta key of {@link StoreIdentity.legacyMaxRowId}. */
export const LEGACY_IDS_KEY = 'legacy_message_ids';

/** Longest `messageIdPrefix`. */
export const MAX_MESSAGE_ID_PREFIX = 64;
const PREFIX = /^[A-Za-z0-9._-]+$/;

/**
 * Validates `messageIdPrefix` (before any I/O, the same on every engine): 1 to 64 characters of
 * `A-Z a-z 0-9 . _ -`, so the id is a valid AMQP short string, NATS header value, MQTT topic
 * level and Redis argument whatever the prefix.
 * @throws InvalidOption naming the option
 */
export function messageIdPrefixOption(v: unknown): string | null {
  if (v === undefined) return null;
  if (typeof v !== 'string')
    throw new InvalidOption('messageIdPrefix', `must be a string (a service name such as "orders"), got ${typeof v}`);
  if (v.length === 0 || v.length > MAX_MESSAGE_ID_PREFIX || !PREFIX.test(v))
    throw new InvalidOption(
      'messageIdPrefix',
      `must be 1 to ${MAX_MESSAGE_ID_PREFIX} characters of A-Z a-z 0-9 . _ - (a service name such as ` +
        `"orders"), got ${v.length > MAX_MESSAGE_ID_PREFIX ? `${v.length} characters` : JSON.stringify(v)}`,
    );
  return v;
}

/**
 * The message id of an outbox row: `[<prefix>:]<storeId>:<rowId>`, the same on every attempt.
 * Rows enqueued before the store had an id keep their bare row id.
 */
export function formatMessageId(identity: StoreIdentity, prefix: string | null, rowId: number): string {
  if (rowId <= identity.legacyMaxRowId) return String(rowId);
  return prefix === null ? `${identity.storeId}:${rowId}` : `${prefix}:${identity.storeId}:${rowId}`;
}
