import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { openConnection, type SqliteConn } from '../../lib/engines/sqlite/connection.js';
import { openSqliteStore } from '../../lib/engines/sqlite/index.js';

/**
 * A store on a fresh SQLite file and a second raw connection to it (to seed rows and read query
 * plans), opened before the describe block's tests and closed after them.
 */
export function planStore(prefix: string): { readonly store: Store; readonly conn: SqliteConn } {
  let dir = '';
  let store: Store | null = null;
  let conn: SqliteConn | null = null;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), prefix));
    const path = join(dir, 'store.db');
    store = await openSqliteStore({ path });
    conn = await openConnection(path, 'normal');
  });
  afterAll(async () => {
    conn?.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    get store() {
      return store!;
    },
    get conn() {
      return conn!;
    },
  };
}
