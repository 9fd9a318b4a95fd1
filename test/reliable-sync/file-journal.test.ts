import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { AlkstoreError, Closed, Codec, InvalidName } from '../../lib/contract/errors.js';
import {
  FileJournalOutboxStore,
  JournalCorrupt,
  ReliableOutbox,
  decodeJournal,
  journalFileName,
} from '../../lib/reliable-sync/index.js';
import { encodeCase, loadVectors, show, showVector, type JournalVectors } from './fixtures.js';

const root = mkdtempSync(join(tmpdir(), 'alkstore-rsync-fj-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
function freshDir(): string {
  n += 1;
  const dir = join(root, `d${n}`);
  mkdirSync(dir);
  return dir;
}
const text = (s: string): Uint8Array => new Uint8Array(Buffer.from(s));
const journalPath = (dir: string, key = 'default'): string => join(dir, journalFileName(key));

async function openCorrupt(dir: string): Promise<JournalCorrupt> {
  const err = await FileJournalOutboxStore.open({ directory: dir }).then(
    async (s) => {
      await s.close();
      throw new Error('the journal opened although it is corrupt');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(JournalCorrupt);
  return err as JournalCorrupt;
}

const vectors = loadVectors<JournalVectors>('outbox_journal_decode.json');

describe('outbox_journal_decode.json on the file journal', () => {
  it('reads a vector file of the documented format', () => {
    expect(vectors.format).toBe('alkstore.reliable-sync.outbox-journal-decode/1');
  });

  for (const c of vectors.cases) {
    it(c.name, async () => {
      const dir = freshDir();
      const bytes = encodeCase(c);
      writeFileSync(journalPath(dir), bytes);
      if ('error' in c.expect) {
        const err = await openCorrupt(dir);
        expect(err.code).toBe(c.expect.error);
        expect(err.record).toBe(c.expect.record);
        expect(() => decodeJournal(bytes)).toThrow(JournalCorrupt);
        // A refused journal is left exactly as found.
        expect(readFileSync(journalPath(dir)).equals(bytes)).toBe(true);
        return;
      }
      const store = await FileJournalOutboxStore.open({ directory: dir });
      try {
        expect(await store.loadCursor()).toBe(c.expect.cursor);
        expect(show(await store.scanAfter(0))).toEqual(showVector(c.expect.frames));
      } finally {
        await store.close();
      }
    });
  }
});

describe('journal format', () => {
  it('writes the documented JSON lines, one record per call', async () => {
    const dir = freshDir();
    const store = await FileJournalOutboxStore.open({ directory: dir });
    const outbox = await ReliableOutbox.open(store);
    await outbox.append(1, text('hi'));
    await outbox.append(2, new Uint8Array([0, 255]));
    await outbox.ackThrough(1);
    await store.close();
    expect(readFileSync(journalPath(dir), 'utf8')).toBe(
      [
        '{"op":"put","epoch":1,"frame":"aGk="}',
        '{"op":"put","epoch":2,"frame":"AP8="}',
        '{"op":"cursor","epoch":1}',
        '{"op":"delete_through","epoch":1}',
        '',
      ].join('\n'),
    );
  });

  it('does not journal a cursor that would not raise the maximum, nor a delete_through with nothing to delete', async () => {
    const dir = freshDir();
    const store = await FileJournalOutboxStore.open({ directory: dir });
    await store.saveCursor(5);
    await store.saveCursor(3);
    await store.deleteThrough(5);
    await store.close();
    expect(readFileSync(journalPath(dir), 'utf8')).toBe('{"op":"cursor","epoch":5}\n');
  });

  const damaged: [string, string][] = [
    ['an unexpected field', '{"op":"cursor","epoch":1,"extra":true}'],
    ['a missing field', '{"op":"put","epoch":1}'],
    ['a negative epoch', '{"op":"cursor","epoch":-1}'],
    ['a fractional epoch', '{"op":"cursor","epoch":1.5}'],
    ['an epoch above 2^53 - 1', '{"op":"cursor","epoch":9007199254740993}'],
    ['a string epoch', '{"op":"cursor","epoch":"1"}'],
    ['bad base64', '{"op":"put","epoch":1,"frame":"a*=="}'],
    ['unpadded base64', '{"op":"put","epoch":1,"frame":"aGk"}'],
    ['an empty line', ''],
    ['a JSON array', '["put",1]'],
    ['no opcode', '{"epoch":1}'],
  ];
  for (const [what, line] of damaged) {
    it(`refuses a complete record with ${what}`, async () => {
      const dir = freshDir();
      writeFileSync(journalPath(dir), `{"op":"put","epoch":1,"frame":"aGk="}\n${line}\n{"op":"cursor","epoch":1}\n`);
      const err = await openCorrupt(dir);
      expect(err).toBeInstanceOf(AlkstoreError);
      expect(err.code).toBe('JOURNAL_CORRUPT');
      expect(err.record).toBe(2);
      expect(err.offset).toBe('{"op":"put","epoch":1,"frame":"aGk="}\n'.length);
      expect(err.message).toContain(journalPath(dir));
      expect(err.message).toContain('record 2');
    });
  }

  it('refuses a complete record that is not valid UTF-8', async () => {
    const dir = freshDir();
    writeFileSync(
      journalPath(dir),
      Buffer.concat([Buffer.from('{"op":"cursor","epoch":1}\n'), Buffer.from([0x7b, 0xff, 0xfe, 0x0a])]),
    );
    const err = await openCorrupt(dir);
    expect(err.record).toBe(2);
    expect(err.reason).toMatch(/UTF-8/);
  });

  it('names the unknown opcode in the error', async () => {
    const dir = freshDir();
    writeFileSync(journalPath(dir), '{"op":"snapshot","epoch":1}\n');
    const err = await openCorrupt(dir);
    expect(err.message).toContain('unknown opcode "snapshot"');
  });
});

describe('torn tail repair', () => {
  const complete = '{"op":"put","epoch":1,"frame":"aGk="}\n{"op":"cursor","epoch":0}\n';
  const torn = '{"op":"put","epoch":2,"fr';

  it('leaves the file untouched when nothing is appended', async () => {
    const dir = freshDir();
    writeFileSync(journalPath(dir), complete + torn);
    const store = await FileJournalOutboxStore.open({ directory: dir });
    expect(show(await store.scanAfter(0))).toEqual([{ epoch: 1, hex: Buffer.from('hi').toString('hex') }]);
    await store.close();
    expect(readFileSync(journalPath(dir), 'utf8')).toBe(complete + torn);
  });

  it('cuts the torn record before the next append, keeping every complete record', async () => {
    const dir = freshDir();
    writeFileSync(journalPath(dir), complete + torn);
    const store = await FileJournalOutboxStore.open({ directory: dir });
    await store.put(3, text('yo'));
    await store.close();
    expect(readFileSync(journalPath(dir), 'utf8')).toBe(`${complete}{"op":"put","epoch":3,"frame":"eW8="}\n`);
    const again = await FileJournalOutboxStore.open({ directory: dir });
    expect((await again.scanAfter(0)).map((r) => r.epoch)).toEqual([1, 3]);
    await again.close();
  });
});

describe('compaction', () => {
  it('keeps the journal bounded and the state intact across many appends and acks', async () => {
    const dir = freshDir();
    const store = await FileJournalOutboxStore.open({ directory: dir, fsync: 'never', compactThresholdBytes: 2048 });
    const outbox = await ReliableOutbox.open(store);
    let largest = 0;
    for (let e = 1; e <= 400; e += 1) {
      await outbox.append(e, text(`frame-${e}`));
      if (e % 3 === 0) await outbox.ackThrough(e - 2);
      largest = Math.max(largest, statSync(journalPath(dir)).size);
    }
    // 400 puts alone are ~17 KB; compaction keeps the file near the threshold.
    expect(largest).toBeLessThan(4096);
    await store.close();
    expect(readdirSync(dir)).toEqual([journalFileName('default')]);
    const again = await ReliableOutbox.open(await FileJournalOutboxStore.open({ directory: dir }));
    expect(again.cursor).toBe(397);
    expect(show(await again.replayFrom())).toEqual(
      [398, 399, 400].map((e) => ({ epoch: e, hex: Buffer.from(`frame-${e}`).toString('hex') })),
    );
    await again.store.close();
  });

  it('compact() rewrites the journal to its live state: the cursor, then the retained puts', async () => {
    const dir = freshDir();
    const store = await FileJournalOutboxStore.open({ directory: dir });
    const outbox = await ReliableOutbox.open(store);
    for (let e = 1; e <= 5; e += 1) await outbox.append(e, text(`f${e}`));
    await outbox.ackThrough(3);
    await store.compact();
    expect(readFileSync(journalPath(dir), 'utf8')).toBe(
      '{"op":"cursor","epoch":3}\n{"op":"put","epoch":4,"frame":"ZjQ="}\n{"op":"put","epoch":5,"frame":"ZjU="}\n',
    );
    await outbox.append(6, text('f6'));
    await store.close();
    const again = await ReliableOutbox.open(await FileJournalOutboxStore.open({ directory: dir }));
    expect(again.retainedEpochs()).toEqual([4, 5, 6]);
    await again.store.close();
  });

  it('ignores the temp file of a compaction that crashed before its rename', async () => {
    const dir = freshDir();
    writeFileSync(journalPath(dir), '{"op":"cursor","epoch":2}\n');
    writeFileSync(`${journalPath(dir)}.compact`, '{"op":"cursor","ep');
    const store = await FileJournalOutboxStore.open({ directory: dir });
    expect(await store.loadCursor()).toBe(2);
    await store.close();
    expect(existsSync(`${journalPath(dir)}.compact`)).toBe(false);
  });
});

describe('keys and handles', () => {
  it('escapes keys into distinct, safe file names', () => {
    expect(journalFileName('default')).toBe('default.outbox.jsonl');
    expect(journalFileName('Doc')).not.toBe(journalFileName('doc'));
    expect(journalFileName('../etc/passwd')).toBe('%2E%2E%2Fetc%2Fpasswd.outbox.jsonl');
    expect(journalFileName('a.b')).not.toContain('a.b');
    expect(journalFileName('é')).toBe('%C3%A9.outbox.jsonl');
    expect(() => journalFileName('x'.repeat(201))).toThrow(InvalidName);
  });

  it('rejects an empty key', async () => {
    await expect(FileJournalOutboxStore.open({ directory: freshDir(), key: '' })).rejects.toThrow(InvalidName);
  });

  it('keeps one journal file per key in the directory', async () => {
    const dir = freshDir();
    const a = await FileJournalOutboxStore.open({ directory: dir, key: 'peer/A' });
    const b = await FileJournalOutboxStore.open({ directory: dir, key: 'peer/a' });
    await a.put(1, text('A'));
    await b.put(1, text('a'));
    await b.saveCursor(1);
    expect(await a.loadCursor()).toBe(0);
    await a.close();
    await b.close();
    expect(readdirSync(dir).sort()).toEqual([journalFileName('peer/A'), journalFileName('peer/a')].sort());
  });

  it('two handles on one journal share it: a stale lower cursor never lowers the maximum', async () => {
    const dir = freshDir();
    const a = await FileJournalOutboxStore.open({ directory: dir });
    const b = await FileJournalOutboxStore.open({ directory: dir });
    await Promise.all([a.saveCursor(9), b.saveCursor(3), a.put(10, text('x')), b.put(11, text('y'))]);
    expect(await b.loadCursor()).toBe(9);
    await a.close();
    expect(await b.loadCursor()).toBe(9);
    await b.close();
    const lines = readFileSync(journalPath(dir), 'utf8').trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    const c = await FileJournalOutboxStore.open({ directory: dir });
    expect(await c.loadCursor()).toBe(9);
    expect((await c.scanAfter(9)).map((r) => r.epoch)).toEqual([10, 11]);
    await c.close();
  });

  it('a closed handle refuses calls with Closed', async () => {
    const store = await FileJournalOutboxStore.open({ directory: freshDir() });
    await store.close();
    await expect(store.loadCursor()).rejects.toThrow(Closed);
    await expect(store.put(1, text('x'))).rejects.toThrow(Closed);
  });

  it('with fsync "interval", close flushes and a reopen sees every append', async () => {
    const dir = freshDir();
    const store = await FileJournalOutboxStore.open({ directory: dir, fsync: 'interval', fsyncIntervalMs: 1000 });
    for (let e = 1; e <= 20; e += 1) await store.put(e, text(`f${e}`));
    await store.saveCursor(10);
    await store.close();
    const again = await FileJournalOutboxStore.open({ directory: dir });
    expect(await again.loadCursor()).toBe(10);
    expect((await again.scanAfter(10)).map((r) => r.epoch)).toEqual([11, 12, 13, 14, 15, 16, 17, 18, 19, 20]);
    await again.close();
  });

  it('validates epochs and frames before writing', async () => {
    const dir = freshDir();
    const store = await FileJournalOutboxStore.open({ directory: dir });
    await expect(store.put(-1, text('x'))).rejects.toThrow(RangeError);
    await expect(store.put(1.5, text('x'))).rejects.toThrow(RangeError);
    await expect(store.saveCursor(Number.MAX_SAFE_INTEGER + 1)).rejects.toThrow(RangeError);
    await expect(store.put(1, 'x' as unknown as Uint8Array)).rejects.toThrow(Codec);
    await store.close();
    expect(readFileSync(journalPath(dir), 'utf8')).toBe('');
  });
});
