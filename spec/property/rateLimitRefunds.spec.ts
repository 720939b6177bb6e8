import { expect } from 'chai';
import fc from 'fast-check';
import { checkRefunds, refundsProperty, runRefunds, type RefundScenario } from './rateLimitRefunds.js';

describe('property: the shared rate limit holds exactly what the calls that ran used', () => {
  it('calls cancelled in flight, while waiting or running, answers late or past the timeout, usage reported or not (300 random runs)', () => {
    fc.assert(refundsProperty, { numRuns: 300 });
  });

  it('the check sees a leak: two calls cancelled while their reservations are in flight hold nothing', () => {
    const call = { at: 2, cost: 3, runsMs: 2, used: undefined, endsWith: 'complete', cancelAfter: 1 } as const;
    const s: RefundScenario = { latencyMs: 4, replyLatencyMs: 2, timeoutMs: 20, calls: [call, call, { ...call, at: 30, cancelAfter: undefined }] };
    const r = runRefunds(s);
    expect(r.started).to.deep.equal([0, 0, 1]);
    expect({ requests: r.requests, tokens: r.tokens }).to.deep.equal({ requests: 1, tokens: 3 });
    checkRefunds(s, r);
  });

  it('the check sees late answers: past the timeout, the local share decides and the shared store holds nothing', () => {
    const s: RefundScenario = {
      latencyMs: 10,
      replyLatencyMs: 20,
      timeoutMs: 20,
      calls: [{ at: 2, cost: 2, runsMs: 4, used: 1, endsWith: 'complete', cancelAfter: undefined }],
    };
    const r = runRefunds(s);
    expect(r.started).to.deep.equal([1]);
    expect({ requests: r.requests, tokens: r.tokens }).to.deep.equal({ requests: 0, tokens: 0 });
    checkRefunds(s, r);
  });
});
