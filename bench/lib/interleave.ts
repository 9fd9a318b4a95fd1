/**
 * What the in-process A/B tools share: the physical reference table (one
 * INSERT per commit, as bench/references.ts measures it) and the loop that
 * runs variants in alternating chunks, so drift in the machine's fsync speed
 * hits every variant alike.
 */

/** The reference table in PostgreSQL schema `schema`. */
export const refPgTable = (schema: string): string =>
  `CREATE TABLE "${schema}".t (id bigserial PRIMARY KEY, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`;
/** The reference table in a SQLite file. */
export const REF_SQLITE_TABLE =
  'CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT, payload TEXT NOT NULL, created_at INTEGER NOT NULL)';

/** One variant: a name and one operation (`i` counts within its chunk). */
export type Variant = readonly [name: string, op: (i: number) => unknown];

/**
 * Warms each variant up (`warmup` ops: a server enqueues millions, so the
 * figure is the steady state after the JIT has compiled the path, not its
 * first hundred calls), then runs `chunks` rounds of `size` ops per variant,
 * forward in even rounds and backward in odd ones. Total ms per variant name.
 */
export async function interleave(
  variants: readonly Variant[],
  chunks: number,
  size: number,
  warmup = 500,
): Promise<Map<string, number>> {
  const ms = new Map<string, number>(variants.map(([n]) => [n, 0]));
  for (const [, op] of variants) for (let i = 0; i < warmup; i++) await op(i);
  for (let c = 0; c < chunks; c++) {
    for (const [name, op] of c % 2 === 0 ? variants : [...variants].reverse()) {
      const t0 = performance.now();
      for (let i = 0; i < size; i++) await op(i);
      ms.set(name, ms.get(name)! + performance.now() - t0);
    }
  }
  return ms;
}
