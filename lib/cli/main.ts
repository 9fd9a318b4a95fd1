#!/usr/bin/env node
import { createInterface } from 'node:readline/promises';
import { runCli } from './cli.js';

/** On a terminal, destructive commands ask first (on stderr, so `--json` output stays clean). */
async function confirm(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(question)).trim());
  } finally {
    rl.close();
  }
}

/** `npx alkstore <command> --url …`: see `alkstore --help`. */
const code = await runCli(process.argv.slice(2), {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
  env: process.env,
  confirm: process.stdin.isTTY && process.stdout.isTTY ? confirm : undefined,
});
process.exitCode = code;
