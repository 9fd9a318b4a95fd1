import { InvalidOption } from '../contract/errors.js';
import type { EngineKind } from '../contract/types.js';

const ENGINE_NAME: Record<EngineKind, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' };

/** Refuses, before any I/O, an ORM handle on one SQL dialect joined to a store on the other. */
export function assertSameEngine(open: string, input: string, handleEngine: EngineKind, storeEngine: EngineKind): void {
  if (storeEngine !== handleEngine) {
    throw new InvalidOption(
      `${open}(${input})`,
      `is a ${ENGINE_NAME[handleEngine]} handle but the store is on ${ENGINE_NAME[storeEngine]}; a transaction ` +
        `covers one database: open the store on the database this ${input} uses`,
    );
  }
}
