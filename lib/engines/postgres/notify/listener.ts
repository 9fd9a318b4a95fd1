// Wakes from other connections on PostgreSQL: the one LISTEN connection of a store (reconnects, health);
// SQLite's notify/listener.ts watches PRAGMA data_version.
import type { Client, Notification } from 'pg';
import type { StoreLogger } from '../../../contract/types.js';
import { sleep } from '../../../internal/sleep.js';
import { quoteIdent } from '../schema-sql.js';

/** What the listener reports to its store. */
export interface ListenerEvents {
  /** A notification payload on the engine channel. */
  onPayload(payload: string): void;
  /** LISTEN is (again) in place after a gap: receivers must re-read. */
  onReconnected(): void;
  /** Whether LISTEN currently works; while false the store polls. */
  onHealthChange(healthy: boolean): void;
}

const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 10_000;
/** A silently dead TCP peer sends no FIN: a periodic round trip notices it long before keepalive does. */
const PING_EVERY_MS = 30_000;
const PING_TIMEOUT_MS = 10_000;

/**
 * One dedicated LISTEN connection per store (never a pool client: a pooled
 * connection would carry LISTEN state into unrelated work). On loss it
 * reconnects with exponential backoff and reports the gap so every receiver
 * re-reads; while it is down the store polls.
 */
export class PostgresListener {
  private client: Client | null = null;
  private closed = false;
  private readonly stop = new AbortController();
  private reconnecting: Promise<void> | null = null;
  private warnedDown = false;
  private pingTimer: NodeJS.Timeout | null = null;
  healthy = false;

  constructor(
    private readonly newClient: () => Client,
    private readonly channel: string,
    private readonly events: ListenerEvents,
    private readonly logger: StoreLogger,
  ) {}

  /**
   * First connection attempt; on failure the store starts polling and a reconnect loop keeps trying.
   * `verify` runs once on that first connection, after LISTEN: what it throws closes the listener and
   * is thrown from here (a LISTEN target that can never deliver is refused at open, not polled around).
   */
  async start(verify?: (client: Client) => Promise<void>): Promise<void> {
    if (await this.connectOnce(verify)) {
      this.setHealthy(true);
      return;
    }
    this.down('could not LISTEN at open');
  }

  /** The LISTEN connection while it is up (the dead worker detection's session, liveness.ts), else null. */
  session(): Client | null {
    return this.closed ? null : this.client;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stop.abort();
    if (this.pingTimer) clearInterval(this.pingTimer);
    const c = this.client;
    this.client = null;
    if (c) await c.end().catch(() => undefined);
    await this.reconnecting?.catch(() => undefined);
  }

  private async connectOnce(verify?: (client: Client) => Promise<void>): Promise<boolean> {
    const client = this.newClient();
    client.on('notification', (m: Notification) => {
      if (m.channel === this.channel && typeof m.payload === 'string') this.events.onPayload(m.payload);
    });
    client.on('error', (err: Error) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${quoteIdent(this.channel)}`);
    } catch (err) {
      client.removeAllListeners('end');
      client.on('error', () => undefined);
      await client.end().catch(() => undefined);
      this.lastError = err;
      return false;
    }
    if (verify) {
      try {
        await verify(client);
      } catch (err) {
        this.closed = true;
        client.removeAllListeners('end');
        client.on('error', () => undefined);
        await client.end().catch(() => undefined);
        throw err;
      }
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return false;
    }
    this.client = client;
    this.startPing(client);
    return true;
  }

  private startPing(client: Client): void {
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.pingTimer = setInterval(() => {
      if (this.client !== client) return;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer to a ping within ${PING_TIMEOUT_MS} ms`)),
          PING_TIMEOUT_MS,
        );
      });
      Promise.race([client.query('SELECT 1'), timeout])
        .catch((err: unknown) => this.lost(client, err instanceof Error ? err : new Error(String(err))))
        .finally(() => clearTimeout(timer));
    }, PING_EVERY_MS);
    this.pingTimer.unref();
  }

  private lastError: unknown = null;

  private lost(client: Client, err?: Error): void {
    if (this.closed || client !== this.client) return;
    this.client = null;
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.pingTimer = null;
    client.removeAllListeners('notification');
    client.on('error', () => undefined);
    client.end().catch(() => undefined);
    this.lastError = err ?? null;
    this.down('the LISTEN connection was lost');
  }

  private down(why: string): void {
    this.setHealthy(false);
    if (!this.warnedDown) {
      this.warnedDown = true;
      const detail = this.lastError instanceof Error ? ` (${this.lastError.message})` : '';
      this.logger.warn(`alkstore postgres: ${why}${detail}; falling back to polling while reconnecting`);
    }
    if (!this.reconnecting) this.reconnecting = this.reconnectLoop().finally(() => (this.reconnecting = null));
  }

  private async reconnectLoop(): Promise<void> {
    let delay = FIRST_RETRY_MS;
    while (!this.closed) {
      await sleep(delay, this.stop.signal);
      if (this.closed) return;
      if (await this.connectOnce()) {
        this.warnedDown = false;
        this.logger.log('alkstore postgres: LISTEN connection re-established');
        this.setHealthy(true);
        this.events.onReconnected();
        return;
      }
      delay = Math.min(delay * 2, MAX_RETRY_MS);
    }
  }

  private setHealthy(healthy: boolean): void {
    if (this.healthy === healthy) return;
    this.healthy = healthy;
    this.events.onHealthChange(healthy);
  }
}
