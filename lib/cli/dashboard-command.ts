import { parseArgs } from 'node:util';
import type { StoreLogger } from '../contract/types.js';
import { openStore } from '../open-store.js';
import type { CliIo } from './cli.js';
import { redact } from './redact.js';

export const DASHBOARD_USAGE = `Usage: alkstore dashboard --url URL --token-env VAR [options]

Serves the operator dashboard (the pages of alkstore/dashboard) without a Nest app.
Sign in with the token held in the environment variable VAR (HTTP Basic: any user
name, the token as password; or Authorization: Bearer <token>).

Options:
  --url URL          sqlite:<path>, a file path, postgres://… (default: $ALKSTORE_URL)
  --schema NAME      PostgreSQL schema (default alkstore)
  --token-env VAR    environment variable holding the token (16+ characters), required
  --port N           default 4000 (0: any free port)
  --host HOST        default 127.0.0.1 (this machine only); 0.0.0.0 to listen on every interface
  --path PATH        where the pages live, default /alkstore
  --read-only        no actions for anyone
  -h, --help         this text

Stops on SIGINT or SIGTERM.`;

/** Extra hooks for tests: stop without a signal. */
export interface DashboardCommandOpts {
  signal?: AbortSignal;
}

class Usage extends Error {}

/** `alkstore dashboard`: resolves to the exit code once stopped (0), or at once on bad usage (2) or a failure (1). */
export async function runDashboardCommand(
  argv: readonly string[],
  io: CliIo,
  opts: DashboardCommandOpts = {},
): Promise<number> {
  let url: string | undefined;
  try {
    let values;
    try {
      ({ values } = parseArgs({
        args: [...argv],
        strict: true,
        allowPositionals: false,
        options: {
          url: { type: 'string' },
          schema: { type: 'string' },
          'token-env': { type: 'string' },
          port: { type: 'string' },
          host: { type: 'string' },
          path: { type: 'string' },
          'read-only': { type: 'boolean' },
          help: { type: 'boolean', short: 'h' },
        },
      }));
    } catch (err) {
      throw new Usage(err instanceof Error ? err.message : String(err));
    }
    if (values.help) {
      io.out(DASHBOARD_USAGE);
      return 0;
    }
    url = values.url ?? io.env.ALKSTORE_URL;
    if (!url) throw new Usage('--url is required (or set ALKSTORE_URL)');
    const tokenEnv = values['token-env'];
    if (!tokenEnv)
      throw new Usage('--token-env is required: the name of the environment variable holding the sign-in token');
    const token = io.env[tokenEnv];
    if (!token || token.length < 16)
      throw new Usage(`--token-env ${tokenEnv}: the variable must hold a token of at least 16 characters`);
    const portText = values.port ?? '4000';
    const port = Number(portText);
    if (!/^\d{1,5}$/.test(portText) || port > 65_535)
      throw new Usage(`--port must be 0..65535, got ${JSON.stringify(portText)}`);
    const logger: StoreLogger = {
      log: () => undefined,
      warn: (m) => io.err(redact(m, url)),
      error: (m) => io.err(redact(m, url)),
    };
    // Loaded here so the other commands never load the dashboard.
    const { serveDashboard } = await import('../dashboard/standalone.js');
    const store = await openStore({ url, schema: values.schema, migrate: false, poolSize: 4, logger });
    try {
      const served = await serveDashboard(store, {
        token,
        port,
        host: values.host,
        path: values.path,
        readOnly: values['read-only'] === true,
      });
      io.out(
        `alkstore dashboard on ${served.url} (${values['read-only'] ? 'read-only' : 'admin'}; sign in with the token from $${tokenEnv})`,
      );
      await new Promise<void>((resolve) => {
        const stop = (): void => {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
          resolve();
        };
        if (opts.signal?.aborted) return stop();
        opts.signal?.addEventListener('abort', stop, { once: true });
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
      await served.close();
    } finally {
      await store.close();
    }
    return 0;
  } catch (err) {
    if (err instanceof Usage) {
      io.err(`alkstore dashboard: ${redact(err.message, url)}\n\n${DASHBOARD_USAGE}`);
      return 2;
    }
    io.err(`alkstore dashboard: ${redact(err instanceof Error ? err.message : String(err), url)}`);
    return 1;
  }
}
