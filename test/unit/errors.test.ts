import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import * as root from '../../lib/index.js';
import * as nest from '../../lib/nest/index.js';
import * as outbox from '../../lib/outbox/index.js';
import * as reliableSync from '../../lib/reliable-sync/index.js';
import { AlkstoreError, PermanentError } from '../../lib/contract/errors.js';
import { IncompatiblePeer, MissingPeer } from '../../lib/internal/load-peer.js';

type ErrorClass = new (...args: never[]) => Error;

function errorClasses(): Map<string, ErrorClass> {
  const found = new Map<string, ErrorClass>();
  for (const mod of [root, nest, outbox, reliableSync] as Record<string, unknown>[]) {
    for (const [name, value] of Object.entries(mod)) {
      if (typeof value === 'function' && value.prototype instanceof Error) found.set(name, value as ErrorClass);
    }
  }
  return found;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

describe('error classes', () => {
  it('every exported error class extends AlkstoreError', () => {
    const classes = errorClasses();
    expect(classes.size).toBeGreaterThan(10);
    // InvalidArgument must be a RangeError (SPEC §3); instanceof AlkstoreError holds for its instances.
    const strays = [...classes]
      .filter(
        ([, cls]) => cls !== AlkstoreError && cls !== root.InvalidArgument && !(cls.prototype instanceof AlkstoreError),
      )
      .map(([name]) => name);
    expect(strays).toEqual([]);
    const invalid = new root.InvalidArgument('priority', 'must be an integer');
    expect(invalid).toBeInstanceOf(RangeError);
    expect(invalid).toBeInstanceOf(AlkstoreError);
  });

  it('PermanentError is an AlkstoreError with code PERMANENT and keeps its cause', () => {
    const cause = new Error('receiver said 400');
    const err = new PermanentError('rejected by the receiver', { cause });
    expect(err).toBeInstanceOf(AlkstoreError);
    expect(err.code).toBe('PERMANENT');
    expect(err.name).toBe('PermanentError');
    expect(err.message).toBe('rejected by the receiver');
    expect(err.cause).toBe(cause);
  });

  it('MissingPeer has its own code and names the package to install', () => {
    const err = new MissingPeer('pg', new Error('not found'));
    expect(err.code).toBe('MISSING_PEER');
    expect(err.message).toContain('npm install pg');
  });

  it('no two error classes share a code', () => {
    const codes = new Map<string, string>();
    const samples: Record<string, () => AlkstoreError> = {
      PermanentError: () => new PermanentError('x'),
      MissingPeer: () => new MissingPeer('pg', null),
      IncompatiblePeer: () => new IncompatiblePeer('better-sqlite3', '13.0.0', 'x'),
      InvalidHandler: () => new nest.InvalidHandler('x'),
      AlreadyRunning: () => new root.AlreadyRunning('x'),
      PayloadTooLarge: () => new root.PayloadTooLarge('c', 9000, 8000),
      ReservedName: () => new root.ReservedName('queue', '__alkstore_x'),
      InvalidName: () => new root.InvalidName('queue', ''),
      Closed: () => new root.Closed(),
      Codec: () => new root.Codec('payload', 'x'),
      Database: () => new root.Database('op', new Error('x')),
      InvalidSpec: () => new root.InvalidSpec('x'),
      LeadershipLost: () => new root.LeadershipLost('x'),
      InvalidOption: () => new root.InvalidOption('x', 'y'),
      JournalCorrupt: () => new reliableSync.JournalCorrupt('f', 1, 0, 'x'),
      InvalidArgument: () => new root.InvalidArgument('x', 'y') as unknown as AlkstoreError,
      PublishTimeout: () => new outbox.PublishTimeout(1),
      PublishFailed: () => new root.PublishFailed('x'),
      StoreCallTimeout: () => new outbox.StoreCallTimeout('claim', 1),
    };
    for (const [name, make] of Object.entries(samples)) {
      const { code } = make();
      expect(codes.get(code)).toBeUndefined();
      codes.set(code, name);
    }
  });

  it('the library source throws no bare Error or TypeError', () => {
    const offenders = sourceFiles('lib').flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .map((line, i) => ({ line, at: `${file}:${i + 1}` }))
        .filter(({ line }) => /(\bthrow|Promise\.reject\()\s*new (Type)?Error\(/.test(line))
        .map(({ at }) => at),
    );
    expect(offenders).toEqual([]);
  });

  it('the library source throws no bare RangeError: bad input is an InvalidArgument naming it', () => {
    // Internal invariants only, never reachable from a caller's input through a validated entry point.
    const invariants = new Set([
      // AckBatcher is not exported. Its only caller, WorkerCore, passes maxBatch = max(1, maxClaim, concurrency + prefetch, …)
      // from options its own constructor has validated (InvalidArgument naming each), and never sets maxWrites.
      'lib/worker/ack-batcher.ts',
    ]);
    const offenders = sourceFiles('lib')
      .filter((file) => !invariants.has(file.split('\\').join('/')))
      .flatMap((file) =>
        readFileSync(file, 'utf8')
          .split('\n')
          .map((line, i) => ({ line, at: `${file}:${i + 1}` }))
          .filter(({ line }) => /(\bthrow|Promise\.reject\()\s*new RangeError\(/.test(line))
          .map(({ at }) => at),
      );
    expect(offenders).toEqual([]);
  });

  it('a file-system failure of the reliable-sync journal is a Database error keeping the OS error as cause', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'alkstore-journal-err-'));
    try {
      const notADirectory = join(dir, 'file');
      writeFileSync(notADirectory, 'x');
      const err = await reliableSync.FileJournalOutboxStore.open({
        directory: join(notADirectory, 'sub'),
        key: 'k',
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(root.Database);
      expect((err as root.Database).code).toBe('DATABASE');
      expect(((err as Error).cause as NodeJS.ErrnoException).code).toMatch(/^(ENOTDIR|EEXIST)$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
