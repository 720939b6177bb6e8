/**
 * checkHealing against the agents of ./agents.ts: each deliberately broken one is found and shrunk
 * to a small schedule naming its defect; the agent that heals passes; bad input is a clear error.
 * The weights aim each search at the faults the defect needs (weights are an option of
 * `faults.schedule`): a stall alone already breaks every agent without a deadline.
 */
import { expect } from 'chai';
import { BudgetExceededError } from '../../src/core/errors/errors.js';
import {
  ChaosInputError,
  checkHealing,
  compactSchedule,
  faults,
  HealingError,
  assertHealing,
  replaySchedule,
  type HealingReport,
  type FaultSchedule,
} from '../../src/chaos/index.js';
import type { Message } from '../../src/core/events/events.js';
import { runAgent } from '../../src/sources/runAgent.js';
import type { AgentFactory } from '../../src/chaos/index.js';
import { rejects } from '../support/rejects.js';
import { ANSWER, BUDGET, book, budgetHeld, budgetLeak, byKey, concatenates, desk, healing, noDeadline, retriesBooking, throwsAtOnce } from './agents.js';

const SEED = 25;

function failed(report: HealingReport): Extract<HealingReport, { ok: false }> {
  if (report.ok) throw new Error(`expected a failure, got ok after ${report.runs} runs`);
  return report;
}

/** Faults in a schedule: every listed fault counts. */
const size = (s: FaultSchedule): number =>
  Object.values(s.models ?? {}).reduce((n, l) => n + l.length, 0) + Object.values(s.tools ?? {}).reduce((n, l) => n + l.length, 0);

describe('checkHealing (rxheal/chaos)', function () {
  this.timeout(60_000);

  it('passes the agent that heals: 300 schedules over both models and the booking tool', async () => {
    const report = await checkHealing(healing, {
      faults: faults.schedule({ models: ['primary', 'secondary'], tools: ['book'] }),
      runs: 300,
      seed: SEED,
      budget: { maxModelCalls: 12 },
    });
    expect(report.ok, report.ok ? '' : report.message).to.equal(true);
    expect(report.runs).to.equal(300);
  });

  it('finds a tool pipeline that retries a non-idempotent tool, shrunk to one failed booking', async () => {
    const report = failed(
      await checkHealing(retriesBooking, { faults: faults.schedule({ tools: ['book'], tool: { weights: { stall: 0, timeout: 0 } } }), runs: 200, seed: SEED }),
    );
    const { schedule, violations, marbles, spec } = report.failure;
    expect(schedule).to.deep.equal({ tools: { book: [{ kind: 'throw' }] } });
    expect(violations.map((v) => v.invariant)).to.include.members(['side-effects-once', 'healing-announced']);
    expect(violations.find((v) => v.invariant === 'side-effects-once')?.message).to.equal(
      "non-idempotent 'book' ran 2 times for 1 call the model made (call 'primary-1')",
    );
    expect(marbles.split('\n')[2]).to.match(/^tool:book\s+-\s+\^#\^\|/);
    expect(spec).to.include(`const schedule = {"tools":{"book":[{"kind":"throw"}]}};`);
  });

  // a tool's answer lost after it ran (the booking made, the caller timed out): only the lost-answer fault and ok
  const lostAnswers = faults.schedule({
    tools: ['book'],
    tool: { weights: { ok: 4, 'lost-answer': 3, throw: 0, timeout: 0, stall: 0, 'is-error': 0, slow: 0 } },
  });

  it('passes a by-key tool that honours its key under lost answers: its retry answers the first booking', async () => {
    const report = await checkHealing(byKey(true), { faults: lostAnswers, runs: 200, seed: SEED });
    expect(report.ok, report.ok ? '' : report.message).to.equal(true);
  });

  it('finds a by-key tool that ignores its key (a planted defect), shrunk to one lost answer', async () => {
    const report = failed(await checkHealing(byKey(false), { faults: lostAnswers, runs: 200, seed: SEED }));
    const { schedule, violations } = report.failure;
    expect(schedule).to.deep.equal({ tools: { book: [{ kind: 'lost-answer' }] } });
    expect(size(schedule)).to.equal(1);
    const found = violations.filter((v) => v.invariant === 'side-effects-once').map((v) => v.message);
    expect(found).to.have.length(1);
    // the key is the run's (a fresh run id), its first step, the call's place, the tool
    expect(found[0]).to.match(
      /^'book' \(idempotent: 'by-key'\) applied its effect 2 times under idempotency key 'run-[^']+\/1\/0\/book': it answered \{"booking":"bk_1"\}, then \{"booking":"bk_2"\} — a repeated key must answer the first result$/,
    );
  });

  it('finds a hand-made model wrapper that concatenates two attempts, shrunk to one reset after one event', async () => {
    const report = failed(
      await checkHealing(concatenates, { faults: faults.schedule({ models: ['primary'], model: { weights: { stall: 0 } } }), runs: 200, seed: SEED }),
    );
    const { schedule, violations } = report.failure;
    expect(size(schedule)).to.equal(1);
    const fault = schedule.models?.['primary']?.[0];
    expect(['reset', 'malformed']).to.include(fault?.kind);
    expect(fault).to.have.property('afterEvents', 1);
    const intact = violations.filter((v) => v.invariant === 'text-intact').map((v) => v.message);
    expect(intact).to.deep.equal([
      `the assistant message "LetLet me book it." != the text of the call that answered (primary#2) " me book it."`.replace(' " me', ' "Let me'),
    ]);
    expect(violations.map((v) => v.invariant)).to.deep.equal(['text-intact']);
  });

  it('finds a fallback chain with no deadline on a stalled provider (a hang), shrunk to one stall', async () => {
    const report = failed(await checkHealing(noDeadline, { faults: faults.schedule({ models: ['primary', 'secondary'] }), runs: 200, seed: SEED }));
    const { schedule, violations, run, marbles } = report.failure;
    expect(schedule).to.deep.equal({ models: { primary: [{ kind: 'stall', afterEvents: 0 }] } });
    expect(violations.map((v) => v.invariant)).to.deep.equal(['ends']);
    expect(run.end.kind).to.equal('hang');
    expect(marbles).to.include('primary#1: stall@0, open');
  });

  it('finds a budget not enforced across fallbacks, shrunk to one failed call of the primary', async () => {
    const report = failed(
      await checkHealing(budgetLeak, {
        faults: faults.schedule({ models: ['primary', 'secondary'], model: { weights: { stall: 0, 'slow-first-byte': 0 } } }),
        runs: 200,
        seed: SEED,
        budget: BUDGET,
      }),
    );
    const { schedule, violations, run } = report.failure;
    expect(size(schedule)).to.equal(1);
    expect(Object.keys(schedule.models ?? {})).to.deep.equal(['primary']);
    expect(violations.map((v) => v.invariant)).to.deep.equal(['budget-held']);
    expect(violations[0]!.message).to.equal('3 model calls were made, the budget is 2');
    expect(run.end.kind).to.equal('complete');
    // the same fallback given the run's context holds the budget: the run stops with BudgetExceededError
    const held = await replaySchedule(budgetHeld, schedule, { budget: BUDGET });
    expect(held.violations).to.deep.equal([]);
    expect(held.end.kind === 'error' && held.end.error).to.be.instanceOf(BudgetExceededError);
  });

  it('is deterministic: the same seed finds and shrinks to the same schedule and diagram', async () => {
    const options = { faults: faults.schedule({ models: ['primary'], model: { weights: { stall: 0 } } }), runs: 100, seed: SEED };
    const a = failed(await checkHealing(concatenates, options));
    const b = failed(await checkHealing(concatenates, options));
    expect(a.failure.schedule).to.deep.equal(b.failure.schedule);
    expect(a.failure.marbles).to.equal(b.failure.marbles);
    expect(a.message).to.equal(b.message);
  });

  it('the replay spec replays exactly the shrunk run', async () => {
    const report = failed(
      await checkHealing(retriesBooking, { faults: faults.schedule({ tools: ['book'], tool: { weights: { stall: 0, timeout: 0 } } }), runs: 100, seed: SEED }),
    );
    const literal = /const schedule = (.*);/.exec(report.failure.spec ?? '')?.[1];
    const replayed = await replaySchedule(retriesBooking, JSON.parse(literal!) as FaultSchedule);
    expect(replayed.violations).to.deep.equal(report.failure.violations);
  });

  it('custom invariants are checked, and a failing one is shrunk like the built-in ones', async () => {
    const report = failed(
      await checkHealing(healing, {
        faults: faults.schedule({ models: ['primary', 'secondary'] }),
        runs: 200,
        seed: SEED,
        invariants: [{ name: 'primary-answers', check: (run) => (run.models.some((a) => a.model === 'secondary') ? 'the secondary was asked' : undefined) }],
      }),
    );
    expect(report.failure.violations).to.deep.equal([{ invariant: 'primary-answers', message: 'the secondary was asked' }]);
    expect(size(report.failure.schedule)).to.be.at.most(3);
  });

  it('an agent that does not replay the same: the report still names what broke, and says it did not replay', async () => {
    // broken the first time it meets a schedule, healed the next: the shrunk schedule heals on its replay
    const met = new Set<string>();
    const flaky: AgentFactory = (chaos) => {
      const key = JSON.stringify(compactSchedule(chaos.schedule));
      const first = !met.has(key);
      met.add(key);
      return first ? retriesBooking(chaos) : healing(chaos);
    };
    const report = failed(
      await checkHealing(flaky, { faults: faults.schedule({ tools: ['book'], tool: { weights: { stall: 0, timeout: 0 } } }), runs: 200, seed: SEED }),
    );
    const { violations, spec, specMissing } = report.failure;
    expect(violations.map((v) => v.invariant)).to.include.members(['side-effects-once', 'replays-same']);
    expect(violations.find((v) => v.invariant === 'replays-same')!.message).to.match(
      /^the schedule broke .*side-effects-once.* when checked and healed when replayed: the agent does not replay deterministically/,
    );
    expect(spec).to.equal(undefined);
    expect(specMissing).to.contain('healed when replayed');
    // every "did not heal" names an invariant
    const lines = report.message.split('\n');
    expect(lines[0]).to.match(/^checkHealing: the agent did not heal/);
    expect(lines[1]).to.match(/^ {2}[a-z-]+: /);
  });

  it('assertHealing throws a HealingError carrying the report', async () => {
    await rejects(
      () => assertHealing(noDeadline, { faults: faults.schedule({ models: ['primary'] }), runs: 50, seed: SEED }),
      HealingError,
      /ends: the run did not end[\s\S]*model:primary[\s\S]*replaySchedule\(agent, schedule\)/,
    );
    expect(await assertHealing(healing, { faults: faults.schedule({ tools: ['book'] }), runs: 20, seed: SEED })).to.deep.equal({ runs: 20, seed: SEED });
  });

  describe('bad input', () => {
    it('an agent factory that throws synchronously is reported as such, not as a shrunk schedule', async () => {
      await rejects(
        () => checkHealing(throwsAtOnce, { faults: faults.schedule({ models: ['primary'] }), runs: 10 }),
        ChaosInputError,
        'the agent factory threw synchronously (before any fault could act): TypeError: tools is not iterable',
      );
    });

    it('a schedule with a tool the agent does not have is an error naming it', async () => {
      await rejects(
        () => checkHealing(healing, { faults: faults.schedule({ models: ['primary'], tools: ['refund'] }), runs: 10 }),
        ChaosInputError,
        "the schedule has faults for tool 'refund', but the agent has no tool 'refund' under chaos.tool() (it has: 'book')",
      );
      await rejects(
        () => replaySchedule(healing, { models: { tertiary: [{ kind: 'ok' }] } }),
        ChaosInputError,
        "no model 'tertiary' under chaos.model() (it has: 'primary', 'secondary')",
      );
    });

    it('a malformed fault is an error naming it; options are checked', async () => {
      await rejects(
        () => replaySchedule(healing, { models: { primary: [{ kind: 'status', status: 200 }] } }),
        ChaosInputError,
        'schedule.models.primary[0]: status 200 is not 400–599',
      );
      await rejects(
        () => replaySchedule(healing, { tools: { book: [{ kind: 'explode' } as never] } }),
        ChaosInputError,
        `schedule.tools.book[0]: unknown tool fault kind "explode"`,
      );
      await rejects(() => checkHealing(healing, { faults: {} as never }), ChaosInputError, /options.faults must be a fast-check arbitrary/);
      expect(() => faults.schedule({})).to.throw(TypeError, /name at least one model/);
      expect(() => faults.schedule({ models: ['a'], model: { weights: { explode: 1 } as never } })).to.throw(TypeError, /unknown fault kind 'explode'/);
    });

    it('a factory returning no observable is an error', async () => {
      await rejects(() => replaySchedule((() => 42) as never, {}), ChaosInputError, 'the agent factory returned number, not an Observable of agent events');
    });
  });

  it('the healing agent answers fault-free: one booking, the whole answer', async () => {
    const run = await replaySchedule(healing, {});
    expect(run.violations).to.deep.equal([]);
    expect(run.tools.map((t) => `${t.tool}#${t.call}:${t.outcome}`)).to.deep.equal(['book#1:complete']);
    const last = run.events.at(-1)?.event;
    expect(last?.type === 'message' && last.message.content).to.equal(ANSWER);
  });
});

describe('checkHealing: a conversation with earlier answers', () => {
  // an earlier assistant answer followed by the user's next question is no continuation: the
  // text check must not read the earlier answer as a partial the model was asked to go on from
  const earlier: Message[] = [
    { role: 'user', content: 'Book a table for two at eight.' },
    { role: 'assistant', content: 'Done: booked.' },
    { role: 'user', content: 'And one for four at nine?' },
  ];
  const chat: AgentFactory = (chaos) => runAgent({ model: chaos.model(desk('primary')), tools: [chaos.tool(book)], messages: earlier });

  it('a fault-free run of a follow-up question heals (no text-intact violation)', async () => {
    const run = await replaySchedule(chat, {});
    expect(run.models[0]?.continuing).to.equal(undefined);
    expect(run.violations).to.deep.equal([]);
  });
});
