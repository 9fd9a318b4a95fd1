/**
 * Compile-time test (checked by `npx tsc --noEmit -p tsconfig.json`, never run): the payload a
 * job, dead letter or stream event carries is typed as the JSON shape of what was sent.
 * Each `@ts-expect-error` line must stay an error.
 */
import type { Jsonified } from '../../lib/contract/codec.js';
import type { Job, JobInfo, StreamEvent } from '../../lib/contract/types.js';

type Equal<A, B> = (<X>() => X extends A ? 1 : 2) extends <X>() => X extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(): T | undefined {
  return undefined;
}

interface Sent {
  at: Date;
  tags: Map<string, number>;
  n: number;
  maybe?: string;
  nested: { when: Date; list: Date[] };
  run(): void;
}

export function checks(job: Job<Sent>, info: JobInfo<Sent>, event: StreamEvent<{ at: Date }>, untyped: Job): void {
  const at: string = job.payload.at;
  const when: string = job.payload.nested.when;
  const first: string | undefined = job.payload.nested.list[0];
  const deadAt: string = info.payload.at;
  const eventAt: string = event.payload.at;
  void [at, when, first, deadAt, eventAt];
  // @ts-expect-error a Date field comes back as a string, so it has no getTime()
  job.payload.at.getTime();
  // @ts-expect-error functions do not survive JSON
  job.payload.run();
  const u: unknown = untyped.payload;
  void u;
  assertType<Equal<Jsonified<unknown>, unknown>>();
  assertType<Equal<Jsonified<{ a: number; b?: string }>, { a: number; b?: string }>>();
  assertType<Equal<Jsonified<Date>, string>>();
  assertType<Equal<Jsonified<[Date, number]>, [string, number]>>();
  assertType<Equal<Jsonified<Sent['tags']>, Record<string, never>>>();
}
