import { AlkstoreError } from '../contract/errors.js';
import type { Store, StoreLogger } from '../contract/types.js';
import { createdbCommand, hasSqlState } from '../engines/postgres/first-connection.js';
import { openStore } from '../open-store.js';

/** A failure the CLI reports in its own terms, with its exit code. */
export class Outcome extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** The command line is wrong: exit 2 with the usage text. */
export class UsageError extends Error {}

/**
 * Opens the store for one command; `migrate` applies the schema, every other
 * command needs it applied. Failures are explained in CLI terms: an
 * unmigrated schema says `alkstore migrate`, a missing PostgreSQL database
 * (SQLSTATE 3D000) says `createdb`.
 */
export async function openForCli(
  url: string,
  schema: string | undefined,
  migrate: boolean,
  logger: StoreLogger,
): Promise<Store> {
  try {
    return await openStore({ url, schema, migrate, poolSize: 2, logger });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (err instanceof AlkstoreError && err.code === 'INVALID_OPTION' && /\burl\b/.test(message))
      throw new UsageError(message);
    if (
      !migrate &&
      err instanceof AlkstoreError &&
      err.code === 'INVALID_OPTION' &&
      (err as { field?: unknown }).field === 'migrate'
    ) {
      const where = `schema ${JSON.stringify(schema ?? 'alkstore')}`;
      throw new Outcome(
        1,
        `${where} has no alkstore tables, or older ones: run \`alkstore migrate\` with the same ` +
          `--url${schema ? ' and --schema' : ''} first (or \`alkstore migrate --print\` for the SQL to give your migration tool)`,
      );
    }
    if (hasSqlState(err, '3D000')) {
      throw new Outcome(
        1,
        `the PostgreSQL database does not exist: create it with \`${createdbCommand(url)}\`, then run \`alkstore migrate\``,
      );
    }
    throw new Outcome(1, `cannot open the database: ${message}`);
  }
}
