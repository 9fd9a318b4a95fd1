import type { Lock } from '../../contract/types.js';
import { requireDurationMs, validateKey } from '../../contract/validate.js';

/** The lock statements of one engine; every time comparison uses the database clock. */
export interface LockDriver {
  /** Rejects with `Closed` once the store is closed. */
  guard(): void;
  /** Free or expired: take it. Held by `owner`: its expiry, unextended. Held by another: null. */
  take(name: string, owner: string, ttlMs: number): Promise<number | null>;
  /** The new expiry while still held by `owner`, else null. */
  renew(name: string, owner: string, ttlMs: number): Promise<number | null>;
  /** True when `owner` still held it and it is now free. */
  release(name: string, owner: string): Promise<boolean>;
}

/** A held lock; renew and release succeed only while this owner still holds it unexpired. */
export class StoreLock implements Lock {
  constructor(
    private readonly driver: LockDriver,
    readonly name: string,
    readonly owner: string,
    private expiry: number,
  ) {}

  get expiresAt(): number {
    return this.expiry;
  }

  async renew(ttlMs: number): Promise<boolean> {
    this.driver.guard();
    const ttl = requireDurationMs('ttlMs', ttlMs);
    const expiresAt = await this.driver.renew(this.name, this.owner, ttl);
    if (expiresAt === null) return false;
    this.expiry = expiresAt;
    return true;
  }

  async release(): Promise<boolean> {
    this.driver.guard();
    return this.driver.release(this.name, this.owner);
  }
}

/**
 * `tryLock` without the reserved-name check (the scheduler's and retention's own locks are
 * reserved names); the store validates a user's lock name before calling it.
 */
export async function takeLock(driver: LockDriver, name: string, owner: string, ttlMs: number): Promise<Lock | null> {
  driver.guard();
  const o = validateKey('owner', owner);
  const ttl = requireDurationMs('ttlMs', ttlMs);
  const expiresAt = await driver.take(name, o, ttl);
  return expiresAt === null ? null : new StoreLock(driver, name, o, expiresAt);
}
