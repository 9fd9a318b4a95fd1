import { describe, expect, it } from '@jest/globals';
import {
  decodeEntry,
  decodeIndexEntry,
  encodeEntry,
  encodeIndexEntry,
  type Entry,
  type IndexEntry,
} from '../../lib/workflows/journal.js';

// The journal's stored form is the one 0.2 wrote (single-letter keys); the code reads readable entries.
// Each pair below is an entry as the code holds it and the exact object 0.2 published for it.
const error = { name: 'Error', message: 'card declined', code: null };
const pairs: [string, Entry, unknown][] = [
  [
    'a start with a parent, a priority and limit keys',
    {
      type: 'start',
      workflow: 'checkout',
      version: 2,
      input: { order: 7 },
      parentId: 'p-1',
      priority: 5,
      concurrencyKey: 'tenant:a',
      rateLimitKey: 'api',
    },
    { t: 'start', wf: 'checkout', v: 2, input: { order: 7 }, pa: 'p-1', pr: 5, ck: 'tenant:a', rk: 'api' },
  ],
  [
    'a plain start',
    { type: 'start', workflow: 'greet', version: 1, input: null },
    { t: 'start', wf: 'greet', v: 1, input: null },
  ],
  [
    'a step done with a result',
    { type: 'done', position: 0, kind: 'step', name: 'charge', result: { paid: 12 } },
    { t: 'done', p: 0, k: 'step', n: 'charge', r: { v: { paid: 12 } } },
  ],
  [
    'a step done with an undefined result',
    { type: 'done', position: 3, kind: 'transaction', name: 'write' },
    { t: 'done', p: 3, k: 'transaction', n: 'write', r: {} },
  ],
  [
    'a step failed for good',
    { type: 'done', position: 1, kind: 'step', name: 'charge', error, attempts: 3 },
    { t: 'done', p: 1, k: 'step', n: 'charge', e: error, a: 3 },
  ],
  [
    'a consumed signal',
    { type: 'done', position: 2, kind: 'signal', name: 'go', result: { offset: 41, data: { ok: true } } },
    { t: 'done', p: 2, k: 'signal', n: 'go', r: { v: { o: 41, d: { ok: true } } } },
  ],
  [
    'a wait for a signal that timed out',
    { type: 'done', position: 2, kind: 'signal', name: 'go' },
    { t: 'done', p: 2, k: 'signal', n: 'go', r: {} },
  ],
  [
    'a child start',
    { type: 'done', position: 4, kind: 'child', name: 'kid', result: { id: 'r:4', workflow: 'kid' } },
    { t: 'done', p: 4, k: 'child', n: 'kid', r: { v: { id: 'r:4', workflow: 'kid' } } },
  ],
  [
    'ctx.now',
    { type: 'done', position: 5, kind: 'now', name: '', result: 1_700_000_000_000 },
    { t: 'done', p: 5, k: 'now', n: '', r: { v: 1_700_000_000_000 } },
  ],
  [
    'a failed attempt',
    { type: 'retry', position: 1, kind: 'step', name: 'charge', attempt: 2, error, retryAt: 1_700_000_005_000 },
    { t: 'retry', p: 1, k: 'step', n: 'charge', a: 2, e: error, at: 1_700_000_005_000 },
  ],
  ['a sleep', { type: 'sleep', position: 6, until: 99 }, { t: 'sleep', p: 6, until: 99 }],
  [
    'a wait with a timeout',
    { type: 'wait', position: 7, signal: 'approve', until: 123 },
    { t: 'wait', p: 7, n: 'approve', until: 123 },
  ],
  [
    'a wait without one',
    { type: 'wait', position: 7, signal: 'approve', until: null },
    { t: 'wait', p: 7, n: 'approve', until: null },
  ],
  ['a join', { type: 'join', position: 8, runIds: ['a', 'b'] }, { t: 'join', p: 8, ids: ['a', 'b'] }],
  ['a retry of the run', { type: 'retried', fromPosition: 1 }, { t: 'retried', from: 1 }],
  ['a signal', { type: 'signal', name: 'go', data: [1, 2] }, { t: 'signal', n: 'go', d: [1, 2] }],
  ['a cancellation', { type: 'cancel' }, { t: 'cancel' }],
  [
    'a completed end',
    { type: 'end', state: 'completed', result: { total: 3 } },
    { t: 'end', s: 'completed', r: { v: { total: 3 } } },
  ],
  ['a completed end without a value', { type: 'end', state: 'completed' }, { t: 'end', s: 'completed', r: {} }],
  ['a failed end', { type: 'end', state: 'failed', error }, { t: 'end', s: 'failed', e: error }],
];

describe('workflow journal codec', () => {
  it.each(pairs)('encodes %s to the stored form 0.2 wrote', (_what, entry, stored) => {
    expect(encodeEntry(entry)).toStrictEqual(stored);
  });

  it.each(pairs)('decodes %s written by 0.2 to the readable entry', (_what, entry, stored) => {
    expect(decodeEntry(stored)).toStrictEqual(entry);
  });

  it.each(pairs)('round-trips %s through JSON, as the stream stores it', (_what, entry) => {
    expect(decodeEntry(JSON.parse(JSON.stringify(encodeEntry(entry))))).toStrictEqual(entry);
  });

  it('a done entry 0.2 wrote without an attempt count decodes as one attempt', () => {
    expect(decodeEntry({ t: 'done', p: 0, k: 'step', n: 's', e: error })).toStrictEqual({
      type: 'done',
      position: 0,
      kind: 'step',
      name: 's',
      error,
      attempts: 1,
    });
  });

  it('a payload that is no journal entry decodes to null, so the fold skips it', () => {
    for (const p of [null, 3, 'x', {}, { t: 'later-kind', x: 1 }]) expect(decodeEntry(p)).toBeNull();
  });

  const index: [IndexEntry, unknown][] = [
    [
      { state: 'running', workflow: 'greet', version: 1 },
      { s: 'running', wf: 'greet', v: 1 },
    ],
    [{ state: 'completed' }, { s: 'completed' }],
    [{ state: 'failed' }, { s: 'failed' }],
    [{ state: 'cancelled' }, { s: 'cancelled' }],
    [{ state: 'pruned' }, { s: 'pruned' }],
  ];
  it.each(index)('the runs index entry %o is stored as 0.2 wrote it and read back', (entry, stored) => {
    expect(encodeIndexEntry(entry)).toStrictEqual(stored);
    expect(decodeIndexEntry(stored)).toStrictEqual(entry);
  });
});
