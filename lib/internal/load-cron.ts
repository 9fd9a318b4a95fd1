import {
  compileScheduleSpec,
  needsCronCompiler,
  type CronCompiler,
  type CronStepper,
  type ScheduleSpec,
} from '../contract/schedule-spec.js';
import { loadPeer, MissingPeer } from './load-peer.js';

// The process's croner, loaded once; the pure spec logic in lib/contract is handed the compiler from here.

interface CronerModule {
  Cron: new (pattern: string, options: { utcOffset: number; mode: '5-or-6-parts' }) => CronStepper;
}

const CRON_PURPOSE = 'for cron expressions in schedules (`@every` specs work without it)';

let compiler: CronCompiler | null = null;
let missing: unknown = null;
let loading: Promise<CronCompiler> | null = null;

/**
 * Loads croner, the optional peer that parses and steps cron expressions, once per process.
 * `@every` specs never need it. A missing package is `MissingPeer` naming `croner`.
 */
export function loadCron(): Promise<CronCompiler> {
  if (compiler) return Promise.resolve(compiler);
  loading ??= loadPeer('croner', () => import('croner') as unknown as Promise<CronerModule>, CRON_PURPOSE).then(
    (mod) => {
      // utcOffset 0: croner walks plain wall-clock fields with no zone arithmetic; zones are applied by lib/contract/zone-time.ts.
      compiler = (expression) => new mod.Cron(expression, { utcOffset: 0, mode: '5-or-6-parts' });
      return compiler;
    },
    (err: unknown) => {
      loading = null;
      if (err instanceof MissingPeer) missing = err;
      throw err;
    },
  );
  return loading;
}

/**
 * For the runner's tick: loads croner if it is installed and resolves either
 * way (after one failed attempt it does not try again), so `@every` schedules
 * keep firing without it. A cron row then fails with {@link requireCron}'s error.
 */
export async function loadCronIfInstalled(): Promise<void> {
  if (compiler || missing) return;
  await loadCron().catch(() => undefined);
}

/** croner, already loaded; otherwise `MissingPeer` (not installed) or an error saying to load it first. */
export function requireCron(): CronCompiler {
  if (compiler) return compiler;
  if (missing) throw missing;
  throw new MissingPeer('croner', null, `${CRON_PURPOSE}, loaded before use (await parseScheduleSpec first)`);
}

/**
 * Validates `spec` in `timeZone` (default `UTC`), loading croner on the first
 * cron expression. A malformed expression, one that never fires, or an unknown
 * zone is `InvalidSpec` naming it; `@every` specs never load croner.
 */
export async function parseScheduleSpec(spec: unknown, timeZone: unknown = 'UTC'): Promise<ScheduleSpec> {
  if (needsCronCompiler(spec, timeZone)) await loadCron();
  return parseScheduleSpecSync(spec, timeZone);
}

/**
 * {@link parseScheduleSpec} for callers that already awaited it once in this
 * process (croner loaded). A cron spec before that throws `MissingPeer`.
 */
export function parseScheduleSpecSync(spec: unknown, timeZone: unknown = 'UTC'): ScheduleSpec {
  return compileScheduleSpec(spec, timeZone, requireCron);
}
