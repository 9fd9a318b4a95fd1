#!/usr/bin/env node
import { runCli } from './cli.js';

/** `npx alkstore <command> --url …`: see `alkstore --help`. */
const code = await runCli(process.argv.slice(2), {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
  env: process.env,
});
process.exitCode = code;
