import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from '@jest/globals';
import { InvalidArgument } from '../../lib/contract/errors.js';
import {
  FileJournalOutboxStore,
  InMemoryOutboxStore,
  PostgresOutboxStore,
  ReliableOutbox,
  SqliteOutboxStore,
  encodeJournalRecord,
  type FileJournalOutboxStoreOptions,
  type OutboxRecord,
  type OutboxStore,
  type SqliteOutboxStoreOptions,
} from '../../lib/reliable-sync/index.js';
import { PG_URL, dropPgSchemas } from '../helpers/engines.js';

/** A store handle the fixtures can close. */
export type TestStore = OutboxStore & { close?(): Promise<void> };

/** One empty persistent location (database, schema, directory) for one scenario. */
export interface OutboxLocation {
  /** Opens a new store handle on the location. */
  open(key?: string): Promise<TestStore>;
  /** Closes every open handle, as when the process exits. */
  restart(): Promise<void>;
}

/** A kind of store: makes locations, and cleans up after the test file. */
export interface StoreKind {
  readonly name: string;
  location(): Promise<OutboxLocation>;
  cleanup(): Promise<void>;
}

function tracking(openOne: (key: string | undefined) => Promise<TestStore>): OutboxLocation {
  const open: TestStore[] = [];
  return {
    async open(key) {
      const s = await openOne(key);
      open.push(s);
      return s;
    },
    async restart() {
      for (const s of open.splice(0)) await s.close?.();
    },
  };
}

export function memoryKind(): StoreKind {
  return {
    name: 'in-memory',
    async location() {
      const byKey = new Map<string, InMemoryOutboxStore>();
      return {
        async open(key = 'default') {
          let s = byKey.get(key);
          if (!s) byKey.set(key, (s = new InMemoryOutboxStore()));
          return s;
        },
        async restart() {},
      };
    },
    async cleanup() {},
  };
}

/** SQLite files opened through `driver` (default: the store's own choice, 'auto'). */
export function sqliteKind(driver?: SqliteOutboxStoreOptions['driver']): StoreKind {
  const dir = mkdtempSync(join(tmpdir(), 'alkstore-rsync-sqlite-'));
  let n = 0;
  const all: OutboxLocation[] = [];
  return {
    name: driver ? `sqlite (file, ${driver})` : 'sqlite (file)',
    async location() {
      n += 1;
      const path = join(dir, `loc-${n}.db`);
      const loc = tracking((key) => SqliteOutboxStore.open({ path, key, ...(driver ? { driver } : {}) }));
      all.push(loc);
      return loc;
    },
    async cleanup() {
      for (const l of all) await l.restart();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function postgresKind(fileTag: string): StoreKind {
  const schema = `rsync_${fileTag}_${process.pid}_${Date.now().toString(36)}`;
  let n = 0;
  const all: OutboxLocation[] = [];
  return {
    name: 'postgres',
    async location() {
      n += 1;
      const tablePrefix = `loc${n}`;
      const loc = tracking((key) => PostgresOutboxStore.open({ connectionString: PG_URL, schema, tablePrefix, key }));
      all.push(loc);
      return loc;
    },
    async cleanup() {
      for (const l of all) await l.restart();
      await dropPgSchemas(schema);
    },
  };
}

export function journalKind(options: Partial<FileJournalOutboxStoreOptions> = {}): StoreKind {
  const root = mkdtempSync(join(tmpdir(), 'alkstore-rsync-journal-'));
  let n = 0;
  const all: OutboxLocation[] = [];
  return {
    name: 'file journal',
    async location() {
      n += 1;
      const directory = join(root, `loc-${n}`);
      const loc = tracking((key) => FileJournalOutboxStore.open({ ...options, directory, key }));
      all.push(loc);
      return loc;
    },
    async cleanup() {
      for (const l of all) await l.restart();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/**
 * Three processes save interleaved cursors on one SQLite file (through `driver`, default 'auto') at
 * once; the stored cursor is the largest of them all.
 */
export async function expectCursorRaceKeepsMax(
  path: string,
  driver?: SqliteOutboxStoreOptions['driver'],
): Promise<void> {
  const options = { path, key: 'shared', ...(driver ? { driver } : {}) };
  // Create the tables first so the children only race on the cursor upsert.
  const first = await SqliteOutboxStore.open(options);
  const child = (values: number[]) => `
    const rs = await import(${JSON.stringify(join(process.cwd(), 'lib/reliable-sync/index.ts'))});
    const s = await rs.SqliteOutboxStore.open(${JSON.stringify(options)});
    for (const v of ${JSON.stringify(values)}) await s.saveCursor(v);
    await s.close();
  `;
  const lists = [0, 1, 2].map((k) => Array.from({ length: 50 }, (_, i) => (i * 31 + k * 17) % 97));
  try {
    await Promise.all(
      lists.map(
        (values) =>
          new Promise<void>((resolve, reject) => {
            execFile(
              process.execPath,
              ['--import', 'tsx', '--input-type=module', '--no-warnings', '-e', child(values)],
              { cwd: process.cwd() },
              (err) => (err ? reject(err) : resolve()),
            );
          }),
      ),
    );
    expect(await first.loadCursor()).toBe(Math.max(...lists.flat()));
  } finally {
    await first.close();
  }
}

// ---- vectors --------------------------------------------------------------

/** A frame as the vectors spell it. */
export interface VectorFrame {
  frame?: string;
  frameHex?: string;
}
export interface VectorRecord extends VectorFrame {
  epoch: number;
}

export function frameBytes(v: VectorFrame): Uint8Array {
  if (v.frameHex !== undefined) return new Uint8Array(Buffer.from(v.frameHex, 'hex'));
  if (v.frame !== undefined) return new Uint8Array(Buffer.from(v.frame, 'utf8'));
  throw new Error(`vector has neither frame nor frameHex: ${JSON.stringify(v)}`);
}

/** Records as plain `{ epoch, hex }` so expect() diffs read well. */
export function show(records: readonly OutboxRecord[]): { epoch: number; hex: string }[] {
  return records.map((r) => ({ epoch: r.epoch, hex: Buffer.from(r.frame).toString('hex') }));
}
export function showVector(records: readonly VectorRecord[]): { epoch: number; hex: string }[] {
  return records.map((r) => ({ epoch: r.epoch, hex: Buffer.from(frameBytes(r)).toString('hex') }));
}

export function loadVectors<T>(name: string): T {
  return JSON.parse(readFileSync(join(process.cwd(), 'conformance', 'reliable-sync', name), 'utf8')) as T;
}

interface Step extends VectorFrame {
  op: 'open' | 'append' | 'ack' | 'put' | 'deleteThrough' | 'saveCursor' | 'restart' | 'expect';
  handle?: string;
  key?: string;
  epoch?: number;
  cursor?: number;
  written?: boolean;
  error?: string;
  argument?: string;
  replay?: VectorRecord[];
  replayFrom?: number;
  storedCursor?: number;
  pending?: number[];
  scanAfter?: { after: number; records: VectorRecord[] };
}
export interface ProtocolScenario {
  name: string;
  steps: Step[];
}
export interface ProtocolVectors {
  format: string;
  scenarios: ProtocolScenario[];
}

/** Replays one protocol scenario on a fresh location. */
export async function runScenario(location: OutboxLocation, scenario: ProtocolScenario): Promise<void> {
  const handles = new Map<string, { store: TestStore; outbox: ReliableOutbox<TestStore> }>();
  const h = (step: Step, i: number) => {
    const x = handles.get(step.handle ?? '');
    if (!x) throw new Error(`step ${i}: handle ${step.handle} is not open`);
    return x;
  };
  for (const [i, step] of scenario.steps.entries()) {
    const where = `step ${i} (${JSON.stringify(step)})`;
    switch (step.op) {
      case 'open': {
        const store = await location.open(step.key);
        handles.set(step.handle!, { store, outbox: await ReliableOutbox.open(store) });
        break;
      }
      case 'restart':
        handles.clear();
        await location.restart();
        break;
      case 'append': {
        const call = h(step, i).outbox.append(step.epoch!, frameBytes(step));
        if (step.error) {
          const err: unknown = await call.then(
            () => new Error(`${where}: resolved; expected ${step.error}`),
            (e: unknown) => e,
          );
          if (step.error !== 'InvalidArgument') throw new Error(`${where}: unknown error class ${step.error}`);
          expect({
            where,
            cls: (err as Error).name,
            rangeError: err instanceof RangeError,
            code: (err as InvalidArgument).code,
            argument: (err as InvalidArgument).argument,
          }).toEqual({
            where,
            cls: 'InvalidArgument',
            rangeError: true,
            code: 'INVALID_ARGUMENT',
            argument: step.argument,
          });
          expect(err).toBeInstanceOf(InvalidArgument);
        } else {
          const written = await call;
          if (step.written !== undefined) expect({ where, written }).toEqual({ where, written: step.written });
        }
        break;
      }
      case 'ack': {
        const cursor = await h(step, i).outbox.ackThrough(step.epoch!);
        expect({ where, cursor }).toEqual({ where, cursor: step.cursor });
        break;
      }
      case 'put':
        await h(step, i).store.put(step.epoch!, frameBytes(step));
        break;
      case 'deleteThrough':
        await h(step, i).store.deleteThrough(step.epoch!);
        break;
      case 'saveCursor':
        await h(step, i).store.saveCursor(step.epoch!);
        break;
      case 'expect': {
        const { store, outbox } = h(step, i);
        if (step.replay) {
          const replay = show(await outbox.replayFrom(step.replayFrom ?? 0));
          expect({ where, replay }).toEqual({ where, replay: showVector(step.replay) });
        }
        if (step.cursor !== undefined) expect({ where, cursor: outbox.cursor }).toEqual({ where, cursor: step.cursor });
        if (step.storedCursor !== undefined) {
          const storedCursor = await store.loadCursor();
          expect({ where, storedCursor }).toEqual({ where, storedCursor: step.storedCursor });
        }
        if (step.pending) expect({ where, pending: outbox.retainedEpochs() }).toEqual({ where, pending: step.pending });
        if (step.scanAfter) {
          const scan = show(await store.scanAfter(step.scanAfter.after));
          expect({ where, scan }).toEqual({ where, scan: showVector(step.scanAfter.records) });
        }
        break;
      }
      default:
        throw new Error(`unknown step op in ${where}`);
    }
  }
}

// ---- journal vectors ------------------------------------------------------

export interface LogicalRecord extends VectorFrame {
  op: string;
  epoch: number;
}
export interface JournalCase {
  name: string;
  records: LogicalRecord[];
  torn?: { afterRecord: number; record: LogicalRecord; keepBytes?: number; dropBytes?: number };
  expect: { cursor: number; frames: VectorRecord[] } | { error: string; record: number };
}
export interface JournalVectors {
  format: string;
  cases: JournalCase[];
}

/** Encodes a logical record as one JSON line; opcodes this build does not know are encoded the same way. */
export function encodeLogical(r: LogicalRecord): Buffer {
  if (r.op === 'put') return encodeJournalRecord({ op: 'put', epoch: r.epoch, frame: frameBytes(r) });
  if (r.op === 'cursor' || r.op === 'delete_through') return encodeJournalRecord({ op: r.op, epoch: r.epoch });
  const obj: Record<string, unknown> = { op: r.op, epoch: r.epoch };
  if (r.frame !== undefined || r.frameHex !== undefined) obj.frame = Buffer.from(frameBytes(r)).toString('base64');
  return Buffer.from(`${JSON.stringify(obj)}\n`);
}

/** The JSON-lines bytes of a journal case. */
export function encodeCase(c: JournalCase): Buffer {
  const parts = c.records.map(encodeLogical);
  if (c.torn) {
    const full = encodeLogical(c.torn.record);
    const cut =
      c.torn.keepBytes !== undefined
        ? full.subarray(0, c.torn.keepBytes)
        : full.subarray(0, full.length - (c.torn.dropBytes ?? 0));
    if (cut.length >= full.length || cut.length === 0)
      throw new Error(`torn marker of ${c.name} must cut a proper, non-empty prefix`);
    const interior = c.torn.afterRecord < c.records.length;
    parts.splice(c.torn.afterRecord, 0, interior ? Buffer.concat([cut, Buffer.from('\n')]) : cut);
  }
  return Buffer.concat(parts);
}
