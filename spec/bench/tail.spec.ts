/**
 * Figure k's simulation (bench/figures/tail.ts), on fewer calls: it is deterministic (seeded, in
 * virtual time), every call delivers, the clients make the requests their rules allow, and the
 * hedges cut the far tail. The figures themselves are `npm run bench:tail`'s.
 */
import { expect } from 'chai';
import { HEAVY_TAIL, simulate, SLOW_FOR_EVERYONE } from '../../bench/figures/tail.js';

describe('bench figure k: tail latency in virtual time', () => {
  const calls = 1_000;

  it('is deterministic: the same seed gives the same figures', () => {
    expect(simulate(HEAVY_TAIL, 'no hedging', calls)).to.deep.equal(simulate(HEAVY_TAIL, 'no hedging', calls));
  });

  it('unhedged makes one request per call; hedged clients cut the far tail', () => {
    const none = simulate(HEAVY_TAIL, 'no hedging', calls);
    const fixed = simulate(HEAVY_TAIL, 'fixed 2 s hedge (Polly default)', calls);
    const ours = simulate(HEAVY_TAIL, 'rxheal p95 hedge, 5 % budget', calls);
    expect(none.extra).to.equal(0);
    expect(fixed.p999).to.be.below(none.p999);
    expect(ours.p999).to.be.below(none.p999);
    expect(ours.extra).to.be.at.most(10 + 0.05 * calls);
  });

  it('a provider slow for everyone: the fixed hedge doubles the requests, the budget keeps rxheal within 10 + 5 %', () => {
    expect(simulate(SLOW_FOR_EVERYONE, 'fixed 2 s hedge (Polly default)', calls).extra).to.equal(calls);
    const ours = simulate(SLOW_FOR_EVERYONE, 'rxheal p95 hedge, 5 % budget', calls);
    expect(ours.extra).to.be.above(0);
    expect(ours.extra).to.be.at.most(10 + 0.05 * calls);
  });
});
