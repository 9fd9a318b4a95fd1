import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A private PostgreSQL cluster for fault tests: `initdb` in a temp dir, a
 * postmaster on a free port of 127.0.0.1, trust auth, user `postgres`. The
 * tests restart it and terminate its backends, which they must never do to
 * the shared server other test files use.
 *
 * Binaries: `$ALKSTORE_PG_BIN`, else `pg_config --bindir`, else the newest
 * `/usr/lib/postgresql/<v>/bin`. `initdb` refuses to run as root: as root the
 * cluster belongs to the `postgres` OS user and every `pg_ctl` call runs
 * through `runuser -u postgres`.
 */
export interface PgCluster {
  readonly port: number;
  /** Connection string of database `postgres` on the cluster. */
  readonly url: string;
  /**
   * `pg_ctl restart` (mode `fast`, or `immediate`: a crash, with WAL recovery at start), run
   * asynchronously so the store under test keeps running; resolves once the server accepts
   * connections again.
   */
  restart(mode: 'fast' | 'immediate'): Promise<void>;
  /** Stops the server (immediate) and deletes its directory. Idempotent. */
  destroy(): void;
  /** The server log so far (for a failure message). */
  log(): string;
}

/** The directory holding initdb and pg_ctl, or null when this machine has none. */
export function pgBinDir(): string | null {
  const candidates: string[] = [];
  if (process.env.ALKSTORE_PG_BIN) candidates.push(process.env.ALKSTORE_PG_BIN);
  try {
    candidates.push(
      execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim(),
    );
  } catch {
    // no pg_config on PATH
  }
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => /^\d+(\.\d+)?$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    for (const v of versions) candidates.push(join(root, v, 'bin'));
  }
  return candidates.find((dir) => existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl'))) ?? null;
}

/** Why a private cluster cannot be started here, or null when it can (binaries found; as root, a `postgres` OS user). */
export function clusterUnavailable(): string | null {
  if (pgBinDir() === null) return 'no initdb/pg_ctl found (set ALKSTORE_PG_BIN to the PostgreSQL bin directory)';
  if (process.getuid?.() === 0 && osUser('postgres') === null)
    return 'running as root and there is no "postgres" OS user to own the cluster (initdb refuses root)';
  return null;
}

function osUser(name: string): { uid: number; gid: number } | null {
  try {
    const line = readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${name}:`));
    if (!line) return null;
    const [, , uid, gid] = line.split(':');
    return { uid: Number(uid), gid: Number(gid) };
  } catch {
    return null;
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Starts a fresh cluster. Throws with the reason when it cannot (see {@link clusterUnavailable}). */
export async function startCluster(): Promise<PgCluster> {
  const why = clusterUnavailable();
  if (why !== null) throw new Error(`cannot start a private PostgreSQL cluster: ${why}`);
  const bin = pgBinDir()!;
  const dir = mkdtempSync(join(tmpdir(), 'alkstore-pgfault-'));
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const u = osUser('postgres')!;
    chownSync(dir, u.uid, u.gid);
  }
  const run = (tool: string, args: string[]): void => {
    const cmd = asRoot ? 'runuser' : join(bin, tool);
    const argv = asRoot ? ['-u', 'postgres', '--', join(bin, tool), ...args] : args;
    const r = spawnSync(cmd, argv, { encoding: 'utf8', timeout: 60_000 });
    if (r.status !== 0)
      throw new Error(`${tool} ${args.join(' ')} failed (${r.status ?? r.signal}): ${r.stderr || r.stdout}`);
  };
  const runAsync = (tool: string, args: string[]): Promise<void> =>
    new Promise((resolve, reject) => {
      const cmd = asRoot ? 'runuser' : join(bin, tool);
      const argv = asRoot ? ['-u', 'postgres', '--', join(bin, tool), ...args] : args;
      execFile(cmd, argv, { encoding: 'utf8', timeout: 60_000 }, (err, stdout, stderr) =>
        err ? reject(new Error(`${tool} ${args.join(' ')} failed: ${stderr || stdout || err.message}`)) : resolve(),
      );
    });
  const data = join(dir, 'data');
  const logFile = join(dir, 'server.log');
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync', '--no-instructions']);
  const port = await freePort();
  // fsync off: nothing here survives the test; a crash restart (immediate) still replays the WAL.
  const serverOpts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200 -c deadlock_timeout=200ms`;
  run('pg_ctl', ['-D', data, '-l', logFile, '-o', serverOpts, '-w', '-t', '60', 'start']);
  let destroyed = false;
  const stopSync = (): void => {
    if (destroyed) return;
    destroyed = true;
    try {
      run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
    } catch {
      // already stopped
    }
    rmSync(dir, { recursive: true, force: true });
  };
  // A test process that dies without afterAll must not leave a postmaster behind.
  process.once('exit', stopSync);
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    restart(mode) {
      return runAsync('pg_ctl', ['-D', data, '-l', logFile, '-o', serverOpts, '-m', mode, '-w', '-t', '60', 'restart']);
    },
    destroy() {
      process.removeListener('exit', stopSync);
      stopSync();
    },
    log() {
      try {
        return readFileSync(logFile, 'utf8');
      } catch {
        return '';
      }
    },
  };
}
