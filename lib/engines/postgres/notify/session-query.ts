// PostgreSQL only: statements on the store's LISTEN connection (dead worker detection, the cross-process
// hand-off's locks), one at a time.
import type { Client, QueryResult, QueryResultRow } from 'pg';

const turns = new WeakMap<Client, Promise<unknown>>();

/** Runs `text` on `client` after every statement sent through here before it (pg warns when asked to queue them). */
export function sessionQuery<R extends QueryResultRow>(
  client: Client,
  text: string,
  values: readonly unknown[],
): Promise<QueryResult<R>> {
  const before = turns.get(client) ?? Promise.resolve();
  const turn = before.then(() => client.query<R>(text, values as unknown[]));
  turns.set(
    client,
    turn.catch(() => undefined),
  );
  return turn;
}
