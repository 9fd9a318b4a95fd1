/**
 * The B1 gap of issue 16 measured interleaved: alkstore's single enqueue
 * against the physical reference (one INSERT per commit into a one-index
 * table, as bench/references.ts does) in ONE process, chunks alternating
 * (alk, raw, raw, alk, …), so the disk's fsync speed, which drifts by 2× over
 * minutes on a shared machine, is the same for both sides. `npm run bench`
 * measures the two minutes apart; this is the ratio without that drift.
 *
 * PostgreSQL also runs the reference with a `pg_notify` in the INSERT's
 * statement (what the commit of a waking enqueue carries), to show how much
 * of the gap is the notification.
 *
 *   npx -y tsx bench/ab-raw.ts <dir> [chunks=40] [chunkSize=50]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { loadOpen, PG_URL, type Open } from './lib/ab-checkout.js';
import { interleave, REF_SQLITE_TABLE, refPgTable, type Variant } from './lib/interleave.js';
import { alkstoreSqliteSynchronous } from './lib/sqlite-settings.js';

const [dir, chunksArg, sizeArg] = process.argv.slice(2);
if (!dir) throw new Error('usage: ab-raw.ts <dir> [chunks] [chunkSize]');
const CHUNKS = Number(chunksArg ?? 40);
const SIZE = Number(sizeArg ?? 50);

const body = (i: number): string => JSON.stringify({ i, kind: 'bench' });

async function measure(engine: string, variants: Variant[]): Promise<string[]> {
  const ms = await interleave(variants, CHUNKS, SIZE);
  const per = (name: string): number => (CHUNKS * SIZE * 1000) / ms.get(name)!;
  return variants.map(
    ([n]) => `${engine} ${n.padEnd(14)} ${Math.round(per(n))}/s  / raw ${(per(n) / per('raw')).toFixed(3)}`,
  );
}

async function sqlite(open: Open): Promise<string[]> {
  const tmp = mkdtempSync(join(tmpdir(), 'alk-abraw-'));
  const store = await open({ url: `sqlite:${join(tmp, 'store.db')}` });
  const db = new Database(join(tmp, 'ref.db'));
  try {
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${alkstoreSqliteSynchronous().value}`);
    db.exec(REF_SQLITE_TABLE);
    const ins = db.prepare('INSERT INTO t (payload, created_at) VALUES (?, ?)');
    const q = store.queue('b1');
    return await measure('sqlite', [
      ['alk enqueue', (i) => q.enqueue({ i, kind: 'bench' })],
      ['raw', (i) => ins.run(body(i), Date.now())],
    ]);
  } finally {
    db.close();
    await store.close();
    rmSync(tmp, { recursive: true, force: true });
  }
}

async function postgres(open: Open): Promise<string[]> {
  const schema = `abraw_${Date.now().toString(36)}`;
  const store = await open({ url: PG_URL, schema });
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    await c.query(refPgTable(schema));
    const q = store.queue('b1');
    return await measure('postgres', [
      ['alk enqueue', (i) => q.enqueue({ i, kind: 'bench' })],
      [
        'raw',
        (i) =>
          c.query({ name: 'abraw_ins', text: `INSERT INTO "${schema}".t (payload) VALUES ($1)`, values: [body(i)] }),
      ],
      [
        'raw + notify',
        (i) =>
          c.query({
            name: 'abraw_ins_notify',
            text: `WITH i AS (INSERT INTO "${schema}".t (payload) VALUES ($1) RETURNING id) SELECT i.id, pg_notify('abraw_${schema}', 'x') FROM i`,
            values: [body(i)],
          }),
      ],
    ]);
  } finally {
    await store.close();
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await c.end();
  }
}

const open = await loadOpen(dir);
const lines = [`checkout ${resolve(dir)}; ${CHUNKS} chunks x ${SIZE} ops per side, alternating`];
lines.push(...(await sqlite(open)));
lines.push(...(await postgres(open)));
process.stdout.write(`${lines.join('\n')}\n`);
