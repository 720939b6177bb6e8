/**
 * A run on an engine's own steps (stepJournal, on spec/support/stepEngine.ts's engine in memory):
 * killed after each of its events and run again by the engine, it gives the uncut run's answer,
 * never requests a turn the engine journaled, books once; what comes back from the engine is
 * `replayed`; the budget counts what the journaled steps spent; a failure is a step's record;
 * bad options and foreign records are refused.
 */
import { expect } from 'chai';
import * as t from 'io-ts';
import { concatMap, from, map, type Observable, throwError, timer } from 'rxjs';
import { BudgetExceededError, InvalidOptionError } from '../../src/core/errors/errors.js';
import type { AgentEvent, Message, ModelEvent } from '../../src/core/events/events.js';
import { JournalCorruptError } from '../../src/core/journal/errors.js';
import type { Model, ModelRequest } from '../../src/core/model/model.js';
import { effectLedger, memoryJournal, stepJournal } from '../../src/durable/index.js';
import type { AgentConfig, StepRunner } from '../../src/sources/agentConfig.js';
import { resumeAgent } from '../../src/sources/resumeAgent.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';
import { finish, toolCall } from '../../src/testing/index.js';
import { StepEngine } from '../support/stepEngine.js';

/** What outlives a process: the model's requests, the bookings, the tools' executions. */
class World {
  readonly requests: string[] = [];
  readonly bookings = new Map<string, string>();
  effects = 0;
  weatherRuns = 0;
}

const paced = (events: readonly ModelEvent[]): Observable<ModelEvent> => from(events).pipe(concatMap((e) => timer(1).pipe(map(() => e))));

function model(world: World): Model {
  return {
    id: 'fake',
    stream: (request: ModelRequest) => {
      const last = request.messages[request.messages.length - 1]!;
      world.requests.push(JSON.stringify(request.messages));
      if (last.role !== 'tool')
        return paced([
          toolCall('c1', 'get_weather', { city: 'NYC' }),
          toolCall('c2', 'book', { flight: 'LH 400' }),
          finish('tool-calls', { inputTokens: 10, outputTokens: 5 }),
        ]);
      const words = `Done: ${request.messages
        .filter((m) => m.role === 'tool')
        .map((m) => m.content)
        .join(' / ')}.`.split(' ');
      return paced([
        ...words.map((w, i) => ({ type: 'text-delta' as const, text: i === 0 ? w : ` ${w}` })),
        finish('stop', { inputTokens: 30, outputTokens: 8 }),
      ]);
    },
  };
}

function tools(world: World, verify: boolean) {
  const weather = defineTool({
    name: 'get_weather',
    description: 'Weather',
    args: t.type({ city: t.string }),
    idempotent: true,
    execute: ({ city }) => {
      world.weatherRuns++;
      return timer(2).pipe(map(() => `sunny in ${city}`));
    },
  });
  const book = defineTool({
    name: 'book',
    description: 'Books a flight (an effect: never run twice)',
    args: t.type({ flight: t.string }),
    execute: ({ flight }, { idempotencyKey }) => {
      // the effect at once, the answer 3 ms later: a kill in between leaves it in doubt
      world.effects++;
      world.bookings.set(idempotencyKey!, `booked ${flight}`);
      return timer(3).pipe(map(() => `booked ${flight}`));
    },
    ...(verify
      ? {
          verify: (_args: { flight: string }, { callId }: { callId?: string }) => {
            const done = [...world.bookings].find(([key]) => key.endsWith('/book') && callId === 'c2')?.[1];
            return [done === undefined ? { applied: false as const } : { applied: true as const, result: done }];
          },
        }
      : {}),
  });
  return [weather, book];
}

const messages: Message[] = [{ role: 'user', content: 'Weather in NYC, and book LH 400' }];

const config = (world: World, run: StepRunner, o: { verify?: boolean } & Partial<Omit<AgentConfig, 'journal'>> = {}): AgentConfig => {
  const { verify = true, ...rest } = o;
  return { model: model(world), tools: tools(world, verify), messages, runId: 'trip-1', journal: stepJournal(run), ...rest };
};

interface Life {
  readonly events: AgentEvent[];
  readonly end: 'killed' | 'answer' | 'error';
  readonly error?: unknown;
}

/** One life of the workflow: killed (its engine life ended, the run unsubscribed) at its `killAt`-th event. */
function life(engine: StepEngine, make: (run: StepRunner) => AgentConfig, killAt?: number): Promise<Life> {
  const { run, kill } = engine.life();
  return new Promise((resolve) => {
    const events: AgentEvent[] = [];
    let killed = false;
    const sub = runAgent(make(run)).subscribe({
      next: (e) => {
        if (killed) return;
        events.push(e);
        if (events.length === killAt) {
          killed = true;
          kill();
          queueMicrotask(() => sub.unsubscribe());
          resolve({ events, end: 'killed' });
        }
      },
      error: (error: unknown) => resolve({ events, end: 'error', error }),
      complete: () => resolve({ events, end: 'answer' }),
    });
  });
}

const answerOf = (events: readonly AgentEvent[]): string | undefined =>
  events.flatMap((e) => (e.type === 'message' && e.message.role === 'assistant' && !e.message.toolCalls ? [e.message.content] : [])).pop();

describe('stepJournal: a run on an engine’s own steps', () => {
  let uncut: { events: AgentEvent[]; requests: number; steps: string[] };

  before(async () => {
    const world = new World();
    const engine = new StepEngine();
    const one = await life(engine, (run) => config(world, run));
    expect(one.end).to.equal('answer');
    uncut = { events: one.events, requests: world.requests.length, steps: engine.started };
  });

  it('runs each turn and each tool call as one step, named by the turn and the idempotency key', () => {
    expect(uncut.steps).to.deep.equal([
      'rxheal turn 1',
      'rxheal tool trip-1/1/0/get_weather',
      'rxheal tools 1',
      'rxheal tool trip-1/1/1/book',
      'rxheal turn 2',
    ]);
    expect(answerOf(uncut.events)).to.equal('Done: sunny in NYC / booked LH 400.');
    expect(uncut.events.some((e) => (e as { replayed?: boolean }).replayed)).to.equal(false);
  });

  it('killed after any of its events and run again: the same answer, no journaled turn requested again, one booking', async function () {
    this.timeout(60_000);
    for (let k = 1; k < uncut.events.length; k++) {
      const world = new World();
      const engine = new StepEngine();
      const first = await life(engine, (run) => config(world, run), k);
      expect(first.end, `kill at event ${k}`).to.equal('killed');
      const journaledTurns = [...engine.journal.values()].filter((s) => s.name.startsWith('rxheal turn')).length;
      const requestsBefore = world.requests.length;
      const second = await life(engine, (run) => config(world, run));
      const at = `killed at event ${k} (${first.events[k - 1]!.type})`;
      expect(second.end, at).to.equal('answer');
      expect(answerOf(second.events), at).to.equal(answerOf(uncut.events));
      expect(world.effects, `${at}: bookings`).to.equal(1);
      // the second life requests only the turns the engine had not journaled
      expect(world.requests.length - requestsBefore, `${at}: requests`).to.equal(uncut.requests - journaledTurns);
      expect(world.weatherRuns, at).to.be.at.most(2);
      // what came back from the engine says so; what ran again does not
      const replayed = second.events.filter((e) => (e as { replayed?: boolean }).replayed === true);
      if (journaledTurns > 0)
        expect(
          replayed.map((e) => e.type),
          at,
        ).to.include('tool-call');
      else expect(replayed, at).to.deep.equal([]);
    }
  });

  it('with an effect ledger: no round step, the ledger keyed as the steps are; killed after any event, the same answer and one booking', async function () {
    this.timeout(60_000);
    for (let k = 1; k < uncut.events.length; k += 2) {
      const world = new World();
      const engine = new StepEngine();
      const effects = effectLedger(memoryJournal());
      const make = (run: StepRunner) => config(world, run, { effects });
      const first = await life(engine, make, k);
      const second = first.end === 'killed' ? await life(engine, make) : first;
      const at = `killed at event ${k}`;
      expect(second.end, at).to.equal('answer');
      expect(answerOf(second.events), at).to.equal(answerOf(uncut.events));
      expect(world.effects, `${at}: bookings`).to.equal(1);
      // the booking's idempotency key (the ledger's) names its step
      expect([...world.bookings.keys()], at).to.deep.equal(['trip-1/1/1/book']);
      expect(engine.started, at).to.include('rxheal tool trip-1/1/1/book').and.not.include('rxheal tools 1');
    }
  });

  it('a booking cut while it ran, with no verify and no effect ledger: its outcome is unknown, told to the model, never booked twice', async () => {
    const world = new World();
    const engine = new StepEngine();
    const make = (run: StepRunner) => config(world, run, { verify: false });
    // killed once the weather's result is in: the booking has happened, its answer has not
    const killAt = uncut.events.findIndex((e) => e.type === 'tool-result') + 1;
    const first = await life(engine, make, killAt);
    expect(first.end).to.equal('killed');
    expect(world.effects).to.equal(1);
    const second = await life(engine, make);
    expect(second.end).to.equal('answer');
    expect(world.effects).to.equal(1);
    expect(second.events.filter((e) => e.type === 'tool-outcome-unknown')).to.deep.equal([{ type: 'tool-outcome-unknown', callId: 'c2', tool: 'book' }]);
    expect(answerOf(second.events)).to.match(/The outcome of book is unknown/);
    // its outcome is the engine's now: a third life replays it
    const third = await life(engine, make);
    expect(answerOf(third.events)).to.equal(answerOf(second.events));
    expect(world.effects).to.equal(1);
  });

  it('replayed: each event of a journaled step, and the messages it made, carry replayed: true', async () => {
    const world = new World();
    const engine = new StepEngine();
    await life(engine, (run) => config(world, run));
    const again = await life(engine, (run) => config(world, run));
    expect(again.end).to.equal('answer');
    expect(world.requests.length).to.equal(uncut.requests);
    // the same events, but for the calls' traces (not replayed) and the text deltas (joined in the turn's record)
    const types = (events: readonly AgentEvent[]) =>
      events
        .filter((e) => !['call-start', 'call-end'].includes(e.type))
        .flatMap((e, i, all) => (e.type === 'text-delta' && all[i - 1]?.type === 'text-delta' ? [] : [e.type]));
    expect(types(again.events)).to.deep.equal(types(uncut.events));
    for (const e of again.events.filter((e) => ['text-delta', 'tool-call', 'finish', 'tool-result', 'message'].includes(e.type)))
      expect((e as { replayed?: boolean }).replayed, JSON.stringify(e)).to.equal(true);
    // the text deltas of a turn are joined in its record
    expect(again.events.filter((e) => e.type === 'text-delta')).to.have.length(1);
    expect(answerOf(again.events)).to.equal(answerOf(uncut.events));
  });

  it('the budget counts what the journaled steps spent: a replay does not get a fresh one', async () => {
    const world = new World();
    const engine = new StepEngine();
    // killed in the second turn: the first is journaled, one model call spent
    const killAt = uncut.events.findIndex((e) => e.type === 'text-delta') + 1;
    await life(engine, (run) => config(world, run), killAt);
    const second = await life(engine, (run) => config(world, run, { budget: { maxModelCalls: 1 } }));
    expect(second.end).to.equal('error');
    expect(second.error).to.be.instanceOf(BudgetExceededError);
    const fresh = await life(new StepEngine(), (run) => config(new World(), run, { budget: { maxModelCalls: 2 } }));
    expect(fresh.end).to.equal('answer');
  });

  it('a turn that failed is a step’s record: the run fails again the same way, the model not called again', async () => {
    let calls = 0;
    const failing: Model = { id: 'down', stream: () => (calls++, throwError(() => Object.assign(new Error('400 bad request'), { status: 400 }))) };
    const engine = new StepEngine();
    const make = (run: StepRunner): AgentConfig => ({ model: failing, messages, runId: 'trip-2', journal: stepJournal(run) });
    const first = await life(engine, make);
    const second = await life(engine, make);
    expect(first.end).to.equal('error');
    expect(second.end).to.equal('error');
    expect((second.error as Error).message).to.equal((first.error as Error).message);
    expect((second.error as Error).name).to.equal((first.error as Error).name);
    expect(calls).to.equal(1);
    expect([...engine.journal.values()].map((s) => s.name)).to.deep.equal(['rxheal turn 1']);
  });

  it('a record rxheal did not write ends the run with JournalCorruptError', async () => {
    const engine = new StepEngine();
    engine.journal.set(0, { name: 'rxheal turn 1', data: { v: 1, events: [{ type: 'nope' }], used: {} } });
    const out = await life(engine, (run) => config(new World(), run));
    expect(out.error).to.be.instanceOf(JournalCorruptError);
    expect((out.error as Error).message).to.match(/trip-1 step "rxheal turn 1"/);
  });

  it("the engine's own failure (a step it could not journal) ends the run with it", async () => {
    const boom = new Error('connection to the system database lost');
    const run: StepRunner = () => Promise.reject(boom);
    const out = await new Promise<unknown>((resolve) => runAgent(config(new World(), run)).subscribe({ error: resolve, complete: () => resolve(undefined) }));
    expect(out).to.equal(boom);
    const thrown: StepRunner = () => {
      throw boom;
    };
    const out2 = await new Promise<unknown>((resolve) =>
      runAgent(config(new World(), thrown)).subscribe({ error: resolve, complete: () => resolve(undefined) }),
    );
    expect(out2).to.equal(boom);
  });

  describe('refuses at construction', () => {
    const run: StepRunner = (_name, fn) => fn();
    it('a run that is not a function', () => {
      expect(() => stepJournal('DBOS' as never))
        .to.throw(InvalidOptionError)
        .with.property('option', 'run');
    });
    for (const [option, value] of [
      ['leaseMs', 30_000],
      ['holder', 'me'],
      ['checkpointMs', 100],
      ['allowChanged', ['model']],
    ] as const)
      it(`${option}: the engine holds the run`, () => {
        expect(() => runAgent(config(new World(), run, { [option]: value })))
          .to.throw(InvalidOptionError, /the engine holds the run/)
          .with.property('option', option);
      });
    it('a run without runId', () => {
      expect(() => runAgent({ ...config(new World(), run), runId: undefined }))
        .to.throw(InvalidOptionError)
        .with.property('option', 'runId');
    });
    it('a tool that needs approval, and approvals', () => {
      const world = new World();
      const gated = defineTool({ name: 'pay', description: 'Pays', args: t.type({}), needsApproval: true, execute: () => 'paid' });
      expect(() => runAgent({ ...config(world, run), tools: [gated] }))
        .to.throw(InvalidOptionError, /tool 'pay' would wait for approval/)
        .with.property('option', 'tools[0].needsApproval');
      expect(() => resumeAgent({ ...config(world, run), runId: 'trip-1', journal: stepJournal(run), approvals: { c1: { approved: true } } }))
        .to.throw(InvalidOptionError)
        .with.property('option', 'approvals');
    });
  });
});
