// No line of the library is over 160 characters, outside SQL text and the migrations.
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from '@jest/globals';

const LIMIT = 160;
const SQL = /\b(SELECT|UPDATE|INSERT|DELETE|WHERE|FROM|JOIN|CREATE|VALUES|RETURNING|ON CONFLICT)\b/;

describe('line length', () => {
  it(`no line in lib is over ${LIMIT} characters outside SQL and migrations`, () => {
    const files = execFileSync('git', ['ls-files', 'lib/*.ts'], { encoding: 'utf8' })
      .split('\n')
      .filter((f) => f && !f.endsWith('.sql.ts') && !/migrations/.test(f));
    expect(files.length).toBeGreaterThan(50);
    const long: string[] = [];
    for (const file of files)
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (line.length > LIMIT && !SQL.test(line)) long.push(`${file}:${i + 1} (${line.length})`);
        });
    expect(long).toEqual([]);
  });
});
