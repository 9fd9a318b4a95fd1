/** Shared by the in-process A/B tools (ab-ops.ts, ab-wake.ts): load `openStore` from a checkout. */
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Store } from '../../lib/contract/types.js';

export const PG_URL = process.env.ALKSTORE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export type Open = (o: { url: string; schema?: string }) => Promise<Store>;

/** `openStore` of the checkout in `dir` (its TypeScript sources, run through tsx). */
export async function loadOpen(dir: string): Promise<Open> {
  const mod = (await import(pathToFileURL(join(resolve(dir), 'lib/index.js')).href)) as { openStore: Open };
  return mod.openStore;
}
