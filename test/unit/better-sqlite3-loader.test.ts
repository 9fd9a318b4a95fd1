import { describe, expect, it } from '@jest/globals';
import { checkBetterSqlite3, loadBetterSqlite3, type DriverProbe } from '../../lib/internal/load-better-sqlite3.js';
import { IncompatiblePeer } from '../../lib/index.js';

function probe(installed: string | null, node: string): DriverProbe {
  return { installedVersion: () => installed, nodeVersion: () => node };
}

describe('better-sqlite3 loader', () => {
  it('refuses 13.x on Node 20 before loading it, naming the version, Node and the fix', async () => {
    const err = (() => {
      try {
        checkBetterSqlite3(probe('13.2.0', '20.19.0'));
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(err).toBeInstanceOf(IncompatiblePeer);
    expect((err as IncompatiblePeer).code).toBe('INCOMPATIBLE_PEER');
    expect((err as Error).message).toContain('"better-sqlite3" 13.2.0');
    expect((err as Error).message).toContain('Node 20.19.0');
    expect((err as Error).message).toContain('npm install better-sqlite3@12');
    await expect(loadBetterSqlite3(probe('13.2.0', '20.19.0'))).rejects.toBeInstanceOf(IncompatiblePeer);
  });

  it('accepts 13.x on Node 22 and 24, and 12.x on Node 20', () => {
    expect(() => checkBetterSqlite3(probe('13.2.0', '22.13.0'))).not.toThrow();
    expect(() => checkBetterSqlite3(probe('13.0.0', '24.11.0'))).not.toThrow();
    expect(() => checkBetterSqlite3(probe('12.11.1', '20.19.0'))).not.toThrow();
  });

  it('an unreadable version leaves the decision to the import (MissingPeer when absent)', () => {
    expect(() => checkBetterSqlite3(probe(null, '20.19.0'))).not.toThrow();
  });

  it('the real probe reads the installed driver and loads it on this Node', async () => {
    const Driver = await loadBetterSqlite3();
    expect(typeof Driver).toBe('function');
  });
});
