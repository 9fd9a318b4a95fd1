/**
 * Compile-time test (checked by `npx tsc --noEmit -p tsconfig.json`, never run): the payload type
 * of `defineQueue<T>` and `defineOutbox<T>` must be JSON-compatible, so a field the store would refuse
 * at run time (a `Codec` error) is a compile error. Each `@ts-expect-error` line must stay an error.
 */
import type { JsonPayload } from '../../lib/contract/codec.js';
import { defineOutbox, defineQueue } from '../../lib/nest/queue-ref.js';

interface Email {
  to: string;
  cc?: string[];
  attempt: number;
  meta: { tags: string[]; score: number | null };
}
type Tuple = [string, number];

export function checks(): void {
  defineQueue<Email>('emails');
  defineQueue<Tuple>('pairs');
  defineQueue<string>('names');
  defineQueue<{ a?: string }>('optional'); // { a: undefined } is sent as {}
  defineQueue<number>('numbers'); // -0 is accepted and comes back as 0
  defineQueue('untyped');
  defineOutbox<Email>('email-sent');
  defineOutbox<unknown>('anything'); // checked at run time only

  // @ts-expect-error a Date field would be refused at run time (Codec): send an ISO string or epoch ms
  defineQueue<{ at: Date }>('dates');
  // @ts-expect-error a Map field would be refused at run time: send a plain object
  defineQueue<{ tags: Map<string, number> }>('maps');
  // @ts-expect-error a Set field would be refused at run time: send an array
  defineOutbox<{ ids: Set<number> }>('sets');
  // @ts-expect-error a nested Date is refused too
  defineQueue<{ order: { placedAt: Date } }>('nested');
  // @ts-expect-error a Date in an array is refused too
  defineQueue<{ when: Date[] }>('arrays');
  // @ts-expect-error BigInt has no JSON form
  defineQueue<{ n: bigint }>('bigints');
  // @ts-expect-error functions do not survive JSON
  defineOutbox<{ run(): void }>('functions');
}

type Equal<A, B> = (<X>() => X extends A ? 1 : 2) extends <X>() => X extends B ? 1 : 2 ? true : false;
export const same: [Equal<JsonPayload<Email>, Email>, Equal<JsonPayload<unknown>, unknown>] = [true, true];
