/**
 * The agent soak on checkHealing — the project's own agent proved the way users prove theirs: the soak's agent (./chaosSoak.ts) in each of
 * its four combinations of mid-stream handling and model retries, under fault schedules over its
 * three models and three tools that fast-check draws (and would shrink), checked against
 * checkHealing's invariants plus the soak's reasoning check. The bugs the seeded soak (retired:
 * this replaces it) caught are kept as fixed cases: the schedules that reproduce them, replayed,
 * and the checks shown to catch their symptoms — a continuation taken back by its own retry (found at seed 20 250 611 aimed at
 * 'continue' + perModel restart), the spliced reasoning, the shared-registry observer leak, the
 * turn that ended without finish. Beyond the four combinations: a chain retry with a total budget
 * around the fallback chain, and one breaker registry shared by every run.
 */
import { expect } from 'chai';
import { assertHealing, builtinInvariants, checkInvariants, replaySchedule, type ChaosRun } from '../../src/chaos/index.js';
import { CircuitBreakerRegistry } from '../../src/core/breaker/registry.js';
import { classifyError } from '../../src/core/errors/classify.js';
import type { AgentEvent } from '../../src/core/events/events.js';
import { HealHub } from '../../src/core/hub/hub.js';
import { circuitBreak } from '../../src/operators/circuitBreak.js';
import { fallbackModel } from '../../src/sources/fallbackModel.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { finish, record, scriptedModel, scriptedTool, textDeltas, toolCall } from '../../src/testing/index.js';
import { testScheduler } from '../support/marbles.js';
import { breakerObservers } from '../support/observers.js';
import {
  answerOf,
  BREAKER_DEFAULTS,
  harshSchedules,
  healingCounter,
  noObserverLeft,
  reasoningIntact,
  SOAK_BUDGET,
  soakAgent,
  soakSchedules,
  soakShape,
} from './chaosSoak.js';

const SEED = Number(process.env['SOAK_SEED'] ?? 20_250_611);
const RUNS = Number(process.env['SOAK_RUNS'] ?? 100);
const BUDGET = SOAK_BUDGET;

const shape = soakShape;

describe(`agent soak on checkHealing (${RUNS} schedules per combination, seed ${SEED})`, function () {
  this.timeout(120_000);
  const schedules = soakSchedules();

  for (const midStream of ['restart', 'continue'] as const) {
    for (const modelAfterEmit of ['error', 'restart'] as const) {
      it(`midStream '${midStream}', each model's retries ${modelAfterEmit === 'error' ? "around it (afterEmit 'error')" : "in perModel (afterEmit 'restart')"}: every schedule heals, through every healing path`, async () => {
        const { healed, ends, count } = healingCounter();
        const result = await assertHealing(soakAgent(shape(midStream, modelAfterEmit)), {
          faults: schedules,
          runs: RUNS,
          seed: SEED,
          budget: BUDGET,
          invariants: [reasoningIntact, count],
          spec: { from: './chaosSoak.js' },
        });
        expect(result.runs).to.equal(RUNS);
        if (process.env['SOAK_SEED'] !== undefined) return;
        for (const path of [
          'retry',
          'fallback',
          'reset',
          'reflection',
          'degraded',
          'tool-error',
          'circuit-opened',
          ...(midStream === 'continue' ? ['continued'] : []),
        ])
          expect(healed[path] ?? 0, `runs with ${path}`).to.be.greaterThan(0);
        for (const end of ['complete', 'AllFallbacksFailedError']) expect(ends[end] ?? 0, `runs ending ${end}`).to.be.greaterThan(0);
      });
    }
  }

  it('a chain retry and a total budget around the fallback chain (the model pipeline): every schedule heals; turns every model failed are tried again, or end at the budget', async () => {
    const { healed, ends, count } = healingCounter();
    const harsh = harshSchedules();
    const result = await assertHealing(soakAgent({ ...shape('restart', 'error'), models: 2, chain: { retries: 2, totalMs: 20_000 } }), {
      faults: harsh,
      runs: RUNS,
      seed: SEED,
      budget: BUDGET,
      invariants: [reasoningIntact, count],
      spec: { from: './chaosSoak.js' },
    });
    expect(result.runs).to.equal(RUNS);
    if (process.env['SOAK_SEED'] !== undefined) return;
    expect(healed['chain-retry'] ?? 0, 'runs with a chain retry').to.be.greaterThan(0);
    expect(ends['complete'] ?? 0, 'runs answered').to.be.greaterThan(0);
    expect(
      (ends['RetriesExhaustedError'] ?? 0) + (ends['TotalTimeoutError'] ?? 0),
      `runs ending at the chain's limits (${JSON.stringify(ends)})`,
    ).to.be.greaterThan(0);
  });

  it('one breaker registry shared by every run, as an app keeps it: every schedule heals, and no run leaves an observer on a breaker', async () => {
    const breakers = new CircuitBreakerRegistry(BREAKER_DEFAULTS);
    const { healed, count } = healingCounter();
    const result = await assertHealing(soakAgent({ ...shape('continue', 'restart'), breakers }), {
      faults: schedules,
      runs: RUNS,
      seed: SEED,
      budget: BUDGET,
      invariants: [reasoningIntact, noObserverLeft(breakers), count],
      spec: { from: './chaosSoak.js' },
    });
    expect(result.runs).to.equal(RUNS);
    expect(breakers.names().length, 'breakers the runs made in the shared registry').to.be.greaterThan(3);
    if (process.env['SOAK_SEED'] === undefined) expect(healed['circuit'] ?? 0, 'runs with a circuit event').to.be.greaterThan(0);
  });

  it('is deterministic: the same seed draws the same schedules and the runs end the same', async () => {
    const twice: { healed: unknown; ends: unknown }[] = [];
    for (let i = 0; i < 2; i++) {
      const { healed, ends, count } = healingCounter();
      await assertHealing(soakAgent(shape('continue', 'restart')), { faults: schedules, runs: 30, seed: SEED + 1, budget: BUDGET, invariants: [count] });
      twice.push({ healed, ends });
    }
    expect(twice[0]).to.deep.equal(twice[1]);
  });

  describe('fixed cases: what the seeded soak caught', () => {
    // a continuation taken back by a retry (fixed in d31cc33; the seeded soak found it at seed 20 250 611 aimed at
    // 'continue' + perModel restart, and at seed 42 in 2 000 runs): a model's own retry restarting
    // a continuation took back the partial text too — the final message was the continuation alone
    // alpha answers its two tool rounds, then is cut 'alpha: kalo mine' into its answer three times
    // (its 4th call reasons first: 6 events more), its retries spent; beta continues the partial, is
    // cut after one event, and its own perModel retry continues the same partial again
    const defect6 = {
      models: {
        alpha: [{ kind: 'ok' }, { kind: 'ok' }, { kind: 'reset', afterEvents: 3 }, { kind: 'reset', afterEvents: 9 }, { kind: 'reset', afterEvents: 3 }],
        beta: [{ kind: 'reset', afterEvents: 1 }],
      },
    } as const;

    it("a continuation restarted by its own retry keeps the partial text ('continue', perModel restart)", async () => {
      const run = await replaySchedule(soakAgent({ ...shape('continue', 'restart'), modelRetries: 2 }), defect6, {
        budget: BUDGET,
        invariants: [reasoningIntact],
      });
      expect(run.violations).to.deep.equal([]);
      const beta = run.models.filter((a) => a.model === 'beta');
      // beta continued alpha's partial, was cut, and its own retry continued the same partial again
      expect(beta.map((a) => [a.outcome, a.continuing])).to.deep.equal([
        ['error', 'alpha: kalo mine'],
        ['complete', 'alpha: kalo mine'],
      ]);
      const last = run.events.at(-1)?.event;
      expect(last?.type === 'message' && last.message.content).to.equal(answerOf('alpha'));
    });

    it('the continuation check has teeth: the final message as the continuation alone is a text-intact violation', async () => {
      const run = await replaySchedule(soakAgent({ ...shape('continue', 'restart'), modelRetries: 2 }), defect6, { budget: BUDGET });
      const events = run.events.map((e, i) =>
        i === run.events.length - 1 && e.event.type === 'message' && e.event.message.role === 'assistant'
          ? { ...e, event: { ...e.event, message: { ...e.event.message, content: ' mine ruso tiva zepo.' } } }
          : e,
      );
      const broken: Omit<ChaosRun, 'violations'> = { ...run, events };
      const found = checkInvariants(broken, builtinInvariants())
        .filter((v) => v.invariant === 'text-intact')
        .map((v) => v.message);
      expect(found).to.include(
        `the assistant message " mine ruso tiva zepo." is not the partial "alpha: kalo mine" continued by beta#2's " mine ruso tiva zepo."`,
      );
    });

    // a leak of breaker observers (found by the seeded soak: up to 21 observers on one breaker for batches of 20 runs
    // sharing a registry): HealHub.watch subscribed to a breaker's events and never unsubscribed,
    // so each run through circuitBreak / fallbackModel on a shared registry left one observer
    // holding its hub. The soak above runs on a shared registry with noObserverLeft; this is the
    // smallest case.
    it('a shared breaker keeps no observer for finished runs: five runs, each with its own hub, through circuitBreak on one registry’s breaker', async () => {
      const breakers = new CircuitBreakerRegistry();
      const breaker = breakers.get('tool:search');
      testScheduler().run(({ flush }) => {
        for (let i = 0; i < 5; i++) {
          const search = scriptedTool('search', [{ result: 'found' }], { idempotent: true });
          const model = scriptedModel('m', [
            [toolCall(`c${i}`, 'search', {}), finish('tool-calls')],
            [...textDeltas('Done.'), finish()],
          ]);
          record(
            runAgent({
              model,
              tools: [search],
              messages: [{ role: 'user', content: 'q' }],
              toolPipeline: (call, call$, { hub }) => call$.pipe(circuitBreak(breakers.get(`tool:${call.name}`), { hub })),
            }),
          );
        }
        flush();
      });
      expect(breakerObservers(breaker), 'observers on the breaker after five finished runs').to.equal(0);
      // and the soak's agent on that registry, under no fault: nothing left on any of its breakers
      expect(
        (await replaySchedule(soakAgent({ ...shape('restart', 'error'), breakers }), {}, { budget: BUDGET, invariants: [noObserverLeft(breakers)] }))
          .violations,
      ).to.deep.equal([]);
    });

    it('noObserverLeft has teeth: a hub left following a shared breaker is a violation naming it', async () => {
      const breakers = new CircuitBreakerRegistry();
      const hub = new HealHub();
      hub.watch(breakers.get('model:alpha'));
      const listening = hub.events$.subscribe(); // a hub follows its breakers while someone listens
      const run = await replaySchedule(soakAgent({ ...shape('restart', 'error'), breakers }), {});
      expect(checkInvariants(run, [noObserverLeft(breakers)]).map((v) => v.message)).to.deep.equal([
        "breaker 'model:alpha' of the shared registry still has 1 observer after the run ended",
      ]);
      listening.unsubscribe();
      expect(checkInvariants(run, [noObserverLeft(breakers)])).to.deep.equal([]);
    });

    // a stream cut without a finish taken for an answer (found by the seeded soak: 230 of 10 000 runs at seed 42): a model whose stream
    // completed without a finish event was taken for a success — no retry, no fallback — and the
    // run ended with an unclassified Error. Now an IncompleteStreamError inside the model call.
    it('a model turn that ends without finish is healed by the fallback, or ends the run with a classified error', async () => {
      const cut = scriptedModel('primary', [[...textDeltas('The weather')]]);
      const secondary = scriptedModel('secondary', [[...textDeltas('The weather in NYC is sunny.'), finish()]]);
      let log: ReturnType<typeof record<AgentEvent>> | undefined;
      testScheduler().run(({ flush }) => {
        log = record(
          runAgent({ model: fallbackModel([cut, secondary], { breakers: new CircuitBreakerRegistry() }), messages: [{ role: 'user', content: 'weather?' }] }),
        );
        flush();
      });
      const error = log!.error();
      if (log!.completed())
        expect(log!.events.at(-1)?.[1]).to.deep.equal({ type: 'message', message: { role: 'assistant', content: 'The weather in NYC is sunny.' } });
      else expect(classifyError(error).category, `terminal error ${String(error)}`).not.to.equal('unknown');
    });

    // commit 7a96e25: a reasoning block the failed model died in was spliced with the next model's
    it('a reasoning block cut by a failure ends there, unsigned, apart from the next model’s (reasoning-intact)', async () => {
      // alpha's 2nd call reasons first (every other call does) and is cut inside its reasoning
      const run = await replaySchedule(
        soakAgent(shape('continue', 'restart')),
        { models: { alpha: [{ kind: 'ok' }, { kind: 'reset', afterEvents: 2 }] } },
        { budget: BUDGET, invariants: [reasoningIntact] },
      );
      expect(run.violations).to.deep.equal([]);
      const spliced = checkInvariants(
        {
          ...run,
          events: [
            ...run.events.slice(0, -1),
            {
              ...run.events.at(-1)!,
              event: {
                type: 'message',
                message: { role: 'assistant', content: answerOf('alpha'), reasoning: [{ text: 'Planning as alpha, call 2.Planning as beta' }] },
              },
            },
          ],
        },
        [reasoningIntact],
      );
      expect(spliced.map((v) => v.invariant)).to.deep.equal(['reasoning-intact']);
    });
  });
});
