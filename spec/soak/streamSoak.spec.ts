import { expect } from 'chai';
import { formatStreamReport, runStreamSoak } from './streamSoak.js';

describe('stream soak (small): recorded streams split at random bytes, long lines', () => {
  it('every replay decodes to what the whole stream does; long lines come out whole, or past maxEventSize end in a MalformedStreamError', () => {
    const seed = 20250611;
    const report = runStreamSoak({ runs: 300, seed, maxLine: 256 * 1024 });
    expect(report.problems, formatStreamReport(report, seed)).to.deep.equal([]);
    expect(report.longLines).to.equal(15);
    expect(report.cuts).to.be.greaterThan(300);
  });
});
