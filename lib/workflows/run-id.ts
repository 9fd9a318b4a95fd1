import { randomUUID } from 'node:crypto';

// Generated run ids are UUIDs of version 7 (RFC 9562): the first 48 bits are the start's Unix time in ms,
// the next 12 (after the version) a counter within that millisecond, the rest random. Runs started one
// after another get ids in that order, so the rows a batch of running runs writes (their journal entries,
// their once-only guards, their rows) sit side by side in each index instead of one page apart each: a
// shared commit writes a few pages where random ids made it write one or more per run.

let lastMs = 0;
let counter = 0;

/** A new run id: a UUID v7, ascending within this process (a clock that steps back keeps the last instant). */
export function newRunId(): string {
  let ms = Date.now();
  if (ms > lastMs) {
    lastMs = ms;
    counter = 0;
  } else if (counter < 0xfff) {
    ms = lastMs;
    counter += 1;
  } else {
    // 4,096 ids in one millisecond: borrow the next one (RFC 9562, 6.2, method 1).
    ms = lastMs += 1;
    counter = 0;
  }
  const time = ms.toString(16).padStart(12, '0');
  // The random UUID's variant and random bits stay; its time, version and first 12 random bits are replaced.
  const rnd = randomUUID();
  return `${time.slice(0, 8)}-${time.slice(8)}-7${counter.toString(16).padStart(3, '0')}${rnd.slice(18)}`;
}
