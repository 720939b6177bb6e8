import { expect } from 'chai';
import * as t from 'io-ts';
import { NEVER, of, timer, type Observable } from 'rxjs';
import { HttpError, ToolError } from '../../src/core/errors/errors.js';
import type { AgentEvent, ModelEvent, TurnEvent } from '../../src/core/events/events.js';
import { streamModel, type ModelRequest } from '../../src/core/model/model.js';
import { callTool } from '../../src/sources/tool.js';
import {
  describeEvent,
  finish,
  fromMarbles,
  pendingActions,
  pendingAt,
  record,
  scriptedModel,
  scriptedTool,
  textDeltas,
  toolCall,
} from '../../src/testing/index.js';
import { CircuitBreaker } from '../../src/core/breaker/CircuitBreaker.js';
import { circuitBreak } from '../../src/operators/circuitBreak.js';
import { degradeAfter } from '../../src/operators/degradeAfter.js';
import { testScheduler } from '../support/marbles.js';
import { NodeTimerScheduler } from '../support/nodeTimers.js';

const request = (content: string): ModelRequest => ({ messages: [{ role: 'user', content }], tools: [] });

/** Collects a synchronous stream. */
function collect<T>(source: Observable<T>) {
  const values: T[] = [];
  let error: unknown;
  let completed = false;
  source.subscribe({ next: (v) => values.push(v), error: (e: unknown) => (error = e), complete: () => (completed = true) });
  return { values, error: () => error, completed: () => completed };
}

describe('rxheal/testing', () => {
  describe('fromMarbles', () => {
    it('emits each value at its frame (1 frame = 1 ms) and completes at |', () => {
      testScheduler().run(({ expectObservable }) => {
        expectObservable(fromMarbles({ marbles: '-a-b|', values: { a: 1, b: 2 } })).toBe('-a-b|', { a: 1, b: 2 });
      });
    });

    it('records absolute virtual times', () => {
      let log!: ReturnType<typeof record<number>>;
      testScheduler().run(({ flush }) => {
        log = record(fromMarbles({ marbles: '-a-b|', values: { a: 1, b: 2 } }));
        flush();
      });
      expect(log.events).to.deep.equal([
        [1, 1],
        [3, 2],
      ]);
      expect(log.completed()).to.equal(true);
    });

    it('errors with the given error at #', () => {
      const boom = new HttpError(503);
      testScheduler().run(({ expectObservable }) => {
        expectObservable(fromMarbles({ marbles: '--a--#', values: { a: 'x' }, error: boom })).toBe('--a--#', { a: 'x' }, boom);
      });
      let log!: ReturnType<typeof record<string>>;
      testScheduler().run(({ flush }) => {
        log = record(fromMarbles({ marbles: '--a--#', values: { a: 'x' }, error: boom }));
        flush();
      });
      expect(log.error()).to.equal(boom);
      expect(log.completed()).to.equal(false);
    });

    it('emits a group at one frame', () => {
      testScheduler().run(({ expectObservable }) => {
        expectObservable(fromMarbles({ marbles: '-(ab)-(c|)', values: { a: 1, b: 2, c: 3 } })).toBe('-(ab)-(c|)', { a: 1, b: 2, c: 3 });
      });
      let log!: ReturnType<typeof record<number>>;
      testScheduler().run(({ flush }) => {
        log = record(fromMarbles({ marbles: '(ab) 3ms (c|)', values: { a: 1, b: 2, c: 3 } }));
        flush();
      });
      // (ab) spans four frames: c comes at 4 + 3
      expect(log.events).to.deep.equal([
        [0, 1],
        [0, 2],
        [7, 3],
      ]);
      expect(log.completed()).to.equal(true);
    });

    it('reads 10ms gaps', () => {
      testScheduler().run(({ expectObservable }) => {
        expectObservable(fromMarbles({ marbles: 'a 10ms b 3500ms |', values: { a: 'A', b: 'B' } })).toBe('a 10ms b 3500ms |', { a: 'A', b: 'B' });
      });
      let log!: ReturnType<typeof record<string>>;
      testScheduler().run(({ flush }) => {
        log = record(fromMarbles({ marbles: 'a 10ms b|', values: { a: 'A', b: 'B' } }));
        flush();
      });
      expect(log.events).to.deep.equal([
        [0, 'A'],
        [11, 'B'],
      ]);
    });

    it('uses the character itself when no value is given', () => {
      testScheduler().run(({ expectObservable }) => {
        expectObservable(fromMarbles<string>({ marbles: '-x|' })).toBe('-x|', { x: 'x' });
      });
    });

    it('never ends without | or #', () => {
      testScheduler().run(({ expectObservable }) => {
        expectObservable(fromMarbles({ marbles: '-a', values: { a: 1 } })).toBe('-a', { a: 1 });
      });
    });

    it('is cold: each subscription starts its own timeline', () => {
      testScheduler().run(({ expectObservable }) => {
        const source = fromMarbles({ marbles: '-a|', values: { a: 1 } });
        expectObservable(source).toBe('-a|', { a: 1 });
        expectObservable(source, '---^').toBe('----a|', { a: 1 });
      });
    });

    it('stops emitting when unsubscribed', () => {
      testScheduler().run(({ expectObservable }) => {
        expectObservable(fromMarbles({ marbles: '-a-b-c|', values: { a: 1, b: 2, c: 3 } }), '^--!').toBe('-a-', { a: 1 });
      });
    });

    it('keeps one frame = 1 ms outside TestScheduler.run too (on a scheduler passed in)', () => {
      const scheduler = testScheduler();
      const log = record(fromMarbles({ marbles: '-a-b 10ms (c|)', values: { a: 1, b: 2, c: 3 } }, scheduler), scheduler);
      scheduler.flush();
      expect(log.events).to.deep.equal([
        [1, 1],
        [3, 2],
        [14, 3],
      ]);
      expect(log.completed()).to.equal(true);
    });

    it('runs in real time outside TestScheduler.run', async () => {
      const values: number[] = [];
      await new Promise<void>((resolve, reject) =>
        fromMarbles({ marbles: '-a-(b|)', values: { a: 1, b: 2 } }).subscribe({ next: (v) => values.push(v), error: reject, complete: resolve }),
      );
      expect(values).to.deep.equal([1, 2]);
    });
  });

  describe('event builders', () => {
    it('textDeltas splits into words with their leading whitespace', () => {
      expect(textDeltas('It is 22 °C and sunny in NYC.')).to.deep.equal(
        ['It', ' is', ' 22', ' °C', ' and', ' sunny', ' in', ' NYC.'].map((text) => ({ type: 'text-delta', text })),
      );
      expect(textDeltas(' lead  and\nnewline ').map((e) => (e as { text: string }).text)).to.deep.equal([' lead', '  and', '\nnewline', ' ']);
      expect(textDeltas('')).to.deep.equal([]);
      expect(textDeltas('one')).to.deep.equal([{ type: 'text-delta', text: 'one' }]);
    });

    it('textDeltas rejoin to the original text', () => {
      const text = 'The weather in  NYC is\n22 °C, sunny.  ';
      expect(
        textDeltas(text)
          .map((e) => (e as { text: string }).text)
          .join(''),
      ).to.equal(text);
    });

    it('toolCall and finish build events', () => {
      expect(toolCall('c1', 'get_weather', { city: 'NYC' })).to.deep.equal({ type: 'tool-call', id: 'c1', name: 'get_weather', args: { city: 'NYC' } });
      expect(finish()).to.deep.equal({ type: 'finish', reason: 'stop' });
      expect(finish('tool-calls')).to.deep.equal({ type: 'finish', reason: 'tool-calls' });
      expect(finish('stop', { inputTokens: 10, outputTokens: 2 })).to.deep.equal({
        type: 'finish',
        reason: 'stop',
        usage: { inputTokens: 10, outputTokens: 2 },
      });
      expect(Object.keys(finish('length'))).to.deep.equal(['type', 'reason']);
    });
  });

  describe('scriptedModel', () => {
    it('plays the n-th turn on the n-th call, recording requests and calls', () => {
      const turn1: TurnEvent[] = [toolCall('c1', 'get_weather', { city: 'NYC' }), finish('tool-calls')];
      const turn2: TurnEvent[] = [...textDeltas('Sunny.'), finish()];
      const model = scriptedModel('fake', [turn1, turn2]);
      expect(model.id).to.equal('fake');
      expect(model.calls).to.equal(0);
      const first = collect(streamModel(model, request('one')));
      const second = collect(streamModel(model, request('two')));
      expect(first.values).to.deep.equal(turn1);
      expect(first.completed()).to.equal(true);
      expect(second.values).to.deep.equal(turn2);
      expect(model.calls).to.equal(2);
      expect(model.requests).to.deep.equal([request('one'), request('two')]);
      expect(model.cancelled).to.equal(0);
    });

    it('is cold: nothing is called before subscribe', () => {
      const model = scriptedModel('fake', [[finish()]]);
      const turn$ = streamModel(model, request('x'));
      expect(model.calls).to.equal(0);
      turn$.subscribe();
      expect(model.calls).to.equal(1);
    });

    it('errors past the script with a clear message (and still counts and records the call)', () => {
      const model = scriptedModel('primary', [[finish()]]);
      collect(streamModel(model, request('one')));
      const past = collect(streamModel(model, request('two')));
      const error = past.error();
      expect(error).to.be.instanceOf(Error);
      expect((error as Error).message).to.equal("scriptedModel 'primary' has no turn 2 (script has 1)");
      expect(model.calls).to.equal(2);
      expect(model.requests).to.have.length(2);
      const empty = scriptedModel('empty', []);
      expect((collect(streamModel(empty, request('x'))).error() as Error).message).to.equal("scriptedModel 'empty' has no turn 1 (script has 0)");
    });

    it('plays marble turns in virtual time, erroring at #', () => {
      const values: Record<string, TurnEvent> = {
        a: { type: 'text-delta', text: 'The' },
        b: { type: 'text-delta', text: ' wea' },
        c: { type: 'text-delta', text: 'ther' },
      };
      const e503 = new HttpError(503);
      testScheduler().run(({ expectObservable }) => {
        const model = scriptedModel('primary', [{ marbles: '-a-b-c-#', values, error: e503 }]);
        expectObservable(streamModel(model, request('x'))).toBe('-a-b-c-#', values, e503);
      });
    });

    it('counts subscriptions cancelled before the turn ended, not finished ones', () => {
      testScheduler().run(({ expectObservable, flush }) => {
        const f: Record<string, TurnEvent> = { f: finish() };
        const model = scriptedModel('slow', [
          { marbles: '----(f|)', values: f },
          { marbles: '----(f|)', values: f },
          { marbles: '-#', error: new Error('x') },
        ]);
        expectObservable(streamModel(model, request('1')), '^-!').toBe('--');
        flush();
        expect(model.cancelled).to.equal(1);
        streamModel(model, request('2')).subscribe();
        streamModel(model, request('3')).subscribe({ error: () => undefined });
        flush();
        expect(model.cancelled).to.equal(1);
        expect(model.calls).to.equal(3);
      });
    });

    it('accepts function turns, given the request and the abort context', () => {
      const seen: ModelRequest[] = [];
      let signal: AbortSignal | undefined;
      const model = scriptedModel('fn', [
        (req) => (seen.push(req), [{ type: 'text-delta', text: String(req.messages[0]?.content) }, finish()] as TurnEvent[]),
        (_req, context) => ((signal = context.signal), NEVER),
        () => Promise.resolve<TurnEvent>(finish('length')),
      ]);
      expect(collect(streamModel(model, request('echo me'))).values).to.deep.equal([{ type: 'text-delta', text: 'echo me' }, finish()]);
      expect(seen).to.deep.equal([request('echo me')]);
      const hanging = streamModel(model, request('hang')).subscribe();
      expect(signal?.aborted).to.equal(false);
      hanging.unsubscribe();
      expect(signal?.aborted).to.equal(true);
      expect(model.cancelled).to.equal(1);
    });

    it('times marble turns on the given scheduler', () => {
      const scheduler = testScheduler();
      const model = scriptedModel('timed', [{ marbles: '25ms (f|)', values: { f: finish() } }], { scheduler });
      const times: number[] = [];
      streamModel(model, request('x')).subscribe({ complete: () => times.push(scheduler.now()) });
      scheduler.flush();
      expect(times).to.deep.equal([25]);
    });
  });

  describe('scriptedTool', () => {
    const call = (id: string, args: unknown = {}) => ({ id, name: 'get_weather', args });

    it('plays outcomes in order, the last one repeating, and records each execution', () => {
      const invalid = new Error('Invalid units. Supported: celsius, fahrenheit');
      const tool = scriptedTool('get_weather', [{ error: invalid }, { result: { temperature: 22, condition: 'sunny' } }]);
      const first = collect(callTool(tool, call('c1', { units: 'kelvin' })));
      const second = collect(callTool(tool, call('c2', { units: 'celsius' })));
      const third = collect(callTool(tool, call('c3', { units: 'fahrenheit' })));
      const error = first.error() as ToolError;
      expect(error).to.be.instanceOf(ToolError);
      expect(error.phase).to.equal('execute');
      expect(error.cause).to.equal(invalid);
      expect(second.values).to.deep.equal([{ temperature: 22, condition: 'sunny' }]);
      expect(second.completed()).to.equal(true);
      expect(third.values).to.deep.equal([{ temperature: 22, condition: 'sunny' }]);
      expect(tool.executions).to.deep.equal([{ units: 'kelvin' }, { units: 'celsius' }, { units: 'fahrenheit' }]);
    });

    it('is a real tool: defaults, options, and arguments decoded with args', () => {
      const plain = scriptedTool('search', [{ result: 1 }]);
      expect(plain.name).to.equal('search');
      expect(plain.description).to.equal('scripted tool search');
      expect(plain.idempotent).to.equal(false);
      expect(plain.parameters).to.deep.equal({});
      const typed = scriptedTool('get_weather', [{ result: 'ok' }], { args: t.type({ city: t.string }), idempotent: true, description: 'Weather' });
      expect(typed.idempotent).to.equal(true);
      expect(typed.description).to.equal('Weather');
      const bad = collect(callTool(typed, call('c1', { city: 3 }))).error() as ToolError;
      expect(bad.phase).to.equal('validate');
      expect(bad.message).to.equal('city: expected string, got 3');
      expect(typed.executions).to.deep.equal([]);
      expect(collect(callTool(typed, call('c2', { city: 'NYC' }))).values).to.deep.equal(['ok']);
      expect(typed.executions).to.deep.equal([{ city: 'NYC' }]);
    });

    it('plays marble outcomes in virtual time', () => {
      testScheduler().run(({ expectObservable }) => {
        const slow = scriptedTool('search', [{ marbles: '3500ms (r|)', values: { r: ['doc'] } }]);
        expectObservable(callTool(slow, { id: 'c1', name: 'search', args: { q: 'x' } })).toBe('3500ms (r|)', { r: ['doc'] });
      });
      testScheduler().run(({ expectObservable }) => {
        const boom = new HttpError(503);
        const flaky = scriptedTool('search', [{ marbles: '--#', error: boom }], { idempotent: true });
        const expected = new ToolError({ toolName: 'search', callId: 'c1', args: {}, phase: 'execute', idempotent: true, message: 'HTTP 503', cause: boom });
        expectObservable(callTool(flaky, { id: 'c1', name: 'search', args: {} })).toBe('--#', undefined, expected);
      });
    });

    it('an empty script fails every execution with a clear message', () => {
      const tool = scriptedTool('nothing', []);
      const error = collect(callTool(tool, { id: 'c', name: 'nothing', args: 1 })).error() as ToolError;
      expect(error.phase).to.equal('execute');
      expect(error.message).to.equal("scriptedTool 'nothing' has no outcomes");
      expect(tool.executions).to.deep.equal([1]);
    });
  });

  describe('describeEvent', () => {
    const cases: [AgentEvent, string][] = [
      [{ type: 'text-delta', text: 'Hello' }, 'text:Hello'],
      [{ type: 'tool-call', id: 'c1', name: 'get_weather', args: {} }, 'tool-call:get_weather'],
      [{ type: 'tool-result', id: 'c1', name: 'get_weather', result: 22 }, 'tool-result:get_weather'],
      [{ type: 'tool-error', id: 'c1', name: 'get_weather', error: 'boom', category: 'unknown' }, 'tool-error:get_weather'],
      [{ type: 'finish', reason: 'tool-calls' }, 'finish:tool-calls'],
      [{ type: 'reflection', tool: 'get_weather', callId: 'c1', attempt: 1, max: 3, exhausted: false, prompt: 'p' }, 'reflection:get_weather#1/3'],
      [{ type: 'reflection', tool: 'get_weather', callId: 'c1', attempt: 4, max: 3, exhausted: true, prompt: 'p' }, 'reflection:get_weather#exhausted'],
      [{ type: 'retry', target: 'tool:x', attempt: 1, max: 3, delayMs: 500, category: 'rate_limit' }, 'retry:tool:x#1'],
      [{ type: 'retry-succeeded', target: 'tool:x', attempt: 2 }, 'retry-succeeded:tool:x#2'],
      [
        { type: 'retry-withheld', target: 'tool:send_email', reason: 'not_idempotent', category: 'service_unavailable' },
        'retry-withheld:tool:send_email:not_idempotent',
      ],
      [{ type: 'call-start', kind: 'model', name: 'gpt', id: 'step-1.1/1', step: 1, at: 0, parentId: 'step-1.1' }, 'call-start:model:gpt'],
      [{ type: 'call-end', kind: 'tool', name: 'x', id: 'c1', step: 1, at: 3, durationMs: 3, outcome: 'cancelled' }, 'call-end:tool:x:cancelled'],
      [{ type: 'circuit', breaker: 'tool:x', kind: 'transition', from: 'closed', to: 'open', reason: 'failures', failures: 5 }, 'circuit:tool:x:closed>open'],
      [{ type: 'circuit', breaker: 'tool:x', kind: 'rejected', retryAfterMs: 100 }, 'circuit:tool:x:rejected'],
      [{ type: 'fallback', from: 'model:a', to: 'model:b', reason: 'HTTP 503', midStream: false }, 'fallback:model:a>model:b'],
      [{ type: 'reset', reason: 'fallback', target: 'model:b' }, 'reset:fallback'],
      [{ type: 'degraded', capability: 'search', reason: 'slow' }, 'degraded:search'],
      [{ type: 'restored', capability: 'search' }, 'restored:search'],
      [{ type: 'budget-exceeded', resource: 'tokens', limit: 10, used: 12 }, 'budget-exceeded:tokens'],
      [{ type: 'validation', valid: true, attempt: 1, problems: [] }, 'validation:valid'],
      [{ type: 'validation', valid: false, attempt: 1, problems: ['x'] }, 'validation:invalid'],
      [{ type: 'message', message: { role: 'assistant', content: 'hi' } }, 'message:assistant'],
      [{ type: 'message', message: { role: 'tool', toolCallId: 'c1', toolName: 'x', content: 'r' } }, 'message:tool'],
    ];
    for (const [event, label] of cases) {
      it(label, () => {
        expect(describeEvent(event)).to.equal(label);
      });
    }

    it('covers every agent event type', () => {
      const types = new Set(cases.map(([e]) => e.type));
      expect([...types].sort()).to.deep.equal(
        [
          'budget-exceeded',
          'call-end',
          'call-start',
          'circuit',
          'degraded',
          'fallback',
          'finish',
          'message',
          'reflection',
          'reset',
          'restored',
          'retry',
          'retry-succeeded',
          'retry-withheld',
          'text-delta',
          'tool-call',
          'tool-error',
          'tool-result',
          'validation',
        ].sort(),
      );
    });
  });

  describe('pendingActions / pendingAt (no timer left behind)', () => {
    it('counts the actions scheduled on a TestScheduler: a deadline while it runs, none once the source answered', () => {
      const ts = testScheduler();
      const counts: number[] = [];
      ts.run(({ cold, expectObservable }) => {
        const guarded = cold('100ms a|').pipe(degradeAfter(3000, 'd'));
        guarded.subscribe();
        counts.push(pendingActions(ts)); // the first item's deadline (and the source's own frames)
        expectObservable(pendingAt(ts, 200)).toBe('200ms (n|)', { n: 0 });
      });
      expect(counts[0]).to.be.greaterThan(0);
      expect(pendingActions(ts)).to.equal(0);
    });

    it('pendingAt shows a timer that is left: a breaker open at 200 ms still has its half-open notice pending', () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 1000 });
        breaker.state$.subscribe(); // the notice is scheduled only while someone observes the breaker
        cold('-#', undefined, new Error('503'))
          .pipe(circuitBreak(breaker))
          .subscribe({ error: () => undefined });
        expectObservable(pendingAt(ts, 200)).toBe('200ms (n|)', { n: 1 });
      });
    });
  });

  describe('record', () => {
    it('captures each event with its virtual time, and completion', () => {
      let log!: ReturnType<typeof record<ModelEvent>>;
      testScheduler().run(({ cold, flush }) => {
        log = record(cold<ModelEvent>('-a 98ms b|', { a: { type: 'text-delta', text: 'Hi' }, b: finish() }));
        expect(log.completed()).to.equal(false);
        flush();
      });
      expect(log.events).to.deep.equal([
        [1, { type: 'text-delta', text: 'Hi' }],
        [100, { type: 'finish', reason: 'stop' }],
      ]);
      expect(log.completed()).to.equal(true);
      expect(log.error()).to.equal(undefined);
      expect(log.end()).to.deep.equal({ kind: 'complete', at: 101 }); // b at 100, completion one frame later
    });

    it('records when the stream errors, and at which virtual time; end() is undefined while it runs', () => {
      const boom = new Error('boom');
      let log!: ReturnType<typeof record<string>>;
      let during: unknown = 'unset';
      testScheduler().run(({ cold, flush }) => {
        log = record(cold('--a 3497ms #', { a: 'x' }, boom));
        during = log.end();
        flush();
      });
      expect(during).to.equal(undefined);
      expect(log.end()).to.deep.equal({ kind: 'error', at: 3500, error: boom });
      expect(log.completed()).to.equal(false);
    });

    it('captures the error', () => {
      const boom = new Error('boom');
      let log!: ReturnType<typeof record<string>>;
      testScheduler().run(({ cold, flush }) => {
        log = record(cold('--a--#', { a: 'x' }, boom));
        flush();
      });
      expect(log.events).to.deep.equal([[2, 'x']]);
      expect(log.error()).to.equal(boom);
      expect(log.completed()).to.equal(false);
    });

    it('uses the given scheduler’s clock', () => {
      const scheduler = testScheduler();
      const log = record(timer(40, scheduler), scheduler);
      scheduler.flush();
      expect(log.events).to.deep.equal([[40, 0]]);
      expect(log.completed()).to.equal(true);
    });

    it('records synchronous streams at time 0 inside run', () => {
      let log!: ReturnType<typeof record<number>>;
      testScheduler().run(() => {
        log = record(of(1, 2));
      });
      expect(log.events).to.deep.equal([
        [0, 1],
        [0, 2],
      ]);
      expect(log.completed()).to.equal(true);
    });
  });
});

describe('rxheal/testing: huge delays and late signals', () => {
  it("fromMarbles waits a 3e9 ms gap whole, even under Node's timer clamp", () => {
    const scheduler = new NodeTimerScheduler();
    const seen: [number, string][] = [];
    fromMarbles<string>({ marbles: '3000000000ms a|', values: { a: 'a' } }, scheduler).subscribe((v) => seen.push([scheduler.now(), v]));
    scheduler.advanceTo(3e9 + 5);
    expect(seen).to.deep.equal([[3e9, 'a']]);
    expect(scheduler.warnings).to.deep.equal([]);
  });

  it('a scriptedModel turn that reads signal after an await sees it aborted once the consumer left', async () => {
    const seen: boolean[] = [];
    const model = scriptedModel('m', [
      async (_request, context) => {
        await new Promise((resolve) => setImmediate(resolve));
        seen.push(context.signal.aborted);
        return finish();
      },
    ]);
    streamModel(model, request('x')).subscribe().unsubscribe();
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen).to.deep.equal([true]);
  });
});
