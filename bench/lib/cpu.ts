/**
 * CPU time read from /proc (Linux): the whole machine's busy time, and the time of the processes of a
 * given name (the database server, the broker), so a bench can say where a message's CPU went.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

/** Clock ticks per second of /proc's counters (USER_HZ, 100 on Linux). */
const HZ = 100;

/** The machine's busy CPU time so far (ms): /proc/stat's first line without idle and iowait. */
export function machineBusyMs(): number {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system [idle iowait] irq softirq steal
  return ((f[0]! + f[1]! + f[2]! + f[5]! + f[6]! + f[7]!) * 1000) / HZ;
}

/**
 * CPU time so far (ms) of every process whose command name is in `names`, with the time of its children
 * that ended (a PostgreSQL backend that closed is counted in the postmaster's).
 */
export function processesMs(names: readonly string[]): number {
  let ticks = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    let st: string;
    try {
      st = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // ended between the listing and the read
    }
    const close = st.lastIndexOf(')');
    if (!names.includes(st.slice(st.indexOf('(') + 1, close))) continue;
    const f = st.slice(close + 2).split(' ');
    // utime, stime, cutime, cstime (fields 14–17 of proc(5))
    ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
  }
  return (ticks * 1000) / HZ;
}

/** The PostgreSQL server's processes. */
export const POSTGRES_PROCESSES = ['postgres'] as const;
/** The brokers' processes: NATS, RabbitMQ's Erlang VM. */
export const BROKER_PROCESSES = ['nats-server', 'beam.smp'] as const;

/**
 * Starts a V8 CPU profile of this thread when `file` is set (from an environment variable); the returned
 * function stops it and writes it there. Without a file both are no-ops.
 */
export async function cpuProfile(file: string | undefined): Promise<() => Promise<void>> {
  if (!file) return async () => undefined;
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return async () => {
    writeFileSync(file, JSON.stringify((await session.post('Profiler.stop')).profile));
    session.disconnect();
  };
}
