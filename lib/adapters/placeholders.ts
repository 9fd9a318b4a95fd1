/**
 * The placeholders of one alkstore statement. SQLite engine SQL numbers its
 * parameters by position (`?`), PostgreSQL engine SQL by index (`$1`); an
 * adapter whose ORM builds its own placeholders splits the text here and
 * hands each piece and value to the ORM. Quoted text ('…', "…") is skipped.
 */
export interface SplitSql {
  /** `parts.length === refs.length + 1`: text, parameter, text, … */
  readonly parts: readonly string[];
  /** The 0-based index into the statement's values of each placeholder, in order. */
  readonly refs: readonly number[];
}

/** The SQL dialect of a statement: which placeholder style it uses. */
export type Dialect = 'sqlite' | 'postgres';

export function splitPlaceholders(sql: string, dialect: Dialect): SplitSql {
  const parts: string[] = [];
  const refs: number[] = [];
  let start = 0;
  let positional = 0;
  let i = 0;
  while (i < sql.length) {
    const c = sql[i]!;
    if (c === "'" || c === '"') {
      const end = sql.indexOf(c, i + 1);
      i = end < 0 ? sql.length : end + 1;
      continue;
    }
    if (dialect === 'sqlite' && c === '?') {
      parts.push(sql.slice(start, i));
      refs.push(positional++);
      start = i += 1;
      continue;
    }
    if (dialect === 'postgres' && c === '$') {
      const m = /^\$(\d+)/.exec(sql.slice(i));
      if (m) {
        parts.push(sql.slice(start, i));
        refs.push(Number(m[1]) - 1);
        start = i += m[0].length;
        continue;
      }
    }
    i += 1;
  }
  parts.push(sql.slice(start));
  return { parts, refs };
}

/** Whether a statement returns rows (SELECT, WITH, PRAGMA, VALUES, or anything with RETURNING). */
export function returnsRows(sql: string): boolean {
  return /^\s*(select|with|pragma|values)\b/i.test(sql) || /\breturning\b/i.test(sql);
}
