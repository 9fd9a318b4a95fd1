import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));
const fixture = join(here, 'fixtures', 'child.ts');
const openerFixture = join(here, 'fixtures', 'opener.ts');

/** A child `node` process running fixtures/child.ts, with its JSON lines collected. */
export interface Child {
  readonly proc: ChildProcess;
  readonly messages: Record<string, unknown>[];
  readonly stderr: () => string;
  /** Resolves with the first message that has `key`. */
  waitFor(key: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  exited: Promise<number | null>;
}

export function spawnChild(mode: string, file: string, arg: string): Child {
  return spawnFixture(mode, [fixture, mode, file, arg], 'ignore');
}

/** A long-lived fixtures/opener.ts process: write a file path and a newline to its stdin to have it open a store there. */
export function spawnOpener(): Child {
  return spawnFixture('opener', [openerFixture], 'pipe');
}

function spawnFixture(mode: string, args: string[], stdin: 'ignore' | 'pipe'): Child {
  const env = { ...process.env };
  delete env.NODE_OPTIONS; // jest's --experimental-vm-modules is not wanted in the child
  const proc = spawn(process.execPath, ['--import', 'tsx', ...args], { env, stdio: [stdin, 'pipe', 'pipe'] });
  const messages: Record<string, unknown>[] = [];
  const listeners = new Set<() => void>();
  let out = '';
  let err = '';
  proc.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    let nl: number;
    while ((nl = out.indexOf('\n')) >= 0) {
      const line = out.slice(0, nl);
      out = out.slice(nl + 1);
      if (line.trim()) messages.push(JSON.parse(line) as Record<string, unknown>);
      for (const l of listeners) l();
    }
  });
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  return {
    proc,
    messages,
    stderr: () => err,
    exited,
    waitFor(key, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = (): boolean => {
          const m = messages.find((x) => key in x);
          if (!m) return false;
          cleanup();
          resolve(m);
          return true;
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`child ${mode} gave no "${key}" within ${timeoutMs} ms; stderr: ${err}`));
        }, timeoutMs);
        const onExit = (): void => {
          if (!check()) {
            cleanup();
            reject(new Error(`child ${mode} exited before "${key}"; stderr: ${err}`));
          }
        };
        const cleanup = (): void => {
          clearTimeout(timer);
          listeners.delete(listener);
          proc.off('exit', onExit);
        };
        const listener = (): void => void check();
        if (check()) return;
        listeners.add(listener);
        proc.on('exit', onExit);
      });
    },
  };
}
