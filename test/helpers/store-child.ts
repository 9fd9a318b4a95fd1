import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { PG_URL, type EngineDb, type EngineFixture } from './engines.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * A child process running a store fixture (`node --import tsx <fixture> <kind> <location> <url|-> ...args`,
 * read by fixtures/child-store.ts on the other side). It prints one JSON object a line; `{"ready":true}`
 * once its store is open.
 */
export interface StoreChild {
  readonly proc: ChildProcess;
  /** Resolves on `{"ready":true}`, or when the child exits first. */
  readonly ready: Promise<void>;
  /** Every JSON line it printed so far. */
  readonly events: Record<string, unknown>[];
  /** All it printed on stdout so far. */
  stdout(): string;
  readonly exited: Promise<number | null>;
  /** Writes a line to its stdin (`go` unless told). */
  send(line?: string): void;
}

/** Starts `fixture` (an absolute path) on `engine`'s database `db` with `args` after the store's three. */
export function spawnStoreChild(
  fixture: string,
  engine: EngineFixture,
  db: EngineDb,
  args: readonly string[],
  label: string,
): StoreChild {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const proc = spawn(
    process.execPath,
    ['--import', 'tsx', fixture, engine.kind, db.location, engine.kind === 'postgres' ? PG_URL : '-', ...args],
    { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  const events: Record<string, unknown>[] = [];
  let out = '';
  let buf = '';
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  proc.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    buf += d.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (!line.startsWith('{')) continue;
      const e = JSON.parse(line) as Record<string, unknown>;
      events.push(e);
      if (e.ready === true) markReady();
    }
  });
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  void exited.then((code) => {
    markReady();
    if (code !== 0 && code !== null) process.stderr.write(`${label} child exited with ${code}: ${err}\n`);
  });
  return { proc, ready, events, stdout: () => out, exited, send: (line = 'go') => void proc.stdin!.write(`${line}\n`) };
}

/** The numbers under `key` in a child's events, in the order printed. */
export const numbersOf = (events: readonly Record<string, unknown>[], key: string): number[] =>
  events.filter((e) => typeof e[key] === 'number').map((e) => e[key] as number);
