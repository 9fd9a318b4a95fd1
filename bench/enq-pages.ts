/**
 * What the pieces of a SQLite enqueue's transaction write: WAL frames (pages) per commit of the
 * engine's enqueue transaction by hand, with and without the counter (the jobs insert trigger) and
 * the queue's wake (`BUMP_WAKE_SEQ`), and of the library's `queue.enqueue`; then the CPU of one
 * wake-sequence bump and of one database-clock read inside an open transaction.
 *
 *   npx tsx bench/enq-pages.ts [--commits 1000]
 *
 * Frames are counted from the WAL's size with automatic checkpoints off (each frame is a page
 * plus a 24-byte header).
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import * as mine from '../lib/index.js';
import { INSERT_JOB } from '../lib/engines/sqlite/queue.sql.js';
import { BUMP_WAKE_SEQ } from '../lib/engines/sqlite/counts.sql.js';
import { NOW_SQL } from '../lib/engines/sqlite/connection.js';

const i = process.argv.indexOf('--commits');
const N = i >= 0 ? Number(process.argv[i + 1]) : 1000;
const dir = mkdtempSync(join(tmpdir(), 'alkstore-enq-pages-'));

/** A file the library made, with 500 jobs in it, its WAL checkpointed and emptied. */
async function prepared(name: string): Promise<string> {
  const file = join(dir, `${name}.db`);
  const st = await mine.openStore({ url: `sqlite://${file}` });
  for (let k = 0; k < 500; k++) await st.queue('q').enqueue({ warm: k });
  await st.close();
  return file;
}

function framesPerCommit(file: string, size0: number): string {
  return ((statSync(`${file}-wal`).size - size0) / (4096 + 24) / N).toFixed(2);
}

const variants = [
  ['job row, counter and wake (the engine: H4)', true, true],
  ['job row and counter, no wake', true, false],
  ['job row and wake, no counter', false, true],
  ['job row only (H3)', false, false],
] as const;
for (const [label, counted, woken] of variants) {
  const file = await prepared(label.replace(/\W+/g, '-'));
  const h = new Database(file);
  h.pragma('journal_mode = WAL');
  h.pragma('wal_autocheckpoint = 0');
  h.pragma('wal_checkpoint(TRUNCATE)');
  if (!counted) h.exec('DROP TRIGGER __alkstore_jobs_count_insert');
  const begin = h.prepare('BEGIN IMMEDIATE');
  const ins = h.prepare(INSERT_JOB);
  const bump = h.prepare(BUMP_WAKE_SEQ);
  const commit = h.prepare('COMMIT');
  const size0 = statSync(`${file}-wal`).size;
  for (let k = 0; k < N; k++) {
    begin.run();
    const now = Date.now();
    ins.run('q', JSON.stringify({ k }), 0, 3, 30_000, 1_000, null, now, now, null, null, null, null, 0, null, null);
    if (woken) bump.get('q');
    commit.run();
  }
  console.log(`${label}: ${framesPerCommit(file, size0)} WAL frames per commit`);
  h.close();
}
{
  const file = await prepared('library');
  const st = await mine.openStore({ url: `sqlite://${file}` });
  const h = new Database(file);
  h.pragma('wal_checkpoint(TRUNCATE)');
  // The store's write connection checkpoints on its own: turn that off for the count.
  (st as unknown as { writer: { conn: { db: Database.Database } } }).writer.conn.db.pragma('wal_autocheckpoint = 0');
  const size0 = statSync(`${file}-wal`).size;
  for (let k = 0; k < N; k++) await st.queue('q').enqueue({ k });
  console.log(`library queue.enqueue: ${framesPerCommit(file, size0)} WAL frames per commit`);
  await st.close();
  h.close();
}
{
  const h = new Database(await prepared('statements'));
  const bump = h.prepare(BUMP_WAKE_SEQ);
  const clock = h.prepare(NOW_SQL).pluck();
  const M = 200_000;
  for (const [label, run] of [
    ['wake-sequence bump', () => bump.get('q')],
    ['database clock read', () => clock.get()],
  ] as const) {
    h.exec('BEGIN IMMEDIATE');
    const c0 = process.cpuUsage();
    for (let k = 0; k < M; k++) run();
    const c = process.cpuUsage(c0);
    h.exec('ROLLBACK');
    console.log(`${label}: ${((c.user + c.system) / M).toFixed(2)} µs CPU each (in an open transaction)`);
  }
  h.close();
}
rmSync(dir, { recursive: true, force: true });
