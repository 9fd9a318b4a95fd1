import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  FileJournalOutboxStore,
  InMemoryOutboxStore,
  SqliteOutboxStore,
  decodeJournal,
  encodeJournalRecord,
  journalFileName,
  type JournalRecord,
} from '../../lib/reliable-sync/index.js';
import { show } from './fixtures.js';
import { outboxProperties, type PropertyKind } from './property-suite.js';

const root = mkdtempSync(join(tmpdir(), 'alkstore-rsync-prop-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const memory = new Map<string, InMemoryOutboxStore>();
const kinds: PropertyKind[] = [
  {
    name: 'in-memory',
    async open(key) {
      let s = memory.get(key);
      if (!s) memory.set(key, (s = new InMemoryOutboxStore()));
      return s;
    },
  },
  { name: 'SQLite file', open: (key) => SqliteOutboxStore.open({ path: join(root, 'prop.db'), key }) },
  {
    name: 'file journal',
    open: (key) => FileJournalOutboxStore.open({ directory: join(root, 'journals'), key, fsync: 'never' }),
  },
];

for (const kind of kinds) outboxProperties(kind);

let crashRuns = 0;

const recordArb: fc.Arbitrary<JournalRecord> = fc.oneof(
  fc.record({ op: fc.constant('put' as const), epoch: fc.nat(1000), frame: fc.uint8Array({ maxLength: 8 }) }),
  fc.record({ op: fc.constant('cursor' as const), epoch: fc.nat(1000) }),
  fc.record({ op: fc.constant('delete_through' as const), epoch: fc.nat(1000) }),
);

describe('crash during an append', () => {
  it('decoding any cut inside the last record yields exactly the records before it', () => {
    fc.assert(
      fc.property(
        fc.array(recordArb, { minLength: 1, maxLength: 8 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (records, at) => {
          const parts = records.map(encodeJournalRecord);
          const before = Buffer.concat(parts.slice(0, -1));
          const last = parts[parts.length - 1];
          const cut = before.length + Math.floor(at * last.length);
          const decoded = decodeJournal(Buffer.concat(parts).subarray(0, cut));
          expect(decoded.records).toEqual(
            records.slice(0, -1).map((r) => (r.op === 'put' ? { ...r, frame: new Uint8Array(r.frame) } : r)),
          );
          expect(decoded.completeLength).toBe(before.length);
          expect(decoded.tornBytes).toBe(cut - before.length);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('the file journal truncated at every byte of its last append loses nothing that was complete, and appends again cleanly', async () => {
    const dir = join(root, 'crash');
    await fc.assert(
      fc.asyncProperty(fc.array(recordArb, { minLength: 0, maxLength: 5 }), recordArb, async (history, lastOp) => {
        const key = `crash-${++crashRuns}`;
        const path = join(dir, journalFileName(key));
        const open = () =>
          FileJournalOutboxStore.open({ directory: dir, key, fsync: 'never', compactThresholdBytes: Infinity });
        const apply = async (s: FileJournalOutboxStore, r: JournalRecord): Promise<void> => {
          if (r.op === 'put') await s.put(r.epoch, r.frame);
          else if (r.op === 'cursor') await s.saveCursor(r.epoch);
          else await s.deleteThrough(r.epoch);
        };
        const snapshot = async (s: FileJournalOutboxStore) => ({
          cursor: await s.loadCursor(),
          frames: show(await s.scanAfter(0)),
        });

        const s0 = await open();
        for (const r of history) await apply(s0, r);
        const before = await snapshot(s0);
        await s0.close();
        const bytesBefore = readFileSync(path);

        const s1 = await open();
        await apply(s1, lastOp);
        const after = await snapshot(s1);
        await s1.close();
        const bytesAfter = readFileSync(path);
        expect(bytesAfter.subarray(0, bytesBefore.length).equals(bytesBefore)).toBe(true);

        for (let cut = bytesBefore.length; cut <= bytesAfter.length; cut += 1) {
          writeFileSync(path, bytesAfter.subarray(0, cut));
          const s = await open();
          expect(await snapshot(s)).toEqual(cut === bytesAfter.length ? after : before);
          // The next append cuts the torn bytes first, so the journal stays readable.
          await s.put(5000, new Uint8Array([1]));
          await s.close();
          const reopened = await open();
          const state = await snapshot(reopened);
          expect(state.frames[state.frames.length - 1]).toEqual({ epoch: 5000, hex: '01' });
          await reopened.close();
        }
      }),
      { numRuns: 25 },
    );
  });
});
