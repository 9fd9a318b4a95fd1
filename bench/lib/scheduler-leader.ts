// A scheduler runner in its own process, for bench/scheduler-failover.ts to SIGKILL:
// node --import tsx bench/lib/scheduler-leader.ts <url> <schema> <lockTtlMs>
import { openPostgresStore } from '../../lib/engines/postgres/index.js';

const [url, schema, ttl] = process.argv.slice(2);
const store = await openPostgresStore({ connectionString: url!, schema: schema! });
await store.runSchedules(new AbortController().signal, { owner: 'crashing-leader', lockTtlMs: Number(ttl) });
