// Prints the README's "With NestJS" TypeScript block as printed (the first
// ```ts fence after that heading), for test/consumer/run.sh to paste into a
// generated Nest app as src/app.module.ts. Exits 1 when there is none.
import { readFileSync } from 'node:fs';

const readme = readFileSync(process.argv[2], 'utf8');
const section = readme.split(/^## With NestJS\s*$/m)[1];
const block = section?.match(/^```ts\n([\s\S]*?)^```$/m)?.[1];
if (block === undefined) {
  console.error('README.md has no ```ts block under "## With NestJS"');
  process.exit(1);
}
process.stdout.write(block);
