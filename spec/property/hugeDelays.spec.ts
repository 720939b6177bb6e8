import { expect } from 'chai';
import fc from 'fast-check';
import { fireTime, hugeDelaysProperty, WAITERS } from './hugeDelays.js';

describe('property: every wait fires when due, whatever its size (Node clamps timers above 2³¹−1 ms)', () => {
  it('wait(), retry-after, totalTimeoutMs, degradeAfter first/idle, resetTimeoutMs, halfOpenTimeoutMs: exactly at the delay, no clamp, nothing left scheduled (300 random runs)', () => {
    fc.assert(hugeDelaysProperty, { numRuns: 300 });
  });

  it('the check sees the clamp: each waiter with 3e9 ms fires at its due time', () => {
    for (const waiter of WAITERS) {
      const { at, due, scheduler } = fireTime(waiter, 3e9);
      expect([waiter, at, scheduler.warnings.length]).to.deep.equal([waiter, due, 0]);
      expect(due).to.be.at.least(3e9);
    }
  });

  it('Infinity never fires (wait, halfOpenTimeoutMs) and leaves nothing scheduled', () => {
    for (const waiter of ['wait', 'halfOpenTimeoutMs'] as const) {
      const { at, scheduler } = fireTime(waiter, Infinity);
      expect([waiter, at, scheduler.warnings.length, scheduler.actions.length]).to.deep.equal([waiter, undefined, 0, 0]);
    }
  });
});
