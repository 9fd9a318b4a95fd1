import { createHash } from 'node:crypto';
import type { WorkflowSql } from '../../workflows/sql-seam.js';
import type { PgContext } from './context.js';
import type { Executor } from './connection.js';

/** The workflows' statements on `exec` (the pool, a transaction's client or a caller's query runner). */
export function postgresWorkflowSql(ctx: PgContext, exec: Executor, check: () => void): WorkflowSql {
  const s = ctx.sql.schema;
  return {
    dialect: 'postgres',
    prefix: `${s.q}.`,
    async query(text, params) {
      check();
      const name = `wf_${createHash('sha256').update(text).digest('hex').slice(0, 16)}`;
      return (await exec.run<Record<string, unknown>>(s.def(name, text), params)).rows;
    },
  };
}
