// Wakes: notify and listen (SPEC §5).

/** An opaque "something changed on this channel, re-read" signal. */
export interface Wake {
  readonly channel: string;
}

/**
 * Wakes for one channel, starting from the moment `listen` was called.
 * Wakes may be coalesced or repeated; consumers must be idempotent on wake.
 */
export interface WakeReceiver extends AsyncIterable<Wake> {
  readonly channel: string;
  /** Next wake, or `null` once the receiver is closed (or `signal` aborts). */
  recv(signal?: AbortSignal): Promise<Wake | null>;
  /** Ends the receiver; a pending `recv` resolves `null` and async iteration ends. */
  close(): void;
  readonly closed: boolean;
}
