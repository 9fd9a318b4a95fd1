import { AlkstoreError } from '../contract/errors.js';

/** An optional peer dependency is not installed (code `MISSING_PEER`); the message names the package to install. */
export class MissingPeer extends AlkstoreError {
  /**
   * @param purpose what the package is for, e.g. `for the SQLite engine`.
   * @param fix what to do instead of the default `install it with: npm install <pkg>` (for a package that is
   *   installed but cannot be loaded, where installing it again would not help).
   */
  constructor(
    readonly pkg: string,
    cause: unknown,
    purpose = 'for this engine',
    fix?: string,
  ) {
    super(
      'MISSING_PEER',
      `alkstore needs the package "${pkg}" ${purpose}; ${fix ?? `install it with: npm install ${pkg}`}`,
      {
        cause,
      },
    );
  }
}

/**
 * An optional peer is installed at a version this runtime cannot use (code
 * `INCOMPATIBLE_PEER`); the message names the package, its version and the fix.
 */
export class IncompatiblePeer extends AlkstoreError {
  constructor(
    readonly pkg: string,
    readonly version: string,
    fix: string,
  ) {
    super('INCOMPATIBLE_PEER', `alkstore cannot use the installed "${pkg}" ${version}: it ${fix}`);
  }
}

/** Imports an optional peer, turning "module not found" into {@link MissingPeer}. */
export async function loadPeer<T>(pkg: string, load: () => Promise<T>, purpose?: string): Promise<T> {
  try {
    return await load();
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') throw new MissingPeer(pkg, err, purpose);
    throw err;
  }
}
