import { InvalidOption } from './errors.js';

// Renames of the public vocabulary (docs/vocabulary.md). The old names of 0.2 are refused, naming
// the new one, so a configuration written for 0.2 fails before any I/O instead of being ignored.

/**
 * The value of `newName` in `options`. The old name `oldName` given (any value) is an
 * {@link InvalidOption} naming the option, where it was given and its replacement.
 * `where` names the options object (`queue`, `OutboxSettings`, `store`, …).
 */
export function renamedOption(where: string, options: object, oldName: string, newName: string): unknown {
  const o = options as Record<string, unknown>;
  if (o[oldName] !== undefined) refuseRenamed(where, oldName, newName);
  return o[newName];
}

/** Throws the {@link InvalidOption} for a 0.2 name (`oldName`) of what is now `newName`. */
export function refuseRenamed(where: string, oldName: string, newName: string): never {
  throw new InvalidOption(oldName, `of ${where} was renamed in 0.3: use ${newName} (docs/vocabulary.md, MIGRATING.md)`);
}
