/**
 * Physical references on the same databases: what one commit costs with no
 * queue logic at all. alkstore figures are reported as a ratio to these.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type pg from 'pg';
import { REF_SQLITE_TABLE, refPgTable } from './lib/interleave.js';
import { dropSchema, pgClient } from './lib/pg.js';
import { alkstoreSqliteSynchronous } from './lib/sqlite-settings.js';
import { Arrivals, now, percentile, randomGap, sleep, uniqueId } from './lib/util.js';
import type { Metrics, WorkloadConfig } from './workloads.js';

export const REF_SETTINGS = {
  'ref-postgres':
    'fresh schema; CREATE TABLE t (id bigserial primary key, payload jsonb, created_at timestamptz default now()); one INSERT per autocommit statement (parameterised) from 1, 10 and 16 clients; notify latency: LISTEN on one client, NOTIFY from another',
  'ref-sqlite':
    'fresh temp file, WAL, synchronous matched to alkstore; same table shape; one prepared INSERT per implicit transaction on one connection',
};

export async function postgresReference(cfg: WorkloadConfig): Promise<Metrics> {
  const schema = uniqueId('bench_ref');
  const admin = await pgClient();
  const clients: pg.Client[] = [];
  try {
    await admin.query(`CREATE SCHEMA "${schema}"`);
    await admin.query(refPgTable(schema));
    const sql = `INSERT INTO "${schema}".t (payload) VALUES ($1)`;
    const body = JSON.stringify({ i: 0, kind: 'bench' });
    const deadline = (): number => now() + cfg.phaseTimeoutMs;

    // One client, one commit per row.
    await admin.query(sql, [body]);
    let d = deadline();
    let t0 = now();
    let done = 0;
    for (let i = 0; i < cfg.jobs && now() < d; i++) {
      await admin.query(sql, [body]);
      done += 1;
    }
    const one = (done * 1000) / (now() - t0);

    // Ten clients concurrently, one commit per row, N rows in total.
    for (let k = 0; k < 10; k++) clients.push(await pgClient());
    await Promise.all(clients.map((c) => c.query(sql, [body])));
    d = deadline();
    t0 = now();
    const per = Math.ceil(cfg.jobs / 10);
    const counts = await Promise.all(
      clients.slice(0, 10).map(async (c) => {
        let n = 0;
        for (let i = 0; i < per && now() < d; i++) {
          await c.query(sql, [body]);
          n += 1;
        }
        return n;
      }),
    );
    const ten = (counts.reduce((a, b) => a + b, 0) * 1000) / (now() - t0);

    // Sixteen clients concurrently (B1C's yardstick), one commit per row, N rows in total.
    for (let k = 10; k < 16; k++) clients.push(await pgClient());
    await Promise.all(clients.map((c) => c.query(sql, [body])));
    d = deadline();
    t0 = now();
    const per16 = Math.ceil(cfg.jobs / 16);
    const counts16 = await Promise.all(
      clients.map(async (c) => {
        let n = 0;
        for (let i = 0; i < per16 && now() < d; i++) {
          await c.query(sql, [body]);
          n += 1;
        }
        return n;
      }),
    );
    const sixteen = (counts16.reduce((a, b) => a + b, 0) * 1000) / (now() - t0);

    // NOTIFY -> LISTEN delivery latency between two connections.
    const listener = clients[0]!;
    const arrivals = new Arrivals();
    listener.on('notification', (m) => arrivals.mark(Number(m.payload)));
    await listener.query(`LISTEN bench_ref`);
    const lat: number[] = [];
    d = now() + cfg.latencyPhaseMs;
    for (let i = 0; i < cfg.samples + 5 && now() < d; i++) {
      await sleep(randomGap());
      const s0 = now();
      await admin.query(`SELECT pg_notify('bench_ref', $1)`, [String(i)]);
      const s1 = await arrivals.wait(i, cfg.sampleTimeoutMs);
      if (i >= 5 && s1 !== null) lat.push(s1 - s0);
    }
    return {
      'REF.insert_1client_per_s': one,
      'REF.insert_10clients_per_s': ten,
      'REF.insert_16clients_per_s': sixteen,
      'REF.notify_p50_ms': percentile(lat, 50),
      'REF.notify_p95_ms': percentile(lat, 95),
      'REF.notify_p99_ms': percentile(lat, 99),
    };
  } finally {
    for (const c of clients) await c.end().catch(() => undefined);
    await admin.end().catch(() => undefined);
    await dropSchema(schema);
  }
}

export async function sqliteReference(cfg: WorkloadConfig): Promise<Metrics> {
  const dir = mkdtempSync(join(tmpdir(), 'alkbench-ref-'));
  try {
    const db = new Database(join(dir, 'ref.db'));
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${alkstoreSqliteSynchronous().value}`);
    db.exec(REF_SQLITE_TABLE);
    const ins = db.prepare('INSERT INTO t (payload, created_at) VALUES (?, ?)');
    const body = JSON.stringify({ i: 0, kind: 'bench' });
    ins.run(body, Date.now());
    const d = now() + cfg.phaseTimeoutMs;
    const t0 = now();
    let done = 0;
    for (let i = 0; i < cfg.jobs && now() < d; i++) {
      ins.run(body, Date.now());
      done += 1;
    }
    const one = (done * 1000) / (now() - t0);
    db.close();
    return { 'REF.insert_1conn_per_s': one };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
