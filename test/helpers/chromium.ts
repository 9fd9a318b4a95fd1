import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

/** Debian's Chromium (.ci/run installs it); `ALKSTORE_CHROMIUM` points elsewhere. */
export const CHROMIUM = process.env.ALKSTORE_CHROMIUM ?? '/usr/bin/chromium';

/** Headless, no sandbox, GPU, background network, component updates or first-run pages. */
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
];

/** A browser with a fresh profile directory; `close` ends it and removes the profile. */
export interface FreshChromium {
  readonly browser: BrowserContext;
  close(): Promise<void>;
}

/** Launches Chromium with a fresh profile at `viewport`, with HTTP credentials when given. */
export async function launchChromium(
  viewport: { width: number; height: number },
  httpCredentials?: { username: string; password: string },
): Promise<FreshChromium> {
  const profile = mkdtempSync(join(tmpdir(), 'alkstore-chromium-'));
  try {
    const browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ARGS,
      viewport,
      ...(httpCredentials ? { httpCredentials } : {}),
    });
    return {
      browser,
      async close() {
        await browser.close();
        rmSync(profile, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(profile, { recursive: true, force: true });
    throw err;
  }
}
