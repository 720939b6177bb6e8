import { expect } from 'chai';
import fc from 'fast-check';
import { checkLate, lateSignalsProperty, runLate } from './lateSignals.js';

describe('property: a signal read late is aborted exactly when the consumer left first', () => {
  it('abortable, callTool and streamModel: reads before and after unsubscription, work finishing or not; one signal per call; no controller unless read (300 random runs)', () => {
    fc.assert(lateSignalsProperty, { numRuns: 300 });
  });

  it('the check sees a late read: work reading only after the consumer left gets an aborted signal', () => {
    const s = { via: 'callTool', readAtOnce: false, reads: [5], finishAt: 10, finishWith: 'complete', unsubscribeAt: 2 } as const;
    const r = runLate(s);
    expect(r.reads.map((x) => [x.at, x.aborted])).to.deep.equal([[5, true]]);
    checkLate(s, r);
  });
});
