import { expect } from 'chai';
import fc from 'fast-check';
import { backoffDelay, baseDelay, type BackoffPolicy, type Jitter } from '../../src/core/rx/backoff.js';

const JITTERS: readonly Jitter[] = ['none', 'full', 'equal', 'decorrelated'];

/** Whatever a user's `random` may return, the hostile values included. */
const anyRandom = fc.oneof(
  fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
  fc.constantFrom(0, 1, -1, 2, NaN, Infinity, -Infinity, 1 - Number.EPSILON, -0),
  fc.double(),
);

/** Policies that pass option validation (initial, max ≥ 0 finite; multiplier ≥ 1 finite); whole-ms cap. */
const policyArb = (random: number): fc.Arbitrary<BackoffPolicy> =>
  fc.record({
    initialBackoffMs: fc.oneof(fc.integer({ min: 0, max: 10_000 }), fc.double({ min: 0, max: 1e9, noNaN: true })),
    backoffMultiplier: fc.oneof(fc.constant(1), fc.double({ min: 1, max: 10, noNaN: true }), fc.double({ min: 1, max: 1e6, noNaN: true })),
    maxBackoffMs: fc.oneof(fc.integer({ min: 0, max: 60_000 }), fc.integer({ min: 0, max: 2 ** 40 })),
    jitter: fc.constantFrom(...JITTERS),
    random: fc.constant(() => random),
  });

const retryIndex = fc.oneof(fc.integer({ min: 0, max: 20 }), fc.integer({ min: 0, max: 100_000 }));
const previous = fc.oneof(fc.integer({ min: 0, max: 100_000 }), fc.double({ min: 0, max: 1e12, noNaN: true }));

describe('property: backoff maths', () => {
  it('every delay, for every jitter kind and any random(), is a whole number in [0, maxBackoffMs]: never NaN or Infinity', () => {
    fc.assert(
      fc.property(
        anyRandom.chain((r) => fc.tuple(policyArb(r), retryIndex, previous)),
        ([policy, n, prev]) => {
          const d = backoffDelay(n, prev, policy);
          expect(Number.isFinite(d), `delay ${d}`).to.equal(true);
          expect(Number.isInteger(d)).to.equal(true);
          expect(d).to.be.at.least(0).and.at.most(policy.maxBackoffMs);
        },
      ),
      { numRuns: 500 },
    );
  });

  it("jitter 'none' is non-decreasing in the retry number and reaches the cap", () => {
    fc.assert(
      fc.property(policyArb(0), fc.integer({ min: 0, max: 200 }), (policy, n) => {
        const p = { ...policy, jitter: 'none' as const };
        expect(backoffDelay(n + 1, 0, p)).to.be.at.least(backoffDelay(n, 0, p));
        if (p.backoffMultiplier >= 1.01 && p.initialBackoffMs >= 1) expect(backoffDelay(100_000, 0, p)).to.equal(Math.round(p.maxBackoffMs));
      }),
      { numRuns: 300 },
    );
  });

  it('caps are monotone: a larger maxBackoffMs never gives a shorter delay (same random value)', () => {
    fc.assert(
      fc.property(
        anyRandom.chain((r) => fc.tuple(policyArb(r), fc.integer({ min: 0, max: 2 ** 40 }), retryIndex, previous)),
        ([policy, otherCap, n, prev]) => {
          const low = Math.min(policy.maxBackoffMs, otherCap);
          const high = Math.max(policy.maxBackoffMs, otherCap);
          expect(backoffDelay(n, prev, { ...policy, maxBackoffMs: low })).to.be.at.most(backoffDelay(n, prev, { ...policy, maxBackoffMs: high }));
          expect(baseDelay(n, { ...policy, maxBackoffMs: low })).to.be.at.most(baseDelay(n, { ...policy, maxBackoffMs: high }));
        },
      ),
      { numRuns: 500 },
    );
  });

  it("jitter bounds: 'full' in [0, base], 'equal' in [base/2, base], 'decorrelated' in [min(initial, max), max]", () => {
    fc.assert(
      fc.property(
        anyRandom.chain((r) => fc.tuple(policyArb(r), retryIndex, previous)),
        ([policy, n, prev]) => {
          const base = baseDelay(n, policy);
          const d = backoffDelay(n, prev, policy);
          if (policy.jitter === 'full') expect(d).to.be.at.least(0).and.at.most(Math.floor(base));
          if (policy.jitter === 'equal')
            expect(d)
              .to.be.at.least(Math.round(base / 2))
              .and.at.most(Math.round(base));
          if (policy.jitter === 'decorrelated')
            expect(d)
              .to.be.at.least(Math.round(Math.min(policy.initialBackoffMs, policy.maxBackoffMs)))
              .and.at.most(policy.maxBackoffMs);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('a fractional maxBackoffMs may be exceeded by the rounding to whole milliseconds, never by more than 0.5 ms', () => {
    // documented behaviour of rounding, pinned here: delays are whole milliseconds
    fc.assert(
      fc.property(
        anyRandom.chain((r) => fc.tuple(policyArb(r), fc.double({ min: 0, max: 1e6, noNaN: true }), retryIndex, previous)),
        ([policy, cap, n, prev]) => {
          const d = backoffDelay(n, prev, { ...policy, maxBackoffMs: cap });
          expect(d)
            .to.be.at.least(0)
            .and.at.most(cap + 0.5);
        },
      ),
      { numRuns: 300 },
    );
  });
});
