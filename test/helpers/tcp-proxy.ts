import { createServer, connect, type Server, type Socket } from 'node:net';

/** A TCP proxy in front of a broker, so a test can cut every connection through it (the "broker connection cut"). */
export class TcpProxy {
  private readonly sockets = new Set<Socket>();
  private server: Server | null = null;
  private blocked = false;
  port = 0;

  constructor(
    private readonly host: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<number> {
    this.server = createServer((client) => {
      if (this.blocked) {
        client.destroy();
        return;
      }
      const upstream = connect({ host: this.host, port: this.targetPort });
      this.sockets.add(client);
      this.sockets.add(upstream);
      const drop = (): void => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
    return this.port;
  }

  /** Destroys every open connection through the proxy (new ones are still accepted). Resolves to how many it cut. */
  cut(): number {
    const n = this.sockets.size / 2;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    return n;
  }

  /** An outage: cuts every connection and refuses new ones (they are closed at once) until {@link unblock}. */
  block(): number {
    this.blocked = true;
    return this.cut();
  }

  unblock(): void {
    this.blocked = false;
  }

  get connections(): number {
    return this.sockets.size / 2;
  }

  async stop(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
