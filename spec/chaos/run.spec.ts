/**
 * replaySchedule's clock (src/chaos/run.ts, virtualTime.ts): promises a tool, model or agent
 * factory returns resolve in virtual time; a run hangs only when neither a timer nor a promise
 * can move it, and says which; the library's own randomness is seeded, so a replay under the
 * default retry jitter is the same every time.
 */
import { expect } from 'chai';
import * as t from 'io-ts';
import { asyncScheduler, firstValueFrom, from, timer } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { ChaosInputError, replaySchedule, type AgentFactory } from '../../src/chaos/index.js';
import type { AgentEvent, Message, TurnEvent } from '../../src/core/events/events.js';
import type { Model } from '../../src/core/model/model.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';
import { finish, scriptedModel, textDeltas, toolCall } from '../../src/testing/index.js';
import { rejects } from '../support/rejects.js';

const QUESTION: Message[] = [{ role: 'user', content: 'Weather in Paris?' }];

/** A model that asks for the weather, then answers with what the tool said. */
const forecaster = (): Model =>
  scriptedModel('primary', [
    [toolCall('c1', 'get_weather', { city: 'Paris' }), finish('tool-calls')],
    [...textDeltas('It is sunny in Paris.'), finish('stop')],
  ]);

/** The form defineTool's own docs show: an async execute. */
const asyncWeather = defineTool({
  name: 'get_weather',
  description: 'Current weather for a city',
  args: t.type({ city: t.string }),
  idempotent: true,
  execute: async ({ city }) => {
    await Promise.resolve();
    return { city, sky: 'sunny' };
  },
});

describe('replaySchedule: promises in virtual time', function () {
  this.timeout(20_000);

  it('a tool whose execute is async: the run answers, nothing broken (no fault injected)', async () => {
    const agent: AgentFactory = (chaos) => runAgent({ model: chaos.model(forecaster()), tools: [chaos.tool(asyncWeather)], messages: QUESTION });
    const run = await replaySchedule(agent, {});
    expect(run.violations).to.deep.equal([]);
    expect(run.end.kind).to.equal('complete');
    expect(run.tools.map((x) => `${x.tool}#${x.call}:${x.outcome}`)).to.deep.equal(['get_weather#1:complete']);
  });

  it('an async tool under faults heals as a synchronous one would (a 503, then the retry)', async () => {
    const agent: AgentFactory = (chaos) =>
      runAgent({
        model: chaos.model(forecaster()),
        tools: [chaos.tool(asyncWeather)],
        messages: QUESTION,
        toolPipeline: (call, call$, { hub }) =>
          call$.pipe(retryWithBackoff({ hub, target: `tool:${call.name}`, maxRetries: 2, initialBackoffMs: 100, jitter: 'none' })),
      });
    const run = await replaySchedule(agent, { tools: { get_weather: [{ kind: 'throw', status: 503 }] } });
    expect(run.violations).to.deep.equal([]);
    expect(run.tools.map((x) => [x.call, x.outcome, x.startedAt])).to.deep.equal([
      [1, 'error', 0],
      [2, 'complete', 100],
    ]);
  });

  it('a model whose stream is an async iterable (each event a promise later), built by an async agent factory', async () => {
    const agent: AgentFactory = async (chaos) => {
      await Promise.resolve();
      const model: Model = { id: 'primary', stream: () => from(eventsLater()) };
      return runAgent({ model: chaos.model(model), messages: QUESTION });
    };
    const run = await replaySchedule(agent, {});
    expect(run.violations).to.deep.equal([]);
    const last = run.events.at(-1)?.event;
    expect(last?.type === 'message' && last.message.content).to.equal('It is sunny.');
    // cut after one event: the partial is what the model delivered, the error a typed one
    const cut = await replaySchedule(agent, { models: { primary: [{ kind: 'reset', afterEvents: 1 }] } });
    expect(cut.models[0]?.text).to.equal('It');
    expect(cut.end.kind === 'error' && (cut.end.error as Error).name).to.equal('IncompleteStreamError');
  });

  it('the clock stays virtual across an await: an async tool that waits on an RxJS timer waits in virtual time', async () => {
    const slow = defineTool({
      name: 'get_weather',
      description: 'Current weather',
      args: t.type({ city: t.string }),
      idempotent: true,
      execute: async () => {
        await Promise.resolve();
        await firstValueFrom(timer(30_000, asyncScheduler));
        return 'sunny';
      },
    });
    const agent: AgentFactory = (chaos) => runAgent({ model: chaos.model(forecaster()), tools: [chaos.tool(slow)], messages: QUESTION });
    const run = await replaySchedule(agent, {});
    expect(run.violations).to.deep.equal([]);
    expect(run.tools[0]?.endedAt).to.equal(30_000);
    expect(run.end.at).to.equal(30_000);
  });

  it('a promise that never settles is a hang that names it, not "waits on nothing"', async () => {
    const forever = defineTool({
      name: 'get_weather',
      description: 'never answers',
      args: t.type({ city: t.string }),
      idempotent: true,
      execute: () => new Promise<string>(() => undefined),
    });
    const agent: AgentFactory = (chaos) => runAgent({ model: chaos.model(forecaster()), tools: [chaos.tool(forever)], messages: QUESTION });
    const run = await replaySchedule(agent, {});
    expect(run.end.kind).to.equal('hang');
    expect(run.violations.map((v) => v.invariant)).to.deep.equal(['ends']);
    expect(run.violations[0]!.message).to.contain("it waits on promises that never settled: tool 'get_weather' execution #1's promise");
  });

  it('a stall no deadline ends: "waits on nothing" (no timer, no promise)', async () => {
    const agent: AgentFactory = (chaos) => runAgent({ model: chaos.model(forecaster()), tools: [chaos.tool(asyncWeather)], messages: QUESTION });
    const run = await replaySchedule(agent, { models: { primary: [{ kind: 'stall', afterEvents: 0 }] } });
    expect(run.end.kind === 'hang' && run.end.reason).to.equal(
      'it waits on nothing that will ever happen (no timer is scheduled and no promise is pending: no deadline ends the wait)',
    );
  });

  it('an async factory that rejects, or never settles, is a ChaosInputError naming it', async () => {
    await rejects(
      () => replaySchedule(async () => Promise.reject(new Error('no key')), {}),
      ChaosInputError,
      "the agent factory's promise rejected (before any fault could act): Error: no key",
    );
    await rejects(() => replaySchedule(() => new Promise<never>(() => undefined), {}), ChaosInputError, "the agent factory's promise never settled");
  });

  it('called inside TestScheduler.run, it refuses (it runs its own clock)', async () => {
    let inside: Promise<unknown> | undefined;
    new TestScheduler(() => undefined).run(() => {
      inside = replaySchedule((chaos) => runAgent({ model: chaos.model(forecaster()), messages: QUESTION }), {});
    });
    await rejects(() => inside!, ChaosInputError, 'a replay runs its own virtual clock: call it outside TestScheduler.run');
  });

  it('replays made at once run one after another, each on its own clock', async () => {
    const agent: AgentFactory = (chaos) => runAgent({ model: chaos.model(forecaster()), tools: [chaos.tool(asyncWeather)], messages: QUESTION });
    const runs = await Promise.all([
      replaySchedule(agent, {}),
      replaySchedule(agent, { tools: { get_weather: [{ kind: 'slow', delayMs: 500 }] } }),
      replaySchedule(agent, {}),
    ]);
    expect(runs.map((r) => [r.end.kind, r.end.at, r.violations.length])).to.deep.equal([
      ['complete', 0, 0],
      ['complete', 500, 0],
      ['complete', 0, 0],
    ]);
  });
});

describe('replaySchedule: seeded randomness', function () {
  this.timeout(30_000);

  /** Retries under the default (equal) jitter: every wait drawn at random. */
  const jittery: AgentFactory = (chaos) =>
    runAgent({
      model: chaos.model(scriptedModel('primary', [[...textDeltas('Fine.'), finish('stop')]])),
      messages: QUESTION,
      modelPipeline: (_request, turn$, { hub }) =>
        turn$.pipe(retryWithBackoff<TurnEvent>({ hub, target: 'model:primary', maxRetries: 4, initialBackoffMs: 1_000 })),
    });
  const schedule = {
    models: {
      primary: [
        { kind: 'status', status: 503 },
        { kind: 'status', status: 503 },
        { kind: 'status', status: 503 },
      ],
    },
  } as const;
  const waits = (events: readonly { event: AgentEvent }[]): number[] => events.flatMap(({ event }) => (event.type === 'retry' ? [event.delayMs] : []));

  it('20 replays of one schedule under the default jitter are the same run', async () => {
    const seen = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const run = await replaySchedule(jittery, schedule);
      seen.add(JSON.stringify([waits(run.events), run.end.at, run.violations]));
    }
    expect(seen.size).to.equal(1);
    const [delays] = JSON.parse([...seen][0]!) as [number[]];
    // jittered (equal jitter: half to all of 1 s, 2 s, 4 s), not the bare backoff
    expect(delays).to.have.length(3);
    expect(delays).to.not.deep.equal([1000, 2000, 4000]);
  });

  it('randomSeed draws other numbers; the same randomSeed, the same again; Math.random is left alone', async () => {
    const a = waits((await replaySchedule(jittery, schedule, { randomSeed: 7 })).events);
    const b = waits((await replaySchedule(jittery, schedule, { randomSeed: 7 })).events);
    const zero = waits((await replaySchedule(jittery, schedule)).events);
    expect(a).to.deep.equal(b);
    expect(a).to.not.deep.equal(zero);
    const random = Math.random;
    await replaySchedule(jittery, schedule);
    expect(Math.random).to.equal(random);
  });

  it('chaos.random: the agent’s own draws replay the same too, apart from the library’s', async () => {
    const draws: number[][] = [];
    const agent: AgentFactory = (chaos) => {
      draws.push([chaos.random(), chaos.random()]);
      return jittery(chaos);
    };
    const first = await replaySchedule(agent, schedule);
    const second = await replaySchedule(agent, schedule);
    expect(draws[0]).to.deep.equal(draws[1]);
    expect(draws[0]!.every((n) => n >= 0 && n < 1)).to.equal(true);
    // the agent drew first: the library's jitter is what it is without those draws
    expect(waits(first.events)).to.deep.equal(waits((await replaySchedule(jittery, schedule)).events));
    expect(waits(second.events)).to.deep.equal(waits(first.events));
  });

  it('bad options are refused, naming them', async () => {
    await rejects(() => replaySchedule(jittery, {}, { randomSeed: 1.5 }), ChaosInputError, 'options.randomSeed must be a whole number, got 1.5');
    await rejects(() => replaySchedule(jittery, {}, { boundMs: -1 }), ChaosInputError, 'options.boundMs must be a number of ms >= 0, got -1');
  });
});

/** The model's events, a microtask later each. */
async function* eventsLaterGen(): AsyncGenerator<TurnEvent> {
  for (const e of [...textDeltas('It is sunny.'), finish('stop')] as TurnEvent[]) {
    await Promise.resolve();
    yield e;
  }
}
const eventsLater = (): AsyncIterable<TurnEvent> => eventsLaterGen();
