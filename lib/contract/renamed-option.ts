import { InvalidOption } from './errors.js';

// Renames of the public vocabulary (docs/vocabulary.md): the old name keeps working for one minor version.

const warned = new Set<string>();

/**
 * The value of a renamed option: `newName`'s, else the deprecated `oldName`'s (then one
 * `DeprecationWarning` per process and name), else undefined. Both given with different
 * values is {@link InvalidOption} naming both; both given with one value is that value.
 * `where` names the options object in the warning (`@QueueHandler`, `OutboxSettings`, …).
 * `warn`, when given, receives the warning instead (a store passes its logger, so each
 * store that is opened with the old name says so in its own log).
 */
export function renamedOption(
  where: string,
  options: object,
  oldName: string,
  newName: string,
  warn?: (message: string) => void,
): unknown {
  const o = options as Record<string, unknown>;
  const next = o[newName];
  const old = o[oldName];
  if (old === undefined) return next;
  if (next !== undefined) {
    if (!Object.is(next, old))
      throw new InvalidOption(
        newName,
        `and ${oldName} are both set, to different values; ${oldName} is the deprecated name of ${newName}: give only ${newName}`,
      );
    return next;
  }
  if (warn) warn(renamedMessage(where, oldName, newName));
  else warnRenamed(where, oldName, newName);
  return old;
}

function renamedMessage(where: string, oldName: string, newName: string): string {
  return `alkstore: ${where} option ${oldName} is deprecated, use ${newName} (the old name is removed in 0.4)`;
}

/** One `DeprecationWarning` per process for a renamed option or value (`where` + `oldName`). */
export function warnRenamed(where: string, oldName: string, newName: string): void {
  const key = `${where}\u0000${oldName}`;
  if (warned.has(key)) return;
  warned.add(key);
  process.emitWarning(renamedMessage(where, oldName, newName), {
    type: 'DeprecationWarning',
    code: 'ALKSTORE_RENAMED',
  });
}
