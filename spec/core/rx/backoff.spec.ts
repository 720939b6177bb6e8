import { expect } from 'chai';
import { backoffDelay, baseDelay, type BackoffPolicy } from '../../../src/core/rx/backoff.js';

const policy = (over: Partial<BackoffPolicy> = {}): BackoffPolicy => ({
  initialBackoffMs: 500,
  backoffMultiplier: 2,
  maxBackoffMs: 30_000,
  jitter: 'none',
  random: () => 0.5,
  ...over,
});

describe('backoff', () => {
  it('baseDelay is min(initial · multiplierⁿ, max): the reference 500 → 1000 → 2000 … 30000', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7].map((n) => baseDelay(n, policy()))).to.deep.equal([500, 1000, 2000, 4000, 8000, 16000, 30000, 30000]);
  });

  it('stays at the cap when multiplierⁿ overflows', () => {
    expect(baseDelay(5000, policy())).to.equal(30_000);
    expect(backoffDelay(5000, 500, policy())).to.equal(30_000);
    expect(backoffDelay(5000, 500, policy({ jitter: 'equal' }))).to.equal(22_500);
  });

  it('a multiplier of 1 gives constant backoff', () => {
    expect([0, 3, 9].map((n) => backoffDelay(n, 0, policy({ backoffMultiplier: 1 })))).to.deep.equal([500, 500, 500]);
  });

  it('returns whole milliseconds for every jitter kind', () => {
    for (const jitter of ['none', 'full', 'equal', 'decorrelated'] as const) {
      for (let n = 0; n < 20; n++) {
        const d = backoffDelay(n, 777, policy({ jitter, initialBackoffMs: 333, random: () => 0.123456 }));
        expect(Number.isInteger(d), `${jitter} n=${n}`).to.equal(true);
        expect(d).to.be.within(0, 30_000);
      }
    }
  });

  it('equal jitter spans [base/2, base)', () => {
    expect(backoffDelay(1, 0, policy({ jitter: 'equal', random: () => 0 }))).to.equal(500);
    expect(backoffDelay(1, 0, policy({ jitter: 'equal', random: () => 0.999999 }))).to.equal(1000);
  });

  it('decorrelated jitter never goes below initialBackoffMs nor above the cap', () => {
    expect(backoffDelay(0, 500, policy({ jitter: 'decorrelated', random: () => 0 }))).to.equal(500);
    expect(backoffDelay(0, 100_000, policy({ jitter: 'decorrelated', random: () => 0.9 }))).to.equal(30_000);
  });
});
