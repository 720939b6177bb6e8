import fc from 'fast-check';
import { callPolicyProperty } from './retryUnderBreaker.js';

describe('property: callPolicy makes each call as the two operators would', () => {
  it('same notifications, times, source subscriptions, transitions and final state as defer(work) through retryWithBackoff and circuitBreak apart (300 random runs)', () => {
    fc.assert(callPolicyProperty, { numRuns: 300 });
  });
});
