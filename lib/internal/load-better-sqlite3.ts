import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';
import { IncompatiblePeer, loadPeer } from './load-peer.js';

/** The first major of better-sqlite3 whose native module needs Node 22 (it crashes the process on older Node). */
const NEEDS_NODE_22_FROM = 13;

/** Where the loader reads what is installed and which Node runs it; tests pass fakes (no database is faked). */
export interface DriverProbe {
  /** The installed better-sqlite3 version, or null when it cannot be read (then the import decides). */
  installedVersion(): string | null;
  /** The running Node version, e.g. `20.19.0`. */
  nodeVersion(): string;
}

const realProbe: DriverProbe = {
  installedVersion() {
    try {
      const require = createRequire(import.meta.url);
      return (require('better-sqlite3/package.json') as { version?: unknown }).version as string;
    } catch {
      return null;
    }
  },
  nodeVersion: () => process.versions.node,
};

function major(version: string): number {
  return Number.parseInt(version.split('.')[0] ?? '', 10);
}

/**
 * Refuses a better-sqlite3 this Node cannot run, before its native module is
 * loaded: 13.x needs Node 22 and segfaults (uncatchable) on Node 20.
 */
export function checkBetterSqlite3(probe: DriverProbe = realProbe): void {
  const version = probe.installedVersion();
  if (typeof version !== 'string') return;
  const node = probe.nodeVersion();
  if (major(version) >= NEEDS_NODE_22_FROM && major(node) < 22) {
    throw new IncompatiblePeer(
      'better-sqlite3',
      version,
      `needs Node 22 or later and would crash this process (Node ${node}); install better-sqlite3 12 (npm install better-sqlite3@12) or run on Node 22+`,
    );
  }
}

/**
 * Loads better-sqlite3 after {@link checkBetterSqlite3}: a missing package is
 * `MissingPeer`, one this Node cannot run is `IncompatiblePeer`.
 */
export async function loadBetterSqlite3(probe: DriverProbe = realProbe): Promise<typeof BetterSqlite3> {
  checkBetterSqlite3(probe);
  return loadPeer('better-sqlite3', async () => (await import('better-sqlite3')).default);
}
