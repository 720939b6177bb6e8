/**
 * The agent soak on checkHealing (issue 25, item 3): the soak's agent (./chaosSoak.ts) in each of
 * its four combinations of mid-stream handling and model retries, under fault schedules over its
 * three models and three tools that fast-check draws (and would shrink), checked against
 * checkHealing's invariants plus the soak's reasoning check. The bugs the seeded soak caught are
 * kept as fixed cases: the schedules that reproduce them, replayed, and the checks shown to catch
 * their symptoms. (The seeded soak, spec/soak/agentSoak.spec.ts, keeps its seeds: 20 250 611, at
 * which the aimed run found defect 6, and the leak and truncated-turn cases.)
 */
import { expect } from 'chai';
import { assertHealing, builtinInvariants, checkInvariants, faults, replaySchedule, type ChaosRun, type Invariant } from '../../src/chaos/index.js';
import { answerOf, MODEL_IDS, reasoningIntact, soakAgent, TOOL_NAMES, type SoakShape } from './chaosSoak.js';

const SEED = Number(process.env['SOAK_SEED'] ?? 20_250_611);
const RUNS = Number(process.env['SOAK_RUNS'] ?? 100);
const BUDGET = { maxModelCalls: 24, maxToolCalls: 12 };

const shape = (midStream: SoakShape['midStream'], modelAfterEmit: SoakShape['modelAfterEmit']): SoakShape => ({ models: 3, midStream, modelAfterEmit, modelRetries: 1, budget: BUDGET, maxSteps: 8 });

describe(`agent soak on checkHealing (${RUNS} schedules per combination, seed ${SEED})`, function () {
  this.timeout(120_000);
  // cuts mid-answer weighted up (ok 8, reset 4): a continuation needs a model's every attempt cut
  const schedules = faults.schedule({ models: [...MODEL_IDS], tools: [...TOOL_NAMES], maxCalls: 5, model: { weights: { ok: 8, reset: 4 } } });

  for (const midStream of ['restart', 'continue'] as const) {
    for (const modelAfterEmit of ['error', 'restart'] as const) {
      it(`midStream '${midStream}', each model's retries ${modelAfterEmit === 'error' ? "around it (afterEmit 'error')" : "in perModel (afterEmit 'restart')"}: every schedule heals, through every healing path`, () => {
        // runs in which each healing event happened (counted by an invariant that finds nothing)
        const healed: Record<string, number> = {};
        const count: Invariant = {
          name: 'count',
          check: (run) => {
            for (const type of new Set(run.events.map((e) => e.event.type))) healed[type] = (healed[type] ?? 0) + 1;
            if (run.models.some((a) => a.continuing !== undefined && a.finished)) healed['continued'] = (healed['continued'] ?? 0) + 1;
            return undefined;
          },
        };
        const result = assertHealing(soakAgent(shape(midStream, modelAfterEmit)), { faults: schedules, runs: RUNS, seed: SEED, budget: BUDGET, invariants: [reasoningIntact, count], spec: { from: './chaosSoak.js' } });
        expect(result.runs).to.equal(RUNS);
        if (process.env['SOAK_SEED'] !== undefined) return;
        for (const path of ['retry', 'fallback', 'reset', 'reflection', 'degraded', 'tool-error', ...(midStream === 'continue' ? ['continued'] : [])]) expect(healed[path] ?? 0, `runs with ${path}`).to.be.greaterThan(0);
      });
    }
  }

  describe('fixed cases: what the seeded soak caught', () => {
    // issue 19, defect 6 (fixed in d31cc33; the seeded soak found it at seed 20 250 611 aimed at
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

    it("defect 6: a continuation restarted by its own retry keeps the partial text ('continue', perModel restart)", () => {
      const run = replaySchedule(soakAgent({ ...shape('continue', 'restart'), modelRetries: 2 }), defect6, { budget: BUDGET, invariants: [reasoningIntact] });
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

    it('defect 6 has teeth: the final message as the continuation alone is a text-intact violation', () => {
      const run = replaySchedule(soakAgent({ ...shape('continue', 'restart'), modelRetries: 2 }), defect6, { budget: BUDGET });
      const events = run.events.map((e, i) =>
        i === run.events.length - 1 && e.event.type === 'message' && e.event.message.role === 'assistant' ? { ...e, event: { ...e.event, message: { ...e.event.message, content: ' mine ruso tiva zepo.' } } } : e,
      );
      const broken: Omit<ChaosRun, 'violations'> = { ...run, events };
      const found = checkInvariants(broken, builtinInvariants()).filter((v) => v.invariant === 'text-intact').map((v) => v.message);
      expect(found).to.include(`the assistant message " mine ruso tiva zepo." is not the partial "alpha: kalo mine" continued by beta#2's " mine ruso tiva zepo."`);
    });

    // commit 7a96e25: a reasoning block the failed model died in was spliced with the next model's
    it('a reasoning block cut by a failure ends there, unsigned, apart from the next model’s (reasoning-intact)', () => {
      // alpha's 2nd call reasons first (every other call does) and is cut inside its reasoning
      const run = replaySchedule(soakAgent(shape('continue', 'restart')), { models: { alpha: [{ kind: 'ok' }, { kind: 'reset', afterEvents: 2 }] } }, { budget: BUDGET, invariants: [reasoningIntact] });
      expect(run.violations).to.deep.equal([]);
      const spliced = checkInvariants({ ...run, events: [...run.events.slice(0, -1), { ...run.events.at(-1)!, event: { type: 'message', message: { role: 'assistant', content: answerOf('alpha'), reasoning: [{ text: 'Planning as alpha, call 2.Planning as beta' }] } } }] }, [reasoningIntact]);
      expect(spliced.map((v) => v.invariant)).to.deep.equal(['reasoning-intact']);
    });
  });
});
