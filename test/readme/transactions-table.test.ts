// docs/transactions.md's table of `open` functions is the adapters entry point: every `open…` that
// nestjs-alkstore exports has a row and every row names one, each is a real function refusing what is
// not its ORM's, and each is used in a ts block of the page, which the snippets test compiles.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import * as adapters from '../../lib/adapters/index.js';
import { InvalidOption } from '../../lib/contract/errors.js';
import { snippets } from './extract.js';

const PAGE = 'docs/transactions.md';

/** The `open` named in the second column of each row of the page's table. */
function opensInTable(): string[] {
  return readFileSync(PAGE, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('| ') && !line.startsWith('| ---'))
    .map((line) => /^`(open\w+)\(/.exec(line.split('|')[2]!.trim())?.[1])
    .filter((name): name is string => name !== undefined);
}

describe(PAGE, () => {
  const opens = opensInTable();

  it('has one row per open of nestjs-alkstore, and no other', () => {
    const exported = Object.keys(adapters).filter((name) => /^open[A-Z]/.test(name));
    expect([...opens].sort()).toEqual(exported.sort());
    expect(opens.length).toBeGreaterThanOrEqual(6);
  });

  it("names functions that refuse what is not their ORM's at once, with InvalidOption", () => {
    const byName = adapters as unknown as Record<string, (handle: unknown) => unknown>;
    for (const name of opens) {
      expect(() => byName[name]!({})).toThrow(InvalidOption);
      expect(() => byName[name]!({})).toThrow(new RegExp(`^option ${name}\\(`));
    }
  });

  it('shows every open in a ts block that the snippets test compiles', () => {
    const blocks = snippets().filter((s) => s.file === PAGE && s.flags[0] !== 'skip');
    for (const name of opens)
      expect({ name, shown: blocks.some((b) => b.code.includes(`${name}(`)) }).toEqual({ name, shown: true });
  });
});
