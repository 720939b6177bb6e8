/**
 * Journaled runs in virtual time (memoryJournal on the TestScheduler): a run cut at every ms —
 * between records and in the middle of writes, turns and tool calls — and resumed by a fresh
 * agent gives the uncut run's answer, never requests a journaled turn again, never runs a
 * non-idempotent tool twice; approvals, budget, configuration changes, bad input, the lease.
 */
import { expect } from 'chai';
import * as t from 'io-ts';
import { asyncScheduler, concatMap, from, map, type Observable, timer } from 'rxjs';
import { BudgetExceededError, InvalidOptionError } from '../../src/core/errors/errors.js';
import type { AgentEvent, Message, ModelEvent } from '../../src/core/events/events.js';
import { JournalCorruptError, JournalMismatchError, RunLockedError, ToolOutcomeUnknownError } from '../../src/core/journal/errors.js';
import type { JournalStore } from '../../src/core/journal/journal.js';
import { memoryJournal } from '../../src/durable/index.js';
import type { Model, ModelRequest } from '../../src/core/model/model.js';
import type { AgentConfig } from '../../src/sources/agentConfig.js';
import { resumeAgent } from '../../src/sources/resumeAgent.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';
import { finish, record, toolCall, type Recording } from '../../src/testing/index.js';
import { testScheduler } from '../support/marbles.js';

/** What outlives a process: the model's request log, the bookings made, the tools' executions. */
class World {
  readonly requests: string[] = [];
  readonly bookings = new Map<string, string>();
  effects = 0;
  weatherRuns = 0;
  verifies = 0;
}

const paced = (events: readonly ModelEvent[]): Observable<ModelEvent> => from(events).pipe(concatMap((e) => timer(1).pipe(map(() => e))));

/** A model that answers from the request (any process's copy answers alike), logging each request. */
function model(world: World, id = 'fake'): Model {
  return {
    id,
    stream: (request: ModelRequest) => {
      const last = request.messages[request.messages.length - 1]!;
      world.requests.push(JSON.stringify(request.messages));
      if (last.role !== 'tool')
        return paced([
          toolCall('c1', 'get_weather', { city: 'NYC' }),
          toolCall('c2', 'book', { flight: 'LH 400' }),
          finish('tool-calls', { inputTokens: 10, outputTokens: 5 }),
        ]);
      const tools = request.messages.filter((m) => m.role === 'tool').map((m) => m.content);
      const words = `Done: ${tools.join(' / ')}.`.split(' ');
      return paced([
        ...words.map((w, i) => ({ type: 'text-delta' as const, text: i === 0 ? w : ` ${w}` })),
        finish('stop', { inputTokens: 30, outputTokens: 8 }),
      ]);
    },
  };
}

interface ToolOptions {
  readonly verify?: boolean;
  readonly needsApproval?: boolean;
  readonly bookName?: string;
}

function tools(world: World, o: ToolOptions = {}) {
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
    name: o.bookName ?? 'book',
    description: 'Books a flight (an effect: never run twice)',
    args: t.type({ flight: t.string }),
    ...(o.needsApproval ? { needsApproval: true } : {}),
    execute: ({ flight }, { callId }) => {
      // the effect happens at once; the answer comes 3 ms later (a crash in between: the outcome is unknown)
      world.effects++;
      world.bookings.set(callId!, `booked ${flight}`);
      return timer(3).pipe(map(() => `booked ${flight}`));
    },
    ...(o.verify
      ? {
          verify: (_args: { flight: string }, { callId }: { callId?: string }) => {
            world.verifies++;
            const done = world.bookings.get(callId!);
            return [done === undefined ? { applied: false as const } : { applied: true as const, result: done }];
          },
        }
      : {}),
  });
  return [weather, book];
}

const messages: Message[] = [{ role: 'user', content: 'Weather in NYC, and book LH 400' }];

function config(
  world: World,
  journal: JournalStore,
  o: ToolOptions & Partial<Omit<AgentConfig, 'journal'>> = {},
): AgentConfig & { runId: string; journal: JournalStore } {
  const { verify, needsApproval, bookName, ...rest } = o;
  return {
    model: model(world),
    tools: tools(world, { verify, needsApproval, bookName }),
    messages,
    instruction: 'Be brief.',
    runId: 'trip-1',
    journal,
    ...rest,
  };
}

const answerOf = (events: readonly [number, AgentEvent][]): string | undefined =>
  events
    .map(([, e]) => e)
    .filter((e): e is Extract<AgentEvent, { type: 'message' }> => e.type === 'message' && e.message.role === 'assistant' && !e.message.toolCalls?.length)
    .at(-1)?.message.content;

/** A copy of `o` without `keys`. */
function without<T extends object, K extends keyof T>(o: T, ...keys: K[]): Omit<T, K> {
  return Object.fromEntries(Object.entries(o).filter(([k]) => !keys.includes(k as K))) as Omit<T, K>;
}

/** Runs `body` in virtual time, to the end. */
function virtual(body: () => void): void {
  testScheduler().run(({ flush }) => {
    body();
    flush();
  });
}

describe('durable runs (runAgent with a journal, resumeAgent) in virtual time', () => {
  let uncut: { answer: string; requests: number; duration: number; events: number };

  before(() => {
    const world = new World();
    let r!: Recording<AgentEvent>;
    virtual(() => (r = record(runAgent(config(world, memoryJournal({ latencyMs: 1 }), { verify: true })))));
    expect(r.completed()).to.equal(true);
    uncut = { answer: answerOf(r.events)!, requests: world.requests.length, duration: r.end()!.at, events: r.events.length };
    expect(uncut.answer).to.equal('Done: sunny in NYC / booked LH 400.');
    expect(world.effects).to.equal(1);
  });

  it('a run without a journal and with one give the same answer and the same events but for when they come', () => {
    const world = new World();
    let r!: Recording<AgentEvent>;
    const plain = without(config(world, memoryJournal()), 'runId', 'journal');
    virtual(() => (r = record(runAgent(plain))));
    expect(answerOf(r.events)).to.equal(uncut.answer);
    expect(r.events.length).to.equal(uncut.events);
  });

  for (const verify of [true, false]) {
    it(`cut at every ms and resumed by a fresh agent: the same answer${verify ? '' : ' or the unknown reported'}; no journaled turn requested again; the booking made once${verify ? ' (verify asked)' : ' or reported unknown'}, never twice`, () => {
      let verified = 0;
      let unknowns = 0;
      for (let cut = 1; cut <= uncut.duration + 1; cut++) {
        const world = new World();
        let resumed!: Recording<AgentEvent>;
        virtual(() => {
          const journal = memoryJournal({ latencyMs: 1 });
          const first = runAgent(config(world, journal, { verify, holder: 'process-1' })).subscribe({ error: () => undefined });
          asyncScheduler.schedule(() => first.unsubscribe(), cut);
          // a new process, a fresh agent (its own tools and model), a moment later
          asyncScheduler.schedule(() => (resumed = record(resumeAgent(config(world, journal, { verify, holder: 'process-2' })))), cut + 5);
        });
        const where = `cut at ${cut} ms`;
        expect(resumed.completed(), `${where}: ${String(resumed.error())}`).to.equal(true);
        const unknown = resumed.events.some(([, e]) => e.type === 'tool-outcome-unknown');
        if (unknown) unknowns++;
        expect(world.effects, where).to.be.at.most(1);
        if (!unknown) {
          expect(answerOf(resumed.events), where).to.equal(uncut.answer);
          expect(world.effects, where).to.equal(1);
        } else {
          expect(verify, `${where}: an unknown outcome only without verify`).to.equal(false);
          expect(answerOf(resumed.events), where).to.match(/The outcome of book is unknown/);
        }
        verified += world.verifies;
        // an interrupted turn is asked again, once; nothing journaled is
        expect(world.requests.length, where).to.be.at.most(uncut.requests + 1);
        expect(new Set(world.requests).size, where).to.equal(uncut.requests);
        // the replayed events come first, then the live ones
        const flags = resumed.events.map(([, e]) => e.replayed === true);
        expect(flags.indexOf(false) === -1 || flags.lastIndexOf(true) < flags.indexOf(false), where).to.equal(true);
      }
      if (verify) expect(verified, 'verify answered some cut inside the booking').to.be.greaterThan(0);
      else expect(unknowns, 'some cut fell inside the booking').to.be.greaterThan(0);
    });
  }

  it("onUnknownOutcome: 'error' fails with ToolOutcomeUnknownError (tool-outcome-unknown first), not journaled: a later resume telling the model goes on", () => {
    const world = new World();
    let failed!: Recording<AgentEvent>;
    let told!: Recording<AgentEvent>;
    virtual(() => {
      const journal = memoryJournal();
      const first = runAgent(config(world, journal)).subscribe();
      // the booking starts at 3 ms (turn: 3 events 1 ms apart), answers at 6: cut at 5
      asyncScheduler.schedule(() => first.unsubscribe(), 5);
      asyncScheduler.schedule(() => (failed = record(resumeAgent(config(world, journal, { onUnknownOutcome: 'error' })))), 10);
      asyncScheduler.schedule(() => (told = record(resumeAgent(config(world, journal)))), 20);
    });
    expect(failed.error()).to.be.instanceOf(ToolOutcomeUnknownError).and.include({ tool: 'book', callId: 'c2' });
    expect(failed.events.some(([, e]) => e.type === 'tool-outcome-unknown')).to.equal(true);
    expect(told.completed()).to.equal(true);
    expect(answerOf(told.events)).to.match(/outcome of book is unknown/);
    expect(world.effects).to.equal(1);
  });

  it('an interrupted idempotent tool runs again', () => {
    const world = new World();
    let resumed!: Recording<AgentEvent>;
    virtual(() => {
      const journal = memoryJournal();
      const first = runAgent(config(world, journal, { verify: true })).subscribe();
      // the weather runs from 3 to 5 ms: cut at 4
      asyncScheduler.schedule(() => first.unsubscribe(), 4);
      asyncScheduler.schedule(() => (resumed = record(resumeAgent(config(world, journal, { verify: true })))), 10);
    });
    expect(world.weatherRuns).to.equal(2);
    expect(answerOf(resumed.events)).to.equal(uncut.answer);
  });

  it('a finished run resumed replays its answer and calls nothing; a failed one replays its error', () => {
    const world = new World();
    let again!: Recording<AgentEvent>;
    let failedAgain!: Recording<AgentEvent>;
    let live!: Recording<AgentEvent>;
    virtual(() => {
      const journal = memoryJournal();
      live = record(runAgent(config(world, journal)));
      asyncScheduler.schedule(() => (again = record(resumeAgent(config(world, journal)))), 100);
      const failing = { ...config(world, journal), runId: 'trip-2', maxSteps: 1 };
      record(runAgent(failing));
      asyncScheduler.schedule(() => (failedAgain = record(resumeAgent(failing))), 100);
    });
    const requests = world.requests.length;
    expect(again.completed()).to.equal(true);
    expect(again.events.every(([, e]) => e.replayed === true)).to.equal(true);
    expect(answerOf(again.events)).to.equal(uncut.answer);
    // every journaled event comes back (a tool's message right after its result: the round's order is the journal's)
    const journaled = new Set(['tool-call', 'finish', 'tool-result', 'tool-error', 'message']);
    const bag = (events: readonly [number, AgentEvent][]) =>
      events
        .map(([, e]) => e)
        .filter((e) => journaled.has(e.type))
        .map(({ replayed: _, ...e }) => JSON.stringify(e))
        .sort();
    expect(bag(again.events)).to.deep.equal(bag(live.events));
    expect(failedAgain.error()).to.include({ name: 'BudgetExceededError' });
    expect(failedAgain.events.every(([, e]) => e.replayed === true)).to.equal(true);
    expect(world.requests.length).to.equal(requests);
    expect(world.effects).to.equal(2);
  });

  it('the budget counts what the journal holds: a resumed run gets no fresh budget', () => {
    const world = new World();
    let resumed!: Recording<AgentEvent>;
    let whole!: Recording<AgentEvent>;
    virtual(() => {
      const journal = memoryJournal();
      const first = runAgent(config(world, journal, { verify: true })).subscribe();
      // after the first turn's record (3 ms) and the tools (6 ms)
      asyncScheduler.schedule(() => first.unsubscribe(), 8);
      asyncScheduler.schedule(() => (resumed = record(resumeAgent(config(world, journal, { verify: true, budget: { maxModelCalls: 1 } })))), 10);
      whole = record(runAgent({ ...config(new World(), memoryJournal(), { budget: { maxModelCalls: 2 } }), runId: 'other' }));
    });
    expect(whole.completed()).to.equal(true);
    expect(resumed.error()).to.be.instanceOf(BudgetExceededError).and.include({ resource: 'modelCalls', used: 2, limit: 1 });
  });

  it("money too: a resumed run's dollars start from what its journal's records charged (the same refusal as the run never interrupted)", () => {
    const world = new World();
    let resumed!: Recording<AgentEvent>;
    let whole!: Recording<AgentEvent>;
    // turn 1 charges $0.00501 (10 in, 5 out); each turn reserves ~$0.0301 (30 output tokens at $1000/M): the second does not fit in $0.032
    const money = { prices: { fake: { input: 1, output: 1000 } }, budget: { maxUsd: 0.032, reserveOutputTokens: 30 } };
    virtual(() => {
      const journal = memoryJournal();
      // the first process has room for both turns; it stops after the first turn's record and the tools
      const first = runAgent(config(world, journal, { verify: true, ...money, budget: { ...money.budget, maxUsd: 1 } })).subscribe();
      asyncScheduler.schedule(() => first.unsubscribe(), 8);
      asyncScheduler.schedule(() => (resumed = record(resumeAgent(config(world, journal, { verify: true, ...money })))), 10);
      whole = record(runAgent({ ...config(new World(), memoryJournal(), money), runId: 'other' }));
    });
    const wholeError = whole.error() as BudgetExceededError;
    expect(wholeError).to.be.instanceOf(BudgetExceededError).and.include({ resource: 'usd', limit: 0.032 });
    const resumedError = resumed.error() as BudgetExceededError;
    expect(resumedError).to.be.instanceOf(BudgetExceededError).and.include({ resource: 'usd', limit: 0.032 });
    expect(resumedError.used).to.be.closeTo(wholeError.used, 1e-12);
  });

  it('a message event of a journaled run comes once its record is in the journal', () => {
    const world = new World();
    const committed: string[] = [];
    const inner = memoryJournal({ latencyMs: 2 });
    // a store that notes each record once the inner store committed it
    const journal: JournalStore = {
      read: (runId) => inner.read(runId),
      claim: (claim) =>
        inner.claim(claim).pipe(
          map((session) => ({
            ...session,
            entries: session.entries,
            append: (data) => session.append(data).pipe(map((seq) => (committed.push(JSON.stringify(data)), seq))),
            renew: () => session.renew(),
            release: () => session.release(),
          })),
        ),
    };
    let checked = 0;
    virtual(() => {
      runAgent(config(world, journal)).subscribe((e) => {
        if (e.type !== 'message') return;
        checked++;
        expect(
          committed.some((text) => text.includes(JSON.stringify(e.message))),
          `${e.message.role} message journaled before its event`,
        ).to.equal(true);
      });
    });
    expect(checked).to.equal(4);
  });

  describe('approvals', () => {
    it('a call that needs approval: approval-requested, suspended, the run completes; the other call ran; resumed without approvals it suspends again, calling nothing', () => {
      const world = new World();
      let first!: Recording<AgentEvent>;
      let again!: Recording<AgentEvent>;
      virtual(() => {
        const journal = memoryJournal();
        first = record(runAgent(config(world, journal, { needsApproval: true })));
        asyncScheduler.schedule(() => (again = record(resumeAgent(config(world, journal, { needsApproval: true })))), 50);
      });
      const types = first.events.map(([, e]) => e.type);
      expect(types.slice(-2)).to.deep.equal(['approval-requested', 'suspended']);
      expect(first.events.at(-2)![1]).to.deep.equal({ type: 'approval-requested', callId: 'c2', tool: 'book', args: { flight: 'LH 400' } });
      expect(first.events.at(-1)![1]).to.deep.equal({ type: 'suspended', runId: 'trip-1' });
      expect(first.completed()).to.equal(true);
      expect(world.weatherRuns).to.equal(1);
      expect(world.effects).to.equal(0);
      expect(again.completed()).to.equal(true);
      expect(again.events.at(-1)![1]).to.deep.equal({ type: 'suspended', runId: 'trip-1', replayed: true });
      expect(world.requests.length).to.equal(1);
    });

    for (const approved of [true, false]) {
      it(approved ? 'approved: the call runs, the run answers' : 'denied: the model is told it was denied, and why; the call never runs', () => {
        const world = new World();
        let resumed!: Recording<AgentEvent>;
        virtual(() => {
          const journal = memoryJournal();
          record(runAgent(config(world, journal, { needsApproval: true })));
          const approvals = { c2: approved ? { approved: true as const } : { approved: false as const, reason: 'over budget' } };
          asyncScheduler.schedule(() => (resumed = record(resumeAgent({ ...config(world, journal, { needsApproval: true }), approvals }))), 50);
        });
        expect(resumed.completed()).to.equal(true);
        expect(world.effects).to.equal(approved ? 1 : 0);
        expect(world.weatherRuns).to.equal(1);
        expect(answerOf(resumed.events)).to.equal(
          approved ? uncut.answer : 'Done: sunny in NYC / The call was denied by the person asked to approve it: over budget. It did not run..',
        );
      });
    }

    it('an approval naming a call that does not wait for one is an InvalidOptionError naming it; nothing written', () => {
      const world = new World();
      let resumed!: Recording<AgentEvent>;
      const journal = memoryJournal();
      let before = 0;
      let after = 0;
      virtual(() => {
        record(runAgent(config(world, journal, { needsApproval: true })));
        asyncScheduler.schedule(() => journal.read('trip-1').subscribe((e) => (before = e.length)), 40);
        asyncScheduler.schedule(
          () => (resumed = record(resumeAgent({ ...config(world, journal, { needsApproval: true }), approvals: { c1: { approved: true } } }))),
          50,
        );
        asyncScheduler.schedule(() => journal.read('trip-1').subscribe((e) => (after = e.length)), 60);
      });
      expect(resumed.error()).to.be.instanceOf(InvalidOptionError).and.include({ option: 'approvals.c1' });
      expect(String(resumed.error())).to.match(/waiting: "c2"/);
      expect(after).to.equal(before);
    });

    it('a tool that needs approval without a journal is refused at construction', () => {
      const world = new World();
      const plain = without(config(world, memoryJournal(), { needsApproval: true }), 'runId', 'journal');
      expect(() => runAgent(plain))
        .to.throw(InvalidOptionError, /tool 'book' needs approval/)
        .with.property('option', 'journal');
    });
  });

  describe('a changed configuration', () => {
    it('is a JournalMismatchError naming what differs, unless allowChanged accepts it', () => {
      const world = new World();
      let renamed!: Recording<AgentEvent>;
      let accepted!: Recording<AgentEvent>;
      let otherModel!: Recording<AgentEvent>;
      virtual(() => {
        const journal = memoryJournal();
        const first = runAgent(config(world, journal)).subscribe();
        asyncScheduler.schedule(() => first.unsubscribe(), 2);
        asyncScheduler.schedule(() => (renamed = record(resumeAgent(config(world, journal, { bookName: 'reserve', instruction: 'Be kind.' })))), 10);
        asyncScheduler.schedule(() => (otherModel = record(resumeAgent({ ...config(world, journal), model: model(world, 'other') }))), 20);
        asyncScheduler.schedule(
          () => (accepted = record(resumeAgent({ ...config(world, journal), instruction: 'Be kind.', allowChanged: ['instruction'] }))),
          30,
        );
      });
      const error = renamed.error() as JournalMismatchError;
      expect(error).to.be.instanceOf(JournalMismatchError);
      expect(error.differences.map((d) => d.kind).sort()).to.deep.equal(['instruction', 'tool', 'tool']);
      expect(error.message)
        .to.match(/"book" is gone/)
        .and.match(/"reserve" was added/);
      expect((otherModel.error() as JournalMismatchError).differences).to.deep.equal([
        { kind: 'model', detail: '"fake" is gone' },
        { kind: 'model', detail: '"other" was added' },
      ]);
      expect(accepted.completed()).to.equal(true);
    });
  });

  describe('bad input: a clear typed error, nothing written', () => {
    const seeded = (data: object[]): JournalStore => {
      const journal = memoryJournal();
      journal.claim({ runId: 'trip-1', holder: 'seed', leaseMs: 10 }).subscribe((s) => {
        for (const d of data) s.append(d as never).subscribe();
        s.release().subscribe();
      });
      return journal;
    };

    for (const [what, data, reason] of [
      ["a journal that is not an rxheal run's", [{ hello: 'world' }], /not an rxheal run journal/],
      [
        'a record of a newer version',
        [
          { v: 1, type: 'start', fingerprint: { instruction: '', tools: [], models: [] }, messages: [] },
          { v: 2, type: 'end' },
        ],
        /version 2/,
      ],
    ] as const) {
      it(`${what}: JournalCorruptError`, () => {
        const world = new World();
        let resumed!: Recording<AgentEvent>;
        let after = -1;
        virtual(() => {
          const journal = seeded([...data]);
          resumed = record(resumeAgent(config(world, journal)));
          asyncScheduler.schedule(() => journal.read('trip-1').subscribe((e) => (after = e.length)), 10);
        });
        expect(resumed.error()).to.be.instanceOf(JournalCorruptError);
        expect(String(resumed.error())).to.match(reason);
        expect(after).to.equal(data.length);
        expect(world.requests.length).to.equal(0);
      });
    }

    it('a runId the stores cannot key, resumeAgent without a journal or a runId, a journal that is not a JournalStore: InvalidOptionError at once', () => {
      const world = new World();
      const journal = memoryJournal();
      expect(() => runAgent({ ...config(world, journal), runId: 'a/b' }))
        .to.throw(InvalidOptionError, /1 to 100 characters/)
        .with.property('option', 'runId');
      const noJournal = without(config(world, journal), 'journal');
      expect(() => resumeAgent(noJournal as never))
        .to.throw(InvalidOptionError, /resumeAgent resumes a journaled run/)
        .with.property('option', 'journal');
      const noRunId = without(config(world, journal), 'runId');
      expect(() => resumeAgent(noRunId as never))
        .to.throw(InvalidOptionError)
        .with.property('option', 'runId');
      expect(() => runAgent(noRunId as never))
        .to.throw(InvalidOptionError, /needs both runId and journal/)
        .with.property('option', 'runId');
      expect(() => runAgent({ ...config(world, journal), journal: {} as never }))
        .to.throw(InvalidOptionError, /a JournalStore/)
        .with.property('option', 'journal');
      expect(() => resumeAgent({ ...config(world, journal), approvals: { c1: { approved: 'yes' } } as never }))
        .to.throw(InvalidOptionError)
        .with.property('option', 'approvals');
    });
  });

  describe('one writer', () => {
    it('a second run of the same id while the first holds it errors with RunLockedError; once the first is unsubscribed its lease is free at once', () => {
      const world = new World();
      let second!: Recording<AgentEvent>;
      let third!: Recording<AgentEvent>;
      virtual(() => {
        const journal = memoryJournal();
        const first = runAgent(config(world, journal, { holder: 'a', leaseMs: 1000 })).subscribe();
        asyncScheduler.schedule(() => (second = record(runAgent(config(world, journal, { holder: 'b' })))), 2);
        asyncScheduler.schedule(() => first.unsubscribe(), 4);
        asyncScheduler.schedule(() => (third = record(resumeAgent(config(world, journal, { holder: 'c', verify: true })))), 4);
      });
      expect(second.error()).to.be.instanceOf(RunLockedError).and.include({ reason: 'held', holder: 'a' });
      expect(third.completed()).to.equal(true);
      expect(answerOf(third.events)).to.match(/^Done: sunny in NYC/);
    });

    it('renews its lease on the scheduler: a run longer than its lease keeps it', () => {
      const world = new World();
      let second!: Recording<AgentEvent>;
      let first!: Recording<AgentEvent>;
      virtual(() => {
        const journal = memoryJournal();
        first = record(runAgent(config(world, journal, { holder: 'a', leaseMs: 3 })));
        asyncScheduler.schedule(() => (second = record(runAgent(config(world, journal, { holder: 'b' })))), 10);
      });
      expect(first.completed()).to.equal(true);
      expect(second.error()).to.be.instanceOf(RunLockedError);
    });
  });
});
