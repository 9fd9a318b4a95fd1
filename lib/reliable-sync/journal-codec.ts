import { AlkstoreError } from '../contract/errors.js';
import { copyFrame } from './epoch.js';

/**
 * One record of the file journal. On disk each record is one line of JSON
 * followed by `\n`, with the fields in this order:
 *
 * - `{"op":"put","epoch":N,"frame":"<standard base64, padded>"}`
 * - `{"op":"cursor","epoch":N}`: the cursor becomes `max(cursor, N)`
 * - `{"op":"delete_through","epoch":N}`: frames at or below N are removed
 */
export type JournalRecord =
  | { readonly op: 'put'; readonly epoch: number; readonly frame: Uint8Array }
  | { readonly op: 'cursor'; readonly epoch: number }
  | { readonly op: 'delete_through'; readonly epoch: number };

/** The opcodes this build understands. A complete record with any other opcode is refused. */
export const JOURNAL_OPCODES: readonly JournalRecord['op'][] = ['put', 'cursor', 'delete_through'];

/**
 * A complete journal record (one ending in `\n`) does not decode: bad UTF-8,
 * bad JSON, an unknown opcode, a missing or extra field, a bad epoch or bad
 * base64. The journal is left untouched; nothing is skipped.
 */
export class JournalCorrupt extends AlkstoreError {
  constructor(
    /** The journal file (or the name a caller gave the bytes). */
    readonly path: string,
    /** 1-based index of the offending record (line). */
    readonly record: number,
    /** Byte offset where the offending record starts. */
    readonly offset: number,
    /** What is wrong with it. */
    readonly reason: string,
  ) {
    super('JOURNAL_CORRUPT', `journal ${path} is corrupt at record ${record} (byte ${offset}): ${reason}`);
  }
}

/** Encodes one record as its JSON line, terminator included. */
export function encodeJournalRecord(record: JournalRecord): Buffer {
  const obj =
    record.op === 'put'
      ? {
          op: 'put',
          epoch: record.epoch,
          frame: Buffer.from(record.frame.buffer, record.frame.byteOffset, record.frame.byteLength).toString('base64'),
        }
      : { op: record.op, epoch: record.epoch };
  return Buffer.from(`${JSON.stringify(obj)}\n`, 'utf8');
}

/** The result of {@link decodeJournal}. */
export interface DecodedJournal {
  /** Every complete record, in file order. */
  readonly records: JournalRecord[];
  /** Bytes covered by the complete records: where the next append must start. */
  readonly completeLength: number;
  /** Length of the torn trailing record (bytes after the last `\n`), 0 when the journal ends cleanly. */
  readonly tornBytes: number;
}

const FIELDS: Record<JournalRecord['op'], readonly string[]> = {
  put: ['op', 'epoch', 'frame'],
  cursor: ['op', 'epoch'],
  delete_through: ['op', 'epoch'],
};
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Decodes journal bytes. A record is complete when its `\n` terminator is
 * present; every complete record must decode, or {@link JournalCorrupt} is
 * thrown (an unknown opcode included: skipping it could resurrect
 * acknowledged frames). Only the bytes after the last `\n` (one torn
 * trailing record, left by a crash during an append) are forgiven, even when
 * they happen to parse: an append that did not write its terminator did not finish.
 */
export function decodeJournal(bytes: Uint8Array, source = '<journal>'): DecodedJournal {
  const records: JournalRecord[] = [];
  let start = 0;
  let index = 0;
  for (;;) {
    const end = bytes.indexOf(0x0a, start);
    if (end < 0) break;
    index += 1;
    records.push(decodeLine(bytes.subarray(start, end), source, index, start));
    start = end + 1;
  }
  return { records, completeLength: start, tornBytes: bytes.byteLength - start };
}

function decodeLine(line: Uint8Array, source: string, index: number, offset: number): JournalRecord {
  const fail = (reason: string): never => {
    throw new JournalCorrupt(source, index, offset, reason);
  };
  let text: string;
  try {
    text = utf8.decode(line);
  } catch {
    return fail('the record is not valid UTF-8');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return fail(`the record is not valid JSON: ${preview(text)}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return fail(`the record is not a JSON object: ${preview(text)}`);
  const obj = value as Record<string, unknown>;
  const op = obj.op;
  if (typeof op !== 'string') return fail('the record has no string "op"');
  if (!Object.hasOwn(FIELDS, op))
    return fail(`unknown opcode ${JSON.stringify(op)} (this build knows ${JOURNAL_OPCODES.join(', ')})`);
  const known = op as JournalRecord['op'];
  for (const k of Object.keys(obj))
    if (!FIELDS[known].includes(k)) fail(`unexpected field ${JSON.stringify(k)} in a ${op} record`);
  for (const k of FIELDS[known])
    if (!Object.hasOwn(obj, k)) fail(`missing field ${JSON.stringify(k)} in a ${op} record`);
  const epoch = obj.epoch;
  if (typeof epoch !== 'number' || !Number.isSafeInteger(epoch) || epoch < 0)
    return fail(`epoch ${preview(JSON.stringify(epoch))} is not a non-negative safe integer`);
  if (known !== 'put') return { op: known, epoch };
  const frame = obj.frame;
  if (typeof frame !== 'string' || !BASE64.test(frame))
    return fail(`frame of epoch ${epoch} is not padded standard base64`);
  return { op: 'put', epoch, frame: new Uint8Array(Buffer.from(frame, 'base64')) };
}

function preview(text: string): string {
  return text.length > 60 ? `${JSON.stringify(text.slice(0, 60))}…` : JSON.stringify(text);
}

/** The live state a journal describes. */
export interface JournalState {
  cursor: number;
  readonly frames: Map<number, Uint8Array>;
}

/** Applies records in order: the cursor keeps the maximum, so a stale handle's lower cursor record never lowers it. */
export function applyJournal(
  records: Iterable<JournalRecord>,
  state: JournalState = { cursor: 0, frames: new Map() },
): JournalState {
  for (const r of records) {
    switch (r.op) {
      case 'put':
        state.frames.set(r.epoch, copyFrame(r.frame));
        break;
      case 'cursor':
        if (r.epoch > state.cursor) state.cursor = r.epoch;
        break;
      case 'delete_through':
        for (const e of state.frames.keys()) if (e <= r.epoch) state.frames.delete(e);
        break;
    }
  }
  return state;
}
