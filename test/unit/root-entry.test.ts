import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import * as root from '../../lib/index.js';
import * as contract from '../../lib/contract/index.js';

/** What the root entry offers an application, deprecated re-exports aside. */
const PUBLIC = [
  'AlkstoreError',
  'AlreadyRunning',
  'Closed',
  'Codec',
  'Database',
  'IncompatiblePeer',
  'InvalidArgument',
  'InvalidName',
  'InvalidOption',
  'InvalidSpec',
  'LeadershipLost',
  'MissingPeer',
  'PayloadTooLarge',
  'PermanentError',
  'PublishFailed',
  'ReservedName',
  'TransactionInProgress',
  'TransactionTimeout',
  'CONTENT_TYPE_HEADER',
  'DEFAULT_MAX_PAYLOAD_BYTES',
  'ENVELOPE_CAUSATION_HEADER',
  'ENVELOPE_CORRELATION_HEADER',
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
  'openStore',
  'outboxQueueName',
  'readEnvelope',
  'scheduleBoundaryOf',
  'FLOW_HEADER',
  'InvalidFlow',
].sort();

const deprecatedSource = readFileSync(new URL('../../lib/root-deprecated.ts', import.meta.url), 'utf8');
const deprecated = [...deprecatedSource.matchAll(/^export const (\w+)/gm)].map((m) => m[1]!);

describe('the root entry (alkstore)', () => {
  it('exports what an application calls; the validation helpers only as deprecated re-exports', () => {
    expect(
      Object.keys(root)
        .filter((k) => !deprecated.includes(k))
        .sort(),
    ).toEqual(PUBLIC);
  });

  it('marks every re-exported internal @deprecated, naming alkstore/contract or its removal', () => {
    const blocks = deprecatedSource.split(/\n(?=\/\*\*)/).filter((b) => /^export /m.test(b));
    expect(blocks.length).toBeGreaterThan(50);
    for (const b of blocks) expect(b).toMatch(/@deprecated[^\n]*0\.4/);
  });

  it('no longer installs anything process-wide: setEnqueueHeadersHook is gone (a store takes enqueueHeaders)', () => {
    expect('setEnqueueHeadersHook' in root).toBe(false);
    expect('setEnqueueHeadersHook' in contract).toBe(false);
  });

  it('alkstore/contract still exports every helper the root re-exports', () => {
    const fromContract = deprecated.filter((k) => !['parseScheduleSpec', 'parseScheduleSpecSync'].includes(k));
    for (const k of fromContract)
      expect({ k, same: (root as Record<string, unknown>)[k] === (contract as Record<string, unknown>)[k] }).toEqual({
        k,
        same: true,
      });
  });
});
