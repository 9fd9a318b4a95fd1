import { loadNodeSqlite } from '../../lib/engines/sqlite/binding.js';

/** This Node has `node:sqlite` (22.13+ / 24 without a flag). */
export const hasNodeSqlite = (await loadNodeSqlite()) !== null;

/** better-sqlite3's addon loads on this Node (it is built for the machine's Node; CI rebuilds it per Node version). */
export const hasBetterSqlite3 = await import('better-sqlite3').then(
  (m) => {
    try {
      new m.default(':memory:').close();
      return true;
    } catch {
      return false;
    }
  },
  () => false,
);
