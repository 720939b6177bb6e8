import { expect } from 'chai';
import { type MonoTypeOperatorFunction, type Observable, of, throwError, VirtualTimeScheduler } from 'rxjs';
import { CircuitBreaker } from '../../src/core/breaker/CircuitBreaker.js';
import { AllFallbacksFailedError, BudgetExceededError, CircuitOpenError, HttpError, InvalidOptionError } from '../../src/core/errors/errors.js';
import type { HealEvent, TurnEvent } from '../../src/core/events/events.js';
import { HealHub } from '../../src/core/hub/hub.js';
import { type FallbackInfo, fallbackTo } from '../../src/operators/fallbackTo.js';
import { type BudgetMeter, type Model, type ModelRequest, streamModel } from '../../src/core/model/model.js';
import { Boom, expectThrowDownstream, failingSource, KINDS, thrower } from '../support/guards.js';
import { testScheduler } from '../support/marbles.js';

const e503 = new HttpError(503);
const e502 = new HttpError(502);
const e500 = new HttpError(500);

function caught(source: Observable<unknown>): unknown {
  let error: unknown;
  source.subscribe({ error: (e: unknown) => (error = e) });
  return error;
}

function recordHub(hub: HealHub): HealEvent[] {
  const log: HealEvent[] = [];
  hub.events$.subscribe((e) => log.push(e));
  return log;
}

/** A scripted model: each call returns the next observable (the last one repeats) and records the request. */
function scripted(id: string, ...turns: Observable<TurnEvent>[]): Model & { readonly requests: ModelRequest[] } {
  const requests: ModelRequest[] = [];
  return {
    id,
    requests,
    stream: (request) => {
      requests.push(request);
      return turns[Math.min(requests.length - 1, turns.length - 1)]!;
    },
  };
}

describe('fallbackTo', () => {
  describe('the chain', () => {
    it('passes a source that succeeds through, never subscribing an alternative', () => {
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold('-a-b|');
        const alt = cold('-x|');
        expectObservable(source.pipe(fallbackTo(alt))).toBe('-a-b|');
        expectSubscriptions(alt.subscriptions).toBe([]);
      });
    });

    it('subscribes to the next alternative when the source fails before emitting', () => {
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold('--#', undefined, e503);
        const alt = cold('-x-y|');
        expectObservable(source.pipe(fallbackTo(alt))).toBe('---x-y|');
        expectSubscriptions(source.subscriptions).toBe('^-!');
        expectSubscriptions(alt.subscriptions).toBe('--^---!');
      });
    });

    it('tries the alternatives in order, each only when the one before failed', () => {
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold('--#', undefined, e503);
        const alt1 = cold('--#', undefined, e502);
        const alt2 = cold('-x|');
        const alt3 = cold('-z|');
        expectObservable(source.pipe(fallbackTo(alt1, alt2, alt3))).toBe('-----x|');
        expectSubscriptions(alt1.subscriptions).toBe('--^-!');
        expectSubscriptions(alt2.subscriptions).toBe('----^-!');
        expectSubscriptions(alt3.subscriptions).toBe([]);
      });
    });

    it('when every alternative fails: AllFallbacksFailedError with each error in order, the source first', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const result = cold('-#', undefined, e503).pipe(fallbackTo(cold('-#', undefined, e502), cold('-#', undefined, e500)));
        expectObservable(result).toBe('---#', undefined, new AllFallbacksFailedError([e503, e502, e500]));
      });
      const error = caught(
        throwError(() => e503).pipe(
          fallbackTo(
            throwError(() => e502),
            throwError(() => e500),
          ),
        ),
      );
      expect(error).to.be.instanceOf(AllFallbacksFailedError);
      const all = error as AllFallbacksFailedError;
      expect(all.errors).to.have.length(3);
      expect(all.errors[0]).to.equal(e503);
      expect(all.errors[1]).to.equal(e502);
      expect(all.errors[2]).to.equal(e500);
      expect(all.cause).to.equal(e500);
    });

    it('works through synchronous failures, and keeps the alternative that is in flight cancellable', () => {
      const values: string[] = [];
      throwError(() => e503)
        .pipe(
          fallbackTo<string>(
            throwError(() => e502),
            of('x'),
          ),
        )
        .subscribe((v) => values.push(v));
      expect(values).to.deep.equal(['x']);
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const slow = cold('-----x|');
        expectObservable(
          throwError(() => e503).pipe(
            fallbackTo(
              throwError(() => e502),
              slow,
            ),
          ),
          '^ 2ms !',
        ).toBe('');
        expectSubscriptions(slow.subscriptions).toBe('^ 2ms !');
      });
    });

    it('keeps each subscription independent: every one starts from the source', () => {
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold('-#', undefined, e503);
        const alt = cold('-x|');
        const result = source.pipe(fallbackTo(alt));
        expectObservable(result).toBe('--x|');
        expectObservable(result, '10ms ^').toBe('12ms x|');
        expectSubscriptions(source.subscriptions).toBe(['^!', '10ms ^!']);
        expectSubscriptions(alt.subscriptions).toBe(['-^-!', '11ms ^-!']);
      });
    });
  });

  describe('which errors fall back', () => {
    it('programming errors, cancellation and budget errors propagate at once, unchanged', () => {
      const errors = [
        new TypeError('x is not a function'),
        Object.assign(new Error('aborted'), { name: 'AbortError' }),
        new BudgetExceededError('tokens', 10, 12),
      ];
      for (const error of errors) {
        testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
          const alt = cold('-x|');
          expectObservable(cold('-#', undefined, error).pipe(fallbackTo(alt))).toBe('-#', undefined, error);
          expectSubscriptions(alt.subscriptions).toBe([]);
        });
        expect(caught(throwError(() => error).pipe(fallbackTo(of(1))))).to.equal(error);
      }
    });

    it("an alternative's error that is not worth a fallback propagates unchanged too", () => {
      const bug = new TypeError('bug in alternative');
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const alt2 = cold('-x|');
        expectObservable(cold('-#', undefined, e503).pipe(fallbackTo(cold('-#', undefined, bug), alt2))).toBe('--#', undefined, bug);
        expectSubscriptions(alt2.subscriptions).toBe([]);
      });
    });

    it('any HTTP failure falls back by default (a provider may reject what another accepts)', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        expectObservable(cold('-#', undefined, new HttpError(400)).pipe(fallbackTo(cold('-x|')))).toBe('--x|');
      });
    });

    it('shouldFallback decides instead of the classifier', () => {
      const e400 = new HttpError(400);
      const shouldFallback = (e: unknown): boolean => e instanceof HttpError && e.status >= 500;
      testScheduler().run(({ cold, expectObservable }) => {
        expectObservable(cold('-#', undefined, e400).pipe(fallbackTo(cold('-x|'), { shouldFallback }))).toBe('-#', undefined, e400);
        expectObservable(cold('-#', undefined, e503).pipe(fallbackTo(cold('-x|'), { shouldFallback }))).toBe('--x|');
      });
    });

    it('errors with what shouldFallback throws', () => {
      const bug = new Error('predicate bug');
      const shouldFallback = (): boolean => {
        throw bug;
      };
      expect(caught(throwError(() => e503).pipe(fallbackTo(of(1), { shouldFallback })))).to.equal(bug);
    });
  });

  describe('factories', () => {
    it('are called only when needed, with the error of the last attempt, and may return any ObservableInput', async () => {
      const seen: unknown[] = [];
      let calls = 0;
      const factory = (e: unknown): Promise<string> => (seen.push(e), calls++, Promise.resolve('from promise'));
      testScheduler().run(({ cold, expectObservable }) => {
        expectObservable(cold<string>('-a|').pipe(fallbackTo(factory))).toBe('-a|');
        expectObservable(cold<string>('-#', undefined, e503).pipe(fallbackTo((e) => (seen.push(e), ['x', 'y'])))).toBe('-(xy|)');
      });
      expect(calls).to.equal(0);
      const values: string[] = [];
      await new Promise<void>((resolve) =>
        throwError(() => e502)
          .pipe(fallbackTo(factory))
          .subscribe({ next: (v) => values.push(v), complete: resolve }),
      );
      expect(values).to.deep.equal(['from promise']);
      expect(seen).to.deep.equal([e503, e502]);
    });

    it('a factory that throws fails that alternative: judged like any of its errors', () => {
      const bug = new TypeError('factory bug');
      expect(
        caught(
          throwError(() => e503).pipe(
            fallbackTo(() => {
              throw bug;
            }, of(1)),
          ),
        ),
      ).to.equal(bug);
      const values: number[] = [];
      throwError(() => e503)
        .pipe(
          fallbackTo(() => {
            throw e502;
          }, of(1)),
        )
        .subscribe((v) => values.push(v));
      expect(values).to.deep.equal([1]);
    });
  });

  describe('mid-stream (the failed attempt had emitted)', () => {
    it("'error' (default): no fallback after the first item; the error passes on unchanged", () => {
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const alt = cold('-x|');
        expectObservable(cold('-a-#', undefined, e503).pipe(fallbackTo(alt))).toBe('-a-#', undefined, e503);
        expectSubscriptions(alt.subscriptions).toBe([]);
      });
    });

    it("'restart': emits onRestart(info), then the alternative from scratch", () => {
      const infos: FallbackInfo[] = [];
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const alt = cold('-x-y|');
        const result = cold('-a-#', undefined, e503).pipe(fallbackTo(alt, { midStream: 'restart', onRestart: (i) => (infos.push(i), 'R') }));
        expectObservable(result).toBe('-a-Rx-y|');
        expectSubscriptions(alt.subscriptions).toBe('---^---!');
      });
      expect(infos).to.have.length(1);
      const info = infos[0]!;
      expect(info).to.include({ from: 'primary', to: 'alternative 1', index: 1, error: e503 });
      expect(info.classification.category).to.equal('service_unavailable');
      expect(info.errors).to.deep.equal([e503]);
    });

    it("'restart' emits no marker when the failed attempt had emitted nothing", () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const result = cold('-#', undefined, e503).pipe(fallbackTo(cold('-x|'), { midStream: 'restart', onRestart: () => 'R' }));
        expectObservable(result).toBe('--x|');
      });
    });

    it("'restart' marks every restart: an alternative that emitted and failed is followed by another marker", () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const alt1 = cold('-x#', undefined, e502);
        const result = cold('-a#', undefined, e503).pipe(fallbackTo(alt1, cold('-z|'), { midStream: 'restart', onRestart: (i) => `R${i.index}` }));
        expectObservable(result).toBe('-aRxSz|', { a: 'a', R: 'R1', x: 'x', S: 'R2', z: 'z' });
      });
    });

    it("'restart' with nothing left to call: no marker; the error is AllFallbacksFailedError", () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const result = cold('-a#', undefined, e503).pipe(fallbackTo(cold('-x#', undefined, e502), { midStream: 'restart', onRestart: () => 'R' }));
        expectObservable(result).toBe('-aRx#', undefined, new AllFallbacksFailedError([e503, e502]));
      });
    });

    it("'restart' still passes errors not worth a fallback on unchanged", () => {
      const bug = new TypeError('bug');
      testScheduler().run(({ cold, expectObservable }) => {
        const result = cold('-a#', undefined, bug).pipe(fallbackTo(cold('-x|'), { midStream: 'restart', onRestart: () => 'R' }));
        expectObservable(result).toBe('-a#', undefined, bug);
      });
    });

    it('errors with what onRestart throws, calling no alternative', () => {
      const bug = new Error('callback bug');
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const alt = cold('-x|');
        const onRestart = (): string => {
          throw bug;
        };
        expectObservable(cold('-a#', undefined, e503).pipe(fallbackTo(alt, { midStream: 'restart', onRestart }))).toBe('-a#', undefined, bug);
        expectSubscriptions(alt.subscriptions).toBe([]);
      });
    });
  });

  describe('breakers', () => {
    it('an alternative whose breaker is open is skipped without a call; its CircuitOpenError joins the list', () => {
      const breaker = new CircuitBreaker({ name: 'backup' });
      breaker.isolate();
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const backup = cold('-b|');
        const last = cold('-#', undefined, e500);
        const result = cold('-#', undefined, e503).pipe(fallbackTo({ name: 'backup', source: backup, breaker }, last));
        expectObservable(result).toBe('--#', undefined, new AllFallbacksFailedError([e503, new CircuitOpenError('backup', Infinity), e500]));
        expectSubscriptions(backup.subscriptions).toBe([]);
      });
      const error = caught(
        throwError(() => e503).pipe(
          fallbackTo(
            { name: 'backup', source: () => of(1), breaker },
            throwError(() => e500),
          ),
        ),
      ) as AllFallbacksFailedError;
      expect(error.errors[1]).to.be.instanceOf(CircuitOpenError);
      expect((error.errors[1] as CircuitOpenError).breaker).to.equal('backup');
    });

    it("alternatives' outcomes count: the second failure of backup opens its breaker, and the third run skips it", () => {
      const breaker = new CircuitBreaker({ name: 'backup', failureThreshold: 2 });
      testScheduler().run(({ cold, expectObservable, expectSubscriptions, flush }) => {
        const source = cold('-#', undefined, e503);
        const backup = cold('-#', undefined, e502);
        const last = cold('-z|');
        const result = source.pipe(fallbackTo({ name: 'backup', source: backup, breaker }, last));
        expectObservable(result).toBe('---z|');
        expectObservable(result, '10ms ^').toBe('13ms z|');
        expectObservable(result, '20ms ^').toBe('22ms z|');
        expectSubscriptions(backup.subscriptions).toBe(['-^!', '11ms ^!']);
        expectSubscriptions(last.subscriptions).toBe(['--^-!', '12ms ^-!', '21ms ^-!']);
        let state = '';
        cold('30ms |').subscribe({ complete: () => (state = breaker.state) });
        flush();
        expect(state).to.equal('open');
      });
    });

    it('a half-open breaker with its probe slot taken rejects without a call: also a skip', () => {
      const hub = new HealHub();
      const log = recordHub(hub);
      let error: unknown;
      testScheduler().run(({ cold, flush }) => {
        const breaker = new CircuitBreaker({ name: 'backup', failureThreshold: 1, resetTimeoutMs: 100 });
        const permit = breaker.acquire();
        if (permit instanceof Error) throw permit;
        permit.failure(e503); // open until 100
        const backup = cold('-b|');
        cold('150ms |').subscribe({
          complete: () => {
            const probe = breaker.acquire(); // half-open: the one probe slot, held
            expect(probe).not.to.be.instanceOf(Error);
            throwError(() => e503)
              .pipe(
                fallbackTo(
                  { name: 'backup', source: backup, breaker },
                  throwError(() => e500),
                  { hub },
                ),
              )
              .subscribe({ error: (e: unknown) => (error = e) });
          },
        });
        flush();
        expect(backup.subscriptions).to.deep.equal([]);
      });
      const all = error as AllFallbacksFailedError;
      expect(all.errors).to.have.length(3);
      expect(all.errors[1]).to.be.instanceOf(CircuitOpenError);
      expect((all.errors[1] as CircuitOpenError).retryAfterMs).to.equal(0);
      expect(log.filter((e) => e.type === 'fallback' || (e.type === 'circuit' && e.kind === 'rejected'))).to.deep.equal([
        { type: 'fallback', from: 'primary', to: 'backup', reason: 'service_unavailable', midStream: false },
        { type: 'circuit', breaker: 'backup', kind: 'rejected', retryAfterMs: 0 },
        { type: 'fallback', from: 'backup', to: 'alternative 2', reason: 'circuit_open', midStream: false },
      ]);
    });
  });

  describe('hub and names', () => {
    it("reports each switch as { type: 'fallback', from, to, reason, midStream }, skips as circuit rejections", () => {
      const hub = new HealHub();
      const log = recordHub(hub);
      const open = new CircuitBreaker({ name: 'cache-breaker' });
      open.isolate();
      testScheduler().run(({ cold, expectObservable }) => {
        const result = cold('-a#', undefined, e503).pipe(
          fallbackTo(
            { name: 'cache', source: cold('-c|'), breaker: open },
            cold('-#', undefined, new Error('socket hang up')),
            { name: 'backup-api', source: cold('-x|') },
            { hub, name: 'weather-api', midStream: 'restart', onRestart: (i) => `reset→${i.to}` },
          ),
        );
        expectObservable(result).toBe('-aR-x|', { a: 'a', R: 'reset→alternative 2', x: 'x' });
      });
      expect(log.filter((e) => e.type !== 'circuit' || e.kind === 'rejected')).to.deep.equal([
        { type: 'fallback', from: 'weather-api', to: 'cache', reason: 'service_unavailable', midStream: true },
        { type: 'circuit', breaker: 'cache-breaker', kind: 'rejected', retryAfterMs: Infinity },
        { type: 'fallback', from: 'cache', to: 'alternative 2', reason: 'circuit_open', midStream: false },
        { type: 'fallback', from: 'alternative 2', to: 'backup-api', reason: 'connection', midStream: false },
      ]);
    });

    it("reports alternatives' breaker transitions (watched through circuitBreak)", () => {
      const hub = new HealHub();
      const log = recordHub(hub);
      const breaker = new CircuitBreaker({ name: 'backup', failureThreshold: 1 });
      testScheduler().run(({ cold, flush }) => {
        cold('-#', undefined, e503)
          .pipe(fallbackTo({ name: 'backup', source: cold('-#', undefined, e502), breaker }, cold('-x|'), { hub }))
          .subscribe();
        flush();
      });
      // (60 000 ms later the breaker announces half-open: the run flushes that far)
      expect(log.filter((e) => e.type === 'circuit')[0]).to.deep.equal({
        type: 'circuit',
        breaker: 'backup',
        kind: 'transition',
        from: 'closed',
        to: 'open',
        reason: 'failure_threshold',
        failures: 1,
        at: 2,
        retryAfterMs: 60_000,
      });
    });
  });

  describe('cancellation', () => {
    it('unsubscribing cancels the alternative in flight', () => {
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const alt = cold('-----x|');
        expectObservable(cold('-#', undefined, e503).pipe(fallbackTo(alt)), '^ 3ms !').toBe('');
        expectSubscriptions(alt.subscriptions).toBe('-^--!');
      });
    });

    it('unsubscribing during the source never subscribes an alternative', () => {
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold('-----#', undefined, e503);
        const alt = cold('-x|');
        expectObservable(source.pipe(fallbackTo(alt)), '^ 2ms !').toBe('');
        expectSubscriptions(source.subscriptions).toBe('^ 2ms !');
        expectSubscriptions(alt.subscriptions).toBe([]);
      });
    });
  });

  describe('Model alternatives (with options.request)', () => {
    it('calls the model with the request, named model:<id>', () => {
      const hub = new HealHub();
      const log = recordHub(hub);
      const request: ModelRequest = { messages: [{ role: 'user', content: 'hi' }], tools: [] };
      const hello: TurnEvent = { type: 'text-delta', text: 'hello' };
      const done: TurnEvent = { type: 'finish', reason: 'stop' };
      testScheduler().run(({ cold, expectObservable, flush }) => {
        const backup = scripted('backup', cold<TurnEvent>('-h(f|)', { h: hello, f: done }));
        const turn$ = cold<TurnEvent>('-#', undefined, e503);
        expectObservable(turn$.pipe(fallbackTo<TurnEvent>(backup, { request, hub }))).toBe('--h(f|)', { h: hello, f: done });
        flush();
        expect(backup.requests).to.deep.equal([request]);
      });
      expect(log).to.deep.equal([{ type: 'fallback', from: 'primary', to: 'model:backup', reason: 'service_unavailable', midStream: false }]);
    });

    it("with the run's context: the alternative counts against its budget, is traced under its call, and the run's hub hears the fallback", () => {
      const own = new HealHub();
      const run = new HealHub();
      const [fromOwn, fromRun] = [recordHub(own), recordHub(run)];
      const counted: string[] = [];
      const budget: BudgetMeter = { modelCall: () => void counted.push('call'), usage: (u) => void counted.push(`usage ${u.outputTokens}`) };
      const request: ModelRequest = { messages: [{ role: 'user', content: 'hi' }], tools: [] };
      const done: TurnEvent = { type: 'finish', reason: 'stop', usage: { inputTokens: 1, outputTokens: 4 } };
      const backup = scripted('backup', of(done));
      // a model that wraps another: the primary is its first attempt, the alternative the second
      const wrapper: Model = {
        id: 'wrapper',
        stream: (req, context) =>
          streamModel(
            scripted(
              'primary',
              throwError(() => e503),
            ),
            req,
            context,
          ).pipe(fallbackTo<TurnEvent>(backup, { request: req, context, hub: own })),
      };
      streamModel(wrapper, request, { hub: run, budget, callId: 'step-1.1', step: 1 }).subscribe();
      expect(counted).to.deep.equal(['call', 'call', 'usage 4']);
      const fallback = { type: 'fallback', from: 'primary', to: 'model:backup', reason: 'service_unavailable', midStream: false };
      expect(fromOwn).to.deep.equal([fallback]);
      expect(fromRun.filter((e) => e.type === 'fallback')).to.deep.equal([fallback]);
      expect(fromRun.filter((e) => e.type === 'call-start').map((e) => [e.name, e.id])).to.deep.equal([
        ['wrapper', 'step-1.1'],
        ['primary', 'step-1.1/1'],
        ['backup', 'step-1.1/2'],
      ]);
    });

    it('requires options.request for a Model', () => {
      const model: Model = { id: 'backup', stream: () => [] };
      expect(() => fallbackTo<TurnEvent>(model)).to.throw(
        InvalidOptionError,
        /"request" must be a ModelRequest when an alternative is a Model \(alternatives\[0\]: 'backup'\)/,
      );
    });
  });

  describe('types', () => {
    it('infers T from the alternatives and onRestart; a Model is an alternative only for TurnEvent streams', () => {
      const model: Model = { id: 'backup', stream: () => [] };
      const request: ModelRequest = { messages: [], tools: [] };
      const turn$ = of<TurnEvent>({ type: 'finish', reason: 'stop' });
      const a: Observable<TurnEvent> = turn$.pipe(fallbackTo(model, { request }));
      const b: Observable<TurnEvent> = turn$.pipe(
        fallbackTo(model, { request, midStream: 'restart', onRestart: (i) => ({ type: 'reset', reason: 'fallback', target: i.to }) }),
      );
      const c: Observable<string> = of('x').pipe(fallbackTo(() => ['y'], { name: 'weather-api' }));
      // @ts-expect-error a Model is not an alternative for a stream of numbers
      const d = of(1).pipe(fallbackTo(model, { request }));
      expect([a, b, c, d].every((o) => typeof o.subscribe === 'function')).to.equal(true);
    });
  });

  describe('validation (at construction)', () => {
    it('needs at least one alternative', () => {
      expect(() => fallbackTo()).to.throw(InvalidOptionError, /"alternatives" must be at least one alternative/);
      expect(() => fallbackTo({ name: 'x' } as never)).to.throw(InvalidOptionError, /"name" must be a non-empty string|"alternatives"/);
    });

    it('rejects arguments that are not alternatives, naming their position', () => {
      const cases: [unknown[], RegExp][] = [
        [[42], /"alternatives\[0\]" must be an Observable, a function \(error\) => ObservableInput, \{ name, source, breaker\? \}, or a Model/],
        [[of(1), 'x'], /"alternatives\[1\]".*got "x"/],
        [[null, of(1)], /"alternatives\[0\]"/],
        [[{ maxRetries: 1 }, of(1)], /"alternatives\[0\]"/],
        [[{ name: '', source: of(1) }], /"alternatives\[0\].name" must be a non-empty string/],
        [[{ name: 'x', source: 42 }], /"alternatives\[0\].source" must be an Observable or a function/],
        [[{ name: 'x', source: of(1), breaker: {} }], /"alternatives\[0\].breaker" must be a CircuitBreaker/],
        [[{ name: 'x', source: of(1), retries: 2 }], /"alternatives\[0\].retries"/],
      ];
      for (const [args, message] of cases) expect(() => (fallbackTo as (...a: unknown[]) => unknown)(...args)).to.throw(InvalidOptionError, message);
    });

    it('rejects bad options, naming them', () => {
      const cases: [object, RegExp][] = [
        [{ shouldFallback: true }, /"shouldFallback" must be a function/],
        [{ classifier: 'x' }, /"classifier" must be a function/],
        [{ hub: {} }, /"hub" must be a HealHub/],
        [{ name: '' }, /"name" must be a non-empty string/],
        [{ midStream: 'continue' }, /"midStream" must be "error" \| "restart" \("continue" is fallbackModel's\), got "continue"/],
        [{ request: { messages: 'hi' } }, /"request" must be a ModelRequest/],
        [{ context: 'run' }, /"context" must be a model context/],
        [{ midStrem: 'error' }, /"midStrem"/],
      ];
      for (const [options, message] of cases) expect(() => fallbackTo(of(1), options as never)).to.throw(InvalidOptionError, message);
    });

    it("requires onRestart with midStream: 'restart', and only then", () => {
      expect(() => fallbackTo(of(1), { midStream: 'restart' } as never)).to.throw(
        InvalidOptionError,
        /"onRestart" must be a function when midStream is 'restart'/,
      );
      expect(() => fallbackTo(of(1), { onRestart: () => 1 } as never)).to.throw(InvalidOptionError, /"midStream" must be 'restart' when onRestart is given/);
    });

    it('treats a trailing undefined as "no options"', () => {
      expect(() => fallbackTo(of(1), undefined as never)).not.to.throw();
    });
  });
});

describe('fallbackTo: a user callback that throws (the guard rule)', () => {
  const request: ModelRequest = { messages: [{ role: 'user', content: 'hi' }], tools: [] };
  // each row: the operator, given the thrown value (and the scheduler, for breakers)
  const cases: [string, (boom: Boom, scheduler: VirtualTimeScheduler) => MonoTypeOperatorFunction<unknown>, readonly unknown[]][] = [
    ['shouldFallback', (boom) => fallbackTo<unknown>(of('alt'), { shouldFallback: thrower(boom) }), []],
    ['classifier', (boom) => fallbackTo<unknown>(of('alt'), { classifier: thrower(boom) }), []],
    ['onRestart', (boom) => fallbackTo<unknown>(of('alt'), { midStream: 'restart', onRestart: thrower(boom) }), ['partial']],
    ['a factory alternative', (boom) => fallbackTo<unknown>(thrower(boom)), []],
    [
      'a named factory alternative with a breaker',
      (boom, scheduler) => fallbackTo<unknown>({ name: 'backup', source: thrower(boom), breaker: new CircuitBreaker({ scheduler }) }),
      [],
    ],
    ['a Model alternative whose stream() throws', (boom) => fallbackTo<unknown>({ id: 'backup', stream: thrower(boom) } satisfies Model, { request }), []],
    [
      "an alternative's breaker whose isFailure throws",
      (boom, scheduler) =>
        fallbackTo<unknown>({ name: 'backup', source: throwError(() => e502), breaker: new CircuitBreaker({ scheduler, isFailure: thrower(boom) }) }),
      [],
    ],
  ];
  for (const [callback, make, values] of cases) {
    for (const kind of KINDS) {
      it(`${callback} throws → the error downstream (${kind} source)`, () => {
        const scheduler = new VirtualTimeScheduler();
        const boom = new Boom(callback);
        const { source, live, subscriptions } = failingSource(kind, scheduler, e503, values);
        const run = expectThrowDownstream(source.pipe(make(boom, scheduler)), boom, { scheduler, live, subscriptions });
        expect(run.values).to.deep.equal(values);
      });
    }
  }
});
