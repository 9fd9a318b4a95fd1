// PostgreSQL only: statements are built per schema (quoted identifiers, named prepared statements); SQLite's tables live in the file with fixed names.
import { createHash } from 'node:crypto';
import { validatePgSchema } from '../../contract/validate.js';

/** The database clock in epoch milliseconds (floored, like SQLite's integer cast). */
export const NOW_MS = 'floor(extract(epoch from clock_timestamp()) * 1000)::bigint';

/** A statement with a prepared-statement name unique to its schema. */
export interface Sql {
  readonly name: string;
  readonly text: string;
}

/** Longest notification payload PostgreSQL accepts (bytes). */
export const PG_NOTIFY_LIMIT = 8000;

/** Validates an engine schema name: a plain identifier of at most 63 bytes, not a system schema (`pg_*`, `information_schema`). */
export function validateSchemaName(schema: unknown): string {
  return validatePgSchema('schema', schema);
}

/** Double-quotes an identifier (the schema is validated too; quoting keeps its case). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** Single-quotes a string literal. */
export function quoteLiteral(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/**
 * The key of `pg_advisory_xact_lock` that serializes migrations of one schema
 * across processes: the first 8 bytes of a SHA-256 of the schema name, as a
 * signed bigint (decimal text, so it survives JSON and the driver).
 */
export function migrationLockKey(schema: string): string {
  return sha256(`alkstore:migrate:${schema}`).readBigInt64BE(0).toString();
}

/** The one PostgreSQL notification channel this schema's stores share: `alkstore:<schema>` (fits the 63-byte limit). */
export function engineChannel(schema: string): string {
  const plain = `alkstore:${schema}`;
  return Buffer.byteLength(plain, 'utf8') <= 63 ? plain : `alkstore:${sha256(schema).toString('hex').slice(0, 40)}`;
}

/** Channel names above this size travel as a hash in the notification payload. */
const INLINE_CHANNEL_LIMIT = 7_000;

/** The notification payload announcing a wake of `channel`: `c:<channel>`, or `h:<sha256>` for very long names. */
export function wakePayload(channel: string): string {
  return Buffer.byteLength(channel, 'utf8') <= INLINE_CHANNEL_LIMIT ? `c:${channel}` : `h:${channelHash(channel)}`;
}

/** The hash a very long channel name travels as. */
export function channelHash(channel: string): string {
  return sha256(channel).toString('hex');
}

/** Per-schema SQL context: the quoted schema, the literal engine channel, statement naming. */
export class SchemaSql {
  /** The quoted schema, e.g. `"alkstore"`. */
  readonly q: string;
  /** The engine channel as an SQL literal. */
  readonly channel: string;
  private readonly prefix: string;

  constructor(readonly schema: string) {
    this.q = quoteIdent(schema);
    this.channel = quoteLiteral(engineChannel(schema));
    // Prepared statements are per connection; a caller-owned pool may serve several schemas.
    this.prefix = `alk_${sha256(schema).toString('hex').slice(0, 10)}_`;
  }

  def(name: string, text: string): Sql {
    return { name: this.prefix + name, text: text.replace(/\s+/g, ' ').trim() };
  }

  /** `pg_notify` of a wake, for use inside a statement; `param` is the wake payload placeholder. */
  notify(param: string): string {
    return `pg_notify(${this.channel}, ${param}::text)`;
  }
}
