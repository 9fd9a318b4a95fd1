import { describe, expect, it } from '@jest/globals';
import {
  CLAIM_SWEEP_MS,
  SWEEP_LATE_MS,
  SWEEP_POLL_MS,
  ClaimGate,
  SETTINGS_TRUST_MS,
} from '../../lib/engines/postgres/claim-gate.js';

/** A gate on a hand-driven clock, listening, whose queue `q` just had a full claim that read no settings. */
function trusted(): { gate: ClaimGate; clock: { t: number } } {
  const clock = { t: 1_000 };
  const gate = new ClaimGate(() => clock.t);
  gate.setListening(true);
  gate.fullDone('q', gate.begin(), false, true);
  return { gate, clock };
}

describe('ClaimGate (PostgreSQL: which claim statement runs)', () => {
  it('starts with full claims, and goes plain only after a full claim that read no settings and came back full', () => {
    const gate = new ClaimGate(() => 0);
    gate.setListening(true);
    expect(gate.usePlain('q')).toBe(false);
    gate.fullDone('q', gate.begin(), true, true);
    expect(gate.usePlain('q')).toBe(false);
    gate.fullDone('q', gate.begin(), false, false);
    expect(gate.usePlain('q')).toBe(false);
    gate.fullDone('q', gate.begin(), false, true);
    expect(gate.usePlain('q')).toBe(true);
    expect(gate.usePlain('q')).toBe(true);
    expect(gate.usePlain('other')).toBe(false);
    gate.fullDone('q', gate.begin(), false, false);
    expect(gate.usePlain('q')).toBe(false);
  });

  it(`trusts a reading for ${SETTINGS_TRUST_MS} ms at most`, () => {
    const { gate, clock } = trusted();
    clock.t += SETTINGS_TRUST_MS - 1;
    expect(gate.usePlain('q')).toBe(true);
    clock.t += 1;
    expect(gate.usePlain('q')).toBe(false);
  });

  it('an invalidation of the queue, or a listener going down or up, means a full claim next', () => {
    const a = trusted();
    a.gate.invalidate('other');
    expect(a.gate.usePlain('q')).toBe(true);
    a.gate.invalidate('q');
    expect(a.gate.usePlain('q')).toBe(false);
    const b = trusted();
    b.gate.setListening(false);
    expect(b.gate.usePlain('q')).toBe(false);
    b.gate.fullDone('q', b.gate.begin(), false, true);
    expect(b.gate.usePlain('q')).toBe(false);
    b.gate.setListening(true);
    expect(b.gate.usePlain('q')).toBe(false);
  });

  it('a change that arrives while a full claim is in flight wins over what that claim read', () => {
    const { gate } = trusted();
    const started = gate.begin();
    gate.invalidate('q');
    gate.fullDone('q', started, false, true);
    expect(gate.usePlain('q')).toBe(false);
    const again = gate.begin();
    gate.setListening(false);
    gate.setListening(true);
    gate.fullDone('q', again, false, true);
    expect(gate.usePlain('q')).toBe(false);
  });
});

describe('ClaimGate claim watermark (PostgreSQL: where a worker claim may start)', () => {
  const mark = { priority: 0, runAt: 1_000 };

  it('is offered after a full claim that took fresh rows; the sweep is due after the interval, and one too late means a full claim', () => {
    const clock = { t: 0 };
    const gate = new ClaimGate(() => clock.t);
    gate.setListening(true);
    expect(gate.watermark('q')).toBeNull();
    gate.fullDone('q', gate.begin(), false, false, mark);
    expect(gate.watermark('q')).toEqual(mark);
    clock.t = CLAIM_SWEEP_MS - 1;
    expect(gate.sweepDueIn('q')).toBe(1);
    expect(gate.sweepDue('q')).toBe(false);
    clock.t = CLAIM_SWEEP_MS;
    expect(gate.sweepDue('q')).toBe(true);
    expect(gate.sweepDueIn('q')).toBe(0);
    // Claims keep following while the sweep may still land; past that, the next claim is full.
    expect(gate.watermark('q')).toEqual(mark);
    clock.t = CLAIM_SWEEP_MS + SWEEP_LATE_MS;
    expect(gate.watermark('q')).toBeNull();
    // Still marked: the driver sends the worker's next claim full (not plain), which starts the next interval.
    expect(gate.hasMark('q')).toBe(true);
    expect(gate.hasMark('other')).toBe(false);
    gate.rewind();
    expect(gate.hasMark('q')).toBe(false);
  });

  it('is not offered while the settings are not trusted (limited, listener down, invalidated)', () => {
    const gate = new ClaimGate(() => 0);
    gate.setListening(true);
    gate.fullDone('q', gate.begin(), true, false, mark);
    expect(gate.watermark('q')).toBeNull();
    gate.fullDone('q', gate.begin(), false, false, mark);
    gate.invalidate('q');
    expect(gate.watermark('q')).toBeNull();
    gate.fullDone('q', gate.begin(), false, false, mark);
    gate.setListening(false);
    expect(gate.watermark('q')).toBeNull();
  });

  it('a rewind drops every watermark, and one during a claim keeps that claim from setting its own', () => {
    const gate = new ClaimGate(() => 0);
    gate.setListening(true);
    gate.fullDone('q', gate.begin(), false, false, mark);
    gate.rewind();
    expect(gate.watermark('q')).toBeNull();
    const started = gate.begin();
    gate.rewind();
    gate.fullDone('q', started, false, false, { priority: 0, runAt: 2_000 });
    expect(gate.watermark('q')).toBeNull();
    gate.fullDone('q', gate.begin(), false, false, mark);
    const before = gate.rewinds;
    gate.rewind();
    gate.advance('q', { priority: 0, runAt: 3_000 }, before);
    expect(gate.watermark('q')).toBeNull();
  });

  it('a sweep that finds nothing renews the interval; one that finds a job behind, a limit or a rewind drops the watermark', () => {
    const clock = { t: 0 };
    const gate = new ClaimGate(() => clock.t);
    gate.setListening(true);
    gate.fullDone('q', gate.begin(), false, false, mark);
    clock.t = CLAIM_SWEEP_MS;
    const clean = gate.sweepBegin('q');
    expect(gate.sweepDue('q')).toBe(false);
    expect(gate.sweepDueIn('q')).toBe(SWEEP_POLL_MS);
    clock.t = CLAIM_SWEEP_MS + 10;
    gate.sweepDone('q', clean, false, false);
    expect(gate.sweepDueIn('q')).toBe(CLAIM_SWEEP_MS - 10);
    clock.t = 2 * CLAIM_SWEEP_MS + SWEEP_LATE_MS - 1;
    expect(gate.watermark('q')).toEqual(mark);

    for (const [limited, behind] of [
      [false, true],
      [true, false],
    ] as const) {
      gate.fullDone('q', gate.begin(), false, false, mark);
      gate.sweepDone('q', gate.sweepBegin('q'), limited, behind);
      expect(gate.watermark('q')).toBeNull();
      expect(gate.hasMark('q')).toBe(false);
    }
    gate.fullDone('q', gate.begin(), false, false, mark);
    const during = gate.sweepBegin('q');
    gate.rewind();
    gate.fullDone('q', gate.begin(), false, false, mark);
    gate.sweepDone('q', during, false, false);
    expect(gate.watermark('q')).toBeNull();
  });

  it('advances with a claim after it, and a full claim that took nothing keeps it', () => {
    const gate = new ClaimGate(() => 0);
    gate.setListening(true);
    gate.fullDone('q', gate.begin(), false, false, mark);
    gate.advance('q', { priority: 0, runAt: 5_000 }, gate.rewinds);
    expect(gate.watermark('q')).toEqual({ priority: 0, runAt: 5_000 });
    gate.fullDone('q', gate.begin(), false, false, null);
    expect(gate.watermark('q')).toEqual({ priority: 0, runAt: 5_000 });
  });
});
