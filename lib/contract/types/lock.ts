// Named TTL locks.

/** A TTL-bounded named lock. Exclusion lapses silently at expiry. */
export interface Lock {
  readonly name: string;
  readonly owner: string;
  /** Expiry as of acquisition or the last successful renew (epoch ms, database clock). */
  readonly expiresAt: number;
  /** Sets expiry to now + ttlMs while still held; `false` once lost. */
  renew(ttlMs: number): Promise<boolean>;
  /** Releases while still held; `false` once lost. */
  release(): Promise<boolean>;
}
