import { describe, expect, it } from '@jest/globals';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as root from '../../lib/index.js';
import * as contract from '../../lib/contract/index.js';
import * as extend from '../../lib/entry/extend.js';

/** The root's errors, limits and header names an application reads (the rest is the dispatcher, worker, sync, adapters). */
const CONTRACT_PUBLIC = [
  'AlkstoreError',
  'AlreadyRunning',
  'Closed',
  'Codec',
  'Database',
  'InvalidArgument',
  'InvalidFlow',
  'InvalidName',
  'InvalidOption',
  'InvalidSpec',
  'LATENCY_BOUNDS_MS',
  'LATENCY_BUCKETS',
  'SEARCH_SCAN_ROWS',
  'WORKER_SCAN_ROWS',
  'latencyBucket',
  'latencyQuantile',
  'sumLatency',
  'JobCancelled',
  'JobDead',
  'LeadershipLost',
  'PayloadTooLarge',
  'PermanentError',
  'PublishFailed',
  'ReservedName',
  'ResultTimeout',
  'TransactionInProgress',
  'TransactionTimeout',
  'CONTENT_TYPE_HEADER',
  'DEFAULT_MAX_PAYLOAD_BYTES',
  'ENVELOPE_CAUSATION_HEADER',
  'ENVELOPE_CORRELATION_HEADER',
  'FLOW_HEADER',
  'MAX_ATTEMPTS',
  'MAX_BATCH',
  'MAX_HEADERS_BYTES',
  'MAX_KEY_BYTES',
  'MAX_NAME_BYTES',
  'MAX_PAYLOAD_BYTES_LIMIT',
  'MAX_PAYLOAD_DEPTH',
  'MAX_PRIORITY',
  'MESSAGE_TYPE_HEADER',
  'MESSAGE_VERSION_HEADER',
  'MIN_PRIORITY',
  'RESERVED_PREFIX',
  'SCHEDULE_BOUNDARY_HEADER',
  'SCHEDULE_NAME_HEADER',
  'outboxQueueName',
  'readEnvelope',
  'scheduleBoundaryOf',
].sort();

function libFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? libFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

describe('the root entry (nestjs-alkstore)', () => {
  it('exports the contract values an application reads; the validation helpers are in /extend only', () => {
    const rootContract = Object.keys(contract)
      .filter((k) => k in root)
      .sort();
    expect(rootContract).toEqual(CONTRACT_PUBLIC);
    for (const k of Object.keys(contract).filter((k) => !CONTRACT_PUBLIC.includes(k)))
      expect({ k, inExtend: k in extend }).toEqual({ k, inExtend: true });
  });

  it('exports openStore and the Store token; the 0.2 deprecated re-exports are gone', () => {
    expect(typeof root.openStore).toBe('function');
    expect(typeof root.Store).toBe('function');
    expect(existsSync('lib/root-deprecated.ts')).toBe(false);
    for (const k of ['validateName', 'requireInt', 'parseScheduleSpec', 'encodePayload', 'SCHEDULER_LOCK'])
      expect({ k, inRoot: k in root }).toEqual({ k, inRoot: false });
  });

  it('no 0.2 @deprecated alias is left in lib', () => {
    const marked = libFiles('lib').filter((f) => readFileSync(f, 'utf8').includes('@deprecated'));
    expect(marked).toEqual([]);
  });

  it('no longer installs anything process-wide: setEnqueueHeadersHook is gone (a store takes enqueueHeaders)', () => {
    expect('setEnqueueHeadersHook' in root).toBe(false);
    expect('setEnqueueHeadersHook' in contract).toBe(false);
  });
});
