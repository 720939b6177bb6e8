import { expect } from 'chai';
import fc from 'fast-check';
import { breakerMatchesModel, runAgainstModel } from './breakerModel.js';

describe('property: CircuitBreaker (through circuitBreak) against a reference model', () => {
  it('never diverges on admissions, rejections, state, counts or events (200 random runs)', () => {
    fc.assert(breakerMatchesModel, { numRuns: 200 });
  });

  it('the model itself: 5 failures open, 60 s later one probe, its success closes', () => {
    const cfg = { failureThreshold: 5, resetTimeoutMs: 60_000, halfOpenMaxCalls: 1, halfOpenTimeoutMs: undefined, window: 'consecutive' as const };
    const fails = Array.from({ length: 5 }, () => [{ kind: 'start' as const }, { kind: 'settle' as const, pick: 0, outcome: 'fail' as const }]).flat();
    expect(() =>
      runAgainstModel(cfg, [...fails, { kind: 'start' }, { kind: 'advance', ms: 60_000 }, { kind: 'start' }, { kind: 'settle', pick: 0, outcome: 'complete' }]),
    ).not.to.throw();
  });
});
