/**
 * The built-in invariants (src/chaos/invariants.ts) on runs that once fooled them: a follow-up
 * question whose earlier answer shares a word with a cut call (text-intact), a booking run twice
 * for one call beside a call its codec refused (side-effects-once), a silent retry excused by the
 * announced retry of another tool (healing-announced), an agent that swallows every error and
 * answers "" (text-intact).
 */
import { expect } from 'chai';
import * as t from 'io-ts';
import { catchError, of, retry } from 'rxjs';
import { replaySchedule, type AgentFactory } from '../../src/chaos/index.js';
import type { Message, TurnEvent } from '../../src/core/events/events.js';
import { fallbackModel } from '../../src/sources/fallbackModel.js';
import { CircuitBreakerRegistry } from '../../src/core/breaker/registry.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { validateOutput } from '../../src/operators/validateOutput.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';
import { finish, scriptedModel, textDeltas, toolCall } from '../../src/testing/index.js';

describe('built-in invariants (rxheal/chaos)', function () {
  this.timeout(20_000);

  describe('text-intact: a continuation is what the run itself sent', () => {
    // the earlier answer of the conversation holds "It"; this run's first call is cut after "It"
    const conversation: Message[] = [
      { role: 'user', content: 'How is the weather?' },
      { role: 'assistant', content: 'It is sunny.' },
      { role: 'user', content: 'And tomorrow?' },
    ];
    const answer = 'It will rain tomorrow.';
    const restarting: AgentFactory = (chaos) =>
      runAgent({
        model: fallbackModel(
          [
            chaos.model(scriptedModel('primary', [[...textDeltas(answer), finish()]])),
            chaos.model(scriptedModel('secondary', [[...textDeltas(answer), finish()]])),
          ],
          {
            breakers: new CircuitBreakerRegistry(),
            midStream: 'restart',
          },
        ),
        messages: conversation,
      });

    it('a restart after a cut that shares a word with an earlier answer heals (no continuation read into it)', async () => {
      const run = await replaySchedule(restarting, { models: { primary: [{ kind: 'reset', afterEvents: 1 }] } });
      expect(run.models.map((a) => [a.model, a.text, a.continuing])).to.deep.equal([
        ['primary', 'It', undefined],
        ['secondary', answer, undefined],
      ]);
      expect(run.violations).to.deep.equal([]);
    });

    it("a real continuation ('continue') is still read as one, and its answer checked", async () => {
      const continuing: AgentFactory = (chaos) =>
        runAgent({
          model: fallbackModel(
            [
              chaos.model(scriptedModel('primary', [[...textDeltas(answer), finish()]])),
              chaos.model(scriptedModel('secondary', [[...textDeltas(' will rain tomorrow.'), finish()]])),
            ],
            {
              breakers: new CircuitBreakerRegistry(),
              midStream: 'continue',
            },
          ),
          messages: conversation,
        });
      const run = await replaySchedule(continuing, { models: { primary: [{ kind: 'reset', afterEvents: 1 }] } });
      expect(run.models[1]?.continuing).to.equal('It');
      expect(run.violations).to.deep.equal([]);
    });
  });

  describe('text-intact: a correction is no continuation', () => {
    it('validateOutput re-asking after a whole invalid answer heals (the re-ask ends with the answer and a user message, but nothing was cut)', async () => {
      const agent: AgentFactory = (chaos) =>
        runAgent({
          model: chaos.model(
            scriptedModel('primary', [
              [...textDeltas('not json'), finish()],
              [...textDeltas('{"n":1}'), finish()],
            ]),
          ),
          messages: [{ role: 'user', content: 'Give me n as JSON' }],
          output: validateOutput(t.type({ n: t.number })),
        });
      const run = await replaySchedule(agent, {});
      expect(run.models.map((a) => a.continuing)).to.deep.equal([undefined, undefined]);
      expect(run.violations).to.deep.equal([]);
    });
  });

  describe('side-effects-once: counted per call', () => {
    const book = defineTool({ name: 'book', description: 'Books a seat', args: t.type({ seat: t.string }), idempotent: false, execute: () => ['booked'] });
    // the model asks for two bookings at once; the second's arguments do not decode (the tool never runs for it)
    const model = () =>
      scriptedModel('primary', [
        [toolCall('c1', 'book', { seat: '1A' }), toolCall('c2', 'book', { seat: 7 }), finish('tool-calls')],
        [...textDeltas('Booked 1A.'), finish()],
      ]);

    it('a booking run twice for one call is found, though another call of the tool was refused by its codec', async () => {
      const agent: AgentFactory = (chaos) =>
        runAgent({
          model: chaos.model(model()),
          tools: [chaos.tool(book)],
          messages: [{ role: 'user', content: 'Book 1A and 7' }],
          toolPipeline: (_c, call$) => call$.pipe(retry(1)),
        });
      const run = await replaySchedule(agent, { tools: { book: [{ kind: 'throw', status: 503 }] } });
      expect(run.tools.map((x) => [x.callId, x.outcome])).to.deep.equal([
        ['c1', 'error'],
        ['c1', 'complete'],
      ]);
      expect(run.violations.filter((v) => v.invariant === 'side-effects-once').map((v) => v.message)).to.deep.equal([
        "non-idempotent 'book' ran 2 times for 1 call the model made (call 'c1')",
      ]);
    });

    it('the same call ids in two turns are two calls (models reuse ids): no violation', async () => {
      const twice = scriptedModel('primary', [
        [toolCall('c1', 'book', { seat: '1A' }), finish('tool-calls')],
        [toolCall('c1', 'book', { seat: '2B' }), finish('tool-calls')],
        [...textDeltas('Booked both.'), finish()],
      ]);
      const agent: AgentFactory = (chaos) =>
        runAgent({ model: chaos.model(twice), tools: [chaos.tool(book)], messages: [{ role: 'user', content: 'Book 1A, then 2B' }] });
      const run = await replaySchedule(agent, {});
      expect(run.tools.map((x) => x.callId)).to.deep.equal(['c1', 'c1']);
      expect(run.violations).to.deep.equal([]);
    });
  });

  describe('healing-announced: targets matched exactly', () => {
    const tool = (name: string) => defineTool({ name, description: name, args: t.type({ q: t.string }), idempotent: true, execute: () => [`${name} results`] });
    const model = () =>
      scriptedModel('primary', [
        [toolCall('c1', 'websearch', { q: 'x' }), toolCall('c2', 'search', { q: 'y' }), finish('tool-calls')],
        [...textDeltas('Found.'), finish()],
      ]);

    it("an announced retry of 'websearch' does not excuse a silent retry of 'search'", async () => {
      const agent: AgentFactory = (chaos) =>
        runAgent({
          model: chaos.model(model()),
          tools: [chaos.tool(tool('websearch')), chaos.tool(tool('search'))],
          messages: [{ role: 'user', content: 'Search both' }],
          toolPipeline: (call, call$, { hub }) =>
            call.name === 'websearch'
              ? call$.pipe(retryWithBackoff({ hub, target: 'tool:websearch', maxRetries: 1, initialBackoffMs: 10, jitter: 'none' }))
              : call$.pipe(retry(1)),
        });
      const run = await replaySchedule(agent, { tools: { websearch: [{ kind: 'throw', status: 503 }], search: [{ kind: 'throw', status: 503 }] } });
      expect(run.violations.filter((v) => v.invariant === 'healing-announced').map((v) => v.message)).to.deep.equal([
        "'search' ran 2 times for 1 calls and 0 announced retries: a retry the hub never saw",
      ]);
    });
  });

  describe('an empty answer after failures is not healed', () => {
    it('an agent that swallows every model error and answers "" is caught', async () => {
      const agent: AgentFactory = (chaos) =>
        runAgent({
          model: chaos.model(scriptedModel('primary', [[...textDeltas('Hello.'), finish()]])),
          messages: [{ role: 'user', content: 'Hi' }],
          modelPipeline: (_request, turn$) => turn$.pipe(catchError(() => of<TurnEvent>(finish('stop')))),
        });
      const run = await replaySchedule(agent, { models: { primary: [{ kind: 'status', status: 503 }] } });
      expect(run.end.kind).to.equal('complete');
      expect(run.violations.map((v) => v.invariant)).to.deep.equal(['text-intact']);
      expect(run.violations[0]!.message).to.equal('the assistant message "" came from no model call that finished (after 1 model call failed or was cut)');
      // fault-free, the same agent answers and nothing fires
      expect((await replaySchedule(agent, {})).violations).to.deep.equal([]);
    });
  });
});
