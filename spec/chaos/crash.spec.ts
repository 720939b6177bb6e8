/**
 * rxheal/chaos's crash mode: `checkHealing({ crash: true })` kills each schedule's run once at
 * every crash point (journal writes in flight and committed, each call started, each model's
 * first words) and resumes it from `chaos.journal` with a fresh agent; `crash-anywhere` and
 * `side-effects-once` across the crash. A five-step durable agent passes; one whose booking
 * tool's `verify` lies (so the booking runs again on resume) and one that does not journal are
 * caught and shrunk to one crash.
 */
import { expect } from 'chai';
import * as t from 'io-ts';
import { timeout } from 'rxjs';
import type { Message, TurnEvent } from '../../src/core/events/events.js';
import type { Model } from '../../src/core/model/model.js';
import { reflectOnError } from '../../src/operators/reflectOnError.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { fallbackModel } from '../../src/sources/fallbackModel.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';
import { finish, fromMarbles, textDeltas, toolCall } from '../../src/testing/index.js';
import { healingTurns } from './agents.js';
import { ChaosInputError, checkHealing, faults, replaySchedule, type AgentFactory, type Chaos } from '../../src/chaos/index.js';

const ANSWER = 'Seat 1A is yours and you have been texted.';
const QUESTION: Message[] = [{ role: 'user', content: 'Book seat 1A and text me.' }];
const STEPS = ['lookup', 'hold', 'book', 'notify'] as const;

/** A clerk: one tool a turn, by how many tool results it has (lookup → hold → book → notify), then the answer; events 10 ms apart. */
function clerk(id: string): Model {
  return {
    id,
    stream: (request, context) => {
      const done = request.messages.filter((m) => m.role === 'tool').length;
      const tool = STEPS[done];
      const events: TurnEvent[] =
        tool === undefined
          ? [...textDeltas(ANSWER), finish('stop', { inputTokens: 5, outputTokens: 9 })]
          : [...textDeltas('One moment.'), toolCall(`${id}-${done}`, tool, { seat: '1A' }), finish('tool-calls', { inputTokens: 5, outputTokens: 3 })];
      const letters = 'abcdefghijklmnopqrstuvwxyz';
      const values = Object.fromEntries(events.map((e, i) => [letters[i]!, e]));
      return fromMarbles({ marbles: `-${events.map((_, i) => letters[i]).join('-')}|`, values }, context.scheduler);
    },
  };
}

/** The world's ledger of bookings (what outlives a crash), by call id. */
const ledger = (chaos: Chaos): Set<string> => {
  if (!chaos.world.has('bookings')) chaos.world.set('bookings', new Set<string>());
  return chaos.world.get('bookings') as Set<string>;
};

interface Variant {
  /** The booking tool's verify lies: "not booked" always, so a resume books again. */
  readonly lyingVerify?: boolean;
  /** The run is not journaled: a restart starts over. */
  readonly noJournal?: boolean;
}

export function agentFor(variant: Variant = {}): AgentFactory {
  return (chaos) => {
    const Seat = t.type({ seat: t.string });
    const lookup = defineTool({
      name: 'lookup',
      description: 'Is the seat free',
      args: Seat,
      idempotent: true,
      execute: async ({ seat }) => `${seat} is free`,
    });
    const hold = defineTool({
      name: 'hold',
      description: 'Holds the seat a minute',
      args: Seat,
      idempotent: true,
      execute: async ({ seat }) => `${seat} held`,
    });
    const book = defineTool({
      name: 'book',
      description: 'Books the seat (charges the card)',
      args: Seat,
      execute: async ({ seat }, { callId }) => {
        ledger(chaos).add(callId!);
        return `${seat} booked`;
      },
      verify: async ({ seat }, { callId }) =>
        !variant.lyingVerify && ledger(chaos).has(callId!) ? { happened: true as const, result: `${seat} booked` } : { happened: false as const },
    });
    const notify = defineTool({ name: 'notify', description: 'Texts the customer', args: Seat, execute: async () => 'sent' });
    return runAgent({
      model: fallbackModel([chaos.model(clerk('primary')), chaos.model(clerk('secondary'))], {
        midStream: 'restart',
        perModel: healingTurns,
      }),
      tools: [chaos.tool(lookup), chaos.tool(hold), chaos.tool(book), chaos.tool(notify)],
      toolPipeline: (call, call$, { hub }) =>
        call$.pipe(
          retryWithBackoff({ hub, target: `tool:${call.name}`, maxRetries: 2, initialBackoffMs: 100, jitter: 'none' }),
          timeout({ first: 3_000 }),
          reflectOnError(),
        ),
      messages: QUESTION,
      ...(variant.noJournal ? {} : { runId: chaos.runId, journal: chaos.journal }),
    });
  };
}

const schedules = faults.schedule({ models: ['primary', 'secondary'], tools: ['lookup'] });

describe('rxheal/chaos crash mode: checkHealing({ crash: true })', function () {
  this.timeout(120_000);

  it('a run passes its crash points in order: journal records committed, calls started, tools running, a model answering', async () => {
    const run = await replaySchedule(agentFor(), {});
    expect(run.violations).to.deep.equal([]);
    expect(run.crashPoints).to.include.members([
      'start committed',
      'a model answering',
      'message committed',
      'tool-start committed',
      'tool book running',
      'end committed',
    ]);
    expect(run.crashPoints.filter((p) => p.endsWith('committed')).length).to.be.greaterThan(8);
    // a point where nothing moved since the one before is the same crash: a tool's call-start right after its start record
    expect(run.crashPoints).not.to.include('tool book started');
    expect(run.crash).to.equal(undefined);
  });

  it('the durable agent heals wherever it crashes: every point of 40 schedules', async () => {
    const report = await checkHealing(agentFor(), { faults: schedules, runs: 40, seed: 7, crash: true });
    expect(report.ok, report.ok ? '' : report.message).to.equal(true);
  });

  it('crashed inside notify (no verify): the resumed run reports the outcome unknown, tells the model, and gives the same answer', async () => {
    const points = (await replaySchedule(agentFor(), {})).crashPoints;
    const at = points.indexOf('tool notify running') + 1;
    const run = await replaySchedule(agentFor(), {}, { crashAt: at });
    expect(run.crash?.point).to.equal('tool notify running');
    expect(run.violations).to.deep.equal([]);
    expect(run.events.map((e) => e.event.type)).to.include('tool-outcome-unknown');
  });

  it('a verify that lies (the booking run again on resume) is caught by side-effects-once across the crash, and shrunk to one crash with no fault', async () => {
    const report = await checkHealing(agentFor({ lyingVerify: true }), { faults: schedules, runs: 20, seed: 7, crash: true });
    expect(report.ok).to.equal(false);
    if (report.ok) return;
    const { failure } = report;
    expect(failure.violations.map((v) => v.invariant)).to.include('side-effects-once');
    expect(failure.schedule).to.deep.equal({});
    expect(failure.run.crash?.point).to.match(/book/);
    expect(failure.spec).to.include(`crashAt: ${failure.run.options.crashAt}`);
    // the printed replay reproduces it; without the crash, the same agent heals
    expect((await replaySchedule(agentFor({ lyingVerify: true }), failure.schedule, failure.run.options)).violations).not.to.deep.equal([]);
    expect((await checkHealing(agentFor({ lyingVerify: true }), { faults: schedules, runs: 20, seed: 7 })).ok).to.equal(true);
  });

  it('an agent that does not journal its run starts over after a crash: crash-anywhere (the model asked again) and the booking twice', async () => {
    const report = await checkHealing(agentFor({ noJournal: true }), { faults: schedules, runs: 5, seed: 7, crash: true });
    expect(report.ok).to.equal(false);
    if (report.ok) return;
    expect(report.failure.violations.map((v) => v.invariant)).to.satisfy(
      (names: string[]) => names.includes('crash-anywhere') || names.includes('side-effects-once'),
    );
    expect(report.message).to.match(/crashed at /);
  });

  it('bad options: crash not a boolean, crashAt not a whole number >= 1, both at once', async () => {
    const bad = async (p: Promise<unknown>, pattern: RegExp): Promise<void> => {
      const error = await p.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(ChaosInputError);
      expect((error as Error).message).to.match(pattern);
    };
    await bad(checkHealing(agentFor(), { faults: schedules, crash: 'yes' as unknown as boolean }), /options\.crash must be true or false/);
    await bad(replaySchedule(agentFor(), {}, { crashAt: 0 }), /options\.crashAt must be a whole number >= 1/);
    await bad(checkHealing(agentFor(), { faults: schedules, crash: true, crashAt: 2 }), /crashAt is for replaySchedule/);
  });
});
