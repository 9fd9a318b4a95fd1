import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Channel, ChannelModel } from 'amqplib';
import { contractEngines, PG_URL, waitFor, withEngineDb, type EngineDb } from '../helpers/engines.js';
import { AMQP_URL, brokerName, requireBroker } from '../helpers/brokers.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { reportFigures } from './fault-helpers.js';

/**
 * The RabbitMQ inbox consumer reconnects many times under one caller signal without leaking a
 * listener on it per connection: against the real broker, behind a TCP proxy that cuts the
 * consumer's connection 12 times (Node warns from 11 listeners of one event). The consumer runs in
 * a child process (test/fault/fixtures/rabbitmq-consumer-child.ts), where Node's process 'warning'
 * events can be observed.
 */
const CHILD = fileURLToPath(new URL('./fixtures/rabbitmq-consumer-child.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const RECONNECTS = 12;

for (const engine of contractEngines()) {
  describe(`RabbitMQ inbox consumer reconnects [${engine.name}]`, () => {
    let db!: EngineDb;
    let conn: ChannelModel;
    let ch: Channel;
    const queue = brokerName('alk.inbox-reconnect');
    withEngineDb(engine, (d) => (db = d));
    beforeAll(async () => {
      await requireBroker('RabbitMQ', AMQP_URL.replace(/^amqp:\/\/[^@]*@/, ''));
      const amqp = await import('amqplib');
      conn = await amqp.connect(AMQP_URL);
      ch = await conn.createChannel();
      await ch.assertQueue(queue, { durable: true });
    });
    afterAll(async () => {
      await ch?.deleteQueue(queue).catch(() => undefined);
      await conn?.close();
    });

    it(`${RECONNECTS} reconnects: no MaxListenersExceededWarning, at most one abort listener on the caller's signal, every message handled once`, async () => {
      const proxy = new TcpProxy('127.0.0.1', 5672);
      const port = await proxy.start();
      const env = { ...process.env };
      delete env.NODE_OPTIONS;
      const args = [engine.kind, db.location, engine.kind === 'postgres' ? PG_URL : '-', queue, String(port)];
      const proc = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], {
        cwd: ROOT,
        env,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      const events: Record<string, unknown>[] = [];
      let buf = '';
      let err = '';
      proc.stdout.on('data', (d: Buffer) => {
        buf += d.toString();
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (line.startsWith('{')) events.push(JSON.parse(line) as Record<string, unknown>);
        }
      });
      proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
      const handled = (): number[] =>
        events.filter((e) => typeof e.handled === 'number').map((e) => e.handled as number);
      try {
        await waitFor('the consumer process to open its store', () => events.some((e) => e.ready === true), 30_000);
        for (let n = 0; n <= RECONNECTS; n++) {
          // A message handled proves the consumer is connected and consuming; then its connection is cut.
          ch.sendToQueue(queue, Buffer.from(JSON.stringify({ n })), { messageId: `m-${n}`, persistent: true });
          await waitFor(`message ${n} handled`, () => handled().includes(n), 20_000, 10);
          if (n < RECONNECTS) expect(proxy.cut()).toBeGreaterThan(0);
        }
        proc.stdin.write('stop\n');
        expect(await exited).toBe(0);
      } catch (e) {
        proc.kill('SIGKILL');
        throw new Error(`${String(e)}\nconsumer stderr: ${err}`);
      } finally {
        await proxy.stop();
      }
      expect(events.filter((e) => e.warning !== undefined)).toEqual([]);
      const listeners = events.filter((e) => typeof e.listeners === 'number').map((e) => e.listeners as number);
      reportFigures(`rabbitmq inbox consumer reconnects [${engine.name}]`, {
        reconnects: RECONNECTS,
        mostAbortListeners: Math.max(...listeners),
        warnings: events.filter((e) => e.warning !== undefined).length,
      });
      expect(Math.max(...listeners)).toBeLessThanOrEqual(1);
      expect(events.find((e) => e.stopped === true)?.listeners).toBe(0);
      expect([...handled()].sort((a, b) => a - b)).toEqual(Array.from({ length: RECONNECTS + 1 }, (_, n) => n));
    }, 120_000);
  });
}
