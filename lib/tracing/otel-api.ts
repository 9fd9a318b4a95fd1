import type * as OtelApi from '@opentelemetry/api';

/** The loaded `@opentelemetry/api` module, null when it is not installed, undefined before the first try. */
let loaded: typeof OtelApi | null | undefined;
let loading: Promise<typeof OtelApi | null> | null = null;

/** Loads `@opentelemetry/api` once (an optional peer); resolves null when it is not installed. */
export function loadOtelApi(): Promise<typeof OtelApi | null> {
  if (loaded !== undefined) return Promise.resolve(loaded);
  loading ??= import('@opentelemetry/api').then(
    (mod) => {
      // An ESM import of the CommonJS build may put the API on `default`.
      const api =
        ((mod as { trace?: unknown }).trace ? mod : (mod as unknown as { default?: typeof OtelApi }).default) ?? null;
      loaded = api as typeof OtelApi | null;
      return loaded;
    },
    () => {
      loaded = null;
      return null;
    },
  );
  return loading;
}

/**
 * Loads `@opentelemetry/api` if it is installed, so that `withTraceContext`
 * (a store's `enqueueHeaders`) finds the active span (`openStore` and the
 * Nest module call it for you). Resolves whether it is available.
 */
export async function loadOpenTelemetry(): Promise<boolean> {
  return (await loadOtelApi()) !== null;
}

/** The API if {@link loadOtelApi} already loaded it, else null (never loads: for synchronous paths). */
export function otelApiIfLoaded(): typeof OtelApi | null {
  return loaded ?? null;
}
