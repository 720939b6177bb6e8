import { expect } from 'chai';
import type { SchedulerAction, SchedulerLike, Subscription } from 'rxjs';
import type { TestScheduler } from 'rxjs/testing';
import { type CircuitBreakerOptions, type CircuitEvent, type CircuitPermit, CircuitBreaker } from '../../../src/core/breaker/CircuitBreaker.js';
import { CircuitBreakerRegistry } from '../../../src/core/breaker/registry.js';
import { snapshotBreaker } from '../../../src/core/breaker/persist.js';
import { CircuitOpenError, HttpError, InvalidOptionError, RetriesExhaustedError } from '../../../src/core/errors/errors.js';
import { HealHub } from '../../../src/core/hub/hub.js';
import { admit, catchError, e503, fail, recordEvents, reject, succeed, virtual } from './breakerHelpers.js';
import { NodeTimerScheduler } from '../../support/nodeTimers.js';

describe('CircuitBreaker', () => {
  describe('options', () => {
    it('uses the defaults: name "circuit", 5 consecutive failures, 60 000 ms reset, 1 probe', () => {
      virtual(({ at }) => {
        const breaker = new CircuitBreaker();
        const events = recordEvents(breaker);
        at(0, () => {
          fail(breaker, 4);
          expect(breaker.state).to.equal('closed');
          fail(breaker, 1);
          expect(breaker.state).to.equal('open');
          const rejection = reject(breaker);
          expect(rejection.breaker).to.equal('circuit');
          expect(rejection.retryAfterMs).to.equal(60_000);
        });
        at(59_999, () => expect(breaker.state).to.equal('open'));
        at(60_000, () => {
          expect(breaker.state).to.equal('half-open');
          admit(breaker);
          expect(reject(breaker).retryAfterMs).to.equal(0); // one probe only
        });
        at(60_001, () => expect(events).to.have.length(2));
      });
    });

    it('treats an option given as undefined as absent', () => {
      expect(() => new CircuitBreaker({ failureThreshold: undefined, window: undefined })).not.to.throw();
    });

    const bad: readonly [string, unknown, string, string][] = [
      // [title, options, option named, text of the value in the message]
      ['failureThreshold 0', { failureThreshold: 0 }, 'failureThreshold', 'got 0'],
      ['failureThreshold 2.5', { failureThreshold: 2.5 }, 'failureThreshold', 'got 2.5'],
      ['resetTimeoutMs -1', { resetTimeoutMs: -1 }, 'resetTimeoutMs', 'got -1'],
      ['resetTimeoutMs NaN', { resetTimeoutMs: NaN }, 'resetTimeoutMs', 'got NaN'],
      ['halfOpenMaxCalls 1.5', { halfOpenMaxCalls: 1.5 }, 'halfOpenMaxCalls', 'got 1.5'],
      ['halfOpenMaxCalls 0', { halfOpenMaxCalls: 0 }, 'halfOpenMaxCalls', 'got 0'],
      ['halfOpenTimeoutMs 0', { halfOpenTimeoutMs: 0 }, 'halfOpenTimeoutMs', 'got 0'],
      ['isFailure "yes"', { isFailure: 'yes' }, 'isFailure', 'got "yes"'],
      ['window { failureRateThreshold: 2 }', { window: { failureRateThreshold: 2, minimumCalls: 4, windowMs: 10_000 } }, 'window', '"failureRateThreshold":2'],
      ['window { minimumCalls: 0 }', { window: { failureRateThreshold: 0.5, minimumCalls: 0, windowMs: 10_000 } }, 'window', '"minimumCalls":0'],
      ["window 'rolling'", { window: 'rolling' }, 'window', 'got "rolling"'],
      ['scheduler {}', { scheduler: {} }, 'scheduler', 'got {}'],
      ["name ''", { name: '' }, 'name', 'got ""'],
      ['name 42', { name: 42 }, 'name', 'got 42'],
      ["unknown key 'threshold'", { threshold: 3 }, 'threshold', 'got 3'],
      ['options that are not an object', 5, 'options', 'got 5'],
    ];
    for (const [title, options, option, shown] of bad) {
      it(`rejects ${title} at construction, naming the option and the value`, () => {
        const error = catchError(() => new CircuitBreaker(options as CircuitBreakerOptions));
        expect(error).to.be.instanceOf(InvalidOptionError);
        const e = error as InvalidOptionError;
        expect(e.target).to.equal('CircuitBreaker');
        // a bad field of the window object is reported on "window" (or its dotted path)
        expect(e.option.split('.')[0]).to.equal(option);
        expect(e.message).to.contain(`"${option}"`);
        expect(e.message).to.contain(shown);
      });
    }

    it('accepts halfOpenTimeoutMs Infinity and a failure-rate window', () => {
      expect(
        () =>
          new CircuitBreaker({
            halfOpenTimeoutMs: Infinity,
            window: { failureRateThreshold: 1, minimumCalls: 1, windowMs: 1 },
          }),
      ).not.to.throw();
    });
  });

  describe('consecutive failures (closed → open)', () => {
    it('opens at exactly failureThreshold consecutive failures; a success in between resets the count', () => {
      virtual(({ ts }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 3, scheduler: ts });
        fail(breaker, 2);
        succeed(breaker);
        fail(breaker, 2);
        expect(breaker.state).to.equal('closed');
        fail(breaker, 1);
        expect(breaker.state).to.equal('open');
      });
    });

    it('a released call (cancelled before any value) neither counts nor resets the count', () => {
      virtual(({ ts }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 3, scheduler: ts });
        fail(breaker, 2);
        admit(breaker).release();
        admit(breaker).release();
        expect(breaker.state).to.equal('closed');
        fail(breaker, 1);
        expect(breaker.state).to.equal('open');
      });
    });

    it('a permit settles once: later settlements are ignored', () => {
      virtual(({ ts }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 2, scheduler: ts });
        const permit = admit(breaker);
        permit.failure(e503());
        permit.failure(e503());
        permit.failure(e503());
        expect(breaker.state).to.equal('closed');
        const other = admit(breaker);
        other.success();
        other.failure(e503());
        fail(breaker, 1);
        expect(breaker.state).to.equal('closed');
      });
    });
  });

  describe('isFailure', () => {
    const ignored: readonly [string, () => unknown][] = [
      ['HttpError 400', () => new HttpError(400)],
      ['HttpError 422', () => new HttpError(422)],
      ['TypeError', () => new TypeError('x is not a function')],
      ['AbortError', () => new DOMException('The operation was aborted', 'AbortError')],
      ['CircuitOpenError', () => new CircuitOpenError('inner', 1000)],
    ];
    for (const [title, error] of ignored) {
      it(`by default, ${title} is neither failure nor success: 10 of them neither open it nor reset the count`, () => {
        virtual(({ ts }) => {
          const breaker = new CircuitBreaker({ failureThreshold: 5, scheduler: ts });
          fail(breaker, 10, error);
          expect(breaker.state).to.equal('closed');
          fail(breaker, 4);
          fail(breaker, 10, error);
          expect(breaker.state).to.equal('closed');
          fail(breaker, 1); // the 5th consecutive service failure
          expect(breaker.state).to.equal('open');
        });
      });
    }

    it('by default counts 500, 502, 504, 429, timeouts and connection errors', () => {
      const failures: (() => unknown)[] = [
        () => new HttpError(500),
        () => new HttpError(502),
        () => new HttpError(504),
        () => new HttpError(429),
        () => Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }),
        () => Object.assign(new Error('took too long'), { name: 'TimeoutError' }),
      ];
      for (const error of failures) {
        virtual(({ ts }) => {
          const breaker = new CircuitBreaker({ failureThreshold: 1, scheduler: ts });
          admit(breaker).failure(error());
          expect(breaker.state, String(error())).to.equal('open');
        });
      }
    });

    it('by default counts a RetriesExhaustedError wrapping 503s', () => {
      virtual(({ ts }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 2, scheduler: ts });
        const exhausted = (): RetriesExhaustedError => new RetriesExhaustedError(4, [e503(), e503(), e503(), e503()]);
        fail(breaker, 1, exhausted);
        expect(breaker.state).to.equal('closed');
        fail(breaker, 1, exhausted);
        expect(breaker.state).to.equal('open');
      });
    });

    it('honours a custom isFailure (and passes it the error)', () => {
      virtual(({ ts }) => {
        const seen: unknown[] = [];
        const breaker = new CircuitBreaker({
          failureThreshold: 2,
          scheduler: ts,
          isFailure: (e) => {
            seen.push(e);
            return e instanceof HttpError && e.status === 400;
          },
        });
        fail(breaker, 10, e503); // 503s do not count any more
        expect(breaker.state).to.equal('closed');
        const bad = new HttpError(400);
        fail(breaker, 1, () => bad);
        fail(breaker, 1, () => new HttpError(400));
        expect(breaker.state).to.equal('open');
        expect(seen).to.have.length(12);
        expect(seen[10]).to.equal(bad);
      });
    });

    it('counts the call as a failure when isFailure throws', () => {
      virtual(({ ts }) => {
        const breaker = new CircuitBreaker({
          failureThreshold: 2,
          scheduler: ts,
          isFailure: () => {
            throw new Error('broken predicate');
          },
        });
        expect(() => fail(breaker, 1, () => new HttpError(400))).not.to.throw();
        expect(breaker.state).to.equal('closed');
        fail(breaker, 1, () => new HttpError(400));
        expect(breaker.state).to.equal('open');
      });
    });
  });

  describe('state, state$ and events$', () => {
    it('a subscriber reading state while handling a transition sees the new state whole (no early half-open)', () => {
      virtual(({ at }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 100 });
        const seen: string[] = [];
        // e.g. a UI redrawing on each event: reading state and snapshotBreaker() inside the handler
        breaker.events$.subscribe((e) => seen.push(`${e.from}>${e.to}:${breaker.state}:${snapshotBreaker(breaker).openUntil}`));
        at(5, () => fail(breaker, 1));
        at(50, () => expect(breaker.state).to.equal('open'));
        at(105, () => expect(breaker.state).to.equal('half-open'));
        at(106, () => expect(seen).to.deep.equal(['closed>open:open:105', 'open>half-open:half-open:null']));
      });
    });

    it("state reads 'half-open' at exactly resetTimeoutMs after opening, with no call made", () => {
      virtual(({ at }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 1_000 });
        at(10, () => fail(breaker, 1));
        at(10, () => expect(breaker.state).to.equal('open'));
        at(1_009, () => expect(breaker.state).to.equal('open'));
        at(1_010, () => expect(breaker.state).to.equal('half-open'));
        at(5_000, () => expect(breaker.state).to.equal('half-open'));
      });
    });

    it('state$ emits the current state on subscribe and each change when it happens', () => {
      virtual(({ at, expectObservable }) => {
        const breaker = new CircuitBreaker({ name: 'svc' }); // asyncScheduler, virtual inside run()
        for (const t of [1, 3, 5, 7, 9]) at(t, () => fail(breaker, 1));
        const values = { c: 'closed', o: 'open', h: 'half-open' };
        expectObservable(breaker.state$).toBe('c--------o 59999ms h', values);
        // a late subscriber gets the current state at once
        expectObservable(breaker.state$, '5ms ^').toBe('5ms c---o 59999ms h', values);
        expectObservable(breaker.state$, '70000ms ^').toBe('70000ms h', values);
      });
    });

    it('state$ follows a whole cycle: closed → open → half-open → closed', () => {
      virtual(({ at, expectObservable }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 2, resetTimeoutMs: 100 });
        at(1, () => fail(breaker, 2));
        let probe: CircuitPermit | undefined;
        at(110, () => (probe = admit(breaker)));
        at(115, () => probe?.success());
        expectObservable(breaker.state$).toBe('co 99ms h 13ms c', { c: 'closed', o: 'open', h: 'half-open' });
      });
    });

    it('events$ carries breaker, from, to, at, reason and failures for each transition (and retryAfterMs on opening)', () => {
      virtual(({ at }) => {
        const breaker = new CircuitBreaker({ name: 'weather-api', failureThreshold: 3, resetTimeoutMs: 100 });
        const events: CircuitEvent[] = [];
        breaker.events$.subscribe((e) => events.push(e));
        at(5, () => fail(breaker, 3));
        let probe: CircuitPermit | undefined;
        at(110, () => (probe = admit(breaker)));
        at(120, () => probe?.failure(e503()));
        at(230, () => (probe = admit(breaker)));
        at(240, () => probe?.success());
        at(250, () => breaker.isolate());
        at(260, () => breaker.reset());
        at(300, () => {
          expect(events).to.deep.equal([
            { breaker: 'weather-api', from: 'closed', to: 'open', at: 5, reason: 'failure_threshold', failures: 3, retryAfterMs: 100 },
            { breaker: 'weather-api', from: 'open', to: 'half-open', at: 105, reason: 'reset_timeout', failures: 0 },
            { breaker: 'weather-api', from: 'half-open', to: 'open', at: 120, reason: 'probe_failure', failures: 0, retryAfterMs: 100 },
            { breaker: 'weather-api', from: 'open', to: 'half-open', at: 220, reason: 'reset_timeout', failures: 0 },
            { breaker: 'weather-api', from: 'half-open', to: 'closed', at: 240, reason: 'probe_success', failures: 0 },
            { breaker: 'weather-api', from: 'closed', to: 'open', at: 250, reason: 'isolated', failures: 0 },
            { breaker: 'weather-api', from: 'open', to: 'closed', at: 260, reason: 'reset', failures: 0 },
          ]);
        });
      });
    });

    it("events$ reports a hung probe with reason 'probe_timeout'", () => {
      virtual(({ at }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 100, halfOpenTimeoutMs: 30 });
        const events = recordEvents(breaker);
        at(0, () => fail(breaker, 1));
        let probe: CircuitPermit | undefined;
        at(100, () => (probe = admit(breaker)));
        at(200, () => probe?.success()); // too late: changes nothing
        at(201, () => expect(breaker.state).to.equal('open'));
        at(230, () => expect(breaker.state).to.equal('half-open'));
        at(231, () =>
          expect(events).to.deep.equal([
            [0, 'closed', 'open', 'failure_threshold', 1],
            [100, 'open', 'half-open', 'reset_timeout', 0],
            [130, 'half-open', 'open', 'probe_timeout', 0],
            [230, 'open', 'half-open', 'reset_timeout', 0],
          ]),
        );
      });
    });
  });

  describe('timers', () => {
    it('a half-open notice whose timer fires before the clock reads the deadline (Node: setTimeout vs Date.now) is armed again, never lost', () => {
      virtual(({ ts, at }) => {
        // timers of more than 1 ms that fire 1 ms before the clock reads their time, as Node's setTimeout can before Date.now() does
        const early: SchedulerLike = {
          now: () => ts.now(),
          schedule: ((work: (this: SchedulerAction<unknown>, state?: unknown) => void, delay = 0, state?: unknown) =>
            ts.schedule(work, delay > 1 ? delay - 1 : delay, state)) as SchedulerLike['schedule'],
        };
        const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 1_000, scheduler: early });
        const seen: [number, string][] = [];
        breaker.state$.subscribe((state) => seen.push([ts.now(), state]));
        at(10, () => fail(breaker, 1));
        at(5_000, () =>
          expect(seen).to.deep.equal([
            [0, 'closed'],
            [10, 'open'],
            [1_010, 'half-open'],
          ]),
        );
      });
    });

    it('observed: runs no timer while closed, exactly one while open, none after closing', () => {
      virtual(({ ts, at, breakerActions }) => {
        const counts: (string | number)[][] = [];
        const breaker = new CircuitBreaker({ failureThreshold: 3, resetTimeoutMs: 1_000, scheduler: ts });
        breaker.state$.subscribe();
        const count = (label: string): void => void counts.push([ts.now(), label, breakerActions()]);
        at(0, () => {
          count('created');
          fail(breaker, 2);
          succeed(breaker, 3);
          fail(breaker, 2);
          fail(breaker, 5, () => new HttpError(400));
          admit(breaker).release();
          count('closed, below threshold');
        });
        at(10, () => {
          fail(breaker, 1);
          count('open');
        });
        at(500, () => count('open, later'));
        at(1_011, () => {
          expect(breaker.state).to.equal('half-open');
          count('half-open, no probe');
        });
        let probe: CircuitPermit | undefined;
        at(1_020, () => {
          probe = admit(breaker);
          count('half-open, probe running');
        });
        at(1_030, () => {
          probe?.success();
          expect(breaker.state).to.equal('closed');
          count('closed again');
          fail(breaker, 2);
          count('closed again, failures');
        });
        at(9_999, () => count('much later'));
        at(10_000, () =>
          expect(counts).to.deep.equal([
            [0, 'created', 0],
            [0, 'closed, below threshold', 0],
            [10, 'open', 1],
            [500, 'open, later', 1],
            [1_011, 'half-open, no probe', 0],
            [1_020, 'half-open, probe running', 1],
            [1_030, 'closed again', 0],
            [1_030, 'closed again, failures', 0],
            [9_999, 'much later', 0],
          ]),
        );
      });
    });

    it('observed: re-opening replaces the timer: one action, due resetTimeoutMs after the new opening', () => {
      virtual(({ ts, at, breakerActions }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 1_000, scheduler: ts });
        const events = recordEvents(breaker);
        at(0, () => fail(breaker, 1));
        let probe: CircuitPermit | undefined;
        at(1_000, () => (probe = admit(breaker)));
        at(1_100, () => {
          probe?.failure(e503());
          expect(breakerActions()).to.equal(1);
          expect(reject(breaker).retryAfterMs).to.equal(1_000);
        });
        at(2_099, () => expect(breaker.state).to.equal('open'));
        at(2_101, () => {
          expect(breakerActions()).to.equal(0);
          expect(events.map((e) => e[0])).to.deep.equal([0, 1_000, 1_100, 2_100]);
        });
      });
    });

    it('closing from half-open leaves no timer behind, even with other probes still running', () => {
      virtual(({ ts, at, breakerActions }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 100, halfOpenMaxCalls: 2, scheduler: ts });
        at(0, () => fail(breaker, 1));
        const probes: CircuitPermit[] = [];
        at(100, () => probes.push(admit(breaker), admit(breaker))); // slow probe A, probe B
        at(110, () => {
          probes[1]?.success(); // B succeeds: its slot is free again
          probes.push(admit(breaker)); // probe C
        });
        at(120, () => {
          probes[2]?.success(); // second success: closed, while A still runs
          expect(breaker.state).to.equal('closed');
          expect(breakerActions(), 'pending breaker actions while closed').to.equal(0);
        });
      });
    });

    it('observed: re-opening from half-open leaves exactly one timer, even with another probe still running', () => {
      virtual(({ ts, at, breakerActions }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 100, halfOpenMaxCalls: 2, scheduler: ts });
        breaker.events$.subscribe();
        at(0, () => fail(breaker, 1));
        const probes: CircuitPermit[] = [];
        at(100, () => probes.push(admit(breaker), admit(breaker)));
        at(110, () => {
          probes[0]?.failure(e503());
          expect(breaker.state).to.equal('open');
          expect(breakerActions(), 'pending breaker actions while open').to.equal(1);
        });
      });
    });

    it('observed: isolate() and reset() leave no timer', () => {
      virtual(({ ts, at, breakerActions }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 100, scheduler: ts });
        breaker.events$.subscribe();
        at(0, () => {
          fail(breaker, 1);
          expect(breakerActions()).to.equal(1);
          breaker.isolate();
          expect(breakerActions()).to.equal(0);
          breaker.reset();
          expect(breakerActions()).to.equal(0);
          fail(breaker, 1);
          breaker.reset();
          expect(breakerActions()).to.equal(0);
        });
      });
    });
  });

  describe('timers only while observed (an open breaker never keeps a process alive)', () => {
    const values = { o: 'open', h: 'half-open', c: 'closed' } as const;

    /** `ts` as the breaker's scheduler, counting the actions scheduled through it that are still pending. */
    function counting(ts: TestScheduler): { scheduler: SchedulerLike; breakerActions: () => number } {
      const live = new Set<Subscription>();
      const scheduler: SchedulerLike = {
        now: () => ts.now(),
        schedule<T>(work: (this: SchedulerAction<T>, state?: T) => void, delay?: number, state?: T): Subscription {
          const action = ts.schedule(
            function (this: SchedulerAction<T>, s?: T) {
              live.delete(action);
              work.call(this, s);
            },
            delay,
            state,
          );
          live.add(action);
          action.add(() => live.delete(action));
          return action;
        },
      };
      return { scheduler, breakerActions: () => live.size };
    }

    it('unobserved: an open breaker holds no timer; its state is still computed on every read', () => {
      virtual(({ ts, at, breakerActions }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 1_000, scheduler: ts });
        at(0, () => {
          fail(breaker, 1);
          expect(breaker.state).to.equal('open');
          expect(breakerActions(), 'timers of an unobserved open breaker').to.equal(0);
        });
        at(999, () => expect(reject(breaker).retryAfterMs).to.equal(1));
        at(1_000, () => {
          expect(breaker.state).to.equal('half-open');
          admit(breaker).success();
          expect(breaker.state).to.equal('closed');
          expect(breakerActions()).to.equal(0);
        });
      });
    });

    it('subscribed while open: state$ gives "open" at once and announces half-open at the reset timeout', () => {
      virtual(({ ts, at, expectObservable }) => {
        const { scheduler, breakerActions } = counting(ts);
        const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 1_000, scheduler });
        at(0, () => fail(breaker, 1));
        at(300, () => expect(breakerActions(), 'nobody observes yet').to.equal(0));
        expectObservable(breaker.state$, '400ms ^').toBe('400ms o 599ms h', values);
        at(401, () => expect(breakerActions(), 'the notice, armed for the new observer').to.equal(1));
        at(1_001, () => expect(breakerActions()).to.equal(0));
      });
    });

    it('unsubscribing the last observer cancels the notice; a later observer gets it on time again', () => {
      virtual(({ ts, at, expectObservable }) => {
        const { scheduler, breakerActions } = counting(ts);
        const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 1_000, scheduler });
        at(0, () => fail(breaker, 1));
        expectObservable(breaker.state$, '100ms ^ 399ms !').toBe('100ms o', values);
        expectObservable(breaker.events$, '200ms ^ 299ms !').toBe('');
        at(450, () => expect(breakerActions(), 'the notice while observed').to.equal(1));
        at(550, () => expect(breakerActions(), 'both observers gone (at 500)').to.equal(0));
        const later: (string | number)[][] = [];
        at(700, () => void breaker.state$.subscribe((s) => later.push([ts.now(), s])));
        at(701, () => expect(breakerActions()).to.equal(1));
        at(1_001, () =>
          expect(later).to.deep.equal([
            [700, 'open'],
            [1_000, 'half-open'],
          ]),
        );
      });
    });

    it('an open period that ended while nobody watched is not announced to a later observer: it sees the state as it is', () => {
      virtual(({ ts, at, expectObservable }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 1_000, scheduler: ts });
        const events: (string | number)[][] = [];
        at(0, () => fail(breaker, 1));
        at(1_500, () => void breaker.events$.subscribe((e) => events.push([e.at, e.to, e.reason])));
        expectObservable(breaker.state$, '1500ms ^').toBe('1500ms h 99ms o 999ms h', values);
        at(1_600, () => {
          admit(breaker).failure(e503());
          expect(events).to.deep.equal([[1_600, 'open', 'probe_failure']]);
        });
        at(2_601, () =>
          expect(events).to.deep.equal([
            [1_600, 'open', 'probe_failure'],
            [2_600, 'half-open', 'reset_timeout'],
          ]),
        );
      });
    });

    it('a registry follows its breakers only while its events$ is observed (breakers made meanwhile included)', () => {
      virtual(({ ts, at, breakerActions }) => {
        const registry = new CircuitBreakerRegistry({ failureThreshold: 1, resetTimeoutMs: 1_000, scheduler: ts });
        const seen: (string | number)[][] = [];
        let watching: Subscription | undefined;
        at(0, () => {
          fail(registry.get('a'), 1);
          expect(breakerActions(), 'an unobserved registry').to.equal(0);
        });
        at(100, () => {
          watching = registry.events$.subscribe((e) => seen.push([e.at, e.breaker, e.to]));
          expect(breakerActions()).to.equal(1);
        });
        at(200, () => {
          fail(registry.get('b'), 1);
          expect(breakerActions()).to.equal(2);
        });
        at(1_100, () => {
          watching?.unsubscribe();
          expect(breakerActions()).to.equal(0);
          fail(registry.get('a'), 1); // a's probe fails: open again, unobserved
          expect(breakerActions()).to.equal(0);
        });
        at(3_000, () =>
          expect(seen).to.deep.equal([
            [200, 'b', 'open'],
            [1_000, 'a', 'half-open'],
          ]),
        );
      });
    });

    it('a hub follows a watched breaker only while the hub has listeners', () => {
      virtual(({ ts, at, breakerActions }) => {
        const breaker = new CircuitBreaker({ name: 'svc', failureThreshold: 1, resetTimeoutMs: 1_000, scheduler: ts });
        const hub = new HealHub();
        hub.watch(breaker);
        const seen: (string | number | undefined)[][] = [];
        let listening: Subscription | undefined;
        at(0, () => {
          fail(breaker, 1);
          expect(breakerActions()).to.equal(0);
        });
        at(500, () => {
          listening = hub.events$.subscribe((e) => seen.push([ts.now(), e.type, e.type === 'circuit' && e.kind === 'transition' ? e.to : undefined]));
          expect(breakerActions()).to.equal(1);
        });
        at(1_001, () => {
          expect(seen).to.deep.equal([[1_000, 'circuit', 'half-open']]);
          admit(breaker).failure(e503());
          expect(breakerActions()).to.equal(1);
          listening?.unsubscribe();
          expect(breakerActions()).to.equal(0);
        });
      });
    });
  });

  describe('failure-rate window', () => {
    const window = { failureRateThreshold: 0.5, minimumCalls: 4, windowMs: 10_000 } as const;

    it('never opens below minimumCalls, even at 100 % failures', () => {
      virtual(({ ts }) => {
        const breaker = new CircuitBreaker({ window, scheduler: ts });
        fail(breaker, 3);
        expect(breaker.state).to.equal('closed');
      });
    });

    it("opens at 2 failures of 4 calls, with reason 'failure_rate' and the failure count", () => {
      virtual(({ ts, at }) => {
        const breaker = new CircuitBreaker({ window, scheduler: ts, resetTimeoutMs: 1_000 });
        const events = recordEvents(breaker);
        at(100, () => {
          fail(breaker, 1);
          succeed(breaker, 2);
        });
        at(200, () => {
          expect(breaker.state).to.equal('closed'); // 1 of 3
          fail(breaker, 1); // 2 of 4
          expect(breaker.state).to.equal('open');
        });
        at(1_200, () => {
          expect(breaker.state).to.equal('half-open');
          expect(events).to.deep.equal([
            [200, 'closed', 'open', 'failure_rate', 2],
            [1_200, 'open', 'half-open', 'reset_timeout', 0],
          ]);
        });
      });
    });

    it('stays closed below the rate (1 failure of 4 calls)', () => {
      virtual(({ ts }) => {
        const breaker = new CircuitBreaker({ window, scheduler: ts });
        succeed(breaker, 3);
        fail(breaker, 1);
        expect(breaker.state).to.equal('closed');
      });
    });

    it('outcomes inside windowMs add up', () => {
      virtual(({ ts, at }) => {
        const breaker = new CircuitBreaker({ window, scheduler: ts });
        at(0, () => fail(breaker, 2));
        at(9_500, () => {
          succeed(breaker, 2);
          expect(breaker.state).to.equal('open');
        });
      });
    });

    it('old outcomes slide out: failures spread over more than windowMs do not open it', () => {
      virtual(({ ts, at }) => {
        const breaker = new CircuitBreaker({ window, scheduler: ts });
        at(0, () => fail(breaker, 2));
        at(10_500, () => {
          succeed(breaker, 2); // the two failures at 0 are out of the window: 0 of 2
          expect(breaker.state).to.equal('closed');
        });
        for (const t of [20_000, 31_000, 42_000, 53_000]) {
          at(t, () => {
            fail(breaker, 1);
            succeed(breaker, 1);
            expect(breaker.state).to.equal('closed'); // at most 1 of 2 in any window
          });
        }
      });
    });

    it('errors that isFailure rejects are not calls of the window', () => {
      virtual(({ ts }) => {
        const breaker = new CircuitBreaker({ window, scheduler: ts });
        fail(breaker, 2);
        fail(breaker, 10, () => new HttpError(400));
        expect(breaker.state).to.equal('closed'); // 2 calls only
        fail(breaker, 2);
        expect(breaker.state).to.equal('open');
      });
    });
  });

  describe('isolate() and reset()', () => {
    it('isolate() rejects every call with retryAfterMs Infinity and never goes half-open', () => {
      virtual(({ at }) => {
        const breaker = new CircuitBreaker({ name: 'tool', resetTimeoutMs: 1_000 });
        const events = recordEvents(breaker);
        at(10, () => {
          breaker.isolate();
          expect(breaker.isolated).to.equal(true);
          expect(breaker.state).to.equal('open');
          const rejection = reject(breaker);
          expect(rejection.breaker).to.equal('tool');
          expect(rejection.retryAfterMs).to.equal(Infinity);
        });
        at(1_010, () => expect(breaker.state).to.equal('open'));
        at(1_000_000, () => {
          expect(breaker.state).to.equal('open');
          expect(reject(breaker).retryAfterMs).to.equal(Infinity);
          expect(events).to.deep.equal([[10, 'closed', 'open', 'isolated', 0]]);
        });
      });
    });

    it('isolate() of an open breaker cancels its way to half-open', () => {
      virtual(({ at }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 1_000 });
        at(0, () => fail(breaker, 1));
        at(500, () => breaker.isolate());
        at(5_000, () => {
          expect(breaker.state).to.equal('open');
          expect(reject(breaker).retryAfterMs).to.equal(Infinity);
        });
      });
    });

    it('reset() closes an isolated breaker and clears isolation', () => {
      virtual(({ at }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 2 });
        const events = recordEvents(breaker);
        at(10, () => breaker.isolate());
        at(20, () => {
          breaker.reset();
          expect(breaker.isolated).to.equal(false);
          expect(breaker.state).to.equal('closed');
          succeed(breaker);
        });
        at(30, () => expect(events.map((e) => e[3])).to.deep.equal(['isolated', 'reset']));
      });
    });

    it('reset() closes an open breaker and clears the consecutive count', () => {
      virtual(({ at }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 3, resetTimeoutMs: 1_000 });
        at(0, () => fail(breaker, 3));
        at(10, () => {
          breaker.reset();
          expect(breaker.state).to.equal('closed');
          fail(breaker, 2);
          expect(breaker.state).to.equal('closed');
        });
        at(20, () => {
          fail(breaker, 1); // the count was at 2: this opens it
          expect(breaker.state).to.equal('open');
          breaker.reset();
          fail(breaker, 2);
          expect(breaker.state).to.equal('closed');
        });
      });
    });

    it('reset() clears the failure-rate window', () => {
      virtual(({ ts }) => {
        const breaker = new CircuitBreaker({
          window: { failureRateThreshold: 0.5, minimumCalls: 4, windowMs: 10_000 },
          scheduler: ts,
        });
        fail(breaker, 3);
        breaker.reset();
        succeed(breaker, 3);
        fail(breaker, 1); // 1 of 4 after the reset
        expect(breaker.state).to.equal('closed');
      });
    });
  });
});

describe('CircuitBreakerRegistry', () => {
  it('get(name) returns the same instance for the same name', () => {
    virtual(({ ts }) => {
      const registry = new CircuitBreakerRegistry({ scheduler: ts });
      const a = registry.get('tool:get_weather');
      expect(registry.get('tool:get_weather')).to.equal(a);
      expect(registry.get('model:gpt-4o')).not.to.equal(a);
      expect(a.name).to.equal('tool:get_weather');
      expect(registry.has('tool:get_weather')).to.equal(true);
      expect(registry.has('nope')).to.equal(false);
      expect(registry.names()).to.deep.equal(['tool:get_weather', 'model:gpt-4o']);
    });
  });

  it('applies the defaults to every breaker it creates', () => {
    virtual(({ ts, at }) => {
      const registry = new CircuitBreakerRegistry({ failureThreshold: 2, resetTimeoutMs: 500, scheduler: ts });
      const a = registry.get('a');
      at(0, () => {
        fail(a, 2);
        expect(a.state).to.equal('open');
        expect(reject(a).retryAfterMs).to.equal(500);
      });
      at(500, () => expect(a.state).to.equal('half-open'));
    });
  });

  it('applies overrides on creation only', () => {
    virtual(({ ts }) => {
      const registry = new CircuitBreakerRegistry({ failureThreshold: 2, scheduler: ts });
      const b = registry.get('b', { failureThreshold: 3 });
      expect(registry.get('b', { failureThreshold: 1 })).to.equal(b);
      fail(b, 2);
      expect(b.state).to.equal('closed');
      fail(b, 1);
      expect(b.state).to.equal('open');
    });
  });

  it('events$ carries the events of every breaker, including ones created after subscribing', () => {
    virtual(({ ts, at }) => {
      const registry = new CircuitBreakerRegistry({ failureThreshold: 1, resetTimeoutMs: 100, scheduler: ts });
      const events: CircuitEvent[] = [];
      registry.events$.subscribe((e) => events.push(e));
      at(10, () => fail(registry.get('late'), 1));
      at(20, () => fail(registry.get('later'), 1));
      at(200, () =>
        expect(events.map((e) => [e.breaker, e.at, e.to, e.reason])).to.deep.equal([
          ['late', 10, 'open', 'failure_threshold'],
          ['later', 20, 'open', 'failure_threshold'],
          ['late', 110, 'half-open', 'reset_timeout'],
          ['later', 120, 'half-open', 'reset_timeout'],
        ]),
      );
    });
  });

  it("rejects a 'name' among the defaults", () => {
    const error = catchError(() => new CircuitBreakerRegistry({ name: 'x' } as never));
    expect(error).to.be.instanceOf(InvalidOptionError);
    expect((error as InvalidOptionError).option).to.equal('name');
    expect((error as InvalidOptionError).message).to.contain('"x"');
  });

  it('validates the defaults and the overrides', () => {
    const error = catchError(() => new CircuitBreakerRegistry({ failureThreshold: 0 }));
    expect(error).to.be.instanceOf(InvalidOptionError);
    expect((error as InvalidOptionError).option).to.equal('failureThreshold');
    const registry = new CircuitBreakerRegistry();
    const override = catchError(() => registry.get('a', { resetTimeoutMs: -1 }));
    expect(override).to.be.instanceOf(InvalidOptionError);
    expect((override as InvalidOptionError).option).to.equal('resetTimeoutMs');
    expect(registry.has('a')).to.equal(false);
  });
});

describe('CircuitBreaker: isFailure throws (the guard rule)', () => {
  it('permit.failure(error) counts the call as failed and returns what isFailure threw, to fail the call with', () => {
    virtual(({ ts }) => {
      const broken = new Error('broken predicate');
      const breaker = new CircuitBreaker({
        failureThreshold: 1,
        scheduler: ts,
        isFailure: () => {
          throw broken;
        },
      });
      const error = e503();
      expect(admit(breaker).failure(error)).to.equal(broken);
      expect(breaker.state).to.equal('open');
    });
  });

  it('permit.failure(error) returns error itself when isFailure answers', () => {
    virtual(({ ts }) => {
      const breaker = new CircuitBreaker({ scheduler: ts });
      const error = e503();
      expect(admit(breaker).failure(error)).to.equal(error);
    });
  });
});

describe('CircuitBreaker: delays above 2³¹−1 ms (Node clamps such a timer to 1 ms)', () => {
  it('halfOpenTimeoutMs: 3e9 times a hung probe out at 3e9 ms, not at once', () => {
    const ts = new NodeTimerScheduler();
    const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 1_000, halfOpenTimeoutMs: 3e9, scheduler: ts });
    const events = recordEvents(breaker);
    fail(breaker, 1);
    ts.advanceTo(1_000);
    admit(breaker); // a probe that never ends
    ts.advanceTo(1_000 + 3e9 - 1);
    expect(breaker.state).to.equal('half-open');
    ts.advanceTo(1_000 + 3e9);
    expect(breaker.state).to.equal('open');
    expect(events.map((e) => e[3])).to.deep.equal(['failure_threshold', 'reset_timeout', 'probe_timeout']);
    expect(ts.warnings).to.deep.equal([]);
  });

  it('resetTimeoutMs: 3e9 announces half-open on state$ at 3e9 ms', () => {
    const ts = new NodeTimerScheduler();
    const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 3e9, scheduler: ts });
    const seen: [number, string][] = [];
    breaker.state$.subscribe((s) => seen.push([ts.now(), s]));
    fail(breaker, 1);
    ts.advanceTo(3e9 + 10);
    expect(seen).to.deep.equal([
      [0, 'closed'],
      [0, 'open'],
      [3e9, 'half-open'],
    ]);
    expect(ts.warnings).to.deep.equal([]);
  });
});
