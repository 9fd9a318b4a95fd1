import { describe, expect, it } from '@jest/globals';
import { ClaimGate, SETTINGS_TRUST_MS } from '../../lib/engines/postgres/claim-gate.js';

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
