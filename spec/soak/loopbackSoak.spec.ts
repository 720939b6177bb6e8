/**
 * The loopback soak at a reduced size (a few hundred runs: `npm run soak`): the soak's agent in
 * real time against two local providers on 127.0.0.1 — primary speaking OpenAI's protocol,
 * secondary Anthropic's — with random faults set on each per run (statuses, down, resets, stalls,
 * slow first bytes, malformed chunks, stream errors, bad tool arguments), plus flaky and slow
 * tools. Generator and checks: `agentSoak.ts`.
 */
import { expect } from 'chai';
import { runLoopbackSoak, type SoakReport } from './agentSoak.js';

const SEED = Number(process.env['SOAK_SEED'] ?? 20_250_611);
const RUNS = 25;

const isResourceProblem = (p: string): boolean => /active resources|requests still open/.test(p);

describe(`fault soak: loopback, two local providers in real time (${RUNS} seeded runs, seed ${SEED})`, () => {
  let report: SoakReport;
  before(async function () {
    this.timeout(30_000);
    report = await runLoopbackSoak({ runs: RUNS, seed: SEED, tokenDelayMs: 1, hangMs: 5_000 });
  });

  it('every run ends with the whole answer (restart or continue) or an allowed terminal error; none hangs; the non-idempotent tool never runs twice per call; no unhandled rejection', () => {
    expect(report.problems.filter((p) => !isResourceProblem(p))).to.deep.equal([]);
    expect(Object.values(report.outcomes).reduce((a, b) => a + b, 0)).to.equal(RUNS);
    expect(report.outcomes['answer']).to.be.greaterThan(RUNS / 2);
    expect(report.healing['retry'] ?? 0, 'retries').to.be.greaterThan(0);
    expect(report.healing['fallback'] ?? 0, 'fallbacks').to.be.greaterThan(0);
    expect(Object.keys(report.faults).filter((f) => f.startsWith('provider:')).length, 'fault kinds injected').to.be.greaterThan(5);
  });

  it('no socket left open (every request the servers saw ended before they closed) and the same active handles after closing them as before starting them', () => {
    expect(report.problems.filter(isResourceProblem)).to.deep.equal([]);
    expect(report.figures['request ends']).not.to.match(/"open"|server-closed/);
    expect(Number(report.figures['requests'])).to.be.greaterThan(RUNS);
  });
});
