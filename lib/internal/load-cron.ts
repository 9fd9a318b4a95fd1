import { loadPeer, MissingPeer } from './load-peer.js';

/** What alkstore uses of croner: a pattern stepped over UTC (no DST), one second at the finest. */
export interface CronStepper {
  /** The first matching instant strictly after `after`, or null when none is left (croner stops at year 9999). */
  nextRun(after: Date): Date | null;
}

/** Compiles a 5- or 6-field expression (or a nickname); throws croner's error on a malformed one. */
export type CronCompiler = (expression: string) => CronStepper;

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
