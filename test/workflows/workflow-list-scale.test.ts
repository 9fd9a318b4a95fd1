import { beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import type { Store } from '../../lib/contract/types.js';
import { createWorkflows } from '../../lib/workflows/index.js';
import { listQuery } from '../../lib/workflows/runs.js';
import { workflowSqlOf, type WorkflowSql } from '../../lib/workflows/sql-seam.js';
import { contractEngines, PG_URL, withEngineDb } from '../helpers/engines.js';

// The runs list at scale: 100k runs, the first page of one state and the page after it are the right
// rows, read through an index (the query plan names one and sorts nothing), whatever the runs before;
// a page after a cursor starts at the cursor in the index (no filter over the runs before it); on
// PostgreSQL the prepared listing keeps its generic plan (a plan per listing grew with the table).
// Keyset paging with many runs started in the same millisecond returns each run once, in order.

const RUNS = 100_000;
const NS = 'wf-scale';

async function seed(sql: WorkflowSql, ns: string, n: number, rows: (series: string) => string): Promise<void> {
  const series =
    sql.dialect === 'postgres'
      ? `SELECT g AS i FROM generate_series(0, ${n - 1}) g`
      : `WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < ${n - 1}) SELECT i FROM s`;
  await sql.query(
    `INSERT INTO ${sql.prefix}workflow_runs (ns, id, workflow, version, state, input, created_at, updated_at, finished_at, error)
     ${rows(series)}`,
    [ns],
    true,
  );
  if (sql.dialect === 'postgres') await sql.query(`ANALYZE ${sql.prefix}workflow_runs`, [], true);
}

for (const engine of contractEngines()) {
  describe(`workflow runs list at scale [${engine.name}]`, () => {
    let store!: Store;
    let schema = '';
    withEngineDb(engine, (d, s) => {
      store = s;
      schema = d.location;
    });
    const sqlOf = (): WorkflowSql => workflowSqlOf(store as object)!;

    beforeAll(async () => {
      // Run i started at 1_000_000 + i; every 10th is failed, the rest completed.
      await seed(
        sqlOf(),
        NS,
        RUNS,
        (
          series,
        ) => `SELECT $1, 'run-' || i, 'scale', 1, CASE WHEN i % 10 = 0 THEN 'failed' ELSE 'completed' END, 'null',
           1000000 + i, 1000000 + i, 1000000 + i,
           CASE WHEN i % 10 = 0 THEN '{"name":"Error","message":"boom","code":null}' END
         FROM (${series}) x`,
      );
    }, 120_000);

    it(`pages ${RUNS} runs by state newest first through an index`, async () => {
      const sql = sqlOf();
      const w = createWorkflows(store, { workflows: [], worker: false, namespace: NS });
      try {
        const first = await w.listPage({ state: 'failed', order: 'desc', limit: 200 });
        expect(first.runs).toHaveLength(200);
        expect(first.runs[0]).toMatchObject({ id: `run-${RUNS - 10}`, state: 'failed', error: { message: 'boom' } });
        expect(first.runs[199]!.id).toBe(`run-${RUNS - 10 * 200}`);
        expect(first.next).not.toBeNull();
        const second = await w.listPage({ state: 'failed', order: 'desc', limit: 200, after: first.next! });
        expect(second.runs[0]!.id).toBe(`run-${RUNS - 10 * 201}`);
        const oldest = await w.list({ workflow: 'scale', limit: 2 });
        expect(oldest.map((r) => r.id)).toEqual(['run-0', 'run-1']);

        const q = listQuery(sql, NS, { state: 'failed', limit: 200, order: 'desc', after: null });
        if (sql.dialect === 'postgres') {
          const plan = (await sql.query(`EXPLAIN ${q.text}`, q.params, false)).map((r) => String(r['QUERY PLAN']));
          expect(plan.join('\n')).toMatch(/Index Scan.*workflow_runs_by_state/);
          expect(plan.join('\n')).not.toMatch(/Seq Scan|Sort/);
        } else {
          const plan = (await sql.query(`EXPLAIN QUERY PLAN ${q.text}`, q.params, false)).map((r) => String(r.detail));
          expect(plan.join('\n')).toMatch(/USING (COVERING )?INDEX __alkstore_workflow_runs_by_state/);
          expect(plan.join('\n')).not.toMatch(/TEMP B-TREE/);
        }
      } finally {
        await w.close();
      }
    }, 120_000);

    it('starts a page after a cursor at the cursor in the index', async () => {
      const sql = sqlOf();
      // Half way down: the runs after the cursor are 50k of the 100k.
      const after = { createdAt: 1_000_000 + RUNS / 2, id: `run-${RUNS / 2}` };
      for (const [state, order] of [
        ['failed', 'desc'],
        ['completed', 'asc'],
      ] as const) {
        const q = listQuery(sql, NS, { state, limit: 20, order, after });
        if (sql.dialect === 'postgres') {
          const [row] = await sql.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${q.text}`, q.params, false);
          const text = JSON.stringify(row!['QUERY PLAN']);
          expect(text).toMatch(/"Index Cond":"[^"]*ROW\(created_at, id\)/);
          // (A plan may filter on the state, as the first page's does, never on the cursor.)
          expect(text).not.toMatch(/"Filter":"[^"]*created_at|"Sort"|Seq Scan/);
          // A filter over the 5,000 failed runs after the cursor read hundreds of pages.
          const buffers = [...text.matchAll(/"Shared (?:Hit|Read) Blocks":(\d+)/g)].map((m) => Number(m[1]));
          expect(Math.max(...buffers)).toBeLessThan(60);
        } else {
          const plan = (await sql.query(`EXPLAIN QUERY PLAN ${q.text}`, q.params, false)).map((r) => String(r.detail));
          expect(plan.join('\n')).toMatch(
            /INDEX __alkstore_workflow_runs_by_state \(ns=\? AND state=\? AND \(created_at,id\)[<>]\(\?,\?\)\)/,
          );
          expect(plan.join('\n')).not.toMatch(/TEMP B-TREE/);
        }
      }
      const w = createWorkflows(store, { workflows: [], worker: false, namespace: NS });
      try {
        const page = await w.listPage({ state: 'completed', limit: 3, after: `${after.createdAt}.${after.id}` });
        expect(page.runs.map((r) => r.id)).toEqual([
          `run-${RUNS / 2 + 1}`,
          `run-${RUNS / 2 + 2}`,
          `run-${RUNS / 2 + 3}`,
        ]);
      } finally {
        await w.close();
      }
    }, 60_000);

    if (engine.kind === 'postgres')
      it('keeps the generic plan of the prepared listing at 100k runs', async () => {
        // PostgreSQL plans a prepared statement for its values five times, then keeps a generic plan
        // unless that one's estimated cost is higher. Before, `LIMIT $n` made it so at scale, and every
        // listing was planned again.
        const c = new pg.Client({ connectionString: PG_URL });
        await c.connect();
        try {
          for (const state of ['failed', 'completed'] as const) {
            const q = listQuery(sqlOf(), NS, { state, limit: 20, order: 'desc', after: null });
            await c.query(`PREPARE listing_${state} AS ${q.text}`);
            const args = q.params.map((p) => (typeof p === 'string' ? `'${p}'` : String(p))).join(', ');
            for (let i = 0; i < 6; i++) await c.query(`EXECUTE listing_${state}(${args})`);
            const plan = (await c.query(`EXPLAIN EXECUTE listing_${state}(${args})`)).rows
              .map((r: Record<string, unknown>) => String(r['QUERY PLAN']))
              .join('\n');
            expect(plan).toMatch(/Index Cond: \(\(ns = \$1\) AND \(state = \$2\)\)/);
            expect(plan).not.toMatch(/Sort|Seq Scan/);
          }
        } finally {
          await c.end();
        }
        expect(schema).not.toBe('');
      }, 60_000);

    it('pages runs started in the same millisecond each once, in order', async () => {
      const sql = sqlOf();
      const ns = 'wf-ties';
      // 90 runs over 3 start times; ids sort unlike their numbers ('tie-10' before 'tie-2').
      await seed(
        sql,
        ns,
        90,
        (series) => `SELECT $1, 'tie-' || i, CASE WHEN i % 2 = 0 THEN 'even' ELSE 'odd' END, 1,
           CASE WHEN i % 3 = 0 THEN 'failed' ELSE 'completed' END, 'null', 5000 + i % 3, 5000, 5000, NULL
         FROM (${series}) x`,
      );
      const all = Array.from({ length: 90 }, (_, i) => ({
        id: `tie-${i}`,
        workflow: i % 2 === 0 ? 'even' : 'odd',
        state: i % 3 === 0 ? 'failed' : 'completed',
        at: 5000 + (i % 3),
      }));
      const w = createWorkflows(store, { workflows: [], worker: false, namespace: ns });
      try {
        const filters = [
          {},
          { state: 'completed' },
          { workflow: 'odd' },
          { workflow: 'even', state: 'completed' },
        ] as const;
        for (const filter of filters)
          for (const order of ['asc', 'desc'] as const) {
            const want = all
              .filter((r) => ('state' in filter ? r.state === filter.state : true))
              .filter((r) => ('workflow' in filter ? r.workflow === filter.workflow : true))
              .sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
              .map((r) => r.id);
            if (order === 'desc') want.reverse();
            const got: string[] = [];
            let after: string | undefined;
            for (let pages = 0; pages < 100; pages++) {
              const page = await w.listPage({ ...filter, order, limit: 7, ...(after === undefined ? {} : { after }) });
              got.push(...page.runs.map((r) => r.id));
              if (page.next === null) break;
              after = page.next;
            }
            expect({ filter, order, got }).toEqual({ filter, order, got: want });
          }
      } finally {
        await w.close();
      }
    }, 60_000);
  });
}
