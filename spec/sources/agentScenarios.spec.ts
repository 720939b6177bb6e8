/**
 * The reference scenarios of issue "Agent streams", end to end through runAgent, in virtual time.
 * (Operator-level marble specs of the same rules live beside each operator.)
 */
import { expect } from 'chai';
import * as t from 'io-ts';
import { asyncScheduler } from 'rxjs';
import { CapabilityRegistry } from '../../src/core/capabilities/CapabilityRegistry.js';
import { CircuitBreakerRegistry } from '../../src/core/breaker/registry.js';
import { AllFallbacksFailedError, CircuitOpenError, HttpError } from '../../src/core/errors/errors.js';
import type { AgentEvent, Message, SystemMessage, TurnEvent } from '../../src/core/events/events.js';
import { HealHub } from '../../src/core/hub/hub.js';
import { degradeAfter } from '../../src/operators/degradeAfter.js';
import { fallbackModel } from '../../src/sources/fallbackModel.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { describeEvent, finish, record, scriptedModel, scriptedTool, textDeltas, toolCall } from '../../src/testing/index.js';
import { testScheduler } from '../support/marbles.js';
import { shownText } from '../support/shown.js';

const ask = (content: string): Message[] => [{ role: 'user', content }];

describe('agent scenarios (end to end through runAgent)', () => {
  describe('3. provider chain primary → secondary → tertiary, a breaker each', () => {
    it('primary 503s until its breaker opens; later requests skip it without a call', () => {
      const answer = (text: string) => [...textDeltas(text), finish()];
      const primary = scriptedModel(
        'primary',
        Array.from({ length: 3 }, () => ({ marbles: '-#', error: new HttpError(503) })),
      );
      const secondary = scriptedModel(
        'secondary',
        Array.from({ length: 5 }, (_, i) => answer(`answer ${i + 1}`)),
      );
      const tertiary = scriptedModel('tertiary', []);
      const breakers = new CircuitBreakerRegistry({ failureThreshold: 3, resetTimeoutMs: 60_000 });
      const hub = new HealHub();
      const model = fallbackModel([primary, secondary, tertiary], { breakers, hub });
      const logs: ReturnType<typeof record<AgentEvent>>[] = [];
      testScheduler().run(({ flush }) => {
        // one request every 10 ms (flushing between runs would also run the breaker's reset timer)
        for (let i = 0; i < 5; i++) asyncScheduler.schedule(() => logs.push(record(runAgent({ model, hub, messages: ask(`question ${i + 1}`) }))), i * 10);
        flush();
      });
      logs.forEach((log, i) => expect(log.completed(), `run ${i + 1}`).to.equal(true));
      const labels = logs.map((log) => log.events.map(([, e]) => describeEvent(e)));
      expect(primary.calls).to.equal(3);
      expect(secondary.calls).to.equal(5);
      expect(tertiary.calls).to.equal(0);
      expect(labels[0]).to.include('fallback:model:primary>model:secondary');
      expect(labels[2]).to.include('circuit:model:primary:closed>open');
      expect(labels[3]).to.include('circuit:model:primary:rejected');
      expect(labels[3]!.at(-1)).to.equal('message:assistant');
    });

    it('all three failing: the run errors with AllFallbacksFailedError listing three errors', () => {
      const errors = [new HttpError(503), new HttpError(502), new HttpError(500)];
      const models = ['primary', 'secondary', 'tertiary'].map((id, i) => scriptedModel(id, [{ marbles: '-#', error: errors[i] }]));
      let error: unknown;
      testScheduler().run(({ flush }) => {
        const log = record(runAgent({ model: fallbackModel(models, { breakers: new CircuitBreakerRegistry() }), messages: ask('q') }));
        flush();
        error = log.error();
      });
      expect(error).to.be.instanceOf(AllFallbacksFailedError);
      expect((error as AllFallbacksFailedError).errors).to.deep.equal(errors);
      expect((error as AllFallbacksFailedError).errors[2]).to.equal(errors[2]);
    });

    it('a primary whose breaker is open is listed as its CircuitOpenError', () => {
      const breakers = new CircuitBreakerRegistry({ failureThreshold: 1 });
      const models = ['primary', 'secondary', 'tertiary'].map((id) => scriptedModel(id, Array(3).fill({ marbles: '-#', error: new HttpError(503) })));
      let second: unknown;
      testScheduler().run(({ flush }) => {
        record(runAgent({ model: fallbackModel(models, { breakers }), messages: ask('q') }));
        let log: ReturnType<typeof record<AgentEvent>> | undefined;
        asyncScheduler.schedule(() => (log = record(runAgent({ model: fallbackModel(models, { breakers }), messages: ask('q') }))), 10);
        flush();
        second = log?.error();
      });
      const list = (second as AllFallbacksFailedError).errors;
      expect(list).to.have.length(3);
      expect(list.every((e) => e instanceof CircuitOpenError)).to.equal(true);
      expect(models.map((m) => m.calls)).to.deep.equal([1, 1, 1]);
    });
  });

  describe('4. the primary dies after 3 text deltas', () => {
    const partial = { a: { type: 'text-delta', text: 'The' }, b: { type: 'text-delta', text: ' weather' }, c: { type: 'text-delta', text: ' in' } } as Record<
      string,
      TurnEvent
    >;
    const primary = () => scriptedModel('primary', [{ marbles: '-a-b-c-#', values: partial, error: new HttpError(503) }]);

    it("'restart': the consumer sees reset, then the secondary's full answer; the message holds only that answer", () => {
      const secondary = scriptedModel('secondary', [[...textDeltas('The weather in NYC is sunny.'), finish()]]);
      let events: AgentEvent[] = [];
      testScheduler().run(({ flush }) => {
        const log = record(runAgent({ model: fallbackModel([primary(), secondary], { midStream: 'restart' }), messages: ask('weather?') }));
        flush();
        events = log.events.map(([, e]) => e);
      });
      expect(
        events
          .map(describeEvent)
          .filter((l) => !l.startsWith('call-'))
          .slice(0, 6),
      ).to.deep.equal([
        'text:The',
        'text: weather',
        'text: in',
        'fallback:model:primary>model:secondary', // the run's hub hears the chain (issue "One run, one story")
        'reset:fallback',
        'text:The',
      ]);
      expect(shownText(events)).to.equal('The weather in NYC is sunny.');
      expect(events.at(-1)).to.deep.equal({ type: 'message', message: { role: 'assistant', content: 'The weather in NYC is sunny.' } });
    });

    it("'continue': the secondary gets the partial text; the consumer sees no repeated text, even when the secondary repeats the tail", () => {
      const secondary = scriptedModel('secondary', [[...textDeltas(' in NYC is sunny.'), finish()]]);
      let events: AgentEvent[] = [];
      testScheduler().run(({ flush }) => {
        const log = record(runAgent({ model: fallbackModel([primary(), secondary], { midStream: 'continue' }), messages: ask('weather?') }));
        flush();
        events = log.events.map(([, e]) => e);
      });
      expect(events.some((e) => e.type === 'reset')).to.equal(false);
      expect(shownText(events)).to.equal('The weather in NYC is sunny.');
      const sent = secondary.requests[0]!.messages;
      expect(sent.at(-2)).to.deep.equal({ role: 'assistant', content: 'The weather in' });
      expect(sent.at(-1)?.role).to.equal('user');
      expect(events.at(-1)).to.deep.equal({ type: 'message', message: { role: 'assistant', content: 'The weather in NYC is sunny.' } });
    });
  });

  describe('5. a knowledge search slower than 3 000 ms', () => {
    it('the run continues without it, degraded is emitted, the next request carries the suffix, and a later fast search restores it', () => {
      const capabilities = new CapabilityRegistry();
      const search = scriptedTool(
        'knowledge_search',
        [
          { marbles: '5000ms (r|)', values: { r: 'slow docs' } },
          { marbles: '200ms (r|)', values: { r: 'fast docs' } },
        ],
        { args: t.type({ query: t.string }), idempotent: true },
      );
      const model = scriptedModel('m', [
        [toolCall('s1', 'knowledge_search', { query: 'refunds' }), finish('tool-calls')],
        [...textDeltas('I could not search; from memory: 30 days.'), finish()],
        [toolCall('s2', 'knowledge_search', { query: 'refunds' }), finish('tool-calls')],
        [...textDeltas('Refunds within 30 days.'), finish()],
      ]);
      const config = {
        model,
        tools: [search],
        capabilities,
        instruction: 'You answer support questions.',
        toolPipeline: (call: { name: string }, call$: import('rxjs').Observable<unknown>) =>
          call.name === 'knowledge_search'
            ? call$.pipe(degradeAfter(3000, 'Knowledge search is unavailable right now.', { capability: 'knowledge-search', capabilities }))
            : call$,
      };
      const first: [number, AgentEvent][] = [];
      const second: [number, AgentEvent][] = [];
      testScheduler().run(({ flush }) => {
        const a = record(runAgent({ ...config, messages: ask('refund policy?') }));
        flush();
        first.push(...a.events);
        const b = record(runAgent({ ...config, messages: ask('refund policy, again?') }));
        flush();
        second.push(...b.events);
      });
      const degraded = first.find(([, e]) => e.type === 'degraded');
      expect(degraded?.[0]).to.equal(3000);
      expect((degraded?.[1] as { capability: string }).capability).to.equal('knowledge-search');
      const result = first.find(([, e]) => e.type === 'tool-result');
      expect(result?.[1]).to.deep.include({ result: 'Knowledge search is unavailable right now.' });
      // the next model request (same run) carries the suffix
      const system2 = model.requests[1]!.messages[0] as SystemMessage;
      expect(system2.content.startsWith('You answer support questions.\n\n')).to.equal(true);
      expect(system2.content).to.contain('knowledge-search');
      // the second run starts degraded, the fast search restores it, and the last request has no suffix
      expect((model.requests[2]!.messages[0] as SystemMessage).content).to.contain('knowledge-search');
      expect(second.map(([, e]) => describeEvent(e))).to.include('restored:knowledge-search');
      expect((model.requests[3]!.messages[0] as SystemMessage).content).to.equal('You answer support questions.');
      expect(capabilities.isAvailable('knowledge-search')).to.equal(true);
    });
  });
});
