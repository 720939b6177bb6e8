import { expect } from 'chai';
import fc from 'fast-check';
import { VirtualTimeScheduler } from 'rxjs';
import { InvalidOptionError } from '../../src/core/errors/errors.js';
import { oddSnapshotsProperty, related, restoreOdd, roundTripProperty } from './snapshots.js';

describe('property: breaker snapshots', () => {
  it('any snapshotBreaker(), through JSON, restores to a breaker that behaves exactly as the original from then on (300 random runs)', () => {
    fc.assert(roundTripProperty, { numRuns: 300 });
  });

  it('any snapshot with one field made odd is refused naming that field, or restores to a breaker that still opens and closes (500 random runs)', () => {
    fc.assert(oddSnapshotsProperty, { numRuns: 500 });
  });

  it('the checks see a window that stopped sliding: a latest bucket far ahead would keep the breaker from opening', () => {
    const config = {
      failureThreshold: 1,
      resetTimeoutMs: 10,
      halfOpenMaxCalls: 1,
      window: { failureRateThreshold: 1, minimumCalls: 2, windowMs: 100 },
    } as const;
    const odd = {
      version: 2,
      name: 'b',
      state: 'closed',
      isolated: false,
      openUntil: null,
      consecutiveFailures: 0,
      window: { bucketMs: 10, latest: 1e9, calls: Array(10).fill(0), failures: Array(10).fill(0) },
    };
    const outcome = restoreOdd(config, new VirtualTimeScheduler(), odd);
    expect(outcome.accepted).to.equal(false);
    expect((outcome.error as InvalidOptionError).option).to.equal('snapshot.window.latest');
    expect(related('window.calls[3]')).to.deep.equal(['snapshot.window.calls[3]', 'snapshot.window.calls', 'snapshot.window', 'snapshot.window.failures[3]']);
  });
});
