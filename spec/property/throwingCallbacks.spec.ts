import { expect } from 'chai';
import fc from 'fast-check';
import { runScenario, throwingCallbacksProperty } from './throwingCallbacks.js';

describe('property: a user callback that throws never hangs a pipeline', () => {
  it('every operator (alone, retry into breaker, composed), any callback throwing on its n-th call, sync or async sources: the run ends, nothing escapes, is left scheduled or subscribed, no permit is kept, and the throw goes downstream (300 random runs)', () => {
    fc.assert(throwingCallbacksProperty, { numRuns: 300 });
  });

  it('the checks see a throw: a classifier throwing on its first call ends the run with it', () => {
    const o = runScenario({
      rig: 'retry → circuitBreak',
      callback: 'classifier',
      throwAt: 1,
      script: [{ sync: false, latency: 5, values: 0, end: '503' }],
    });
    expect([o.threw, o.errored, o.error]).to.deep.equal([true, true, o.boom]);
    expect([o.live, o.pendingAtEnd, o.leakedPermit]).to.deep.equal([0, 0, false]);
  });

  it('and a callback never reached changes nothing: the run completes', () => {
    const o = runScenario({ rig: 'retry', callback: 'classifier', throwAt: 1, script: [{ sync: true, latency: 1, values: 1, end: 'complete' }] });
    expect([o.threw, o.completed, o.values]).to.deep.equal([false, true, ['v0']]);
  });
});
