import { expect } from 'chai';
import fc from 'fast-check';
import { callPolicyProperty, runCalls } from './callPolicyProperty.js';

describe('property: callPolicy makes each call as the two operators piped would', () => {
  it('same notifications, times, source subscriptions, transitions and final state as defer(work) through retryWithBackoff and circuitBreak (300 random runs)', () => {
    fc.assert(callPolicyProperty, { numRuns: 300 });
  });

  it('the comparison sees differences: calls, transitions and the final state are all in the log', () => {
    const log = runCalls(
      {
        retry: { maxRetries: 1, initialBackoffMs: 100, maxBackoffMs: 100, jitter: 'none', resetOnSuccess: false, afterEmit: 'error' },
        breaker: { failureThreshold: 1, resetTimeoutMs: 1_000 },
        randoms: [0.5],
        script: [{ latency: 10, values: 0, end: '503', retryAfterS: 0 }],
        calls: [
          { at: 0, cancelAfter: undefined },
          { at: 500, cancelAfter: undefined },
        ],
      },
      false,
    );
    expect(log).to.deep.equal([
      '0 subscribe #0',
      '110 subscribe #1',
      '120 breaker closed->open failure_threshold',
      '120 call 0 error RetriesExhaustedError: Gave up after 2 attempts: HttpError: HTTP 503',
      "500 call 1 error CircuitOpenError: Circuit 'b' is open; next probe in 620 ms",
      '1120 breaker open->half-open reset_timeout',
      `86400000 end state half-open {"version":2,"name":"b","state":"half-open","isolated":false,"openUntil":null,"consecutiveFailures":0,"halfOpenSuccesses":0,"window":null}`,
    ]);
  });
});
