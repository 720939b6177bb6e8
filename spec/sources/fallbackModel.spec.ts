import { expect } from 'chai';
import { asyncScheduler, catchError, concat, concatMap, from, NEVER, type Observable, of, throwError, VirtualTimeScheduler } from 'rxjs';
import type { TestScheduler } from 'rxjs/testing';
import { CircuitBreakerRegistry } from '../../src/core/breaker/registry.js';
import { AllFallbacksFailedError, CircuitOpenError, HttpError, InvalidOptionError } from '../../src/core/errors/errors.js';
import type { HealEvent, Message, TurnEvent } from '../../src/core/events/events.js';
import { HealHub } from '../../src/core/hub/hub.js';
import { DEFAULT_CONTINUE_INSTRUCTION, fallbackModel, type FallbackModelOptions } from '../../src/sources/fallbackModel.js';
import { type BudgetMeter, type Model, type ModelContext, type ModelRequest, streamModel } from '../../src/core/model/model.js';
import { Boom, expectThrowDownstream, failingSource, KINDS, thrower } from '../support/guards.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { testScheduler } from '../support/marbles.js';
import { shownText as shown } from '../support/shown.js';

const e503 = new HttpError(503);
const e502 = new HttpError(502);
const e500 = new HttpError(500);

// ---------------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------------

interface Scripted extends Model {
  /** Every request the model received, in order (one per call). */
  readonly requests: ModelRequest[];
  /** Every call's abort signal. */
  readonly signals: AbortSignal[];
}

/** A scripted model: the n-th call streams the n-th observable (the last one repeats). */
function scripted(id: string, ...turns: Observable<TurnEvent>[]): Scripted {
  const requests: ModelRequest[] = [];
  const signals: AbortSignal[] = [];
  return {
    id,
    requests,
    signals,
    stream: (request, { signal }) => {
      requests.push(request);
      signals.push(signal);
      return turns[Math.min(requests.length - 1, turns.length - 1)]!;
    },
  };
}

const delta = (text: string): TurnEvent => ({ type: 'text-delta', text });
const stop: TurnEvent = { type: 'finish', reason: 'stop' };
const reset = (id: string): TurnEvent => ({ type: 'reset', reason: 'fallback', target: `model:${id}` });

function collect(ts: TestScheduler, source: Observable<TurnEvent>): { events: TurnEvent[]; error: () => unknown } {
  const events: TurnEvent[] = [];
  let error: unknown;
  source.subscribe({ next: (e) => events.push(e), error: (e: unknown) => (error = e) });
  ts.flush();
  return { events, error: () => error };
}

function recordHub(hub: HealHub): HealEvent[] {
  const log: HealEvent[] = [];
  hub.events$.subscribe((e) => log.push(e));
  return log;
}

const request: ModelRequest = {
  messages: [
    { role: 'system', content: 'You are a weather assistant.' },
    { role: 'user', content: "What's the weather in NYC?" },
  ],
  tools: [{ name: 'get_weather', description: 'Current weather for a city' }],
};

/** The primary that dies mid-stream: three text deltas, then a 503. */
const partialValues = { a: delta('The wea'), b: delta('ther in NYC'), c: delta(' is') };
const PARTIAL = 'The weather in NYC is';

function continueRequest(partial: string): ModelRequest {
  const messages: Message[] = [...request.messages, { role: 'assistant', content: partial }, { role: 'user', content: DEFAULT_CONTINUE_INSTRUCTION }];
  return { messages, tools: request.tools };
}

// ---------------------------------------------------------------------------------------------

describe('fallbackModel', () => {
  describe('per request, models in order', () => {
    it('uses the primary when it answers; the others are never called', () => {
      testScheduler().run(({ cold, expectObservable, flush }) => {
        const primary = scripted('primary', cold('-a(f|)', { a: delta('Sunny.'), f: stop }));
        const secondary = scripted('secondary', cold('-x|'));
        expectObservable(streamModel(fallbackModel([primary, secondary]), request)).toBe('-a(f|)', { a: delta('Sunny.'), f: stop });
        flush();
        expect(primary.requests).to.deep.equal([request]);
        expect(secondary.requests).to.have.length(0);
      });
    });

    it('a failure before any output hands the same request to the next model, with no reset (nothing to discard)', () => {
      testScheduler().run(({ cold, expectObservable, flush }) => {
        const primary = scripted('primary', cold('--#', undefined, e503));
        const secondary = scripted('secondary', cold('-x(f|)', { x: delta('Sunny.'), f: stop }));
        expectObservable(streamModel(fallbackModel([primary, secondary], { midStream: 'restart' }), request)).toBe('---x(f|)', {
          x: delta('Sunny.'),
          f: stop,
        });
        flush();
        expect(secondary.requests).to.deep.equal([request]);
      });
    });

    it('a model whose stream ends without finish was cut short: the next model answers (after a reset), and its breaker counts a failure', () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable, flush }) => {
        const breakers = new CircuitBreakerRegistry({ failureThreshold: 1 });
        const transitions: string[] = [];
        breakers.get('model:primary').events$.subscribe((e) => transitions.push(`${e.at} ${e.from}->${e.to} ${e.reason}`));
        const primary = scripted('primary', cold('-a-b|', { a: delta('The wea'), b: delta('ther') }));
        const secondary = scripted('secondary', cold('-x(f|)', { x: delta('Sunny.'), f: stop }));
        expectObservable(streamModel(fallbackModel([primary, secondary], { breakers }), request)).toBe('-a-brx(f|)', {
          a: delta('The wea'),
          b: delta('ther'),
          r: reset('secondary'),
          x: delta('Sunny.'),
          f: stop,
        });
        flush();
        expect(secondary.requests).to.deep.equal([request]);
        expect(transitions[0]).to.equal('4 closed->open failure_threshold');
      });
    });

    it('errors not worth a fallback pass through unchanged, at once; the next model is not called', () => {
      const abort = Object.assign(new Error('aborted'), { name: 'AbortError' });
      for (const error of [new TypeError('bad adapter'), abort]) {
        testScheduler().run(({ cold, expectObservable, flush }) => {
          const secondary = scripted('secondary', cold('-x|'));
          expectObservable(streamModel(fallbackModel([scripted('primary', cold('-#', undefined, error)), secondary]), request)).toBe('-#', undefined, error);
          flush();
          expect(secondary.requests).to.have.length(0);
        });
      }
    });

    it('shouldFallback decides instead of the classifier', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const e400 = new HttpError(400);
        const model = fallbackModel([scripted('primary', cold('-#', undefined, e400)), scripted('secondary', cold('-x|'))], {
          shouldFallback: (e) => e instanceof HttpError && e.status >= 500,
        });
        expectObservable(streamModel(model, request)).toBe('-#', undefined, e400);
      });
    });

    it('all failing: AllFallbacksFailedError listing each model’s error in order', () => {
      const ts = testScheduler();
      ts.run(({ cold }) => {
        const model = fallbackModel([
          scripted('primary', cold('-#', undefined, e503)),
          scripted('secondary', cold('-#', undefined, e502)),
          scripted('tertiary', cold('-#', undefined, e500)),
        ]);
        const { error } = collect(ts, streamModel(model, request));
        expect(error()).to.be.instanceOf(AllFallbacksFailedError);
        const all = error() as AllFallbacksFailedError;
        expect(all.errors).to.have.length(3);
        expect(all.errors[0]).to.equal(e503);
        expect(all.errors[1]).to.equal(e502);
        expect(all.errors[2]).to.equal(e500);
      });
    });
  });

  describe('a chain of three: primary → secondary → tertiary, a breaker each', () => {
    it('the primary 503s until its breaker opens; later requests skip it without a call; after the reset timeout it is probed again', () => {
      const hub = new HealHub();
      const log = recordHub(hub);
      const ts = testScheduler();
      ts.run(({ cold, hot, expectObservable, expectSubscriptions, flush }) => {
        const breakers = new CircuitBreakerRegistry({ failureThreshold: 3, resetTimeoutMs: 60_000 });
        const failing = cold<TurnEvent>('-#', undefined, e503);
        const healed = cold<TurnEvent>('-(pf|)', { p: delta('primary answer'), f: stop });
        const answer = cold<TurnEvent>('-(sf|)', { s: delta('secondary answer'), f: stop });
        const primary = scripted('primary', failing, failing, failing, healed);
        const secondary = scripted('secondary', answer);
        const tertiary = scripted('tertiary', cold('-(tf|)', { t: delta('tertiary answer'), f: stop }));
        const model = fallbackModel([primary, secondary, tertiary], { breakers, hub });
        // five requests, one after the other
        const requests = hot('r 99ms r 99ms r 99ms r 59999ms r');
        const answers = requests.pipe(concatMap(() => streamModel(model, request)));
        expectObservable(answers).toBe('--(sf) 96ms (sf) 96ms (sf) 95ms (sf) 59996ms (pf)', {
          s: delta('secondary answer'),
          p: delta('primary answer'),
          f: stop,
        });
        // requests 1–3 call the primary (3 failures open its breaker at 201); request 4 skips it
        expectSubscriptions(failing.subscriptions).toBe(['^!', '100ms ^!', '200ms ^!']);
        expectSubscriptions(answer.subscriptions).toBe(['-^!', '101ms ^!', '201ms ^!', '300ms ^!']);
        // request 5, after the reset timeout, starts from the primary again: its probe succeeds
        expectSubscriptions(healed.subscriptions).toBe('60300ms ^!');
        flush();
        expect(primary.requests).to.have.length(4);
        expect(secondary.requests).to.have.length(4);
        expect(tertiary.requests).to.have.length(0);
        expect(breakers.get('model:primary').state).to.equal('closed');
      });
      const fallbacks = log.filter((e) => e.type === 'fallback' || e.type === 'circuit');
      expect(fallbacks).to.deep.equal([
        { type: 'fallback', from: 'model:primary', to: 'model:secondary', reason: 'service_unavailable', midStream: false },
        { type: 'fallback', from: 'model:primary', to: 'model:secondary', reason: 'service_unavailable', midStream: false },
        {
          type: 'circuit',
          breaker: 'model:primary',
          kind: 'transition',
          from: 'closed',
          to: 'open',
          reason: 'failure_threshold',
          failures: 3,
          at: 201,
          retryAfterMs: 60_000,
        },
        { type: 'fallback', from: 'model:primary', to: 'model:secondary', reason: 'service_unavailable', midStream: false },
        { type: 'circuit', breaker: 'model:primary', kind: 'rejected', retryAfterMs: 59_901 },
        { type: 'fallback', from: 'model:primary', to: 'model:secondary', reason: 'circuit_open', midStream: false },
        { type: 'circuit', breaker: 'model:primary', kind: 'transition', from: 'open', to: 'half-open', reason: 'reset_timeout', failures: 0, at: 60_201 },
        { type: 'circuit', breaker: 'model:primary', kind: 'transition', from: 'half-open', to: 'closed', reason: 'probe_success', failures: 0, at: 60_301 },
      ]);
    });

    it('all three failing: AllFallbacksFailedError listing three errors (CircuitOpenError for a skipped model)', () => {
      const ts = testScheduler();
      ts.run(({ cold, hot, expectObservable }) => {
        const breakers = new CircuitBreakerRegistry({ failureThreshold: 1 });
        const primary = scripted('primary', cold('-#', undefined, e503));
        const secondary = scripted('secondary', cold('-#', undefined, e502));
        const tertiary = scripted('tertiary', cold('-#', undefined, e500));
        const model = fallbackModel([primary, secondary, tertiary], { breakers });
        const errors: unknown[] = [];
        const answers = hot('r 9ms r').pipe(
          concatMap(() =>
            streamModel(model, request).pipe(
              catchError((e: unknown) => {
                errors.push(e);
                return of('failed');
              }),
            ),
          ),
        );
        // request 1 tries all three (each breaker opens); request 2 calls none of them
        expectObservable(answers).toBe('---x 6ms x', { x: 'failed' });
        ts.flush();
        expect(primary.requests.length + secondary.requests.length + tertiary.requests.length).to.equal(3);
        expect(errors).to.have.length(2);
        const [first, second] = errors as AllFallbacksFailedError[];
        expect(first).to.be.instanceOf(AllFallbacksFailedError);
        expect(first!.errors).to.deep.equal([e503, e502, e500]);
        expect(first!.errors[0]).to.equal(e503);
        expect(second!.errors).to.have.length(3);
        for (const [i, id] of ['primary', 'secondary', 'tertiary'].entries()) {
          expect(second!.errors[i]).to.be.instanceOf(CircuitOpenError);
          expect((second!.errors[i] as CircuitOpenError).breaker).to.equal(`model:${id}`);
        }
      });
    });
  });

  describe('mid-stream: the primary dies after 3 text deltas', () => {
    it("'restart' (default): the consumer sees reset, then the secondary's full answer", () => {
      testScheduler().run(({ cold, expectObservable, flush }) => {
        const primary = scripted('primary', cold('-a-b-c-#', partialValues, e503));
        const full = { A: delta('The weather in NYC'), B: delta(' is sunny, 22°C.'), f: stop };
        const secondary = scripted('secondary', cold('-A-B-(f|)', full));
        expectObservable(streamModel(fallbackModel([primary, secondary]), request)).toBe('-a-b-c-RA-B-(f|)', {
          ...partialValues,
          ...full,
          R: reset('secondary'),
        });
        flush();
        expect(secondary.requests).to.deep.equal([request]);
      });
    });

    it("'restart' names the model actually called: an open one on the way is skipped without a call", () => {
      testScheduler().run(({ cold, expectObservable, flush }) => {
        const breakers = new CircuitBreakerRegistry();
        breakers.get('model:secondary').isolate();
        const primary = scripted('primary', cold('-a-b-c-#', partialValues, e503));
        const secondary = scripted('secondary', cold('-x|'));
        const tertiary = scripted('tertiary', cold('-t-(f|)', { t: delta('Sunny.'), f: stop }));
        expectObservable(streamModel(fallbackModel([primary, secondary, tertiary], { breakers }), request)).toBe('-a-b-c-Rt-(f|)', {
          ...partialValues,
          R: reset('tertiary'),
          t: delta('Sunny.'),
          f: stop,
        });
        flush();
        expect(secondary.requests).to.have.length(0);
        expect(tertiary.requests).to.deep.equal([request]);
      });
    });

    it("'continue': the secondary receives the request plus the partial text and the instruction; the consumer sees only the continuation", () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable, flush }) => {
        const primary = scripted('primary', cold('-a-b-c-#', partialValues, e503));
        const rest = { s: delta(' sunny, 22°C.'), f: stop };
        const secondary = scripted('secondary', cold('-s-(f|)', rest));
        const model = fallbackModel([primary, secondary], { midStream: 'continue' });
        // a continuation that repeats nothing is passed on at once, not held back
        expectObservable(streamModel(model, request)).toBe('-a-b-c--s-(f|)', { ...partialValues, ...rest });
        flush();
        expect(secondary.requests).to.deep.equal([continueRequest(PARTIAL)]);
        const { events } = collect(ts, streamModel(model, request));
        expect(shown(events)).to.equal('The weather in NYC is sunny, 22°C.');
      });
    });

    it("'continue' with a secondary that repeats the tail: it is held back until known, then trimmed — no repeated text", () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        const primary = scripted('primary', cold('-a-b-c-#', partialValues, e503));
        const secondary = scripted('secondary', cold('-n-s-(f|)', { n: delta('NYC is'), s: delta(' sunny, 22°C.'), f: stop }));
        const model = fallbackModel([primary, secondary], { midStream: 'continue' });
        expectObservable(streamModel(model, request)).toBe('-a-b-c----s-(f|)', { ...partialValues, s: delta(' sunny, 22°C.'), f: stop });
      });
    });

    it("'continue' with a reasoning secondary: its reasoning passes at once and decides nothing; the repeat after it is still trimmed", () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const primary = scripted('primary', cold('-a-b-c-#', partialValues, e503));
        const think: TurnEvent = { type: 'reasoning-delta', text: 'Continue after "is".' };
        const end: TurnEvent = { type: 'reasoning-end', signature: 'sig' };
        const secondary = scripted('secondary', cold('-r-e-n-s-(f|)', { r: think, e: end, n: delta('NYC is'), s: delta(' sunny.'), f: stop }));
        const model = fallbackModel([primary, secondary], { midStream: 'continue' });
        expectObservable(streamModel(model, request)).toBe('-a-b-c--r-e---s-(f|)', { ...partialValues, r: think, e: end, s: delta(' sunny.'), f: stop });
      });
    });

    it("'continue' when the failed model died inside a reasoning block: the block ends there (unsigned), the next model's reasoning is a block of its own", () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const primary = scripted('primary', cold('-a-b-c-#', partialValues, e503));
        const half: TurnEvent = { type: 'reasoning-delta', text: 'Now the rest' };
        const secondary = scripted('secondary', cold('-r-#', { r: half }, e503));
        const own: TurnEvent = { type: 'reasoning-delta', text: 'Continue after "is".' };
        const tertiary = scripted('tertiary', cold('-o-s-(f|)', { o: own, s: delta(' sunny.'), f: stop }));
        const model = fallbackModel([primary, secondary, tertiary], { midStream: 'continue' });
        const cut: TurnEvent = { type: 'reasoning-end' };
        expectObservable(streamModel(model, request)).toBe('-a-b-c--r-xo-s-(f|)', { ...partialValues, r: half, x: cut, o: own, s: delta(' sunny.'), f: stop });
      });
    });

    it("'continue' after reasoning alone (no text yet): nothing to continue, the next model starts over after a reset", () => {
      testScheduler().run(({ cold, expectObservable, flush }) => {
        const think: TurnEvent = { type: 'reasoning-delta', text: 'Hmm' };
        const primary = scripted('primary', cold('-r-#', { r: think }, e503));
        const secondary = scripted('secondary', cold('-s-(f|)', { s: delta('Sunny.'), f: stop }));
        const model = fallbackModel([primary, secondary], { midStream: 'continue' });
        expectObservable(streamModel(model, request)).toBe('-r-xs-(f|)', {
          r: think,
          x: { type: 'reset', reason: 'fallback', target: 'model:secondary' },
          s: delta('Sunny.'),
          f: stop,
        });
        flush();
        expect(secondary.requests).to.deep.equal([request]);
      });
    });

    it("'continue' trims a repeat of the whole partial text, a restarted word, and repeated whole words", () => {
      const cases: [partial: string[], continuation: string[], expected: string][] = [
        [['The wea', 'ther in NYC', ' is'], ['The weather in NYC is sunny.'], 'The weather in NYC is sunny.'],
        [['The wea'], ['weather is sunny.'], 'The weather is sunny.'],
        [['The weather in NYC is'], [' is', ' sunny.'], 'The weather in NYC is sunny.'],
        [['The weather in NYC is'], ['in NYC is sunny.'], 'The weather in NYC is sunny.'],
        // a long repeat is trimmed even when it starts mid-word
        [
          ['Temperatures: 22°C in NYC, 18°C in Boston'],
          ['C in NYC, 18°C in Boston, 25°C in Miami.'],
          'Temperatures: 22°C in NYC, 18°C in Boston, 25°C in Miami.',
        ],
      ];
      for (const [partial, continuation, expected] of cases) {
        const ts = testScheduler();
        ts.run(({ cold }) => {
          const p = Object.fromEntries(partial.map((t, i) => [String.fromCharCode(97 + i), delta(t)]));
          const c = Object.fromEntries([...continuation.map((t, i) => [String.fromCharCode(65 + i), delta(t)]), ['f', stop]]);
          const primary = scripted('primary', cold(`-${Object.keys(p).join('-')}-#`, p, e503));
          const secondary = scripted('secondary', cold(`-${continuation.map((_, i) => String.fromCharCode(65 + i)).join('-')}-(f|)`, c));
          const { events } = collect(ts, streamModel(fallbackModel([primary, secondary], { midStream: 'continue' }), request));
          expect(shown(events), continuation.join('|')).to.equal(expected);
          expect(events.at(-1)).to.deep.equal(stop);
        });
      }
    });

    it("'continue' keeps a coincidence that is not a repeat: 'at the' then ' theatre'", () => {
      const ts = testScheduler();
      ts.run(({ cold }) => {
        const primary = scripted('primary', cold('-a-#', { a: delta('We met at the') }, e503));
        const secondary = scripted('secondary', cold('-b-(f|)', { b: delta(' theatre.'), f: stop }));
        const { events } = collect(ts, streamModel(fallbackModel([primary, secondary], { midStream: 'continue' }), request));
        expect(shown(events)).to.equal('We met at the theatre.');
      });
    });

    it("'continue' trims in time linear in the overlap window: a repetitive 3 000-character tail, a continuation one character a delta (it took over 30 s)", () => {
      const tail = 'ab'.repeat(1500);
      const primary = scripted(
        'primary',
        concat(
          of(delta(tail)),
          throwError(() => e503),
        ),
      );
      const secondary = scripted('secondary', concat(from([...tail.slice(0, 2000)].map(delta)), of(delta('!'), stop)));
      let shownText = '';
      let error: unknown;
      streamModel(fallbackModel([primary, secondary], { midStream: 'continue', maxOverlap: 3000 }), request).subscribe({
        next: (e) => (shownText += e.type === 'text-delta' ? e.text : ''),
        error: (e: unknown) => (error = e),
      });
      expect(error).to.equal(undefined);
      expect(shownText).to.equal(tail + '!');
    });

    it("'continue' holds back at most maxOverlap characters; maxOverlap: 0 turns trimming off", () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const primary = scripted('primary', cold('-a-b-c-#', partialValues, e503));
        const repeat = { n: delta('NYC is'), s: delta(' sunny.'), f: stop };
        const secondary = scripted('secondary', cold('-n-s-(f|)', repeat));
        // the repeat (6 characters) is longer than maxOverlap: passed on at once, untrimmed
        expectObservable(streamModel(fallbackModel([primary, secondary], { midStream: 'continue', maxOverlap: 5 }), request)).toBe('-a-b-c--n-s-(f|)', {
          ...partialValues,
          ...repeat,
        });
        expectObservable(streamModel(fallbackModel([primary, secondary], { midStream: 'continue', maxOverlap: 0 }), request)).toBe('-a-b-c--n-s-(f|)', {
          ...partialValues,
          ...repeat,
        });
      });
    });

    it("'continue' decides on what it holds when the continuation ends its text (tool call, finish)", () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        const primary = scripted('primary', cold('-a-b-c-#', partialValues, e503));
        const secondary = scripted('secondary', cold('-n-(f|)', { n: delta('NYC is'), f: stop }));
        // 'NYC is' is all repeat: nothing new is shown, then the finish
        expectObservable(streamModel(fallbackModel([primary, secondary], { midStream: 'continue' }), request)).toBe('-a-b-c----(f|)', {
          ...partialValues,
          f: stop,
        });
      });
    });

    it("'continue' chains: a continuation that fails too is continued by the next model from everything shown", () => {
      const ts = testScheduler();
      ts.run(({ cold, flush }) => {
        const primary = scripted('primary', cold('-a-#', { a: delta('The wea') }, e503));
        // repeats the tail ('The wea' is held), continues, then dies: held-back text was never shown
        const secondary = scripted('secondary', cold('-r-s-#', { r: delta('wea'), s: delta('ther in') }, e502));
        const tertiary = scripted('tertiary', cold('-t-(f|)', { t: delta(' NYC is sunny.'), f: stop }));
        const { events } = collect(ts, streamModel(fallbackModel([primary, secondary, tertiary], { midStream: 'continue' }), request));
        flush();
        expect(secondary.requests).to.deep.equal([continueRequest('The wea')]);
        expect(tertiary.requests).to.deep.equal([continueRequest('The weather in')]);
        expect(shown(events)).to.equal('The weather in NYC is sunny.');
        expect(events.some((e) => e.type === 'reset')).to.equal(false);
      });
    });

    describe("a continuation taken back: 'continue' with a perModel retry that restarts (afterEmit: 'restart') inside the continuation", () => {
      const hello = { a: delta('Hello wor') };
      const restarting: FallbackModelOptions['perModel'] = (_id, stream$, { target }) =>
        stream$.pipe(
          retryWithBackoff<TurnEvent>({
            maxRetries: 1,
            initialBackoffMs: 10,
            jitter: 'none',
            afterEmit: 'restart',
            onRestart: () => ({ type: 'reset', reason: 'retry', target }),
          }),
        );
      const retryReset: TurnEvent = { type: 'reset', reason: 'retry', target: 'model:secondary' };

      it("the reset takes back only the continuation's own text: the consumer is shown the partial text again, then the retried continuation ('Hello world! How are you?', not 'ld! How are you?')", () => {
        const ts = testScheduler();
        ts.run(({ cold, expectObservable, flush }) => {
          // the primary has no retry (perModel passes it as is); the continuation's first attempt fails after 'ld!'
          const primary = scripted('primary', cold('-a-#', hello, e503));
          const secondary = scripted('secondary', cold('-b-#', { b: delta('ld!') }, e503), cold('-c-(f|)', { c: delta('ld! How are you?'), f: stop }));
          const model = fallbackModel([primary, secondary], {
            midStream: 'continue',
            perModel: (id, s$, c) => (id === 'primary' ? s$ : restarting(id, s$, c)),
          });
          expectObservable(streamModel(model, request)).toBe('-a--b-(Rp) 7ms c-(f|)', {
            ...hello,
            b: delta('ld!'),
            R: retryReset,
            p: delta('Hello wor'),
            c: delta('ld! How are you?'),
            f: stop,
          });
          flush();
          // both attempts of the continuation continue the same partial text
          expect(secondary.requests).to.deep.equal([continueRequest('Hello wor'), continueRequest('Hello wor')]);
          const { events } = collect(ts, streamModel(model, request));
          expect(shown(events)).to.equal('Hello world! How are you?');
        });
      });

      it("the failed model's reasoning shown before the continuation stays too (each block again whole, with its end), the continuation's own is taken back", () => {
        const ts = testScheduler();
        ts.run(({ cold, flush }) => {
          const think: TurnEvent = { type: 'reasoning-delta', text: 'A greeting' };
          const more: TurnEvent = { type: 'reasoning-delta', text: ', then a question.' };
          const end: TurnEvent = { type: 'reasoning-end', signature: 'sig-1' };
          const primary = scripted('primary', cold('-r-m-e-a-#', { r: think, m: more, e: end, ...hello }, e503));
          const own: TurnEvent = { type: 'reasoning-delta', text: 'Continue after "wor".' };
          const secondary = scripted(
            'secondary',
            cold('-o-b-#', { o: own, b: delta('ld!') }, e503),
            cold('-c-(f|)', { c: delta('ld! How are you?'), f: stop }),
          );
          const model = fallbackModel([primary, secondary], {
            midStream: 'continue',
            perModel: (id, s$, c) => (id === 'primary' ? s$ : restarting(id, s$, c)),
          });
          const { events, error } = collect(ts, streamModel(model, request));
          flush();
          expect(error()).to.equal(undefined);
          const afterReset = events.slice(events.findIndex((e) => e.type === 'reset') + 1);
          expect(afterReset).to.deep.equal([
            { type: 'reasoning-delta', text: 'A greeting, then a question.' },
            end,
            delta('Hello wor'),
            delta('ld! How are you?'),
            stop,
          ]);
        });
      });

      it('a continuation whose text was all held back (a repeat of the tail, not shown yet) had nothing to take back: no reset reaches the consumer, and the retried attempt is trimmed afresh', () => {
        const ts = testScheduler();
        ts.run(({ cold, expectObservable }) => {
          const primary = scripted('primary', cold('-a-#', hello, e503));
          // 'wor' could still be a repeat: held, never shown; the retry's attempt repeats it again
          const secondary = scripted('secondary', cold('-w-#', { w: delta('wor') }, e503), cold('-x-(f|)', { x: delta('world! How are you?'), f: stop }));
          const model = fallbackModel([primary, secondary], {
            midStream: 'continue',
            perModel: (id, s$, c) => (id === 'primary' ? s$ : restarting(id, s$, c)),
          });
          expectObservable(streamModel(model, request)).toBe('-a-- 12ms -x-(f|)', { ...hello, x: delta('ld! How are you?'), f: stop });
        });
      });

      it("a model's own restart outside a continuation still passes unchanged (the reset discards its whole turn)", () => {
        testScheduler().run(({ cold, expectObservable }) => {
          const primary = scripted('primary', cold('-a-#', hello, e503), cold('-h-(f|)', { h: delta('Hello world!'), f: stop }));
          const model = fallbackModel([primary], { midStream: 'continue', perModel: restarting });
          expectObservable(streamModel(model, request)).toBe('-a-R 9ms -h-(f|)', {
            ...hello,
            R: { ...retryReset, target: 'model:primary' },
            h: delta('Hello world!'),
            f: stop,
          });
        });
      });

      it('a continuation that restarted, then failed for good, is continued by the next model from the partial text plus the retried attempt’s own', () => {
        const ts = testScheduler();
        ts.run(({ cold, flush }) => {
          const primary = scripted('primary', cold('-a-#', hello, e503));
          const secondary = scripted('secondary', cold('-b-#', { b: delta('ld!') }, e503), cold('-c-#', { c: delta('ld! How') }, e503));
          const tertiary = scripted('tertiary', cold('-t-(f|)', { t: delta(' are you?'), f: stop }));
          const model = fallbackModel([primary, secondary, tertiary], {
            midStream: 'continue',
            perModel: (id, s$, c) => (id === 'secondary' ? restarting(id, s$, c) : s$),
          });
          const { events, error } = collect(ts, streamModel(model, request));
          flush();
          expect(error()).to.equal(undefined);
          expect(tertiary.requests).to.deep.equal([continueRequest('Hello world! How')]);
          expect(shown(events)).to.equal('Hello world! How are you?');
        });
      });
    });

    it("'continue' after a tool call: the turn cannot be continued, so it restarts (reset, then the whole answer)", () => {
      testScheduler().run(({ cold, expectObservable, flush }) => {
        const call: TurnEvent = { type: 'tool-call', id: 'c1', name: 'get_weather', args: { city: 'NYC' } };
        const primary = scripted('primary', cold('-a-t-#', { a: delta('Let me check.'), t: call }, e503));
        const secondary = scripted('secondary', cold('-x-(f|)', { x: delta('Checking.'), f: stop }));
        expectObservable(streamModel(fallbackModel([primary, secondary], { midStream: 'continue' }), request)).toBe('-a-t-Rx-(f|)', {
          a: delta('Let me check.'),
          t: call,
          R: reset('secondary'),
          x: delta('Checking.'),
          f: stop,
        });
        flush();
        expect(secondary.requests).to.deep.equal([request]);
      });
    });

    it("'error': no fallback after the first event; the error passes on unchanged", () => {
      testScheduler().run(({ cold, expectObservable, flush }) => {
        const secondary = scripted('secondary', cold('-x|'));
        const model = fallbackModel([scripted('primary', cold('-a-#', partialValues, e503)), secondary], { midStream: 'error' });
        expectObservable(streamModel(model, request)).toBe('-a-#', partialValues, e503);
        flush();
        expect(secondary.requests).to.have.length(0);
      });
    });

    it('reports mid-stream switches to the hub with midStream: true', () => {
      const hub = new HealHub();
      const log = recordHub(hub);
      const ts = testScheduler();
      ts.run(({ cold }) => {
        const primary = scripted('primary', cold('-a-#', partialValues, e503));
        collect(ts, streamModel(fallbackModel([primary, scripted('secondary', cold('-x|'))], { hub, midStream: 'continue' }), request));
      });
      expect(log).to.deep.equal([{ type: 'fallback', from: 'model:primary', to: 'model:secondary', reason: 'service_unavailable', midStream: true }]);
    });

    it('midStream is per hand-over: true only when the model left had emitted (a hop past a skipped model, or from a silent continuation, is false)', () => {
      const hub = new HealHub();
      const log = recordHub(hub);
      const ts = testScheduler();
      ts.run(({ cold }) => {
        const breakers = new CircuitBreakerRegistry({ failureThreshold: 1 });
        breakers.get('model:secondary').isolate();
        const primary = scripted('primary', cold('-a-#', partialValues, e503));
        const tertiary = scripted('tertiary', cold('-#', undefined, e502));
        const last = scripted('last', cold('-x(f|)', { x: delta(' sunny.'), f: stop }));
        const model = fallbackModel([primary, scripted('secondary', cold('-x|')), tertiary, last], { hub, breakers, midStream: 'continue' });
        const { events } = collect(ts, streamModel(model, request));
        expect(shown(events)).to.equal('The wea sunny.');
      });
      expect(log.filter((e) => e.type === 'fallback')).to.deep.equal([
        { type: 'fallback', from: 'model:primary', to: 'model:secondary', reason: 'service_unavailable', midStream: true },
        { type: 'fallback', from: 'model:secondary', to: 'model:tertiary', reason: 'circuit_open', midStream: false },
        { type: 'fallback', from: 'model:tertiary', to: 'model:last', reason: 'bad_gateway', midStream: false },
      ]);
    });
  });

  describe('adapt', () => {
    it('adapts the request per model; the model receives the adapted request', () => {
      const seen: [ModelRequest, string][] = [];
      const ts = testScheduler();
      ts.run(({ cold, flush }) => {
        const primary = scripted('primary', cold('-a-#', partialValues, e503));
        const local = scripted('local', cold('-s|', { s: delta(' sunny.') }));
        const adapt: FallbackModelOptions['adapt'] = (req, model) => {
          seen.push([req, model.id]);
          return model.id === 'local' ? { ...req, tools: [] } : req;
        };
        collect(ts, streamModel(fallbackModel([primary, local], { adapt, midStream: 'continue' }), request));
        flush();
        expect(seen.map(([, id]) => id)).to.deep.equal(['primary', 'local']);
        expect(seen[0]![0]).to.equal(request);
        // adapt sees the request as it will be sent: with the continuation messages
        expect(seen[1]![0]).to.deep.equal(continueRequest('The wea'));
        expect(local.requests).to.deep.equal([{ ...continueRequest('The wea'), tools: [] }]);
      });
    });

    it('errors with what adapt throws, at once', () => {
      const bug = new Error('adapter bug');
      testScheduler().run(({ cold, expectObservable }) => {
        const adapt = (): ModelRequest => {
          throw bug;
        };
        expectObservable(streamModel(fallbackModel([scripted('primary', cold('-a|'))], { adapt }), request)).toBe('#', undefined, bug);
      });
    });
  });

  describe('cancellation', () => {
    it('unsubscribing aborts the model in flight (through streamModel)', () => {
      testScheduler().run(({ cold, expectObservable, expectSubscriptions, flush }) => {
        const slow = cold<TurnEvent>('-----x|');
        const primary = scripted('primary', cold('-#', undefined, e503));
        const secondary = scripted('secondary', slow);
        expectObservable(streamModel(fallbackModel([primary, secondary]), request), '^ 3ms !').toBe('');
        expectSubscriptions(slow.subscriptions).toBe('-^--!');
        flush();
        expect(secondary.signals[0]!.aborted).to.equal(true);
        expect(primary.signals[0]!.aborted).to.equal(false);
      });
    });

    it('a model that never answers is cancelled with the turn', () => {
      const model = scripted('primary', NEVER);
      const sub = streamModel(fallbackModel([model]), request).subscribe();
      sub.unsubscribe();
      expect(model.signals[0]!.aborted).to.equal(true);
    });
  });

  describe('perModel: healing each model before the chain moves on', () => {
    it('retries the primary (10 ms), then falls back; the retried call holds one breaker permit and counts one failure', () => {
      testScheduler().run(({ cold, expectObservable, expectSubscriptions, flush }) => {
        const first = cold<TurnEvent>('-#', undefined, e503);
        const second = cold<TurnEvent>('-#', undefined, e503);
        const backup = cold<TurnEvent>('-x-(s|)', { x: delta('Sunny.'), s: stop });
        const breakers = new CircuitBreakerRegistry({ failureThreshold: 2 });
        const hub = new HealHub();
        const log = recordHub(hub);
        const model = fallbackModel([scripted('primary', first, second), scripted('secondary', backup)], {
          breakers,
          hub,
          perModel: (_id, stream$, context) =>
            stream$.pipe(retryWithBackoff({ hub: context.hub, target: context.target, maxRetries: 1, initialBackoffMs: 10, jitter: 'none' })),
        });
        expectObservable(streamModel(model, request)).toBe('13ms x-(s|)', { x: delta('Sunny.'), s: stop });
        expectSubscriptions(first.subscriptions).toBe('^!');
        expectSubscriptions(second.subscriptions).toBe('11ms ^!');
        expectSubscriptions(backup.subscriptions).toBe('12ms ^--!');
        flush();
        expect(breakers.get('model:primary').state).to.equal('closed'); // one failure of two
        expect(log.map((e) => e.type)).to.deep.equal(['retry', 'fallback']);
        expect(log[1]).to.deep.include({ from: 'model:primary', to: 'model:secondary', reason: 'service_unavailable' });
      });
    });

    it('is called per attempt at a model, with its id, its stream and the context (hub, target)', () => {
      const hub = new HealHub();
      const calls: [string, string, boolean][] = [];
      const model = fallbackModel([scripted('primary', of(delta('a'), stop))], {
        hub,
        perModel: (id, stream$, context) => {
          calls.push([id, context.target, context.hub === hub]);
          return stream$;
        },
      });
      streamModel(model, request).subscribe();
      streamModel(model, request).subscribe();
      expect(calls).to.deep.equal([
        ['primary', 'model:primary', true],
        ['primary', 'model:primary', true],
      ]);
    });

    it('errors the turn at once with what perModel throws; the model is not called and no fallback is tried', () => {
      const primary = scripted('primary', of(delta('a'), stop));
      const secondary = scripted('secondary', of(delta('b'), stop));
      const bug = new Error('perModel bug');
      let error: unknown;
      streamModel(
        fallbackModel([primary, secondary], {
          perModel: () => {
            throw bug;
          },
        }),
        request,
      ).subscribe({ error: (e: unknown) => (error = e) });
      expect(error).to.equal(bug);
      expect([primary.requests.length, secondary.requests.length]).to.deep.equal([0, 0]);
    });
  });

  describe("the run's context (Model.stream's second argument)", () => {
    it("passes it on to each model tried: the run's budget, scheduler and step, and a call id under the run's call", () => {
      const seen: ModelContext[] = [];
      const spy = (id: string, turn: Observable<TurnEvent>): Model => ({ id, stream: (_r, context) => (seen.push(context), turn) });
      const budget: BudgetMeter = { modelCall: () => undefined, usage: () => undefined };
      const run = new HealHub();
      const model = fallbackModel([
        spy(
          'a',
          throwError(() => e503),
        ),
        spy('b', of(delta('b'), stop)),
      ]);
      streamModel(model, request, { hub: run, budget, scheduler: asyncScheduler, callId: 'step-2.1', step: 2 }).subscribe();
      expect(seen.map((c) => [c.hub === run, c.budget === budget, c.scheduler === asyncScheduler, c.callId, c.step])).to.deep.equal([
        [true, true, true, 'step-2.1/1', 2],
        [true, true, true, 'step-2.1/2', 2],
      ]);
    });

    it("reports to the run's hub and to its own hub, each once; the breakers are watched by both", () => {
      testScheduler().run(() => {
        const own = new HealHub();
        const run = new HealHub();
        const [fromOwn, fromRun] = [recordHub(own), recordHub(run)];
        const breakers = new CircuitBreakerRegistry({ failureThreshold: 1 });
        const model = fallbackModel(
          [
            scripted(
              'a',
              throwError(() => e503),
            ),
            scripted('b', of(delta('b'), stop)),
          ],
          { hub: own, breakers },
        );
        streamModel(model, request, { hub: run }).subscribe();
        const story = (log: HealEvent[]) => log.map((e) => (e.type === 'circuit' && e.kind === 'transition' ? `circuit:${e.breaker}:${e.to}` : e.type));
        expect(story(fromOwn)).to.deep.equal(['circuit:model:a:open', 'fallback']);
        expect(story(fromRun)).to.deep.equal(['circuit:model:a:open', 'fallback']);
        // the same hub for both: once
        const same = new HealHub();
        const fromSame = recordHub(same);
        streamModel(
          fallbackModel(
            [
              scripted(
                'c',
                throwError(() => e503),
              ),
              scripted('d', of(stop)),
            ],
            { hub: same },
          ),
          request,
          { hub: same },
        ).subscribe();
        expect(fromSame.map((e) => e.type)).to.deep.equal(['fallback']);
      });
    });
  });

  describe('the composite model', () => {
    it("is a Model with id 'fallback(<ids>)' unless given one", () => {
      const a: Model = { id: 'a', stream: () => [] };
      const b: Model = { id: 'b', stream: () => [] };
      expect(fallbackModel([a, b]).id).to.equal('fallback(a, b)');
      expect(fallbackModel([a, b], { id: 'chat' }).id).to.equal('chat');
    });
  });

  describe('validation (at construction)', () => {
    const a: Model = { id: 'a', stream: () => [] };
    it('rejects no models, non-models and duplicate ids', () => {
      expect(() => fallbackModel([])).to.throw(InvalidOptionError, /"models" must be a non-empty array of models/);
      expect(() => fallbackModel(a as never)).to.throw(InvalidOptionError, /"models"/);
      expect(() => fallbackModel([a, { id: 'b' } as never])).to.throw(InvalidOptionError, /"models\[1\]" must be a Model/);
      expect(() => fallbackModel([a, { id: '', stream: () => [] }])).to.throw(InvalidOptionError, /"models\[1\]"/);
      expect(() => fallbackModel([a, { ...a }])).to.throw(InvalidOptionError, /"models\[1\].id" must be unique/);
    });

    it('rejects bad options, naming them', () => {
      const cases: [object, RegExp][] = [
        [{ midStream: 'resume' }, /"midStream" must be "restart" \| "continue" \| "error", got "resume"/],
        [{ breakers: {} }, /"breakers" must be a CircuitBreakerRegistry/],
        [{ adapt: 1 }, /"adapt" must be a function/],
        [{ hub: {} }, /"hub" must be a HealHub/],
        [{ maxOverlap: -1 }, /"maxOverlap" must be a non-negative integer/],
        [{ longOverlap: 0 }, /"longOverlap" must be a positive integer/],
        [{ continueInstruction: '' }, /"continueInstruction" must be a non-empty string/],
        [{ id: 3 }, /"id"/],
        [{ breaker: 1 }, /"breaker"/],
        [{ perModel: 'retry' }, /"perModel" must be a function/],
      ];
      for (const [options, message] of cases) expect(() => fallbackModel([a], options as never)).to.throw(InvalidOptionError, message);
    });
  });
});

describe('fallbackModel: a user callback that throws (the guard rule)', () => {
  const request: ModelRequest = { messages: [{ role: 'user', content: 'hi' }], tools: [] };
  const cases: [string, (boom: Boom, scheduler: VirtualTimeScheduler) => FallbackModelOptions, boolean][] = [
    // [callback, options, whether the primary's stream() itself throws]
    ['adapt', (boom) => ({ adapt: thrower(boom) }), false],
    ['shouldFallback', (boom) => ({ shouldFallback: thrower(boom) }), false],
    ['classifier', (boom) => ({ classifier: thrower(boom) }), false],
    [
      "a breaker's isFailure (breakers registry)",
      (boom, scheduler) => ({ breakers: new CircuitBreakerRegistry({ scheduler, isFailure: thrower(boom) }) }),
      false,
    ],
    ["the primary model's stream()", () => ({}), true],
  ];
  for (const [callback, options, streamThrows] of cases) {
    for (const kind of KINDS) {
      it(`${callback} throws → the error downstream (${kind} source)`, () => {
        const scheduler = new VirtualTimeScheduler();
        const boom = new Boom(callback);
        const { source, live, subscriptions } = failingSource<TurnEvent>(kind, scheduler, e503);
        const primary: Model = { id: 'primary', stream: streamThrows ? thrower(boom) : () => source };
        const backup: Model = { id: 'backup', stream: () => failingSource<TurnEvent>(kind, scheduler, e502).source };
        const model = fallbackModel([primary, backup], options(boom, scheduler));
        expectThrowDownstream(streamModel(model, request), boom, { scheduler, live, subscriptions: streamThrows ? undefined : subscriptions });
      });
    }
  }
});
