import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Closed, InvalidOption } from '../../lib/contract/errors.js';
import { FileJournalOutboxStore, InMemoryOutboxStore, ReliableOutbox } from '../../lib/reliable-sync/index.js';
import {
  InjectReliableOutbox,
  ReliableSyncModule,
  getReliableOutboxToken,
} from '../../lib/reliable-sync/nest/index.js';

const root = mkdtempSync(join(tmpdir(), 'alkstore-rsync-nest-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const CONFIG = 'SYNC_DIR';
@Module({ providers: [{ provide: CONFIG, useValue: root }], exports: [CONFIG] })
class ConfigModule {}

@Injectable()
class Peers {
  constructor(
    @InjectReliableOutbox('peer-a') readonly a: ReliableOutbox,
    @InjectReliableOutbox() readonly fallback: ReliableOutbox,
  ) {}
}

describe('ReliableSyncModule', () => {
  it('provides opened outboxes by name and closes their stores on shutdown', async () => {
    let journal: FileJournalOutboxStore | null = null;
    const moduleRef = await Test.createTestingModule({
      imports: [
        ReliableSyncModule.forFeature([
          {
            name: 'peer-a',
            imports: [ConfigModule],
            inject: [CONFIG],
            useFactory: async (dir: string) =>
              (journal = await FileJournalOutboxStore.open({ directory: dir, key: 'peer-a' })),
          },
          { useFactory: () => new InMemoryOutboxStore() },
        ]),
      ],
      providers: [Peers],
    }).compile();
    const app = moduleRef.createNestApplication();
    await app.init();
    const peers = app.get(Peers);
    expect(peers.a).toBeInstanceOf(ReliableOutbox);
    expect(peers.a.store).toBe(journal);
    expect(app.get(getReliableOutboxToken())).toBe(peers.fallback);
    await peers.a.append(1, new Uint8Array([1]));
    await app.close();
    await expect(journal!.loadCursor()).rejects.toThrow(Closed);

    const reopened = await ReliableOutbox.open(await FileJournalOutboxStore.open({ directory: root, key: 'peer-a' }));
    expect(reopened.retainedEpochs()).toEqual([1]);
    await (reopened.store as FileJournalOutboxStore).close();
  });

  it('refuses a name registered twice', () => {
    expect(() =>
      ReliableSyncModule.forFeature([
        { name: 'x', useFactory: () => new InMemoryOutboxStore() },
        { name: 'x', useFactory: () => new InMemoryOutboxStore() },
      ]),
    ).toThrow(InvalidOption);
  });
});
