/**
 * The hardening fault soak at a reduced size (the full 10 000 runs: `npm run soak`). Each problem
 * names the seed and run that reproduce it (`SOAK_SEED=<seed> npx mocha spec/soak/hardeningSoak.spec.ts`).
 */
import { expect } from 'chai';
import { formatReport, runHardeningSoak } from './hardeningSoak.js';
import type { SoakReport } from './seeded.js';

const SEED = Number(process.env['SOAK_SEED'] ?? 20_250_612);
const RUNS = 400;

describe(`fault soak: throwing callbacks, huge delays, late signals, odd snapshots (${RUNS} seeded runs, seed ${SEED})`, () => {
  let report: SoakReport;
  before(function () {
    this.timeout(30_000);
    report = runHardeningSoak({ runs: RUNS, seed: SEED });
  });

  it('every run ends, nothing is clamped, escapes, stays scheduled or subscribed; late reads of cancelled calls are aborted; odd snapshots are refused or restored', () => {
    expect(report.problems, formatReport(report)).to.deep.equal([]);
    expect(report.outcomes['HUNG'] ?? 0).to.equal(0);
  });

  it('covers each class: throws reached and surfaced, huge waits, cancelled calls read late, odd snapshots both refused and taken', () => {
    const f = report.faults;
    expect(report.outcomes['thrown callback'], formatReport(report)).to.be.greaterThan(10);
    expect(f['model 429 huge']).to.be.greaterThan(10);
    expect(f['huge budget']).to.be.greaterThan(10);
    expect(f['huge tool deadline']).to.be.greaterThan(10);
    expect(report.healing['tool call cancelled']).to.be.greaterThan(10);
    expect(Number(report.figures['late reads seen aborted'])).to.be.greaterThan(10);
    expect(Object.keys(f).filter((k) => / refused$/.test(k)).length).to.be.greaterThan(2);
    expect(Object.keys(f).filter((k) => /^snapshot odd .* taken$/.test(k)).length).to.be.greaterThan(0);
  });
});
