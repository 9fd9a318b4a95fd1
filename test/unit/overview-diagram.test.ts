// The README's diagram is made from a source file: docs/img/overview.svg is what
// scripts/overview-diagram.ts writes (run it after editing the boxes).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { overviewSvg } from '../../scripts/overview-diagram.js';

describe('the README diagram', () => {
  it('docs/img/overview.svg is the output of scripts/overview-diagram.ts, and the README shows it', () => {
    expect(readFileSync('docs/img/overview.svg', 'utf8')).toBe(overviewSvg());
    expect(readFileSync('README.md', 'utf8')).toContain('](docs/img/overview.svg)');
  });
});
