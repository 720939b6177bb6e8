/**
 * Issue "One run, one story", as a user writes it from the README and the reference documents —
 * the public API only (`rxheal`, `rxheal/testing`): every event of a run (fallbacks, circuits and
 * retries inside a model chain) is in the run's stream, its budget counts every provider attempt,
 * `fallbackModel` heals each model before moving on, withheld retries are visible, `retryOn:
 * 'all'` retries every error, and `record()` says how and when a run ended. Each scenario asserts
 * the whole story, in order.
 */
import { expect } from 'chai';
import * as t from 'io-ts';
import { asyncScheduler, filter, NEVER, type Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import {
  BudgetExceededError,
  CapabilityRegistry,
  CircuitBreakerRegistry,
  HealHub,
  HttpError,
  InvalidOptionError,
  circuitBreak,
  defineTool,
  degradeAfter,
  fallbackModel,
  fallbackTo,
  reflectOnError,
  retryWithBackoff,
  runAgent,
  streamModel,
  type AgentConfig,
  type AgentEvent,
  type BudgetMeter,
  type Model,
  type ModelContext,
  type SystemMessage,
  type TurnEvent,
} from '../../src/index.js';
import { shownText as shown } from '../support/shown.js';
import { describeEvent, finish, pendingActions, record, scriptedModel, scriptedTool, textDeltas, toolCall, type Recording } from '../../src/testing/index.js';

const ask = (content: string) => [{ role: 'user' as const, content }];
const answer = (text: string, usage?: { inputTokens: number; outputTokens: number }): TurnEvent[] => [...textDeltas(text), finish('stop', usage)];
const deltas = { a: { type: 'text-delta', text: 'The' }, b: { type: 'text-delta', text: ' weather' }, c: { type: 'text-delta', text: ' in' } } as Record<
  string,
  TurnEvent
>;

/** A model that streams "The weather in" (1 ms apart), then dies with `error`. */
const diesMidAnswer = (id: string, error: unknown = new HttpError(503)) => scriptedModel(id, [{ marbles: '-a-b-c-#', values: deltas, error }]);

/** Runs in virtual time to the end (timers included); the story as labels, with and without call events. */
function story(run$: Observable<AgentEvent>) {
  const ts = new TestScheduler((a, b) => {
    expect(a).to.deep.equal(b);
  });
  let log!: Recording<AgentEvent>;
  let pending = -1;
  ts.run(({ flush }) => {
    log = record(run$);
    flush();
    pending = pendingActions(ts);
  });
  const all = log.events.map(([, e]) => describeEvent(e));
  return { log, all, labels: all.filter((l) => !l.startsWith('call-')), pending, events: log.events.map(([, e]) => e) };
}

const THE_ANSWER = 'The weather in NYC is sunny.';
const ANSWER_LABELS = ['text:The', 'text: weather', 'text: in', 'text: NYC', 'text: is', 'text: sunny.'];

describe('one run, one story (the run stream the agents guide describes)', () => {
  describe('1. the run hears the model chain: a dead primary mid-answer', () => {
    it("'restart' (the README's agent): circuit and fallback are in the run's stream, then reset and the whole answer", () => {
      const gpt = diesMidAnswer('gpt');
      const claude = scriptedModel('claude', [answer(THE_ANSWER)]);
      const breakers = new CircuitBreakerRegistry({ failureThreshold: 1, resetTimeoutMs: 60_000 });
      const { all, log, events } = story(
        runAgent({ model: fallbackModel([gpt, claude], { breakers, midStream: 'restart' }), messages: ask("What's the weather in NYC?") }),
      );
      expect(all).to.deep.equal([
        'call-start:model:fallback(gpt, claude)',
        'call-start:model:gpt',
        'text:The',
        'text: weather',
        'text: in',
        'call-end:model:gpt:error',
        'circuit:model:gpt:closed>open',
        'fallback:model:gpt>model:claude',
        'reset:fallback',
        'call-start:model:claude',
        ...ANSWER_LABELS,
        'finish:stop',
        'call-end:model:claude:success',
        'call-end:model:fallback(gpt, claude):success',
        'message:assistant',
      ]);
      expect(events.find((e) => e.type === 'fallback')).to.deep.equal({
        type: 'fallback',
        from: 'model:gpt',
        to: 'model:claude',
        reason: 'service_unavailable',
        midStream: true,
      });
      expect(shown(events)).to.equal(THE_ANSWER);
      expect(log.end()).to.deep.equal({ kind: 'complete', at: 7 });
    });

    it('the next run skips the open primary without a call: circuit rejected, then fallback (circuit_open)', () => {
      const gpt = scriptedModel('gpt', [{ marbles: '-#', error: new HttpError(503) }]);
      const claude = scriptedModel('claude', [answer('One.'), answer('Two.')]);
      const breakers = new CircuitBreakerRegistry({ failureThreshold: 1, resetTimeoutMs: 60_000 });
      const model = fallbackModel([gpt, claude], { breakers });
      const ts = new TestScheduler((a, b) => {
        expect(a).to.deep.equal(b);
      });
      const logs: Recording<AgentEvent>[] = [];
      ts.run(({ flush }) => {
        logs.push(record(runAgent({ model, messages: ask('first') })));
        asyncScheduler.schedule(() => logs.push(record(runAgent({ model, messages: ask('second') }))), 10);
        flush();
      });
      const second = logs[1]!.events.map(([, e]) => describeEvent(e)).filter((l) => !l.startsWith('call-'));
      expect(second).to.deep.equal(['circuit:model:gpt:rejected', 'fallback:model:gpt>model:claude', 'text:Two.', 'finish:stop', 'message:assistant']);
      expect(logs[1]!.events.map(([, e]) => e).find((e) => e.type === 'fallback')).to.deep.include({ reason: 'circuit_open', midStream: false });
      expect(gpt.calls).to.equal(1);
    });

    it("'continue': fallback (midStream) in the stream, the continuation without repeated text, one assistant message", () => {
      const gpt = diesMidAnswer('gpt');
      // claude repeats the tail (" in") before continuing: trimmed
      const claude = scriptedModel('claude', [answer(' in NYC is sunny.')]);
      const { labels, events } = story(
        runAgent({ model: fallbackModel([gpt, claude], { midStream: 'continue' }), messages: ask("What's the weather in NYC?") }),
      );
      expect(labels).to.deep.equal([
        'text:The',
        'text: weather',
        'text: in',
        'fallback:model:gpt>model:claude',
        'text: NYC',
        'text: is',
        'text: sunny.',
        'finish:stop',
        'message:assistant',
      ]);
      expect(events.at(-1)).to.deep.equal({ type: 'message', message: { role: 'assistant', content: THE_ANSWER } });
      expect(claude.requests[0]!.messages.at(-2)).to.deep.equal({ role: 'assistant', content: 'The weather in' });
    });

    it("fallbackModel's own hub and the run's hub each hear every event once (the same hub given to both: once)", () => {
      const own = new HealHub();
      const heard: string[] = [];
      own.events$.pipe(filter((e) => e.type === 'fallback')).subscribe((e) => heard.push(describeEvent(e)));
      const gpt = scriptedModel('gpt', [
        { marbles: '-#', error: new HttpError(503) },
        { marbles: '-#', error: new HttpError(503) },
      ]);
      const claude = scriptedModel('claude', [answer('A.'), answer('B.')]);
      const model = fallbackModel([gpt, claude], { hub: own });
      const separate = story(runAgent({ model, messages: ask('q') }));
      const shared = story(runAgent({ model, hub: own, messages: ask('q') }));
      expect(separate.labels.filter((l) => l.startsWith('fallback'))).to.deep.equal(['fallback:model:gpt>model:claude']);
      expect(shared.labels.filter((l) => l.startsWith('fallback'))).to.deep.equal(['fallback:model:gpt>model:claude']);
      expect(heard).to.deep.equal(['fallback:model:gpt>model:claude', 'fallback:model:gpt>model:claude']);
    });

    it('a hand-written model that wraps another gets the run’s hub, scheduler and call id, and passes them on', () => {
      const gpt = scriptedModel('gpt', [{ marbles: '-#', error: new HttpError(503) }, answer('Hi.')]);
      const seen: ModelContext[] = [];
      const patient: Model = {
        id: 'patient',
        stream: (request, context) => {
          seen.push(context);
          return streamModel(gpt, request, context).pipe(retryWithBackoff({ hub: context.hub, target: 'model:gpt', initialBackoffMs: 100, jitter: 'none' }));
        },
      };
      const hub = new HealHub();
      const { all, events } = story(runAgent({ model: patient, hub, messages: ask('hi') }));
      expect(seen).to.have.length(1);
      expect(seen[0]!.hub).to.equal(hub);
      expect([seen[0]!.callId, seen[0]!.step, seen[0]!.scheduler]).to.deep.equal(['step-1.1', 1, asyncScheduler]);
      expect(all).to.deep.equal([
        'call-start:model:patient',
        'call-start:model:gpt',
        'call-end:model:gpt:error',
        'retry:model:gpt#1',
        'call-start:model:gpt',
        'retry-succeeded:model:gpt#2',
        'text:Hi.',
        'finish:stop',
        'call-end:model:gpt:success',
        'call-end:model:patient:success',
        'message:assistant',
      ]);
      const starts = events.filter((e) => e.type === 'call-start');
      expect(starts.map((e) => [e.id, 'parentId' in e ? e.parentId : undefined])).to.deep.equal([
        ['step-1.1', undefined],
        ['step-1.1/1', 'step-1.1'],
        ['step-1.1/2', 'step-1.1'],
      ]);
    });

    it('unsubscribing the run mid-fallback aborts the model in flight', () => {
      let aborted = false;
      const gpt = scriptedModel('gpt', [{ marbles: '-#', error: new HttpError(503) }]);
      const claude = scriptedModel('claude', [
        (_request, { signal }) => {
          signal.addEventListener('abort', () => (aborted = true));
          return NEVER;
        },
      ]);
      const ts = new TestScheduler((a, b) => {
        expect(a).to.deep.equal(b);
      });
      ts.run(({ flush }) => {
        const subscription = runAgent({ model: fallbackModel([gpt, claude]), messages: ask('q') }).subscribe();
        asyncScheduler.schedule(() => subscription.unsubscribe(), 5);
        flush();
      });
      expect(aborted).to.equal(true);
    });
  });

  describe('2. budgets count every provider attempt, wherever it happens', () => {
    it('maxModelCalls: 1 with a failing primary ends the run with BudgetExceededError; the secondary is never called', () => {
      const gpt = scriptedModel('gpt', [{ marbles: '-#', error: new HttpError(503) }]);
      const claude = scriptedModel('claude', [answer('Never.')]);
      const { all, log } = story(runAgent({ model: fallbackModel([gpt, claude]), messages: ask('q'), budget: { maxModelCalls: 1 } }));
      expect(all).to.deep.equal([
        'call-start:model:fallback(gpt, claude)',
        'call-start:model:gpt',
        'call-end:model:gpt:error',
        'fallback:model:gpt>model:claude',
        'budget-exceeded:modelCalls',
        'call-end:model:fallback(gpt, claude):error',
      ]);
      const error = log.error() as BudgetExceededError;
      expect(error).to.be.instanceOf(BudgetExceededError);
      expect([error.resource, error.limit, error.used]).to.deep.equal(['modelCalls', 1, 2]);
      expect(log.end()).to.deep.include({ kind: 'error', at: 1 });
      expect(claude.calls).to.equal(0);
    });

    it('maxModelCalls: 2 lets the same run complete: a fallbackModel costs one call per model it tries, not one more', () => {
      const gpt = scriptedModel('gpt', [{ marbles: '-#', error: new HttpError(503) }]);
      const claude = scriptedModel('claude', [answer('Yes.')]);
      const { log } = story(runAgent({ model: fallbackModel([gpt, claude]), messages: ask('q'), budget: { maxModelCalls: 2 } }));
      expect(log.end()).to.deep.equal({ kind: 'complete', at: 1 });
    });

    it('a model skipped because its breaker is open is not called, so not counted', () => {
      const breakers = new CircuitBreakerRegistry({ failureThreshold: 1 });
      breakers.get('model:gpt').isolate(); // open by hand
      const gpt = scriptedModel('gpt', [answer('Never.')]);
      const claude = scriptedModel('claude', [answer('Yes.')]);
      const { log, labels } = story(runAgent({ model: fallbackModel([gpt, claude], { breakers }), messages: ask('q'), budget: { maxModelCalls: 1 } }));
      expect(log.completed()).to.equal(true);
      expect(labels.slice(0, 2)).to.deep.equal(['circuit:model:gpt:rejected', 'fallback:model:gpt>model:claude']);
      expect(gpt.calls).to.equal(0);
    });

    it('per-model retries count too: each retry of a model is one more call', () => {
      const gpt = scriptedModel('gpt', [
        { marbles: '-#', error: new HttpError(503) },
        { marbles: '-#', error: new HttpError(503) },
      ]);
      const claude = scriptedModel('claude', [answer('Yes.')]);
      const model = fallbackModel([gpt, claude], {
        perModel: (_id, stream$, { hub, target }) => stream$.pipe(retryWithBackoff({ hub, target, maxRetries: 1, initialBackoffMs: 100, jitter: 'none' })),
      });
      const enough = story(runAgent({ model, messages: ask('q'), budget: { maxModelCalls: 3 } }));
      expect(enough.log.completed()).to.equal(true);
      const gpt2 = scriptedModel('gpt', [
        { marbles: '-#', error: new HttpError(503) },
        { marbles: '-#', error: new HttpError(503) },
      ]);
      const claude2 = scriptedModel('claude', [answer('Never.')]);
      const short = story(
        runAgent({
          model: fallbackModel([gpt2, claude2], {
            perModel: (_id, stream$, { hub, target }) => stream$.pipe(retryWithBackoff({ hub, target, maxRetries: 1, initialBackoffMs: 100, jitter: 'none' })),
          }),
          messages: ask('q'),
          budget: { maxModelCalls: 2 },
        }),
      );
      expect((short.log.error() as BudgetExceededError).resource).to.equal('modelCalls');
      expect([gpt2.calls, claude2.calls]).to.deep.equal([2, 0]);
    });

    it('fallbackTo with a model alternative, given the run’s context: counted, and its fallback reaches the run', () => {
      const gpt = scriptedModel('gpt', [
        { marbles: '-#', error: new HttpError(503) },
        { marbles: '-#', error: new HttpError(503) },
      ]);
      const claude = scriptedModel('claude', [answer('Yes.'), answer('Yes.')]);
      const config = (maxModelCalls: number): AgentConfig => ({
        model: gpt,
        messages: ask('q'),
        budget: { maxModelCalls },
        modelPipeline: (request, turn$, context) => turn$.pipe(fallbackTo(claude, { request, context })),
      });
      const short = story(runAgent(config(1)));
      expect(short.labels).to.deep.equal(['fallback:primary>model:claude', 'budget-exceeded:modelCalls']);
      expect((short.log.error() as BudgetExceededError).used).to.equal(2);
      const enough = story(runAgent(config(2)));
      expect(enough.log.completed()).to.equal(true);
      expect(claude.calls).to.equal(1);
    });

    it('tokens: each provider attempt’s finish.usage counts once, across models and turns', () => {
      const read = scriptedTool('read', [{ result: 'r' }], { idempotent: true });
      const gpt = scriptedModel('gpt', [
        [toolCall('c1', 'read', {}), finish('tool-calls', { inputTokens: 40, outputTokens: 10 })],
        { marbles: '-#', error: new HttpError(503) },
      ]);
      const claude = scriptedModel('claude', [answer('Done.', { inputTokens: 60, outputTokens: 5 })]);
      const { log, labels } = story(runAgent({ model: fallbackModel([gpt, claude]), tools: [read], messages: ask('q'), budget: { maxTokens: 100 } }));
      const error = log.error() as BudgetExceededError;
      expect([error.resource, error.limit, error.used]).to.deep.equal(['tokens', 100, 115]);
      expect(labels.slice(-3)).to.deep.equal(['text:Done.', 'finish:stop', 'budget-exceeded:tokens']);
    });

    it('a meter given to streamModel hears each attempt and its usage once, however deep the models are nested', () => {
      const calls: string[] = [];
      const meter: BudgetMeter = { modelCall: () => calls.push('call'), usage: (u) => calls.push(`usage ${u.inputTokens}+${u.outputTokens}`) };
      const gpt = scriptedModel('gpt', [{ marbles: '-#', error: new HttpError(503) }]);
      const claude = scriptedModel('claude', [answer('Yes.', { inputTokens: 3, outputTokens: 1 })]);
      story(streamModel(fallbackModel([gpt, claude]), { messages: ask('q'), tools: [] }, { budget: meter }) as Observable<AgentEvent>);
      expect(calls).to.deep.equal(['call', 'call', 'usage 3+1']);
    });
  });

  describe("3. fallbackModel's perModel: retry each model, then fall back (the README's shape)", () => {
    it('the primary 503s, is retried once after 500 ms, fails again; its breaker counts one failure; the secondary answers', () => {
      const gpt = scriptedModel('gpt', [
        { marbles: '-#', error: new HttpError(503) },
        { marbles: '-#', error: new HttpError(503) },
      ]);
      const claude = scriptedModel('claude', [answer('Sunny.')]);
      const breakers = new CircuitBreakerRegistry({ failureThreshold: 1, resetTimeoutMs: 60_000 });
      const model = fallbackModel([gpt, claude], {
        breakers,
        midStream: 'restart',
        perModel: (id, stream$, { hub }) =>
          stream$.pipe(retryWithBackoff({ hub, target: `model:${id}`, maxRetries: 1, initialBackoffMs: 500, jitter: 'none' })),
      });
      const { all, log } = story(runAgent({ model, messages: ask("What's the weather in NYC?") }));
      expect(all).to.deep.equal([
        'call-start:model:fallback(gpt, claude)',
        'call-start:model:gpt',
        'call-end:model:gpt:error',
        'retry:model:gpt#1',
        'call-start:model:gpt',
        'call-end:model:gpt:error',
        'circuit:model:gpt:closed>open', // one permit for the retried call: its final outcome
        'fallback:model:gpt>model:claude',
        'call-start:model:claude',
        'text:Sunny.',
        'finish:stop',
        'call-end:model:claude:success',
        'call-end:model:fallback(gpt, claude):success',
        'message:assistant',
      ]);
      expect(log.end()).to.deep.equal({ kind: 'complete', at: 502 });
      expect(gpt.calls).to.equal(2);
    });

    it("the issue's shape, no hub passed — retry and the model's own breaker inside perModel: their events are in the run's stream; an open breaker skips the model", () => {
      const breakers = new CircuitBreakerRegistry({ failureThreshold: 1, resetTimeoutMs: 60_000 });
      const gpt = scriptedModel('gpt', [
        { marbles: '-#', error: new HttpError(503) },
        { marbles: '-#', error: new HttpError(503) },
      ]);
      const claude = scriptedModel('claude', [answer('One.'), answer('Two.')]);
      const model = fallbackModel([gpt, claude], {
        perModel: (id, stream$) => stream$.pipe(retryWithBackoff({ maxRetries: 1, initialBackoffMs: 100, jitter: 'none' }), circuitBreak(breakers.get(id))),
      });
      const logs: Recording<AgentEvent>[] = [];
      new TestScheduler(() => undefined).run(({ flush }) => {
        logs.push(record(runAgent({ model, messages: ask('one') })));
        // the second question comes 200 ms later, while the breaker is open
        asyncScheduler.schedule(() => logs.push(record(runAgent({ model, messages: ask('two') }))), 200);
        flush();
      });
      const [first, second] = logs.map((log) => log.events.map(([, e]) => describeEvent(e)).filter((l) => !l.startsWith('call-')));
      expect(first).to.deep.equal([
        'retry:model:gpt#1',
        'circuit:gpt:closed>open',
        'fallback:model:gpt>model:claude',
        'text:One.',
        'finish:stop',
        'message:assistant',
      ]);
      // rejected before the model is called: the chain moves on as for an open breaker of its own
      expect(second).to.deep.equal(['circuit:gpt:rejected', 'fallback:model:gpt>model:claude', 'text:Two.', 'finish:stop', 'message:assistant']);
      expect(logs[1]!.events.map(([, e]) => e).find((e) => e.type === 'fallback')).to.deep.include({ reason: 'circuit_open' });
      expect(gpt.calls).to.equal(2);
    });

    it('perModel is given the model id, its stream, and the run’s context with the target name', () => {
      const given: unknown[] = [];
      const hub = new HealHub();
      const gpt = scriptedModel('gpt', [answer('Hi.')]);
      const model = fallbackModel([gpt], {
        perModel: (id, stream$, context) => {
          given.push([id, context.target, context.model, context.hub === hub, context.callId, context.step]);
          return stream$;
        },
      });
      story(runAgent({ model, hub, messages: ask('hi') }));
      expect(given).to.deep.equal([['gpt', 'model:gpt', gpt, true, 'step-1.1', 1]]);
    });

    it('a perModel that throws or returns no Observable errors the turn (the model is not called)', () => {
      const gpt = scriptedModel('gpt', [answer('Hi.')]);
      const boom = new Error('perModel bug');
      const threw = story(
        runAgent({
          model: fallbackModel([gpt], {
            perModel: () => {
              throw boom;
            },
          }),
          messages: ask('q'),
        }),
      );
      expect(threw.log.error()).to.equal(boom);
      const wrong = story(runAgent({ model: fallbackModel([gpt], { perModel: () => 42 as never }), messages: ask('q') }));
      expect(String((wrong.log.error() as Error).message)).to.match(/perModel\('gpt', …\) must return an Observable/);
      expect(gpt.calls).to.equal(0);
    });

    it('rejects a perModel that is not a function, at once', () => {
      expect(() => fallbackModel([scriptedModel('gpt', [])], { perModel: 'retry' as never })).to.throw(InvalidOptionError, /"perModel" must be a function/);
    });
  });

  describe('4. retries withheld for a tool that is not idempotent are visible', () => {
    const sendEmail = () => scriptedTool('send_email', [{ error: new HttpError(503) }], { args: t.type({ to: t.string }) });
    const emailModel = () =>
      scriptedModel('m', [
        [toolCall('e1', 'send_email', { to: 'ann@example.com' }), finish('tool-calls')],
        [...textDeltas('I could not send it.'), finish()],
      ]);

    it('the README pipeline (retry, breaker, reflection) on send_email: retry-withheld, then the error goes to the model; it ran once', () => {
      const tool = sendEmail();
      const breakers = new CircuitBreakerRegistry({ failureThreshold: 5 });
      const { labels, events } = story(
        runAgent({
          model: emailModel(),
          tools: [tool],
          messages: ask('Email Ann'),
          toolPipeline: (call, call$, { hub }) =>
            call$.pipe(retryWithBackoff({ hub, target: `tool:${call.name}` }), circuitBreak(breakers.get(`tool:${call.name}`), { hub }), reflectOnError()),
        }),
      );
      expect(labels).to.deep.equal([
        'tool-call:send_email',
        'finish:tool-calls',
        'message:assistant',
        'retry-withheld:tool:send_email:not_idempotent',
        // a 503 is transient: not the model's to correct (no reflection), it is told the tool failed
        'tool-error:send_email',
        'message:tool',
        'text:I',
        'text: could',
        'text: not',
        'text: send',
        'text: it.',
        'finish:stop',
        'message:assistant',
      ]);
      expect(events.find((e) => e.type === 'retry-withheld')).to.deep.equal({
        type: 'retry-withheld',
        target: 'tool:send_email',
        reason: 'not_idempotent',
        category: 'service_unavailable',
        error: 'HTTP 503',
      });
      expect(tool.executions).to.have.length(1);
    });

    it('even with retryOn: "all"; an idempotent tool with the same failure is retried instead', () => {
      const email = sendEmail();
      const withheld = story(
        runAgent({
          model: emailModel(),
          tools: [email],
          messages: ask('Email Ann'),
          toolPipeline: (call, call$, { hub }) => call$.pipe(retryWithBackoff({ hub, target: `tool:${call.name}`, retryOn: 'all' })),
        }),
      );
      expect(withheld.labels).to.include('retry-withheld:tool:send_email:not_idempotent');
      expect(email.executions).to.have.length(1);
      const read = scriptedTool('send_email', [{ error: new HttpError(503) }, { result: 'sent' }], { idempotent: true });
      const retried = story(
        runAgent({
          model: emailModel(),
          tools: [read],
          messages: ask('Email Ann'),
          toolPipeline: (call, call$, { hub }) => call$.pipe(retryWithBackoff({ hub, target: `tool:${call.name}` })),
        }),
      );
      expect(retried.labels.filter((l) => l.startsWith('retry'))).to.deep.equal(['retry:tool:send_email#1', 'retry-succeeded:tool:send_email#2']);
    });

    it('a bad argument is not withheld (nothing ran): reflection only', () => {
      const tool = sendEmail();
      const model = scriptedModel('m', [[toolCall('e1', 'send_email', { to: 42 }), finish('tool-calls')], answer('Which address?')]);
      const { labels } = story(
        runAgent({
          model,
          tools: [tool],
          messages: ask('Email Ann'),
          toolPipeline: (call, call$, { hub }) => call$.pipe(retryWithBackoff({ hub, target: `tool:${call.name}` }), reflectOnError()),
        }),
      );
      expect(labels.filter((l) => /^(retry|reflection|tool-error)/.test(l))).to.deep.equal(['tool-error:send_email', 'reflection:send_email#1/3']);
    });
  });

  describe("5. one obvious way to retry every error: retryOn: 'all'", () => {
    it('retries a plain Error that the default leaves alone', () => {
      const flaky = scriptedTool('lookup', [{ error: new Error('flaky backend') }, { result: 42 }], { idempotent: true });
      const model = () => scriptedModel('m', [[toolCall('l1', 'lookup', {}), finish('tool-calls')], answer('42.')]);
      const pipeline =
        (retryOn: 'all' | 'retryable'): AgentConfig['toolPipeline'] =>
        (call, call$, { hub }) =>
          call$.pipe(retryWithBackoff({ hub, target: `tool:${call.name}`, retryOn, jitter: 'none' }));
      const all = story(runAgent({ model: model(), tools: [flaky], messages: ask('q'), toolPipeline: pipeline('all') }));
      expect(all.labels.filter((l) => /^(retry|tool-result|tool-error)/.test(l))).to.deep.equal([
        'retry:tool:lookup#1',
        'retry-succeeded:tool:lookup#2',
        'tool-result:lookup',
      ]);
      const flaky2 = scriptedTool('lookup', [{ error: new Error('flaky backend') }, { result: 42 }], { idempotent: true });
      const byDefault = story(runAgent({ model: model(), tools: [flaky2], messages: ask('q'), toolPipeline: pipeline('retryable') }));
      expect(byDefault.labels.filter((l) => /^(retry|tool-result|tool-error)/.test(l))).to.deep.equal(['tool-error:lookup']);
    });

    it('never retries a crossed budget, even with retryOn: "all"', () => {
      const gpt = scriptedModel('gpt', [{ marbles: '-#', error: new HttpError(503) }, answer('never')]);
      const { log, labels } = story(
        runAgent({
          model: gpt,
          messages: ask('q'),
          budget: { maxModelCalls: 1 },
          modelPipeline: (_r, turn$, { hub }) => turn$.pipe(retryWithBackoff({ hub, target: 'model:gpt', retryOn: 'all', maxRetries: 5 })),
        }),
      );
      expect(labels).to.deep.equal(['retry:model:gpt#1', 'budget-exceeded:modelCalls']);
      expect(log.error()).to.be.instanceOf(BudgetExceededError);
    });
  });

  describe('6. rxheal/testing: how and when a run ended, and no timer left behind', () => {
    it('record() gives the end and its virtual time; pendingActions() shows the deadline is gone', () => {
      const capabilities = new CapabilityRegistry();
      const search = scriptedTool('knowledge_search', [{ marbles: '5000ms (r|)', values: { r: 'late' } }], {
        args: t.type({ query: t.string }),
        idempotent: true,
      });
      const model = scriptedModel('m', [[toolCall('s1', 'knowledge_search', { query: 'refunds' }), finish('tool-calls')], answer('From memory: 30 days.')]);
      const { log, labels, pending } = story(
        runAgent({
          model,
          tools: [search],
          capabilities,
          instruction: 'You answer support questions.',
          messages: ask('Refund policy?'),
          toolPipeline: (call, call$) => call$.pipe(degradeAfter(3000, 'Knowledge search is unavailable right now.', { capability: call.name, capabilities })),
        }),
      );
      expect(labels).to.deep.equal([
        'tool-call:knowledge_search',
        'finish:tool-calls',
        'message:assistant',
        'degraded:knowledge_search',
        'tool-result:knowledge_search',
        'message:tool',
        'text:From',
        'text: memory:',
        'text: 30',
        'text: days.',
        'finish:stop',
        'message:assistant',
      ]);
      expect(log.end()).to.deep.equal({ kind: 'complete', at: 3000 });
      expect(pending).to.equal(0);
      expect((model.requests[1]!.messages[0] as SystemMessage).content).to.contain('knowledge_search');
    });
  });

  describe('the reference transcript: reflection on bad tool arguments, with the README pipeline', () => {
    it('kelvin is rejected before the tool runs, the model corrects itself, the answer follows', () => {
      const executions: unknown[] = [];
      const getWeather = defineTool({
        name: 'get_weather',
        description: 'Current weather for a city',
        args: t.type({ city: t.string, units: t.keyof({ celsius: null, fahrenheit: null }) }),
        idempotent: true,
        execute: (args) => {
          executions.push(args);
          return [{ temperature: 22, condition: 'sunny' }];
        },
      });
      const gpt = scriptedModel('gpt', [
        [toolCall('call_1', 'get_weather', { city: 'nyc', units: 'kelvin' }), finish('tool-calls')],
        [toolCall('call_2', 'get_weather', { city: 'NYC', units: 'celsius' }), finish('tool-calls')],
        answer('It is 22 °C and sunny in NYC.'),
      ]);
      const breakers = new CircuitBreakerRegistry({ failureThreshold: 5, resetTimeoutMs: 60_000 });
      const { labels, events, log } = story(
        runAgent({
          model: fallbackModel([gpt, scriptedModel('claude', [])], { breakers }),
          tools: [getWeather],
          instruction: 'You are a helpful assistant with access to external APIs.',
          messages: ask("What's the weather in NYC?"),
          budget: { maxModelCalls: 3 },
          toolPipeline: (call, call$, { hub }) =>
            call$.pipe(retryWithBackoff({ hub, target: `tool:${call.name}` }), circuitBreak(breakers.get(`tool:${call.name}`), { hub }), reflectOnError()),
        }),
      );
      expect(labels.filter((l) => !l.startsWith('text:'))).to.deep.equal([
        'tool-call:get_weather',
        'finish:tool-calls',
        'message:assistant',
        'tool-error:get_weather',
        'reflection:get_weather#1/3',
        'message:tool',
        'tool-call:get_weather',
        'finish:tool-calls',
        'message:assistant',
        'tool-result:get_weather',
        'message:tool',
        'finish:stop',
        'message:assistant',
      ]);
      const reflection = events.find((e) => e.type === 'reflection');
      expect(reflection).to.deep.include({
        prompt:
          'The tool \'get_weather\' failed with: "units: expected \\"celsius\\" | \\"fahrenheit\\", got \\"kelvin\\"". Analyze what went wrong and provide corrected arguments.',
      });
      expect(executions).to.deep.equal([{ city: 'NYC', units: 'celsius' }]);
      expect(log.completed()).to.equal(true);
    });
  });
});
