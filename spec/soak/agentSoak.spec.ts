/**
 * The agent fault soak in virtual time, at a reduced size (the full 10 000 runs: `npm run soak`).
 * The generator and the checks live in `agentSoak.ts`; each problem names the seed, batch and
 * run that reproduce it (`SOAK_SEED=<seed> npx mocha spec/soak/agentSoak.spec.ts`).
 */
import { expect } from 'chai';
import { CircuitBreakerRegistry } from '../../src/core/breaker/registry.js';
import { classifyError } from '../../src/core/errors/classify.js';
import { AllFallbacksFailedError, BudgetExceededError, HttpError, ToolError, TotalTimeoutError } from '../../src/core/errors/errors.js';
import type { AgentEvent } from '../../src/core/events/events.js';
import { HealHub } from '../../src/core/hub/hub.js';
import { circuitBreak } from '../../src/operators/circuitBreak.js';
import { fallbackModel } from '../../src/sources/fallbackModel.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { finish, record, scriptedModel, scriptedTool, textDeltas, toolCall } from '../../src/testing/index.js';
import { testScheduler } from '../support/marbles.js';
import { breakerObservers, checkTexts, MODEL_FAULT_KINDS, runAgentSoak, terminalOutcome, type SoakReport } from './agentSoak.js';

const SEED = Number(process.env['SOAK_SEED'] ?? 20_250_611);
const RUNS = 300;

const text = (t: string): AgentEvent => ({ type: 'text-delta', text: t });
const said = (content: string): AgentEvent => ({ type: 'message', message: { role: 'assistant', content } });

describe(`fault soak: agent runs in virtual time (${RUNS} seeded runs, seed ${SEED})`, () => {
  let report: SoakReport;
  before(function () {
    this.timeout(30_000);
    report = runAgentSoak({ runs: RUNS, seed: SEED });
  });

  it('every run ends: the whole text of one attempt (restart) or partial + continuation (continue) as the final message, or an allowed terminal error; nothing hangs, doubles, re-runs a side effect, outlives its run or stays scheduled', () => {
    expect(report.problems).to.deep.equal([]);
    const total = Object.values(report.outcomes).reduce((a, b) => a + b, 0);
    expect(total).to.equal(RUNS);
    expect(report.outcomes['HUNG'] ?? 0).to.equal(0);
    expect(report.outcomes['answer']).to.be.greaterThan(RUNS / 2);
  });

  it('covers the fault catalogue and every healing path (at the default seed: a rare kind may miss another 300 runs)', function () {
    if (process.env['SOAK_SEED'] !== undefined) this.skip();
    for (const kind of MODEL_FAULT_KINDS) expect(report.faults[`model:${kind}`] ?? 0, `model fault ${kind}`).to.be.greaterThan(0);
    for (const kind of ['ok', 'http503', 'http429', 'rejected', 'slow']) expect(report.faults[`tool:${kind}`] ?? 0, `tool fault ${kind}`).to.be.greaterThan(0);
    for (const path of ['retry', 'fallback', 'reset', 'continued', 'continuation-retried', 'reflection', 'degraded', 'circuit-opened', 'circuit-rejected', 'tool-error']) {
      expect(report.healing[path] ?? 0, `healing path ${path}`).to.be.greaterThan(0);
    }
    for (const outcome of ['answer', 'AllFallbacksFailedError', 'BudgetExceededError(steps)']) expect(report.outcomes[outcome] ?? 0, outcome).to.be.greaterThan(0);
  });

  // issue 19, defect 6: a model's own retry restarting a continuation took back the partial text
  // too (the final message was the continuation alone); the soak draws that combination rarely
  it(`aimed at 'continue' with each model's retries in perModel (afterEmit 'restart'): ${RUNS} runs, the same checks, a continuation restarted by its own retry among them`, function () {
    this.timeout(30_000);
    const aimed = runAgentSoak({ runs: RUNS, seed: SEED, fix: { midStream: 'continue', modelAfterEmit: 'restart', modelRetries: 2 } });
    expect(aimed.problems).to.deep.equal([]);
    if (process.env['SOAK_SEED'] === undefined) expect(aimed.healing['continuation-restarted'] ?? 0, 'continuations restarted by their own retry').to.be.greaterThan(0);
  });

  it('is deterministic: the same seed gives the same runs', () => {
    const a = runAgentSoak({ runs: 40, seed: SEED + 1 });
    const b = runAgentSoak({ runs: 40, seed: SEED + 1 });
    expect(a.outcomes).to.deep.equal(b.outcomes);
    expect(a.faults).to.deep.equal(b.faults);
    expect(a.healing).to.deep.equal(b.healing);
  });

  // BUG (kept failing): HealHub.watch (src/core/hub/hub.ts) subscribes to breaker.events$ and never
  // unsubscribes. circuitBreak(breaker, { hub }) calls it when the operator is made
  // (src/operators/circuitBreak.ts), and so does fallbackModel({ hub, breakers }) for each model's
  // breaker. runAgent makes a HealHub per run unless one is given and hands it to toolPipeline /
  // modelPipeline; with a CircuitBreakerRegistry shared across runs (README, "An agent that heals
  // itself"), every run leaves one observer per breaker it touched, holding its hub (and that
  // hub's Subject) for the breaker's lifetime: memory and per-transition work grow with the number
  // of runs (the soak: up to 21 observers on one breaker for batches of 20 runs; the loopback
  // soak, whose registry lives for all its runs, ends with runs + 1). Fix: let a run's watches end
  // with the run (e.g. hub.watch returns a Subscription that runAgent / the operator's
  // subscription tears down, or circuitBreak watches per subscription, ref-counted).
  it('after all runs, a shared breaker keeps no observer for finished runs (nor its registry’s, unobserved)', () => {
    // minimal: five runs, each with its own hub, through circuitBreak on one registry's breaker
    const breakers = new CircuitBreakerRegistry();
    const breaker = breakers.get('tool:search');
    testScheduler().run(({ flush }) => {
      for (let i = 0; i < 5; i++) {
        const search = scriptedTool('search', [{ result: 'found' }], { idempotent: true });
        const model = scriptedModel('m', [[toolCall(`c${i}`, 'search', {}), finish('tool-calls')], [...textDeltas('Done.'), finish()]]);
        record(runAgent({ model, tools: [search], messages: [{ role: 'user', content: 'q' }], toolPipeline: (call, call$, { hub }) => call$.pipe(circuitBreak(breakers.get(`tool:${call.name}`), { hub })) }));
      }
      flush();
    });
    expect(breakerObservers(breaker), 'five finished runs: observers on the breaker (the registry follows it only while its events$ is observed)').to.equal(0);
    // and in the soak
    expect(report.leaks.breakerObserversMax, `soak: most observers on one breaker (${report.leaks.breakerObserversTotal} on all)`).to.equal(0);
  });

  // GAP (kept failing): a model whose stream completes without a `finish` event (a truncated turn
  // from any Model that is not one of the SSE adapters, which raise IncompleteStreamError) is not
  // healed: fallbackModel / circuitBreak / retryWithBackoff see a completion (a success: no retry,
  // no fallback, the breaker counts a success), and runAgent then ends the run with a plain
  // `Error("The stream of model '…' ended without a finish event")` (src/sources/runAgent.ts,
  // afterTurn), which classifyError calls 'unknown': not an answer, not a classified terminal
  // error. In the full soak (10 000 runs, seed 42) every truncated turn ended its run so: 230
  // runs. Fix: treat a turn that completes without `finish` as an IncompleteStreamError inside the
  // model call (streamModel, or fallbackModel per model), so retries and fallbacks heal it — or at
  // least fail the run with that classified error.
  it('a model turn that ends without finish is healed by the fallback, or ends the run with a classified error', () => {
    const cut = scriptedModel('primary', [[...textDeltas('The weather')]]);
    const secondary = scriptedModel('secondary', [[...textDeltas('The weather in NYC is sunny.'), finish()]]);
    let log: ReturnType<typeof record<AgentEvent>> | undefined;
    testScheduler().run(({ flush }) => {
      log = record(runAgent({ model: fallbackModel([cut, secondary], { breakers: new CircuitBreakerRegistry() }), messages: [{ role: 'user', content: 'weather?' }] }));
      flush();
    });
    const error = log!.error();
    if (log!.completed()) {
      expect(log!.events.at(-1)?.[1]).to.deep.equal(said('The weather in NYC is sunny.'));
    } else {
      expect(classifyError(error).category, `terminal error ${String(error)}`).not.to.equal('unknown');
    }
  });

  describe('the checks have teeth (on made-up runs)', () => {
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
      expect(terminalOutcome(new AllFallbacksFailedError([new HttpError(503), new HttpError(500)]), s, []).problem).to.equal(undefined);
      expect(terminalOutcome(new AllFallbacksFailedError([new HttpError(503)]), s, []).problem).to.match(/lists 1 errors for 2 models/);
      expect(terminalOutcome(new AllFallbacksFailedError([new HttpError(503), new Error('?')]), s, []).problem).to.match(/unclassified/);
      expect(terminalOutcome(new BudgetExceededError('steps', 3, 4), s, []).problem).to.equal(undefined);
      expect(terminalOutcome(new BudgetExceededError('tokens', 3, 4), s, []).problem).to.match(/without that budget/);
      expect(terminalOutcome(new TotalTimeoutError(10, 10), s, []).problem).to.match(/without a total budget/);
      const toolError = new ToolError({ toolName: 'book', callId: 'c', args: {}, phase: 'execute', idempotent: false, message: 'no' });
      expect(terminalOutcome(toolError, s, []).problem).to.match(/onExhausted 'instruct'/);
      expect(terminalOutcome(toolError, { ...s, onExhausted: 'error' }, []).problem).to.equal(undefined);
      expect(terminalOutcome(new TypeError('x is not a function'), s, []).problem).to.match(/unexpected terminal error/);
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
