import { describe, it } from '@jest/globals';
import { appendFileSync } from 'node:fs';

/**
 * `describe` for a fault test that needs a private PostgreSQL cluster: skipped with one line
 * saying why when this machine cannot start one (`why` non-null), unless
 * `ALKSTORE_REQUIRE_PG_CLUSTER=1` (set by .ci/run), which turns the same reason into a failure.
 */
export function describeCluster(why: string | null, name: string, fn: () => void): void {
  if (why === null) {
    describe(name, fn);
    return;
  }
  if (process.env.ALKSTORE_REQUIRE_PG_CLUSTER === '1') {
    describe(name, () => {
      it('starts a private PostgreSQL cluster', () => {
        throw new Error(`ALKSTORE_REQUIRE_PG_CLUSTER=1 and ${why}`);
      });
    });
    return;
  }
  console.log(`alkstore fault suite: "${name}" skipped: ${why}`);
  describe.skip(name, fn);
}

/** Simulated work inside a handler (never a proof of anything: assertions wait for conditions). */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Prints a fault test's measured figures (recovery times, lost and duplicate counts) as one
 * JSON line, and appends it to `$ALKSTORE_FAULT_FIGURES` when set, so a run can collect them.
 */
export function reportFigures(test: string, figures: Record<string, number>): void {
  const line = JSON.stringify({ test, ...figures });
  console.log(`fault figures: ${line}`);
  const file = process.env.ALKSTORE_FAULT_FIGURES;
  if (file) appendFileSync(file, `${line}\n`);
}
