import { readFileSync } from 'node:fs';

/** Reads a vector file from conformance/contract/ (shared by the unit and contract suites). */
export function loadVectors<T>(file: string): T {
  return JSON.parse(readFileSync(new URL(`../../conformance/contract/${file}`, import.meta.url), 'utf8')) as T;
}

export interface BackoffVectors {
  maxBackoffMs: number;
  delays: { attempts: number; baseMs: number; random: number; capMs: number; delayMs: number }[];
  ranges: { attempts: number; baseMs: number; minMs: number; maxMs: number }[];
  invalid: { attempts: number; baseMs: number; argument: 'attempts' | 'baseMs' }[];
  invalidRandom: number[];
}

export interface EverySpecVectors {
  accept: { spec: string; intervalMs: number }[];
  reject: string[];
}

export interface NameVectors {
  kinds: ('channel' | 'stream' | 'queue' | 'outbox' | 'lock' | 'schedule')[];
  valid: string[];
  reserved: string[];
  invalid: string[];
  outboxQueue: { outbox: string; queue: string }[];
}

export interface CodecVectors {
  roundTrip: { value: unknown; text: string }[];
}

export interface CronVectors {
  next: { note: string; spec: string; zone: string; prev: string; next: string }[];
  invalidSpecs: string[];
  invalidZones: string[];
}

export interface QueueFeatureVectors {
  rateWindow: {
    note: string;
    limit: { max: number; perMs: number };
    stored: { windowStart: number; windowCount: number };
    now: number;
    want: number;
    window: number;
    used: number;
    allowed: number;
  }[];
  headers: {
    accept: Record<string, string>[];
    reject: { note: string; headers: unknown }[];
    sized: { name: string; valueBytes: number; ok: boolean }[];
  };
}
