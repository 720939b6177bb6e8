/**
 * Incident replay, round trip: an agent runs for real against two rxheal/server local providers
 * (HTTP on 127.0.0.1) with faults switched on; what it reported — the run's events, and the JSON
 * lines the logger wrote (pino style, level debug: tapLogs on the run's stream, logEvents on its hub) — is recorded with recordIncident and replayed
 * in virtual time with stand-in models of the same ids: the replay reports the same healing
 * events (types, order, targets, attempts, delays). And bad input: lines of another version.
 */
import { expect } from 'chai';
import { asyncScheduler, concatMap, from, lastValueFrom, map, timeout, timer, toArray } from 'rxjs';
import { CircuitBreakerRegistry } from '../../src/core/breaker/registry.js';
import type { AgentEvent, Message, TurnEvent } from '../../src/core/events/events.js';
import { HealHub } from '../../src/core/hub/hub.js';
import type { Model } from '../../src/core/model/model.js';
import { logEvents, logRecord, tapLogs } from '../../src/observe/logger.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { openAICompatibleModel } from '../../src/providers/openai.js';
import { fallbackModel } from '../../src/sources/fallbackModel.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { scriptedAssistant, startLocalProvider, tokenize, type LocalProvider } from '../../src/server/index.js';
import { finish } from '../../src/testing/index.js';
import { rejects } from '../support/rejects.js';
import { everyAgentEvent } from '../support/everyEvent.js';
import { replaySchedule } from '../../src/chaos/index.js';
import * as t from 'io-ts';
import { defineTool } from '../../src/sources/tool.js';
import { scriptedModel, textDeltas, toolCall } from '../../src/testing/index.js';
import { ChaosInputError, healingStep, incidentLine, recordIncident, replayIncident, type AgentFactory, type Incident } from '../../src/chaos/index.js';

const MESSAGES: Message[] = [{ role: 'user', content: 'Tell me a story about the river.' }];

/** The agent of the incident, on whatever models it is given: the live run's HTTP models, or the replay's stand-ins. */
function agentOn(models: readonly Model[], hub?: HealHub) {
  return runAgent({
    model: fallbackModel(models, {
      breakers: new CircuitBreakerRegistry(),
      midStream: 'restart',
      perModel: (_id, stream$, { hub: runHub, target }) =>
        stream$.pipe(
          timeout({ first: 2_000, each: 1_000 }),
          retryWithBackoff<TurnEvent>({
            hub: runHub,
            target,
            maxRetries: 2,
            initialBackoffMs: 30,
            jitter: 'none',
            afterEmit: 'restart',
            onRestart: () => ({ type: 'reset', reason: 'retry', target }),
          }),
        ),
    }),
    messages: MESSAGES,
    ...(hub ? { hub } : {}),
  });
}

/** A stand-in for a local provider: the same assistant's answer, one token a millisecond, on the run's scheduler. */
function standIn(id: string): Model {
  return {
    id,
    stream: (request, context) => {
      const turn = scriptedAssistant({ protocol: 'openai', model: 'local', messages: request.messages, tools: [] });
      const events: TurnEvent[] = [...tokenize(turn.text ?? '').map((text): TurnEvent => ({ type: 'text-delta', text })), finish('stop')];
      const scheduler = context.scheduler ?? asyncScheduler;
      return from(events).pipe(concatMap((e) => timer(1, scheduler).pipe(map(() => e))));
    },
  };
}

const replayAgent: AgentFactory = (chaos) => agentOn([chaos.model(standIn('primary')), chaos.model(standIn('secondary'))]);

describe('incident replay (rxheal/chaos): a live run against rxheal/server, recorded and replayed in virtual time', function () {
  this.timeout(30_000);
  let primary: LocalProvider;
  let secondary: LocalProvider;
  let events: AgentEvent[];
  let lines: string[];
  let hubLines: string[];

  before(async () => {
    // the primary: a 429 (retry-after-ms 40), then a connection reset after 2 tokens, twice (its retries spent); the secondary is healthy
    primary = await startLocalProvider({
      name: 'primary',
      tokenDelayMs: 1,
      faults: [
        { kind: 'status', status: 429, retryAfterMs: 40, times: 1 },
        { kind: 'reset', afterChunks: 2, times: 2 },
      ],
    });
    secondary = await startLocalProvider({ name: 'secondary', tokenDelayMs: 1 });
    const http = (server: LocalProvider, id: string): Model => openAICompatibleModel({ baseURL: server.openAIBaseURL, model: 'local', id });
    const hub = new HealHub();
    lines = [];
    hubLines = [];
    // a JSON logger as pino writes one (level, time, the fields, msg), at level debug
    const jsonTo = (out: string[]) => (level: number) => (fields: unknown, msg: unknown) =>
      out.push(JSON.stringify({ level, time: Date.now(), pid: 1, hostname: 'h', ...(fields as object), msg }));
    const json = jsonTo(lines);
    const hubJson = jsonTo(hubLines);
    const logging = logEvents(hub.events$, {
      logger: { debug: hubJson(20), info: hubJson(30), warn: hubJson(40), error: hubJson(50) },
      level: 'debug',
      format: 'object',
    });
    // logged from the run's stream (tapLogs): the hub's events and the run's own resets
    events = await lastValueFrom(
      agentOn([http(primary, 'primary'), http(secondary, 'secondary')], hub).pipe(
        tapLogs({ logger: { debug: json(20), info: json(30), warn: json(40), error: json(50) }, level: 'debug', format: 'object' }),
        toArray(),
      ),
    );
    logging.unsubscribe();
  });

  after(async () => {
    await primary?.close();
    await secondary?.close();
  });

  it('the live run healed: retries on the primary, then the fallback, and the whole answer', async () => {
    const steps = events.map(healingStep).filter((s) => s !== undefined);
    expect(steps).to.include('retry model:primary #1 after 40 ms');
    expect(steps).to.include('fallback model:primary > model:secondary');
    const last = events.at(-1);
    expect(last?.type === 'message' && last.message.role === 'assistant' && last.message.content.length).to.be.greaterThan(100);
  });

  it("recorded from the run's events: the schedule says which call failed how, and the replay heals the same way", async () => {
    const incident = recordIncident(events);
    expect(incident.schedule).to.deep.equal({
      models: {
        primary: [
          { kind: 'status', status: 429, retryAfterMs: 40 },
          { kind: 'reset', afterEvents: 2 },
          { kind: 'reset', afterEvents: 2 },
        ],
        secondary: [{ kind: 'ok' }],
      },
    });
    const replay = await replayIncident(incident, replayAgent);
    expect(replay.healing).to.deep.equal(incident.healing);
    expect(replay.same).to.equal(true);
    expect(replay.run.violations).to.deep.equal([]);
    // the delays are virtual now: the 429's retry-after and the backoff, to the millisecond
    expect(replay.healing.filter((s) => s.startsWith('retry'))).to.deep.equal(['retry model:primary #1 after 40 ms', 'retry model:primary #2 after 60 ms']);
  });

  it('recorded from the JSON lines tapLogs wrote: the same healing, replayed the same', async () => {
    const fromEvents = recordIncident(events);
    const fromLines = recordIncident(lines.join('\n'));
    // lines carry no text: a cut is where the provider's decoder counted it (its first chunk, the role, is an event too)
    expect(fromLines.schedule).to.deep.equal({
      models: {
        primary: [
          { kind: 'status', status: 429, retryAfterMs: 40 },
          { kind: 'reset', afterEvents: 3 },
          { kind: 'reset', afterEvents: 3 },
        ],
        secondary: [{ kind: 'ok' }],
      },
    });
    expect(fromLines.healing).to.deep.equal(fromEvents.healing);
    expect((await replayIncident(fromLines, replayAgent)).same).to.equal(true);
  });

  it("recorded from the hub's log (logEvents on hub.events$): the same schedule; the resets, the run's own events, are not on the hub", async () => {
    const fromHub = recordIncident(hubLines);
    expect(fromHub.schedule).to.deep.equal(recordIncident(lines).schedule);
    const replay = await replayIncident(fromHub, replayAgent);
    expect(replay.healing.filter((s) => !s.startsWith('reset '))).to.deep.equal(fromHub.healing);
    expect(fromHub.healing.some((s) => s.startsWith('reset '))).to.equal(false);
  });

  it('incident lines carry each event whole and read back to the same incident', async () => {
    const written = events.map((e, i) => incidentLine(e, i));
    expect(recordIncident(written)).to.deep.equal(recordIncident(events));
  });

  describe('what a record tells', () => {
    it("a tool call refused for its arguments (validation_error) was the model call's bad-tool-args, and no execution of the tool", async () => {
      const model = (id: string, outcome: 'success' | 'error' = 'success'): AgentEvent[] => [
        { type: 'call-start', kind: 'model', name: 'primary', id, step: 1, at: 0 },
        { type: 'call-end', kind: 'model', name: 'primary', id, step: 1, at: 0, durationMs: 5, outcome },
      ];
      const tool = (id: string, error?: string): AgentEvent[] => [
        { type: 'call-start', kind: 'tool', name: 'get_weather', id, step: 1, at: 0 },
        error === undefined
          ? { type: 'call-end', kind: 'tool', name: 'get_weather', id, step: 1, at: 0, durationMs: 1, outcome: 'success' }
          : { type: 'call-end', kind: 'tool', name: 'get_weather', id, step: 1, at: 0, durationMs: 1, outcome: 'error', error, category: 'validation_error' },
      ];
      const events = [...model('m1'), ...tool('t1', 'units: must be celsius or fahrenheit'), ...model('m2'), ...tool('t2'), ...model('m3')];
      expect(recordIncident(events).schedule).to.deep.equal({
        models: { primary: [{ kind: 'bad-tool-args' }, { kind: 'ok' }, { kind: 'ok' }] },
        tools: { get_weather: [{ kind: 'ok' }] },
      });
    });

    it('hedges are healing steps, from events and from the lines logEvents writes (without the measured wait)', async () => {
      const hedges: AgentEvent[] = [
        { type: 'hedge', kind: 'started', target: 'model:primary', attempt: 1, at: 1502, afterMs: 1502 },
        { type: 'hedge', kind: 'won', target: 'model:primary', attempt: 1, at: 1540 },
        { type: 'hedge', kind: 'cancelled', target: 'model:primary', attempt: 0, at: 1540 },
      ];
      const steps = ['hedge model:primary started #1', 'hedge model:primary won #1', 'hedge model:primary cancelled #0'];
      expect(recordIncident(hedges).healing).to.deep.equal(steps);
      const lines = hedges.map((e) => {
        const record = logRecord(e)!;
        return JSON.stringify({ level: 30, time: 1, ...record.fields, msg: `rxheal: ${record.message}` });
      });
      expect(recordIncident(lines).healing).to.deep.equal(steps);
    });
  });

  describe('bad input', () => {
    it('a line of another version is a clear error naming the line', async () => {
      const line = JSON.stringify({ rxheal: 'incident/2', at: 0, event: { type: 'retry' } });
      expect(() => recordIncident(['', line])).to.throw(ChaosInputError, 'line 2: an incident line of "incident/2"; this rxheal reads "incident/1"');
      const foreign = JSON.stringify({ level: 40, time: 1, msg: 'rxheal: model call exploded, retrying later' });
      expect(() => recordIncident(foreign)).to.throw(
        ChaosInputError,
        `line 1: "model call exploded, retrying later" is no message this rxheal's logEvents writes (a log of another version?)`,
      );
      expect(() => recordIncident('{not json')).to.throw(ChaosInputError, 'line 1: not JSON');
      await rejects(
        () => replayIncident({ version: 2 } as unknown as Incident, replayAgent),
        ChaosInputError,
        'an incident of version 2; this rxheal reads version 1',
      );
    });

    it('an incident naming a model the agent does not have is an error naming it', async () => {
      const incident: Incident = { version: 1, schedule: { models: { tertiary: [{ kind: 'ok' }] } }, healing: [] };
      await rejects(() => replayIncident(incident, replayAgent), ChaosInputError, "no model 'tertiary' under chaos.model() (it has: 'primary', 'secondary')");
    });

    it('lines of other programs are skipped', async () => {
      expect(recordIncident([JSON.stringify({ level: 30, msg: 'server started' }), JSON.stringify({ level: 30, msg: 'other: retry' })])).to.deep.equal({
        version: 1,
        schedule: {},
        healing: [],
      });
    });
  });

  describe('what a record tells, from every line logEvents writes', () => {
    /** A record as pino writes it: its fields, the message with the prefix. */
    const pinoLine = (event: AgentEvent): string | undefined => {
      const record = logRecord(event);
      return record === undefined ? undefined : JSON.stringify({ level: 30, time: 1, ...record.fields, msg: `rxheal: ${record.message}` });
    };

    it('every event type logEvents writes is read back; every healing step as it was', () => {
      for (const [type, examples] of Object.entries(everyAgentEvent)) {
        for (const event of examples) {
          const line = pinoLine(event);
          if (line === undefined) continue;
          const step = healingStep(event);
          expect(recordIncident([line]).healing, `${type}: ${line}`).to.deep.equal(step === undefined ? [] : [step]);
        }
      }
    });

    it("a breaker's whole life from log lines: opened, half-open, a failed probe, half-open again, closed — the same steps as its events", () => {
      const transitions: AgentEvent[] = [
        { type: 'circuit', breaker: 'model:primary', kind: 'transition', from: 'closed', to: 'open', reason: 'failure_threshold', failures: 5 },
        { type: 'circuit', breaker: 'model:primary', kind: 'transition', from: 'open', to: 'half-open', reason: 'timeout', failures: 0 },
        { type: 'circuit', breaker: 'model:primary', kind: 'transition', from: 'half-open', to: 'open', reason: 'probe_failure', failures: 0 },
        { type: 'circuit', breaker: 'model:primary', kind: 'transition', from: 'open', to: 'half-open', reason: 'timeout', failures: 0 },
        { type: 'circuit', breaker: 'model:primary', kind: 'transition', from: 'half-open', to: 'closed', reason: 'probe_success', failures: 0 },
      ];
      expect(recordIncident(transitions.map(pinoLine) as string[]).healing).to.deep.equal([
        'circuit model:primary closed > open',
        'circuit model:primary open > half-open',
        'circuit model:primary half-open > open',
        'circuit model:primary open > half-open',
        'circuit model:primary half-open > closed',
      ]);
    });

    it('a resumed Responses stream in the log is read (not a healing step: the stand-ins replay what the agent saw of it)', () => {
      const lines = everyAgentEvent.resume.map(pinoLine) as string[];
      expect(recordIncident(lines)).to.deep.equal({ version: 1, schedule: {}, healing: [] });
    });
  });

  describe('statuses from rxheal’s own fetch adapters', () => {
    /** The live run: the primary answers `status` once; a retry (or, for a 4xx, the secondary) heals it. */
    async function liveLines(status: number): Promise<{ lines: string[]; events: AgentEvent[] }> {
      const primary = await startLocalProvider({ name: 'primary', tokenDelayMs: 0, faults: [{ kind: 'status', status, times: 1 }] });
      const secondary = await startLocalProvider({ name: 'secondary', tokenDelayMs: 0 });
      try {
        const out: string[] = [];
        const json = (level: number) => (fields: unknown, msg: unknown) => out.push(JSON.stringify({ level, time: 1, ...(fields as object), msg }));
        const events = await lastValueFrom(
          agentOn([
            openAICompatibleModel({ baseURL: primary.openAIBaseURL, model: 'local', id: 'primary' }),
            openAICompatibleModel({ baseURL: secondary.openAIBaseURL, model: 'local', id: 'secondary' }),
          ]).pipe(tapLogs({ logger: { debug: json(20), info: json(30), warn: json(40), error: json(50) }, level: 'debug', format: 'object' }), toArray()),
        );
        return { lines: out, events };
      } finally {
        await primary.close();
        await secondary.close();
      }
    }

    for (const status of [504, 408, 409, 400]) {
      it(`HTTP ${status}${status === 400 ? ', healed by the fallback,' : ''} is recorded as that status, from the log and from the events, and replays the same`, async () => {
        const { lines, events } = await liveLines(status);
        const last = events.at(-1);
        expect(last?.type === 'message' && last.message.role === 'assistant').to.equal(true);
        for (const incident of [recordIncident(lines), recordIncident(events)]) {
          expect(incident.schedule.models?.['primary']?.[0]).to.deep.equal({ kind: 'status', status });
          const replay = await replayIncident(incident, replayAgent);
          expect(replay.same, JSON.stringify([replay.healing, incident.healing])).to.equal(true);
        }
        // a log written before call-end carried the status: read from the error's text (`'primary' answered HTTP 504: …`)
        const older = lines.map((line) => {
          const o = JSON.parse(line) as Record<string, unknown>;
          delete o['status'];
          return JSON.stringify(o);
        });
        expect(recordIncident(older).schedule.models?.['primary']?.[0]).to.deep.equal({ kind: 'status', status });
      });
    }
  });

  describe('tool results that are errors, and calls that differ', () => {
    const lookup = defineTool({ name: 'lookup', description: 'Looks it up', args: t.type({ q: t.string }), idempotent: true, execute: () => ['found'] });
    // the model asks again while the tool reports an error (isError), then answers
    const asker = () =>
      scriptedModel('primary', [
        [toolCall('c1', 'lookup', { q: 'x' }), finish('tool-calls')],
        (request) =>
          request.messages.at(-1)?.content === 'found' ? [...textDeltas('Found it.'), finish()] : [toolCall('c2', 'lookup', { q: 'x' }), finish('tool-calls')],
        [...textDeltas('Found it.'), finish()],
      ]);
    const looking: AgentFactory = (chaos) => runAgent({ model: chaos.model(asker()), tools: [chaos.tool(lookup)], messages: MESSAGES });

    it("a tool's isError result is recorded as is-error (not ok), and its replay makes the same calls", async () => {
      const live = await replaySchedule(looking, { tools: { lookup: [{ kind: 'is-error' }] } });
      expect(live.models).to.have.length(3);
      const incident = recordIncident(live.events.map((e) => e.event));
      expect(incident.schedule.tools).to.deep.equal({ lookup: [{ kind: 'is-error' }, { kind: 'ok' }] });
      const replay = await replayIncident(incident, looking);
      expect(replay.calls).to.deep.equal({ 'model:primary': 3, 'tool:lookup': 2 });
      expect(replay.calls).to.deep.equal(replay.expectedCalls);
      expect(replay.same).to.equal(true);
    });

    it('same compares the calls too: a replay with as many healing steps but other calls is not the same', async () => {
      const live = await replaySchedule(looking, { tools: { lookup: [{ kind: 'is-error' }] } });
      const incident = recordIncident(live.events.map((e) => e.event));
      // the tool answers at once in this replay: two model calls, where the incident made three
      const replay = await replayIncident({ ...incident, schedule: { models: incident.schedule.models!, tools: { lookup: [{ kind: 'ok' }] } } }, looking);
      expect(replay.healing).to.deep.equal(incident.healing);
      expect(replay.calls).to.deep.equal({ 'model:primary': 2, 'tool:lookup': 1 });
      expect(replay.expectedCalls).to.deep.equal({ 'model:primary': 3, 'tool:lookup': 1 });
      expect(replay.same).to.equal(false);
    });
  });
});
