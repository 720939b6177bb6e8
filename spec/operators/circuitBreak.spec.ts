import { expect } from 'chai';
import { catchError, defer, lastValueFrom, mergeMap, NEVER, of, retry, Subject, take, throwError, VirtualTimeScheduler, type Observable } from 'rxjs';
import type { RunHelpers, TestScheduler } from 'rxjs/testing';
import { type CircuitEvent, CircuitBreaker } from '../../src/core/breaker/CircuitBreaker.js';
import { snapshotBreaker } from '../../src/core/breaker/persist.js';
import { CircuitOpenError, HttpError, InvalidOptionError, RetriesExhaustedError, TotalTimeoutError } from '../../src/core/errors/errors.js';
import { circuitBreak } from '../../src/operators/circuitBreak.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { Boom, expectThrowDownstream, failingSource, halfOpenBreaker, KINDS, thrower } from '../support/guards.js';
import { testScheduler } from '../support/marbles.js';

// ---------------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------------

interface Virtual extends RunHelpers {
  readonly ts: TestScheduler;
  /** Runs `fn` at absolute virtual time `t`. */
  readonly at: (t: number, fn: () => void) => void;
}

function virtual(body: (v: Virtual) => void): void {
  const ts = testScheduler();
  ts.run((helpers) => body({ ...helpers, ts, at: (t, fn) => void ts.schedule(fn, t - ts.now()) }));
}

const e503 = new HttpError(503);

/** A short text for an error, so marbles can show which error arrived. */
function label(error: unknown): string {
  if (error instanceof CircuitOpenError) return `open(${error.breaker}, ${error.retryAfterMs})`;
  if (error instanceof HttpError) return `http ${error.status}`;
  if (error instanceof Error) return error.name;
  return String(error);
}

/** Each trigger value is a source: it is called through the breaker; errors become labels. */
function callsThrough(breaker: CircuitBreaker, triggers: Observable<Observable<string>>): Observable<string> {
  return triggers.pipe(
    mergeMap((source) =>
      source.pipe(
        circuitBreak(breaker),
        catchError((e: unknown) => of(label(e))),
      ),
    ),
  );
}

/** One call, logged with times: [time, 'next' | 'error' | 'complete', value or label]. */
function call(ts: TestScheduler, log: unknown[][], source: Observable<unknown>, tag = ''): void {
  source.subscribe({
    next: (v) => log.push([ts.now(), `${tag}next`, v]),
    error: (e: unknown) => log.push([ts.now(), `${tag}error`, label(e)]),
    complete: () => log.push([ts.now(), `${tag}complete`]),
  });
}

function recordEvents(breaker: CircuitBreaker): (string | number)[][] {
  const log: (string | number)[][] = [];
  breaker.events$.subscribe((e: CircuitEvent) => log.push([e.at, e.from, e.to, e.reason, e.failures]));
  return log;
}

const ignore = { error: () => undefined };

// ---------------------------------------------------------------------------------------------

describe('circuitBreak', () => {
  describe('the reference diagram (failureThreshold 5, resetTimeoutMs 60 000)', () => {
    it('5 failures open it; calls fail fast without subscribing; after 60 000 ms one probe passes; success closes', () => {
      const rejections: unknown[] = [];
      virtual(({ cold, hot, at, expectObservable, expectSubscriptions }) => {
        const breaker = new CircuitBreaker({ name: 'weather-api' });
        const events = recordEvents(breaker);
        const failing = cold<string>('-#', undefined, e503);
        const rejected = cold<string>('-r|');
        const ok = cold<string>('-(a|)');
        const afterwards = cold<string>('-b|');
        const triggers = hot('f-f-f-f-f-r 59998ms p-q', { f: failing, r: rejected, p: ok, q: afterwards });
        const result = triggers.pipe(
          mergeMap((source) =>
            source.pipe(
              circuitBreak(breaker),
              catchError((e: unknown) => {
                if (e instanceof CircuitOpenError) rejections.push(e);
                return of(label(e));
              }),
            ),
          ),
        );
        expectObservable(result).toBe('-x-x-x-x-xo 59998ms -a-b', {
          x: 'http 503',
          o: 'open(weather-api, 59999)',
          a: 'a',
          b: 'b',
        });
        expectSubscriptions(failing.subscriptions).toBe(['^!', '--^!', '----^!', '------^!', '--------^!']);
        expectSubscriptions(rejected.subscriptions).toBe([]);
        expectSubscriptions(ok.subscriptions).toBe(['60009ms ^!']);
        expectSubscriptions(afterwards.subscriptions).toBe(['60011ms ^-!']);
        at(8, () => expect(breaker.state).to.equal('closed'));
        at(9, () => expect(breaker.state).to.equal('closed')); // the 5th failure lands later in frame 9
        at(10, () => expect(breaker.state).to.equal('open'));
        at(60_008, () => expect(breaker.state).to.equal('open'));
        at(60_009, () => expect(breaker.state).to.equal('half-open'));
        at(60_011, () => expect(breaker.state).to.equal('closed'));
        at(60_020, () =>
          expect(events).to.deep.equal([
            [9, 'closed', 'open', 'failure_threshold', 5],
            [60_009, 'open', 'half-open', 'reset_timeout', 0],
            [60_010, 'half-open', 'closed', 'probe_success', 0],
          ]),
        );
      });
      expect(rejections).to.have.length(1);
      const rejection = rejections[0] as CircuitOpenError;
      expect(rejection).to.be.instanceOf(CircuitOpenError);
      expect(rejection.name).to.equal('CircuitOpenError');
      expect(rejection.breaker).to.equal('weather-api');
      expect(rejection.retryAfterMs).to.equal(59_999);
    });

    it('a failed probe re-opens it with a fresh 60 000 ms timer', () => {
      virtual(({ cold, hot, expectObservable, expectSubscriptions, ts }) => {
        const breaker = new CircuitBreaker({ name: 'weather-api' });
        const events = recordEvents(breaker);
        const failing = cold<string>('-#', undefined, e503);
        const early = cold<string>('-e|');
        const ok = cold<string>('-(a|)');
        const triggers = hot('f-f-f-f-f 60000ms f 59999ms eo', { f: failing, e: early, o: ok });
        expectObservable(callsThrough(breaker, triggers)).toBe('-x-x-x-x-x 60000ms x 59998ms r-a', {
          x: 'http 503',
          r: 'open(weather-api, 1)',
          a: 'a',
        });
        expectSubscriptions(failing.subscriptions).toBe(['^!', '--^!', '----^!', '------^!', '--------^!', '60009ms ^!']);
        expectSubscriptions(early.subscriptions).toBe([]);
        expectSubscriptions(ok.subscriptions).toBe(['120010ms ^!']);
        ts.schedule(
          () =>
            expect(events).to.deep.equal([
              [9, 'closed', 'open', 'failure_threshold', 5],
              [60_009, 'open', 'half-open', 'reset_timeout', 0],
              [60_010, 'half-open', 'open', 'probe_failure', 0],
              [120_010, 'open', 'half-open', 'reset_timeout', 0],
              [120_011, 'half-open', 'closed', 'probe_success', 0],
            ]),
          130_000,
        );
      });
    });

    it('a rejected call errors in the very frame it subscribes, synchronously', () => {
      virtual(({ cold, at, expectObservable, expectSubscriptions }) => {
        const breaker = new CircuitBreaker({ name: 'weather-api', failureThreshold: 1 });
        at(0, () =>
          throwError(() => e503)
            .pipe(circuitBreak(breaker))
            .subscribe(ignore),
        );
        const source = cold<string>('-a|');
        expectObservable(source.pipe(circuitBreak(breaker)), '5ms ^').toBe('5ms #', undefined, new CircuitOpenError('weather-api', 59_995));
        expectSubscriptions(source.subscriptions).toBe([]);
        at(7, () => {
          let error: unknown;
          let sync = true;
          source.pipe(circuitBreak(breaker)).subscribe({ error: (e: unknown) => (error = { e, sync }) });
          sync = false;
          expect(error).to.deep.include({ sync: true });
          const e = (error as { e: CircuitOpenError }).e;
          expect(e).to.be.instanceOf(CircuitOpenError);
          expect(e.breaker).to.equal('weather-api');
          expect(e.retryAfterMs).to.equal(59_993);
        });
      });
    });
  });

  describe('half-open concurrency', () => {
    it('halfOpenMaxCalls 2: admits two concurrent probes, rejects a third (retryAfterMs 0); two successes close it', () => {
      virtual(({ cold, hot, at, expectObservable, expectSubscriptions }) => {
        const breaker = new CircuitBreaker({ name: 'llm', failureThreshold: 1, resetTimeoutMs: 100, halfOpenMaxCalls: 2 });
        const events = recordEvents(breaker);
        const failing = cold<string>('-#', undefined, e503);
        const probeA = cold<string>('10ms (a|)');
        const probeB = cold<string>('10ms (b|)');
        const third = cold<string>('-c|');
        const triggers = hot('f 100ms (ABC)', { f: failing, A: probeA, B: probeB, C: third });
        expectObservable(callsThrough(breaker, triggers)).toBe('-x 99ms o 9ms (ab)', {
          x: 'http 503',
          o: 'open(llm, 0)',
          a: 'a',
          b: 'b',
        });
        expectSubscriptions(probeA.subscriptions).toBe('101ms ^ 9ms !');
        expectSubscriptions(probeB.subscriptions).toBe('101ms ^ 9ms !');
        expectSubscriptions(third.subscriptions).toBe([]);
        at(105, () => expect(breaker.state).to.equal('half-open'));
        at(112, () => {
          expect(breaker.state).to.equal('closed');
          expect(events).to.deep.equal([
            [1, 'closed', 'open', 'failure_threshold', 1],
            [101, 'open', 'half-open', 'reset_timeout', 0],
            [111, 'half-open', 'closed', 'probe_success', 0],
          ]);
        });
      });
    });

    it('halfOpenMaxCalls 2: one success is not enough; a failure of the other probe re-opens it', () => {
      virtual(({ cold, hot, at, expectObservable }) => {
        const breaker = new CircuitBreaker({ name: 'llm', failureThreshold: 1, resetTimeoutMs: 100, halfOpenMaxCalls: 2 });
        const events = recordEvents(breaker);
        const failing = cold<string>('-#', undefined, e503);
        const probeA = cold<string>('10ms (a|)');
        const probeB = cold<string>('20ms #', undefined, e503);
        const later = cold<string>('-l|');
        // a group takes as many frames as it has characters: (AB) at 101, L at 105 + 20 = 125
        const triggers = hot('f 100ms (AB) 20ms L', { f: failing, A: probeA, B: probeB, L: later });
        expectObservable(callsThrough(breaker, triggers)).toBe('-x 109ms a 9ms x 3ms r', {
          x: 'http 503',
          a: 'a',
          r: 'open(llm, 96)',
        });
        at(115, () => expect(breaker.state).to.equal('half-open'));
        at(122, () => expect(breaker.state).to.equal('open'));
        at(220, () => expect(breaker.state).to.equal('open'));
        at(221, () => expect(breaker.state).to.equal('half-open'));
        at(222, () =>
          expect(events).to.deep.equal([
            [1, 'closed', 'open', 'failure_threshold', 1],
            [101, 'open', 'half-open', 'reset_timeout', 0],
            [121, 'half-open', 'open', 'probe_failure', 0],
            [221, 'open', 'half-open', 'reset_timeout', 0],
          ]),
        );
      });
    });

    it('a probe failure re-opens at once; the other probe succeeding later changes nothing', () => {
      virtual(({ cold, hot, at, expectObservable }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 100, halfOpenMaxCalls: 2 });
        const failing = cold<string>('-#', undefined, e503);
        const probeA = cold<string>('10ms #', undefined, e503);
        const probeB = cold<string>('20ms (b|)');
        const triggers = hot('f 100ms (AB)', { f: failing, A: probeA, B: probeB });
        expectObservable(callsThrough(breaker, triggers)).toBe('-x 109ms x 9ms b', { x: 'http 503', b: 'b' });
        at(112, () => expect(breaker.state).to.equal('open'));
        at(122, () => expect(breaker.state).to.equal('open'));
        at(210, () => expect(breaker.state).to.equal('open'));
        at(211, () => expect(breaker.state).to.equal('half-open'));
      });
    });

    it('a burst of 100 concurrent calls in half-open reaches the source halfOpenMaxCalls times', () => {
      virtual(({ cold, at, expectSubscriptions, ts }) => {
        const breaker = new CircuitBreaker({ name: 'llm', failureThreshold: 1, resetTimeoutMs: 100 });
        const source = cold<string>('10ms (a|)');
        const log: unknown[][] = [];
        at(0, () =>
          throwError(() => e503)
            .pipe(circuitBreak(breaker))
            .subscribe(ignore),
        );
        at(100, () => {
          for (let i = 0; i < 100; i++) call(ts, log, source.pipe(circuitBreak(breaker)));
        });
        expectSubscriptions(source.subscriptions).toBe(['100ms ^ 9ms !']);
        at(111, () => {
          expect(log.filter(([, kind]) => kind === 'error')).to.deep.equal(Array.from({ length: 99 }, () => [100, 'error', 'open(llm, 0)']));
          expect(log.filter(([, kind]) => kind !== 'error')).to.deep.equal([
            [110, 'next', 'a'],
            [110, 'complete'],
          ]);
          expect(breaker.state).to.equal('closed');
        });
      });
    });
  });

  describe('cancellation', () => {
    it('a probe unsubscribed before any value is not counted, frees its slot, and leaves it half-open', () => {
      virtual(({ cold, hot, at, expectObservable, expectSubscriptions }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 100 });
        const events = recordEvents(breaker);
        callsThrough(breaker, hot('f', { f: cold('-#', undefined, e503) })).subscribe();
        const probe = cold<string>('50ms a|');
        const next = cold<string>('-b|');
        expectObservable(probe.pipe(circuitBreak(breaker)), '101ms ^ 9ms !').toBe('');
        expectSubscriptions(probe.subscriptions).toBe('101ms ^ 9ms !');
        at(111, () => {
          expect(breaker.state).to.equal('half-open');
          expect(events).to.have.length(2); // no probe_failure, no probe_success
        });
        expectObservable(next.pipe(circuitBreak(breaker)), '112ms ^').toBe('112ms -b|');
        expectSubscriptions(next.subscriptions).toBe('112ms ^-!');
        at(115, () =>
          expect(events).to.deep.equal([
            [1, 'closed', 'open', 'failure_threshold', 1],
            [101, 'open', 'half-open', 'reset_timeout', 0],
            [114, 'half-open', 'closed', 'probe_success', 0],
          ]),
        );
      });
    });

    it('a probe unsubscribed after a value is a success: it closes the breaker', () => {
      virtual(({ cold, at, expectObservable, expectSubscriptions }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 100 });
        const events = recordEvents(breaker);
        at(0, () =>
          throwError(() => e503)
            .pipe(circuitBreak(breaker))
            .subscribe(ignore),
        );
        const probe = cold<string>('-a 50ms b|');
        expectObservable(probe.pipe(circuitBreak(breaker)), '100ms ^ 9ms !').toBe('100ms -a');
        expectSubscriptions(probe.subscriptions).toBe('100ms ^ 9ms !');
        at(109, () => expect(breaker.state).to.equal('half-open'));
        at(110, () => {
          expect(breaker.state).to.equal('closed');
          expect(events.at(-1)).to.deep.equal([110, 'half-open', 'closed', 'probe_success', 0]);
        });
      });
    });

    it('take(1) downstream of a streaming probe counts as a success', () => {
      virtual(({ cold, at, expectObservable }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 100 });
        at(0, () =>
          throwError(() => e503)
            .pipe(circuitBreak(breaker))
            .subscribe(ignore),
        );
        const stream = cold<string>('-t-t-t-#', undefined, e503);
        expectObservable(stream.pipe(circuitBreak(breaker), take(1)), '100ms ^').toBe('100ms -(t|)');
        at(102, () => expect(breaker.state).to.equal('closed'));
      });
    });

    it('unsubscribing a closed-state call before a value does not reset the consecutive count', () => {
      virtual(({ cold, hot, at, expectObservable }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 3, resetTimeoutMs: 100 });
        const events = recordEvents(breaker);
        const failing = cold<string>('-#', undefined, e503);
        callsThrough(breaker, hot('f-f------f', { f: failing })).subscribe();
        expectObservable(cold<string>('50ms a|').pipe(circuitBreak(breaker)), '4ms ^-!').toBe('');
        at(10, () => expect(breaker.state).to.equal('closed'));
        at(11, () => {
          expect(breaker.state).to.equal('open');
          expect(events).to.deep.equal([[10, 'closed', 'open', 'failure_threshold', 3]]);
        });
      });
    });

    it('unsubscribing a closed-state call after a value is a success: it resets the count', () => {
      virtual(({ cold, hot, at, expectObservable }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 3, resetTimeoutMs: 100 });
        const failing = cold<string>('-#', undefined, e503);
        callsThrough(breaker, hot('f-f------f', { f: failing })).subscribe();
        expectObservable(cold<string>('a 50ms |').pipe(circuitBreak(breaker)), '4ms ^-!').toBe('4ms a');
        at(11, () => expect(breaker.state).to.equal('closed'));
      });
    });
  });

  describe('half-open probes that end with an ignored error', () => {
    it('a probe failing with a bad request (not a failure) frees its slot and leaves it half-open', () => {
      virtual(({ cold, at, expectObservable }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 100 });
        const events = recordEvents(breaker);
        at(0, () =>
          throwError(() => e503)
            .pipe(circuitBreak(breaker))
            .subscribe(ignore),
        );
        const bad = new HttpError(400);
        expectObservable(cold<string>('-#', undefined, bad).pipe(circuitBreak(breaker)), '100ms ^').toBe('101ms #', undefined, bad);
        at(102, () => expect(breaker.state).to.equal('half-open'));
        expectObservable(cold<string>('-(n|)').pipe(circuitBreak(breaker)), '103ms ^').toBe('104ms (n|)');
        at(105, () => expect(events.map((e) => e[3])).to.deep.equal(['failure_threshold', 'reset_timeout', 'probe_success']));
      });
    });
  });

  describe('half-open deadline', () => {
    it("a probe outliving halfOpenTimeoutMs re-opens it (reason 'probe_timeout'); its later success changes nothing", () => {
      virtual(({ cold, at, expectObservable }) => {
        const breaker = new CircuitBreaker({ name: 'tool', failureThreshold: 1, resetTimeoutMs: 100, halfOpenTimeoutMs: 30 });
        const events = recordEvents(breaker);
        at(0, () =>
          throwError(() => e503)
            .pipe(circuitBreak(breaker))
            .subscribe(ignore),
        );
        const hung = cold<string>('50ms (a|)');
        // the call itself is not cut: its value still reaches the subscriber
        expectObservable(hung.pipe(circuitBreak(breaker)), '100ms ^').toBe('150ms (a|)');
        at(129, () => expect(breaker.state).to.equal('half-open'));
        at(131, () => expect(breaker.state).to.equal('open'));
        at(151, () => expect(breaker.state).to.equal('open'));
        at(229, () => expect(breaker.state).to.equal('open'));
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

    it('halfOpenTimeoutMs defaults to resetTimeoutMs', () => {
      virtual(({ cold, at, expectObservable }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 100 });
        const events = recordEvents(breaker);
        at(0, () =>
          throwError(() => e503)
            .pipe(circuitBreak(breaker))
            .subscribe(ignore),
        );
        expectObservable(cold<string>('500ms a|').pipe(circuitBreak(breaker)), '100ms ^').toBe('600ms a|');
        at(199, () => expect(breaker.state).to.equal('half-open'));
        at(201, () => {
          expect(breaker.state).to.equal('open');
          expect(events.at(-1)).to.deep.equal([200, 'half-open', 'open', 'probe_timeout', 0]);
        });
      });
    });

    it('halfOpenTimeoutMs Infinity disables the deadline', () => {
      virtual(({ at }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 100, halfOpenTimeoutMs: Infinity });
        at(0, () =>
          throwError(() => e503)
            .pipe(circuitBreak(breaker))
            .subscribe(ignore),
        );
        at(100, () => NEVER.pipe(circuitBreak(breaker)).subscribe());
        at(1_000_000, () => expect(breaker.state).to.equal('half-open'));
      });
    });
  });

  describe('late outcomes (calls admitted in an earlier state)', () => {
    it('a call admitted while closed that fails after the breaker opened changes neither the state nor its timer', () => {
      virtual(({ cold, hot, at }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 2, resetTimeoutMs: 100 });
        const events = recordEvents(breaker);
        const slow = cold<string>('50ms #', undefined, e503);
        const fast = cold<string>('-#', undefined, e503);
        callsThrough(breaker, hot('sf-f', { s: slow, f: fast })).subscribe();
        at(49, () => expect(breaker.state).to.equal('open'));
        at(51, () => expect(breaker.state).to.equal('open'));
        at(103, () => expect(breaker.state).to.equal('open'));
        at(104, () => expect(breaker.state).to.equal('half-open'));
        at(105, () =>
          expect(events).to.deep.equal([
            [4, 'closed', 'open', 'failure_threshold', 2],
            [104, 'open', 'half-open', 'reset_timeout', 0],
          ]),
        );
      });
    });

    it('a call admitted while closed that fails after the breaker re-opened from half-open changes nothing', () => {
      virtual(({ cold, hot, at }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 100 });
        const events = recordEvents(breaker);
        const slow = cold<string>('150ms #', undefined, e503);
        const fast = cold<string>('-#', undefined, e503);
        callsThrough(breaker, hot('sf 100ms f', { s: slow, f: fast })).subscribe();
        at(202, () => expect(breaker.state).to.equal('open'));
        at(203, () => expect(breaker.state).to.equal('half-open'));
        at(204, () =>
          expect(events).to.deep.equal([
            [2, 'closed', 'open', 'failure_threshold', 1],
            [102, 'open', 'half-open', 'reset_timeout', 0],
            [103, 'half-open', 'open', 'probe_failure', 0],
            [203, 'open', 'half-open', 'reset_timeout', 0],
          ]),
        );
      });
    });

    it('a call admitted while closed that succeeds after the breaker went half-open does not close it', () => {
      virtual(({ cold, hot, at, expectObservable }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 2, resetTimeoutMs: 100 });
        const events = recordEvents(breaker);
        const slow = cold<string>('150ms (a|)');
        const fast = cold<string>('-#', undefined, e503);
        callsThrough(breaker, hot('sf-f', { s: slow, f: fast })).subscribe();
        at(151, () => expect(breaker.state).to.equal('half-open'));
        // and it did not take or free a probe slot: one probe is still admitted, and only one
        const probe = cold<string>('-p|');
        const extra = cold<string>('-q|');
        expectObservable(probe.pipe(circuitBreak(breaker)), '160ms ^').toBe('160ms -p|');
        expectObservable(extra.pipe(circuitBreak(breaker)), '160ms ^').toBe('160ms #', undefined, new CircuitOpenError('circuit', 0));
        at(163, () =>
          expect(events).to.deep.equal([
            [4, 'closed', 'open', 'failure_threshold', 2],
            [104, 'open', 'half-open', 'reset_timeout', 0],
            [162, 'half-open', 'closed', 'probe_success', 0],
          ]),
        );
      });
    });

    it('an outcome from before reset() does not count', () => {
      virtual(({ cold, at }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 1 });
        at(0, () => cold<string>('50ms #', undefined, e503).pipe(circuitBreak(breaker)).subscribe(ignore));
        at(10, () => breaker.reset());
        at(51, () => expect(breaker.state).to.equal('closed'));
      });
    });

    it('outcomes from before isolate() do not count, not even after a reset()', () => {
      virtual(({ cold, at }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 1 });
        const events = recordEvents(breaker);
        at(0, () => {
          cold<string>('50ms (a|)').pipe(circuitBreak(breaker)).subscribe();
          cold<string>('100ms #', undefined, e503).pipe(circuitBreak(breaker)).subscribe(ignore);
        });
        at(10, () => breaker.isolate());
        at(51, () => expect(breaker.isolated).to.equal(true));
        at(60, () => breaker.reset());
        at(101, () => {
          expect(breaker.state).to.equal('closed');
          expect(events.map((e) => e[3])).to.deep.equal(['isolated', 'reset']);
        });
      });
    });

    it('a burst of 100 concurrent failing calls opens it once; the 95 late failures change nothing', () => {
      virtual(({ cold, at, expectSubscriptions, ts }) => {
        const breaker = new CircuitBreaker({ name: 'dead', resetTimeoutMs: 1_000 });
        const events = recordEvents(breaker);
        const dead = cold<string>('10ms #', undefined, e503);
        const log: unknown[][] = [];
        at(0, () => {
          for (let i = 0; i < 100; i++) call(ts, log, dead.pipe(circuitBreak(breaker)));
        });
        at(11, () => call(ts, log, dead.pipe(circuitBreak(breaker)), 'after '));
        expectSubscriptions(dead.subscriptions).toBe(Array.from({ length: 100 }, () => '^ 9ms !'));
        at(12, () => {
          expect(log).to.have.length(101);
          expect(log.at(-1)).to.deep.equal([11, 'after error', 'open(dead, 999)']);
          expect(events).to.deep.equal([[10, 'closed', 'open', 'failure_threshold', 5]]);
        });
        at(1_009, () => expect(breaker.state).to.equal('open'));
        at(1_010, () => expect(breaker.state).to.equal('half-open'));
      });
    });
  });

  describe('isFailure', () => {
    it('by default, 10 bad requests (400) keep it closed and do not reset a consecutive count', () => {
      virtual(({ at }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 5 });
        const badRequest = new HttpError(400);
        const through = (e: unknown): void => {
          let seen: unknown;
          throwError(() => e)
            .pipe(circuitBreak(breaker))
            .subscribe({ error: (x: unknown) => (seen = x) });
          expect(seen).to.equal(e); // passed on unchanged
        };
        at(0, () => {
          for (let i = 0; i < 10; i++) through(badRequest);
          expect(breaker.state).to.equal('closed');
          for (let i = 0; i < 4; i++) through(e503);
          for (let i = 0; i < 10; i++) through(badRequest);
          expect(breaker.state).to.equal('closed');
          through(e503);
          expect(breaker.state).to.equal('open');
        });
      });
    });

    it('by default ignores 422, TypeError, AbortError and CircuitOpenError (e.g. from a nested breaker)', () => {
      virtual(({ at }) => {
        const inner = new CircuitBreaker({ name: 'inner' });
        const outer = new CircuitBreaker({ name: 'outer', failureThreshold: 1 });
        at(0, () => {
          inner.isolate();
          for (let i = 0; i < 10; i++) {
            of('x').pipe(circuitBreak(inner), circuitBreak(outer)).subscribe(ignore);
            throwError(() => new HttpError(422))
              .pipe(circuitBreak(outer))
              .subscribe(ignore);
            throwError(() => new TypeError('undefined is not a function'))
              .pipe(circuitBreak(outer))
              .subscribe(ignore);
            throwError(() => new DOMException('aborted', 'AbortError'))
              .pipe(circuitBreak(outer))
              .subscribe(ignore);
          }
          expect(outer.state).to.equal('closed');
        });
      });
    });

    it('by default counts a RetriesExhaustedError wrapping 503s', () => {
      virtual(({ cold, expectObservable }) => {
        const breaker = new CircuitBreaker({ name: 'svc', failureThreshold: 2, resetTimeoutMs: 100 });
        const exhausted = new RetriesExhaustedError(4, [e503, e503, e503, e503]);
        const guarded = cold<string>('-#', undefined, exhausted).pipe(circuitBreak(breaker));
        expectObservable(guarded).toBe('-#', undefined, exhausted);
        expectObservable(guarded, '--^').toBe('---#', undefined, exhausted);
        expectObservable(guarded, '----^').toBe('----#', undefined, new CircuitOpenError('svc', 99));
      });
    });

    it('honours a custom isFailure', () => {
      virtual(({ at }) => {
        const breaker = new CircuitBreaker({
          failureThreshold: 2,
          isFailure: (e) => e instanceof HttpError && e.status === 400,
        });
        at(0, () => {
          for (let i = 0; i < 10; i++)
            throwError(() => e503)
              .pipe(circuitBreak(breaker))
              .subscribe(ignore);
          expect(breaker.state).to.equal('closed');
          for (let i = 0; i < 2; i++)
            throwError(() => new HttpError(400))
              .pipe(circuitBreak(breaker))
              .subscribe(ignore);
          expect(breaker.state).to.equal('open');
        });
      });
    });

    it('counts the call as a failure when isFailure throws, and fails it with what isFailure threw', () => {
      virtual(({ cold, expectObservable }) => {
        const broken = new Error('broken predicate');
        const breaker = new CircuitBreaker({
          name: 'svc',
          failureThreshold: 1,
          resetTimeoutMs: 100,
          isFailure: () => {
            throw broken;
          },
        });
        const bad = new HttpError(400);
        const guarded = cold<string>('-#', undefined, bad).pipe(circuitBreak(breaker));
        expectObservable(guarded).toBe('-#', undefined, broken);
        expectObservable(guarded, '--^').toBe('--#', undefined, new CircuitOpenError('svc', 99));
      });
    });
  });

  describe('sharing', () => {
    it('circuitBreak(options) shares one breaker among all subscriptions of the resulting observable', () => {
      virtual(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold<string>('-#', undefined, e503);
        const guarded = source.pipe(circuitBreak({ failureThreshold: 3, resetTimeoutMs: 100 }));
        expectObservable(guarded).toBe('-#', undefined, e503);
        expectObservable(guarded, '--^').toBe('---#', undefined, e503);
        expectObservable(guarded, '----^').toBe('-----#', undefined, e503);
        expectObservable(guarded, '------^').toBe('------#', undefined, new CircuitOpenError('circuit', 99));
        expectObservable(guarded, '105ms ^').toBe('106ms #', undefined, e503); // the probe
        expectSubscriptions(source.subscriptions).toBe(['^!', '--^!', '----^!', '105ms ^!']);
      });
    });

    it('circuitBreak(breaker) shares one breaker across different pipelines', () => {
      virtual(({ cold, expectObservable, expectSubscriptions }) => {
        const breaker = new CircuitBreaker({ name: 'shared', failureThreshold: 3, resetTimeoutMs: 100 });
        const a = cold<string>('-#', undefined, e503);
        const b = cold<string>('--#', undefined, new HttpError(502));
        const pipelineA = defer(() => a).pipe(circuitBreak(breaker));
        const pipelineB = b.pipe(circuitBreak(breaker));
        expectObservable(pipelineA).toBe('-#', undefined, e503);
        expectObservable(pipelineB).toBe('--#', undefined, new HttpError(502));
        expectObservable(pipelineA, '--^').toBe('---#', undefined, e503);
        expectObservable(pipelineB, '----^').toBe('----#', undefined, new CircuitOpenError('shared', 99));
        expectSubscriptions(b.subscriptions).toBe(['^-!']);
      });
    });
  });

  describe('ordering', () => {
    it('records a failure before the error reaches downstream', () => {
      virtual(({ cold, at }) => {
        const breaker = new CircuitBreaker();
        const seen: string[] = [];
        at(0, () => {
          for (let i = 0; i < 5; i++) {
            cold<string>('-#', undefined, e503)
              .pipe(circuitBreak(breaker))
              .subscribe({ error: () => seen.push(breaker.state) });
          }
        });
        at(2, () => expect(seen).to.deep.equal(['closed', 'closed', 'closed', 'closed', 'open']));
      });
    });

    it('a retry downstream sees the new state: it gets CircuitOpenError, and the source is not called again', () => {
      virtual(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold<string>('-#', undefined, e503);
        expectObservable(source.pipe(circuitBreak({ name: 'svc' }), retry(10))).toBe('-----#', undefined, new CircuitOpenError('svc', 60_000));
        expectSubscriptions(source.subscriptions).toBe(['^!', '-^!', '--^!', '---^!', '----^!']);
      });
    });

    it('records a success before completion reaches downstream', () => {
      virtual(({ cold, at }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 10 });
        let seen = '';
        at(0, () =>
          throwError(() => e503)
            .pipe(circuitBreak(breaker))
            .subscribe(ignore),
        );
        at(10, () =>
          cold<string>('-(a|)')
            .pipe(circuitBreak(breaker))
            .subscribe({ complete: () => (seen = breaker.state) }),
        );
        at(12, () => expect(seen).to.equal('closed'));
      });
    });
  });

  // found by the MCP adapter's specs: a breaker listener that ends the very call whose outcome
  // moved the breaker made the operator deliver to a subscriber already torn down (a TypeError)
  describe('a breaker listener that unsubscribes the call whose outcome it is handling', () => {
    for (const [outcome, fused] of [
      ['error', false],
      ['complete', false],
      ['error', true],
      ['complete', true],
    ] as const) {
      it(`on the ${outcome === 'error' ? 'failure that opens the breaker' : 'success that closes it'}${fused ? ', after retryWithBackoff' : ''}: the call just ends, nothing thrown, nothing delivered after the unsubscribe`, () => {
        // closed, one failure from open; or half-open, one success from closed
        const target = outcome === 'error' ? new CircuitBreaker({ failureThreshold: 1 }) : halfOpenBreaker(new VirtualTimeScheduler());
        const source = new Subject<string>();
        const seen: string[] = [];
        const guarded = fused ? source.pipe(retryWithBackoff({ maxRetries: 0 }), circuitBreak(target)) : source.pipe(circuitBreak(target));
        const subscription = guarded.subscribe({ next: (v) => seen.push(v), error: () => seen.push('error'), complete: () => seen.push('complete') });
        const listening = target.events$.subscribe((e) => {
          if (e.to === (outcome === 'error' ? 'open' : 'closed')) subscription.unsubscribe();
        });
        expect(() => (outcome === 'error' ? source.error(e503) : (source.next('a'), source.complete()))).to.not.throw();
        expect(seen).to.deep.equal(outcome === 'error' ? [] : ['a']);
        expect(target.state).to.equal(outcome === 'error' ? 'open' : 'closed');
        expect(subscription.closed).to.equal(true);
        listening.unsubscribe();
      });
    }
  });

  describe('after retryWithBackoff (one permit for the whole retried call)', () => {
    const retries = { maxRetries: 2, initialBackoffMs: 100, jitter: 'none' } as const;

    it('a call that fails, retries and succeeds takes one permit and counts one success', () => {
      virtual(({ cold, expectObservable, expectSubscriptions, at }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 2 });
        const source = cold<string>('-#', undefined, e503);
        const ok = cold<string>('-a|');
        let n = 0;
        const flaky = defer(() => (n++ === 0 ? source : ok));
        // one earlier failure: a second failed call would open it
        at(0, () =>
          throwError(() => e503)
            .pipe(circuitBreak(breaker))
            .subscribe(ignore),
        );
        expectObservable(flaky.pipe(retryWithBackoff(retries), circuitBreak(breaker))).toBe('- 100ms -a|');
        expectSubscriptions(source.subscriptions).toBe('^!');
        expectSubscriptions(ok.subscriptions).toBe('- 100ms ^-!');
        at(104, () => expect(snapshotBreaker(breaker).consecutiveFailures).to.equal(0));
      });
    });

    it('a call that exhausts its retries counts one failure (RetriesExhaustedError), recorded before it reaches downstream', () => {
      virtual(({ cold, expectObservable, expectSubscriptions, at }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 1, name: 'svc' });
        const source = cold<string>('-#', undefined, e503);
        const states: string[] = [];
        const guarded = source.pipe(retryWithBackoff(retries), circuitBreak(breaker));
        guarded.subscribe({ error: () => states.push(breaker.state) });
        // three attempts, then one failure opens it; the next call is rejected without subscribing
        expectSubscriptions(source.subscriptions).toBe(['^!', '- 100ms ^!', '- 100ms - 200ms ^!']);
        expectObservable(guarded, '400ms ^').toBe('400ms #', undefined, new CircuitOpenError('svc', 59_903));
        at(304, () => expect(states).to.deep.equal(['open']));
      });
    });

    it('unsubscribing during a backoff wait frees the half-open probe slot (not counted)', () => {
      virtual(({ cold, expectObservable, expectSubscriptions, at }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 100 });
        const events = recordEvents(breaker);
        at(0, () =>
          throwError(() => e503)
            .pipe(circuitBreak(breaker))
            .subscribe(ignore),
        );
        const probe = cold<string>('-#', undefined, e503);
        const next = cold<string>('-b|');
        // the probe fails at 101, waits 100 ms to retry, and is unsubscribed at 150, mid-wait
        expectObservable(probe.pipe(retryWithBackoff(retries), circuitBreak(breaker)), '100ms ^ 49ms !').toBe('');
        expectSubscriptions(probe.subscriptions).toBe('100ms ^!');
        at(150, () => expect(breaker.state).to.equal('half-open'));
        expectObservable(next.pipe(retryWithBackoff(retries), circuitBreak(breaker)), '151ms ^').toBe('151ms -b|');
        at(160, () =>
          expect(events).to.deep.equal([
            [0, 'closed', 'open', 'failure_threshold', 1],
            [100, 'open', 'half-open', 'reset_timeout', 0],
            [153, 'half-open', 'closed', 'probe_success', 0],
          ]),
        );
      });
    });

    it('in real time, around a promise-returning function: two 503s, then success; one success counted', async () => {
      const breaker = new CircuitBreaker({ failureThreshold: 1 });
      let calls = 0;
      const flaky = async (): Promise<string> => {
        calls++;
        if (calls < 3) throw new HttpError(503);
        return 'ok';
      };
      const value = await lastValueFrom(defer(flaky).pipe(retryWithBackoff({ maxRetries: 3, initialBackoffMs: 1, jitter: 'none' }), circuitBreak(breaker)));
      expect(value).to.equal('ok');
      expect(calls).to.equal(3);
      expect(breaker.state).to.equal('closed');
      expect(snapshotBreaker(breaker).consecutiveFailures).to.equal(0);
    });

    it('in real time: unsubscribing during the backoff wait frees the half-open slot', async () => {
      // a probe deadline far beyond the test, so a loaded machine can't time the probe out first
      const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 1, halfOpenTimeoutMs: 60_000 });
      await lastValueFrom(throwError(() => new HttpError(503)).pipe(circuitBreak(breaker))).catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 5));
      expect(breaker.state).to.equal('half-open');
      const probe = defer(async () => Promise.reject(new HttpError(503))).pipe(
        retryWithBackoff({ maxRetries: 3, initialBackoffMs: 10_000, jitter: 'none' }),
        circuitBreak(breaker),
      );
      const sub = probe.subscribe({ error: () => undefined });
      await new Promise((resolve) => setTimeout(resolve, 5)); // the attempt has failed; the retry waits 10 s
      sub.unsubscribe();
      expect(breaker.state).to.equal('half-open');
      // the slot is free: the next call is admitted as the probe, and its success closes the breaker
      expect(await lastValueFrom(of('fine').pipe(retryWithBackoff(), circuitBreak(breaker)))).to.equal('fine');
      expect(breaker.state).to.equal('closed');
    });

    it('totalTimeoutMs running out counts one failure (TotalTimeoutError) and cancels the attempt', () => {
      virtual(({ cold, expectObservable, expectSubscriptions, at }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 1 });
        const slow = cold<string>('-----');
        expectObservable(slow.pipe(retryWithBackoff({ ...retries, totalTimeoutMs: 3 }), circuitBreak(breaker))).toBe(
          '---#',
          undefined,
          new TotalTimeoutError(3, 3),
        );
        expectSubscriptions(slow.subscriptions).toBe('^--!');
        at(4, () => expect(breaker.state).to.equal('open'));
      });
    });
  });

  describe('pass-through and options', () => {
    it('passes values, completion and errors through unchanged while closed', () => {
      virtual(({ cold, expectObservable, expectSubscriptions }) => {
        const ok = cold('-a-b-c|');
        const ko = cold('-a-#', undefined, e503);
        expectObservable(ok.pipe(circuitBreak({}))).toBe('-a-b-c|');
        expectObservable(ko.pipe(circuitBreak({}))).toBe('-a-#', undefined, e503);
        expectSubscriptions(ok.subscriptions).toBe('^-----!');
      });
    });

    it('validates options when the operator is created, not when it is subscribed', () => {
      const error = ((): unknown => {
        try {
          circuitBreak({ failureThreshold: 0 });
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(error).to.be.instanceOf(InvalidOptionError);
      expect((error as InvalidOptionError).option).to.equal('failureThreshold');
      expect((error as InvalidOptionError).message).to.contain('got 0');
      expect(() => circuitBreak({ threshold: 3 } as never)).to.throw(InvalidOptionError, /"threshold"/);
    });

    it('a source that never emits and never ends keeps a closed breaker closed and schedules nothing', () => {
      const ts = testScheduler();
      ts.run(() => {
        const breaker = new CircuitBreaker({ scheduler: ts });
        const sub = NEVER.pipe(circuitBreak(breaker)).subscribe();
        expect(ts.actions).to.have.length(0);
        sub.unsubscribe();
        expect(breaker.state).to.equal('closed');
      });
    });
  });
});

describe('circuitBreak: isFailure throws (the guard rule)', () => {
  // the call counts as failed (the permit is settled, a half-open breaker re-opens) and fails
  // downstream with what isFailure threw: alone, after retryWithBackoff, and when the
  // retry's total budget runs out
  for (const shape of ['alone', 'after retryWithBackoff'] as const) {
    for (const kind of KINDS) {
      it(`${shape}, ${kind} source: the throw goes downstream and the breaker re-opens`, () => {
        const scheduler = new VirtualTimeScheduler();
        const boom = new Boom('isFailure');
        const breaker = halfOpenBreaker(scheduler, { isFailure: thrower(boom) });
        const { source, live, subscriptions } = failingSource(kind, scheduler, e503);
        const result =
          shape === 'alone' ? source.pipe(circuitBreak(breaker)) : source.pipe(retryWithBackoff({ maxRetries: 0, scheduler }), circuitBreak(breaker));
        const events: string[] = [];
        breaker.events$.subscribe((e) => events.push(`${e.from}>${e.to}:${e.reason}`));
        expectThrowDownstream(result, boom, { scheduler, live, subscriptions, breaker });
        expect(events[0]).to.equal('half-open>open:probe_failure');
      });
    }
  }
});
