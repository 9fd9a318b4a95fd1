/** MEM: memory per 10k in-flight jobs in a worker and per 1,000 listeners (mem-child.ts, a fresh process per engine). */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dropSchema } from '../lib/pg.js';
import { uniqueId } from '../lib/util.js';
import type { Metrics } from '../workloads.js';
import type { ScaleEngine } from './env.js';

const here = dirname(fileURLToPath(import.meta.url));

export async function memWorkload(engine: ScaleEngine, log: (m: string) => void): Promise<Metrics> {
  const dir = engine === 'sqlite' ? mkdtempSync(join(tmpdir(), 'alkbench-mem-')) : null;
  const where = dir ? join(dir, 'mem.db') : uniqueId('bench_mem');
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  try {
    const out = await new Promise<string>((resolve, reject) => {
      const p = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', join(here, 'mem-child.ts'), engine, where], {
        env,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let s = '';
      p.stdout.on('data', (d: Buffer) => (s += d.toString()));
      const timer = setTimeout(() => p.kill('SIGKILL'), 300_000);
      p.on('exit', (code) => {
        clearTimeout(timer);
        if (code === 0) resolve(s);
        else reject(new Error(`MEM child exited with ${String(code)}`));
      });
    });
    const r = JSON.parse(out.trim().split('\n').pop()!) as Record<string, number>;
    log(`MEM ${engine}: ${JSON.stringify(r)}`);
    const m: Metrics = {};
    for (const [k, v] of Object.entries(r)) if (k !== 'inflight') m[`MEM.${engine}.${k}`] = v;
    return m;
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true });
    else await dropSchema(where);
  }
}
