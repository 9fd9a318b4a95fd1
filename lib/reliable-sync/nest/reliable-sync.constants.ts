/** The injection token of the `ReliableOutbox` registered under `name` (default `"default"`). */
export function getReliableOutboxToken(name = 'default'): string {
  return `alkstore:reliable-outbox:${name}`;
}

/** The token of the provider that closes that outbox's store on shutdown. */
export function getReliableOutboxCloserToken(name = 'default'): string {
  return `alkstore:reliable-outbox-closer:${name}`;
}
