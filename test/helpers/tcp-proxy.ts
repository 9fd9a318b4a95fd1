import { createServer, connect, type Server, type Socket } from 'node:net';

/** A TCP proxy in front of a broker, so a test can cut every connection through it (the "broker connection cut"). */
export class TcpProxy {
  private readonly sockets = new Set<Socket>();
  private server: Server | null = null;
  private blocked = false;
  /** Server → client streams, so {@link hold} can stop forwarding the broker's answers. */
  private readonly answers = new Map<Socket, Socket>();
  private holding = false;
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
      this.answers.set(upstream, client);
      upstream.once('close', () => this.answers.delete(upstream));
      if (!this.holding) upstream.pipe(client);
      else upstream.pause();
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

  /**
   * Keeps the connections open but stops passing the broker's answers on (its acks and confirms wait in
   * the proxy) until {@link release}: what the client sent still reaches the broker.
   */
  hold(): void {
    this.holding = true;
    for (const upstream of this.answers.keys()) {
      upstream.unpipe();
      upstream.pause();
    }
  }

  /** Passes on the answers {@link hold} kept back, and every later one. */
  release(): void {
    this.holding = false;
    for (const [upstream, client] of this.answers) upstream.pipe(client);
  }

  get connections(): number {
    return this.sockets.size / 2;
  }

  async stop(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
