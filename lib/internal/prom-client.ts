import { InvalidOption } from '../contract/errors.js';
import { loadPeer } from './load-peer.js';

// prom-client stays optional: these structural types stand in for its classes,
// so neither the adapters nor their declaration output import the package.

/** The part of a prom-client `Registry` the adapters need. */
export interface PromRegistryLike {
  getSingleMetric(name: string): unknown;
}

type Labels = Record<string, string>;
export interface CounterLike {
  inc(labels: Labels, value?: number): void;
}
export interface GaugeLike {
  set(labels: Labels, value: number): void;
}
export interface HistogramLike {
  observe(labels: Labels, value: number): void;
}
interface MetricConfig {
  name: string;
  help: string;
  labelNames: string[];
  registers: PromRegistryLike[];
  buckets?: number[];
}
interface PromClientLike {
  Counter: new (config: MetricConfig) => CounterLike;
  Gauge: new (config: MetricConfig) => GaugeLike;
  Histogram: new (config: MetricConfig) => HistogramLike;
  register?: PromRegistryLike;
}

/** Finds or registers one metric by name (calling an adapter twice on one registry reuses its metrics). */
export type MetricGetter = <T>(
  kind: 'Counter' | 'Gauge' | 'Histogram',
  name: string,
  help: string,
  labelNames: string[],
  extra?: { buckets?: number[] },
) => T;

/**
 * Loads prom-client (or takes the module the caller passed as `client`) and
 * returns a getter on `registry` (default: the client's global register).
 * `caller` names the adapter in errors.
 */
export async function promMetricGetter(
  caller: string,
  client: unknown,
  registry: PromRegistryLike | undefined,
): Promise<MetricGetter> {
  const loaded = client ?? (await loadPeer('prom-client', () => import('prom-client')));
  const c = clientOf(caller, loaded);
  const reg = registry ?? c.register;
  if (!reg) throw new InvalidOption('registry', `of ${caller} is missing and the client has no default register`);
  return <T>(
    kind: 'Counter' | 'Gauge' | 'Histogram',
    name: string,
    help: string,
    labelNames: string[],
    extra: { buckets?: number[] } = {},
  ): T => {
    const existing = reg.getSingleMetric(name);
    if (existing) return existing as T;
    return new c[kind]({ name, help, labelNames, registers: [reg], ...extra }) as T;
  };
}

function clientOf(caller: string, mod: unknown): PromClientLike {
  // An ESM import of the CommonJS package may put the classes on `default`.
  const candidates = [mod, (mod as { default?: unknown } | null)?.default];
  for (const c of candidates) {
    const m = c as Partial<PromClientLike> | null | undefined;
    if (m && typeof m.Counter === 'function' && typeof m.Gauge === 'function' && typeof m.Histogram === 'function')
      return m as PromClientLike;
  }
  throw new InvalidOption(
    'client',
    `of ${caller} has no Counter, Gauge and Histogram classes (pass the prom-client module)`,
  );
}
