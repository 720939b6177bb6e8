/**
 * The loopback soak at a reduced size (a few hundred runs: `npm run soak`): the soak's agent in
 * real time against two local providers on 127.0.0.1 — primary speaking OpenAI's protocol,
 * secondary Anthropic's — with random faults set on each per run (statuses, down, resets, stalls,
 * slow first bytes, malformed chunks, stream errors, bad tool arguments), plus flaky and slow
 * tools. Generator and checks: `loopbackSoak.ts`.
 */
import { expect } from 'chai';
import { CircuitBreakerRegistry } from '../../src/core/breaker/registry.js';
import { AllFallbacksFailedError, BudgetExceededError, HttpError, ToolError, TotalTimeoutError } from '../../src/core/errors/errors.js';
import type { AgentEvent } from '../../src/core/events/events.js';
import { HealHub } from '../../src/core/hub/hub.js';
import { breakerObservers } from '../support/observers.js';
import { checkTexts, runLoopbackSoak, terminalOutcome } from './loopbackSoak.js';
import type { SoakReport } from './seeded.js';

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

  describe('the checks have teeth (on made-up runs)', () => {
    const text = (t: string): AgentEvent => ({ type: 'text-delta', text: t });
    const said = (content: string): AgentEvent => ({ type: 'message', message: { role: 'assistant', content } });

    it('shown text must be each assistant message: a doubled or lost delta is caught, a reset is honoured', () => {
      const problems: string[] = [];
      checkTexts([text('The'), text(' sky'), { type: 'reset', reason: 'fallback', target: 'model:b' }, text('The'), text(' sky.'), said('The sky.')], problems);
      expect(problems).to.deep.equal([]);
      checkTexts([text('The'), text(' sky'), text(' sky.'), said('The sky.')], problems);
      checkTexts([text('The'), said('The sky.')], problems);
      expect(problems).to.have.length(2);
    });

    it('terminal errors: allowed only when the run could produce them', () => {
      const s = { models: ['a', 'b'], budget: {}, chainRetries: 0, totalTimeoutMs: undefined, onExhausted: 'instruct' as const };
      expect(terminalOutcome(new AllFallbacksFailedError([new HttpError(503), new HttpError(500)]), s).problem).to.equal(undefined);
      expect(terminalOutcome(new AllFallbacksFailedError([new HttpError(503)]), s).problem).to.match(/lists 1 errors for 2 models/);
      expect(terminalOutcome(new AllFallbacksFailedError([new HttpError(503), new Error('?')]), s).problem).to.match(/unclassified/);
      expect(terminalOutcome(new BudgetExceededError('steps', 3, 4), s).problem).to.equal(undefined);
      expect(terminalOutcome(new BudgetExceededError('tokens', 3, 4), s).problem).to.match(/without that budget/);
      expect(terminalOutcome(new TotalTimeoutError(10, 10), s).problem).to.match(/without a total budget/);
      const toolError = new ToolError({ toolName: 'book', callId: 'c', args: {}, phase: 'execute', idempotent: false, message: 'no' });
      expect(terminalOutcome(toolError, s).problem).to.match(/onExhausted 'instruct'/);
      expect(terminalOutcome(toolError, { ...s, onExhausted: 'error' }).problem).to.equal(undefined);
      expect(terminalOutcome(new TypeError('x is not a function'), s).problem).to.match(/unexpected terminal error/);
    });

    it('a hub watch outliving its run is measured (breakerObservers)', () => {
      const breaker = new CircuitBreakerRegistry().get('x');
      expect(breakerObservers(breaker)).to.equal(0);
      const hub = new HealHub();
      hub.watch(breaker);
      const listening = hub.events$.subscribe(); // a hub follows its breakers while someone listens
      expect(breakerObservers(breaker)).to.equal(1);
      listening.unsubscribe();
      expect(breakerObservers(breaker)).to.equal(0);
    });
  });
});
