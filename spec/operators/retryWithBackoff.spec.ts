import { expect } from 'chai';
import { asyncScheduler, defer, Observable, of, Subject, throwError, VirtualTimeScheduler } from 'rxjs';
import type { HealEvent } from '../../src/core/events/events.js';
import { HealHub } from '../../src/core/hub/hub.js';
import { BudgetExceededError, HttpError, InvalidOptionError, RetriesExhaustedError, ToolError, TotalTimeoutError } from '../../src/core/errors/errors.js';
import { type RetryInfo, retryWithBackoff, type RetryWithBackoffOptions } from '../../src/operators/retryWithBackoff.js';
import { circuitBreak } from '../../src/operators/circuitBreak.js';
import { Boom, expectThrowDownstream, failingSource, halfOpenBreaker, KINDS, thrower } from '../support/guards.js';
import { testScheduler } from '../support/marbles.js';
import { NodeTimerScheduler } from '../support/nodeTimers.js';

const e503 = new HttpError(503);
const e400 = new HttpError(400);

/** Subscribes the n-th time to the n-th observable (the last one repeats). */
function attempts<T>(...list: Observable<T>[]): { source: Observable<T>; count: () => number } {
  let n = 0;
  return { source: defer(() => list[Math.min(n++, list.length - 1)]!), count: () => n };
}

describe('retryWithBackoff', () => {
  describe('backoff timing (reference: 500 → 1 000 → 2 000 ms, capped at 30 000 ms)', () => {
    it('waits 500, 1000, 2000 ms between attempts, then errors with RetriesExhaustedError', () => {
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold('--#', undefined, e503);
        const result = source.pipe(retryWithBackoff({ jitter: 'none' }));
        const exhausted = new RetriesExhaustedError(4, [e503, e503, e503, e503]);
        expectObservable(result).toBe('3508ms #', undefined, exhausted);
        expectSubscriptions(source.subscriptions).toBe(['^-!', '502ms ^-!', '1504ms ^-!', '3506ms ^-!']);
      });
    });

    it('caps each delay at maxBackoffMs (30 000 by default)', () => {
      const delays: number[] = [];
      testScheduler().run(({ expectObservable }) => {
        const result = throwError(() => e503).pipe(retryWithBackoff({ jitter: 'none', maxRetries: 9, onRetry: (i) => delays.push(i.delayMs) }));
        // 500+1000+2000+4000+8000+16000+30000+30000+30000 = 121 500
        expectObservable(result).toBe('121500ms #', undefined, new RetriesExhaustedError(10, Array(10).fill(e503)));
      });
      expect(delays).to.deep.equal([500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
    });

    it('follows initialBackoffMs, backoffMultiplier and maxBackoffMs', () => {
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold('#', undefined, e503);
        const result = source.pipe(retryWithBackoff({ jitter: 'none', maxRetries: 4, initialBackoffMs: 10, backoffMultiplier: 3, maxBackoffMs: 50 }));
        expectObservable(result).toBe('140ms #', undefined, new RetriesExhaustedError(5, Array(5).fill(e503)));
        // waits: 10, 30, 50 (capped 90), 50 (capped 270)
        expectSubscriptions(source.subscriptions).toBe(['(^!)', '10ms (^!)', '40ms (^!)', '90ms (^!)', '140ms (^!)']);
      });
    });

    it('retries a synchronous failure after the wait, never recursively', () => {
      testScheduler().run(({ expectObservable }) => {
        const result = throwError(() => e503).pipe(retryWithBackoff({ jitter: 'none', maxRetries: 2 }));
        expectObservable(result).toBe('1500ms #', undefined, new RetriesExhaustedError(3, [e503, e503, e503]));
      });
    });

    it('succeeds when a retry succeeds, passing its values through', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const { source } = attempts(cold('-#', undefined, e503), cold('-#', undefined, e503), cold('-a-b|'));
        expectObservable(source.pipe(retryWithBackoff({ jitter: 'none' }))).toBe('1503ms a-b|');
      });
    });

    it('maxRetries: 0 gives up after the first failure with RetriesExhaustedError, never silently', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const source = cold('-#', undefined, e503);
        expectObservable(source.pipe(retryWithBackoff({ maxRetries: 0 }))).toBe('-#', undefined, new RetriesExhaustedError(1, [e503]));
      });
    });
  });

  describe('jitter', () => {
    const run = (jitter: 'full' | 'equal' | 'decorrelated', randoms: number[]): number[] => {
      const delays: number[] = [];
      let i = 0;
      testScheduler().run(({ flush }) => {
        throwError(() => e503)
          .pipe(retryWithBackoff({ jitter, maxRetries: randoms.length, random: () => randoms[i++] ?? 0, onRetry: (r) => delays.push(r.delayMs) }))
          .subscribe({ error: () => undefined });
        flush();
      });
      return delays;
    };

    it("'full' draws from [0, base)", () => {
      expect(run('full', [0.5, 0.25, 0, 0.999])).to.deep.equal([250, 250, 0, 3996]);
    });

    it("'equal' (the default) never waits less than half the base delay", () => {
      expect(run('equal', [0, 0.5, 0.999])).to.deep.equal([250, 750, 1999]);
      const delays: number[] = [];
      testScheduler().run(({ flush }) => {
        throwError(() => e503)
          .pipe(retryWithBackoff({ random: () => 0, onRetry: (r) => delays.push(r.delayMs) }))
          .subscribe({ error: () => undefined });
        flush();
      });
      expect(delays).to.deep.equal([250, 500, 1000]);
    });

    it("'decorrelated' draws from [initial, 3 × previous), capped", () => {
      // previous starts at 500: [500, 1500) → 1000; then [500, 3000) → 500; then [500, 1500) → 1500 - ε
      expect(run('decorrelated', [0.5, 0, 0.999])).to.deep.equal([1000, 500, 1499]);
    });

    it('clamps a random() outside [0, 1) instead of producing negative or oversized waits', () => {
      expect(run('full', [-3, 7])).to.deep.equal([0, 999]);
    });
  });

  describe('which errors are retried', () => {
    it('passes an error shouldRetry rejects through unchanged, at once (default: the classifier)', () => {
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold('--#', undefined, e400);
        expectObservable(source.pipe(retryWithBackoff())).toBe('--#', undefined, e400);
        expectSubscriptions(source.subscriptions).toBe('^-!');
      });
      let seen: unknown;
      of(1)
        .pipe(() => throwError(() => e400), retryWithBackoff())
        .subscribe({ error: (e: unknown) => (seen = e) });
      expect(seen).to.equal(e400);
    });

    it('does not retry programming errors or cancellation', () => {
      for (const error of [new TypeError('x is not a function'), Object.assign(new Error('aborted'), { name: 'AbortError' })]) {
        testScheduler().run(({ cold, expectObservable }) => {
          expectObservable(cold('-#', undefined, error).pipe(retryWithBackoff())).toBe('-#', undefined, error);
        });
      }
    });

    it('asks shouldRetry with the 1-based number of the retry that would follow', () => {
      const calls: [unknown, number][] = [];
      testScheduler().run(({ cold, expectObservable }) => {
        const boom = new Error('boom');
        const source = cold('-#', undefined, boom);
        const result = source.pipe(retryWithBackoff({ jitter: 'none', initialBackoffMs: 10, shouldRetry: (e, n) => (calls.push([e, n]), n < 3) }));
        // fails at 1, 12, 33 (waits 10 and 20); the 3rd retry is refused: boom passes through unchanged
        expectObservable(result).toBe('33ms #', undefined, boom);
      });
      expect(calls.map(([, n]) => n)).to.deep.equal([1, 2, 3]);
    });

    it('errors with what shouldRetry throws', () => {
      const bug = new Error('predicate bug');
      testScheduler().run(({ cold, expectObservable }) => {
        const result = cold('-#', undefined, e503).pipe(
          retryWithBackoff({
            shouldRetry: () => {
              throw bug;
            },
          }),
        );
        expectObservable(result).toBe('-#', undefined, bug);
      });
    });
  });

  describe("retryOn: 'all' (every error, as RxJS retry)", () => {
    it('retries a plain Error and a programming error that the default passes through', () => {
      for (const error of [new Error('flaky'), new TypeError('x is not a function')]) {
        testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
          const source = cold('-#', undefined, error);
          expectObservable(source.pipe(retryWithBackoff({ retryOn: 'all', maxRetries: 1, initialBackoffMs: 10, jitter: 'none' }))).toBe(
            '12ms #',
            undefined,
            new RetriesExhaustedError(2, [error, error]),
          );
          expectSubscriptions(source.subscriptions).toBe(['^!', '11ms ^!']);
        });
      }
    });

    it('never retries a cancellation, a crossed budget, or a non-idempotent tool that ran', () => {
      const aborted = Object.assign(new Error('aborted'), { name: 'AbortError' });
      const budget = new BudgetExceededError('modelCalls', 1, 2);
      const sent = new ToolError({ toolName: 'send_email', callId: 'c', args: {}, phase: 'execute', idempotent: false, message: 'HTTP 503', cause: e503 });
      for (const error of [aborted, budget, sent]) {
        testScheduler().run(({ cold, expectObservable }) => {
          expectObservable(cold('-#', undefined, error).pipe(retryWithBackoff({ retryOn: 'all' }))).toBe('-#', undefined, error);
        });
      }
    });

    it('never re-runs a non-idempotent tool that ran, whatever it failed with (a plain Error, an HTTP 400, a TypeError, a 503), and reports each withheld retry', () => {
      const hub = new HealHub();
      const seen: HealEvent[] = [];
      hub.events$.subscribe((e) => seen.push(e));
      const causes = [new Error('seat taken'), e400, new TypeError('x is not a function'), e503];
      for (const cause of causes) {
        const failed = new ToolError({ toolName: 'book_seat', callId: 'c', args: {}, phase: 'execute', idempotent: false, message: String(cause), cause });
        testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
          const source = cold('-#', undefined, failed);
          expectObservable(source.pipe(retryWithBackoff({ retryOn: 'all', hub, target: 'tool:book_seat' }))).toBe('-#', undefined, failed);
          expectSubscriptions(source.subscriptions).toBe('^!');
        });
      }
      expect(seen.map((e) => e.type === 'retry-withheld' && [e.target, e.reason, e.category])).to.deep.equal([
        ['tool:book_seat', 'not_idempotent', 'unknown'],
        ['tool:book_seat', 'not_idempotent', 'bad_request'],
        ['tool:book_seat', 'not_idempotent', 'programming'],
        ['tool:book_seat', 'not_idempotent', 'service_unavailable'],
      ]);
    });

    it("reports no withheld retry for a non-idempotent tool's error that retryOn: 'all' does not retry anyway (a cancellation)", () => {
      const hub = new HealHub();
      const seen: HealEvent[] = [];
      hub.events$.subscribe((e) => seen.push(e));
      const aborted = Object.assign(new Error('aborted'), { name: 'AbortError' });
      const cancelled = new ToolError({
        toolName: 'book_seat',
        callId: 'c',
        args: {},
        phase: 'execute',
        idempotent: false,
        message: 'aborted',
        cause: aborted,
      });
      testScheduler().run(({ cold, expectObservable }) => {
        expectObservable(cold('-#', undefined, cancelled).pipe(retryWithBackoff({ retryOn: 'all', hub }))).toBe('-#', undefined, cancelled);
      });
      expect(seen).to.deep.equal([]);
    });

    it("'retryable' is the default rule", () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const boom = new Error('boom');
        expectObservable(cold('-#', undefined, boom).pipe(retryWithBackoff({ retryOn: 'retryable' }))).toBe('-#', undefined, boom);
      });
    });

    it('the exact port of retry(3): -a-a-a-a#, giving up with RetriesExhaustedError', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const boom = new Error('flaky');
        const source = cold('-a#', undefined, boom);
        const port = retryWithBackoff<string>({ retryOn: 'all', maxRetries: 3, initialBackoffMs: 0, jitter: 'none', afterEmit: 'resubscribe' });
        expectObservable(source.pipe(port)).toBe('-a-a-a-a#', undefined, new RetriesExhaustedError(4, [boom, boom, boom, boom]));
      });
    });
  });

  describe('retry-after', () => {
    it('waits the server-requested time when it is longer than the backoff', () => {
      const e429 = new HttpError(429, { 'Retry-After': '2' });
      testScheduler().run(({ cold, expectObservable }) => {
        const { source } = attempts(cold('#', undefined, e429), cold('(a|)'));
        expectObservable(source.pipe(retryWithBackoff({ jitter: 'none' }))).toBe('2000ms (a|)');
      });
      testScheduler().run(({ cold, expectSubscriptions, expectObservable }) => {
        const src = cold('#', undefined, e429);
        expectObservable(src.pipe(retryWithBackoff({ jitter: 'none', maxRetries: 1 }))).toBe('2000ms #', undefined, new RetriesExhaustedError(2, [e429, e429]));
        expectSubscriptions(src.subscriptions).toBe(['(^!)', '2000ms (^!)']);
      });
    });

    it('keeps the backoff when retry-after is shorter', () => {
      const e429 = new HttpError(429, { 'retry-after-ms': '100' });
      testScheduler().run(({ cold, expectSubscriptions, flush }) => {
        const src = cold('#', undefined, e429);
        src.pipe(retryWithBackoff({ jitter: 'none', maxRetries: 1 })).subscribe({ error: () => undefined });
        flush();
        expectSubscriptions(src.subscriptions).toBe(['(^!)', '500ms (^!)']);
      });
    });

    it('reads an HTTP-date retry-after against scheduler time', () => {
      // virtual time starts at 0 = the epoch, so this date is 3 s into virtual time
      const e503Date = new HttpError(503, new Headers({ 'retry-after': new Date(3000).toUTCString() }));
      testScheduler().run(({ cold, expectSubscriptions, flush }) => {
        const src = cold('#', undefined, e503Date);
        src.pipe(retryWithBackoff({ jitter: 'none', maxRetries: 1 })).subscribe({ error: () => undefined });
        flush();
        expectSubscriptions(src.subscriptions).toBe(['(^!)', '3000ms (^!)']);
      });
    });

    it('gives up at once when retry-after exceeds maxRetryAfterMs (60 000 by default)', () => {
      const e429 = new HttpError(429, { 'retry-after': String(16 * 24 * 3600) }); // 16 days
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const src = cold('-#', undefined, e429);
        const expected = new RetriesExhaustedError(1, [e429], 'retry_after_too_long');
        expectObservable(src.pipe(retryWithBackoff())).toBe('-#', undefined, expected);
        expectSubscriptions(src.subscriptions).toBe('^!');
      });
      let error: unknown;
      throwError(() => new HttpError(429, { 'retry-after': '5' }))
        .pipe(retryWithBackoff({ maxRetryAfterMs: 4000 }))
        .subscribe({ error: (e: unknown) => (error = e) });
      expect(error).to.be.instanceOf(RetriesExhaustedError);
      expect((error as RetriesExhaustedError).reason).to.equal('retry_after_too_long');
      expect((error as RetriesExhaustedError).attempts).to.equal(1);
    });
  });

  describe('RetriesExhaustedError', () => {
    it('carries attempts, every error in order, and the last one as cause', () => {
      const errors = [new HttpError(503), new HttpError(502), new HttpError(500)];
      let caught: unknown;
      testScheduler().run(({ flush }) => {
        let n = 0;
        defer(() => throwError(() => errors[n++]))
          .pipe(retryWithBackoff({ maxRetries: 2 }))
          .subscribe({ error: (e: unknown) => (caught = e) });
        flush();
      });
      expect(caught).to.be.instanceOf(RetriesExhaustedError);
      const ex = caught as RetriesExhaustedError;
      expect(ex.name).to.equal('RetriesExhaustedError');
      expect(ex.attempts).to.equal(3);
      expect(ex.errors).to.deep.equal(errors);
      expect(ex.errors[1]).to.equal(errors[1]);
      expect(ex.cause).to.equal(errors[2]);
      expect(ex.reason).to.equal('max_retries');
    });
  });

  describe('totalTimeoutMs', () => {
    it('cancels the attempt in flight when the budget runs out', () => {
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const slow = cold('-----------a|');
        const { source } = attempts(cold('-#', undefined, e503), slow);
        const result = source.pipe(retryWithBackoff({ jitter: 'none', initialBackoffMs: 5, totalTimeoutMs: 10 }));
        expectObservable(result).toBe('10ms #', undefined, new TotalTimeoutError(10, 10, { cause: e503 }));
        // attempt 2 starts after the 5 ms wait, at 6, and is cancelled by the deadline at 10
        expectSubscriptions(slow.subscriptions).toBe('6ms ^---!');
      });
    });

    it('fails at once, without waiting, when the next wait would end past the budget', () => {
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const src = cold('-#', undefined, e503);
        // attempt 1 fails at 1, waits 500 → attempt 2 fails at 502; a 1000 ms wait would end at 1502 > 1000
        const result = src.pipe(retryWithBackoff({ jitter: 'none', totalTimeoutMs: 1000 }));
        expectObservable(result).toBe('502ms #', undefined, new TotalTimeoutError(1000, 502, { cause: e503 }));
        expectSubscriptions(src.subscriptions).toBe(['^!', '501ms ^!']);
      });
    });

    it('carries the budget, the elapsed time and the last error', () => {
      let caught: unknown;
      testScheduler().run(({ cold, flush }) => {
        cold('-#', undefined, e503)
          .pipe(retryWithBackoff({ jitter: 'none', totalTimeoutMs: 1000 }))
          .subscribe({ error: (e: unknown) => (caught = e) });
        flush();
      });
      expect(caught).to.be.instanceOf(TotalTimeoutError);
      const t = caught as TotalTimeoutError;
      expect([t.timeoutMs, t.elapsedMs, t.cause]).to.deep.equal([1000, 502, e503]);
    });

    it('does not affect a source that finishes in time, and leaves no timer behind', () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        expectObservable(cold('-a|').pipe(retryWithBackoff({ totalTimeoutMs: 100 }))).toBe('-a|');
      });
      expect(ts.actions).to.have.length(0);
    });
  });

  describe('cancellation', () => {
    it('unsubscribing during a wait cancels it: the source is not subscribed again', () => {
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const src = cold('-#', undefined, e503);
        expectObservable(src.pipe(retryWithBackoff({ jitter: 'none' })), '^ 300ms !').toBe('');
        expectSubscriptions(src.subscriptions).toBe('^!');
      });
    });

    it('unsubscribing during an attempt unsubscribes the source', () => {
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const src = cold('-#', undefined, e503);
        const slow = cold('----------a|');
        const { source } = attempts(src, slow);
        expectObservable(source.pipe(retryWithBackoff({ jitter: 'none' })), '^ 504ms !').toBe('');
        expectSubscriptions(slow.subscriptions).toBe('501ms ^---!');
      });
    });
  });

  describe('streams are not requests (afterEmit)', () => {
    it("'error' (default): an attempt that emitted is not retried; its error passes on unchanged", () => {
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const src = cold('-a-b-#', undefined, e503);
        expectObservable(src.pipe(retryWithBackoff())).toBe('-a-b-#', undefined, e503);
        expectSubscriptions(src.subscriptions).toBe('^----!');
      });
    });

    it("'error' still retries attempts that failed before emitting", () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const { source } = attempts(cold('-#', undefined, e503), cold('-a-#', undefined, e503));
        expectObservable(source.pipe(retryWithBackoff({ jitter: 'none' }))).toBe('502ms a-#', undefined, e503);
      });
    });

    it("'restart': emits onRestart(info) first, then retries", () => {
      const infos: RetryInfo[] = [];
      testScheduler().run(({ cold, expectObservable }) => {
        const { source } = attempts(cold<string>('-a-b-#', undefined, e503), cold<string>('-a-b-c|'));
        const result = source.pipe(
          retryWithBackoff<string>({
            jitter: 'none',
            afterEmit: 'restart',
            onRestart: (info) => (infos.push(info), 'R'),
          }),
        );
        expectObservable(result).toBe('-a-b-R 499ms -a-b-c|');
      });
      expect(infos).to.have.length(1);
      expect(infos[0]).to.include({ attempt: 1, maxRetries: 3, delayMs: 500, emitted: true, error: e503 });
      expect(infos[0]!.classification.category).to.equal('service_unavailable');
    });

    it("'restart' does not emit a restart marker for an attempt that emitted nothing", () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const { source } = attempts(cold<string>('-#', undefined, e503), cold<string>('-a|'));
        const result = source.pipe(retryWithBackoff<string>({ jitter: 'none', afterEmit: 'restart', onRestart: () => 'R' }));
        expectObservable(result).toBe('502ms a|');
      });
    });

    it("'resubscribe': plain RxJS behaviour, values of both attempts pass", () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const { source } = attempts(cold('-a-#', undefined, e503), cold('-b|'));
        expectObservable(source.pipe(retryWithBackoff({ jitter: 'none', afterEmit: 'resubscribe' }))).toBe('-a 501ms -b|');
      });
    });

    it('resetOnSuccess restarts the count and the backoff after a value', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const src = cold('-a#', undefined, e503);
        const result = src.pipe(retryWithBackoff({ jitter: 'none', afterEmit: 'resubscribe', resetOnSuccess: true, maxRetries: 1 }));
        // every attempt emits, so the count never passes 1 and every wait is 500 ms
        expectObservable(result, '^ 1600ms !').toBe('-a 500ms -a 500ms -a 500ms -a');
      });
      testScheduler().run(({ cold, expectObservable }) => {
        const src = cold('-a#', undefined, e503);
        const result = src.pipe(retryWithBackoff({ jitter: 'none', afterEmit: 'resubscribe', maxRetries: 1 }));
        expectObservable(result).toBe('-a 500ms -a#', undefined, new RetriesExhaustedError(2, [e503, e503]));
      });
    });
  });

  describe('hub events', () => {
    it("reports 'retry' before each wait and one 'retry-succeeded' when a retried attempt succeeds", () => {
      const hub = new HealHub();
      const seen: [number, HealEvent][] = [];
      testScheduler().run(({ cold, expectObservable }) => {
        hub.events$.subscribe((e) => seen.push([asyncScheduler.now(), e]));
        const { source } = attempts(cold('-#', undefined, e503), cold('-#', undefined, e503), cold('-a-b|'));
        expectObservable(source.pipe(retryWithBackoff({ jitter: 'none', hub, target: 'tool:get_weather' }))).toBe('1503ms a-b|');
      });
      expect(seen).to.deep.equal([
        [1, { type: 'retry', target: 'tool:get_weather', attempt: 1, max: 3, delayMs: 500, category: 'service_unavailable', error: 'HTTP 503' }],
        [502, { type: 'retry', target: 'tool:get_weather', attempt: 2, max: 3, delayMs: 1000, category: 'service_unavailable', error: 'HTTP 503' }],
        [1503, { type: 'retry-succeeded', target: 'tool:get_weather', attempt: 3 }],
      ]);
    });

    it("reports 'retry-withheld' when a non-idempotent tool failed with an error worth a retry, and passes the error on", () => {
      const hub = new HealHub();
      const seen: HealEvent[] = [];
      hub.events$.subscribe((e) => seen.push(e));
      const sent = new ToolError({ toolName: 'send_email', callId: 'c', args: {}, phase: 'execute', idempotent: false, message: 'HTTP 503', cause: e503 });
      testScheduler().run(({ cold, expectObservable }) => {
        expectObservable(cold('-#', undefined, sent).pipe(retryWithBackoff({ hub, target: 'tool:send_email' }))).toBe('-#', undefined, sent);
      });
      expect(seen).to.deep.equal([
        { type: 'retry-withheld', target: 'tool:send_email', reason: 'not_idempotent', category: 'service_unavailable', error: 'HTTP 503' },
      ]);
    });

    it("reports no 'retry-withheld' for an error not worth a retry anyway, nor when shouldRetry decides", () => {
      const hub = new HealHub();
      const seen: HealEvent[] = [];
      hub.events$.subscribe((e) => seen.push(e));
      const rejected = new ToolError({ toolName: 'send_email', callId: 'c', args: {}, phase: 'execute', idempotent: false, message: 'HTTP 400', cause: e400 });
      const sent = new ToolError({ toolName: 'send_email', callId: 'c', args: {}, phase: 'execute', idempotent: false, message: 'HTTP 503', cause: e503 });
      testScheduler().run(({ cold, expectObservable }) => {
        expectObservable(cold('-#', undefined, rejected).pipe(retryWithBackoff({ hub }))).toBe('-#', undefined, rejected);
        expectObservable(cold('-#', undefined, sent).pipe(retryWithBackoff({ hub, shouldRetry: () => false }))).toBe('-#', undefined, sent);
      });
      expect(seen).to.deep.equal([]);
    });

    it("reports no 'retry-succeeded' when the first attempt succeeds", () => {
      const hub = new HealHub();
      const seen: HealEvent[] = [];
      hub.events$.subscribe((e) => seen.push(e));
      of(1).pipe(retryWithBackoff({ hub })).subscribe();
      expect(seen).to.deep.equal([]);
    });
  });

  describe('onRetry', () => {
    it('reports each retry before its wait', () => {
      const seen: Pick<RetryInfo, 'attempt' | 'delayMs' | 'emitted'>[] = [];
      testScheduler().run(({ cold, flush }) => {
        cold('-#', undefined, e503)
          .pipe(retryWithBackoff({ jitter: 'none', maxRetries: 2, onRetry: ({ attempt, delayMs, emitted }) => seen.push({ attempt, delayMs, emitted }) }))
          .subscribe({ error: () => undefined });
        flush();
      });
      expect(seen).to.deep.equal([
        { attempt: 1, delayMs: 500, emitted: false },
        { attempt: 2, delayMs: 1000, emitted: false },
      ]);
    });

    it('errors with what onRetry throws, and makes no further attempt', () => {
      const bug = new Error('callback bug');
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const src = cold('-#', undefined, e503);
        const result = src.pipe(
          retryWithBackoff({
            onRetry: () => {
              throw bug;
            },
          }),
        );
        expectObservable(result).toBe('-#', undefined, bug);
        expectSubscriptions(src.subscriptions).toBe('^!');
      });
    });
  });

  it('keeps each subscription independent', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const src = cold('-#', undefined, e503);
      const op = src.pipe(retryWithBackoff({ jitter: 'none', maxRetries: 1 }));
      expectObservable(op).toBe('502ms #', undefined, new RetriesExhaustedError(2, [e503, e503]));
      expectObservable(op, '100ms ^').toBe('602ms #', undefined, new RetriesExhaustedError(2, [e503, e503]));
    });
  });

  describe('option validation (at construction)', () => {
    const bad: [string, unknown, string][] = [
      ['maxRetries', -1, '-1'],
      ['maxRetries', 1.5, '1.5'],
      ['initialBackoffMs', -5, '-5'],
      ['initialBackoffMs', NaN, 'NaN'],
      ['backoffMultiplier', 0.5, '0.5'],
      ['maxBackoffMs', Infinity, 'Infinity'],
      ['jitter', 'random', '"random"'],
      ['random', 42, '42'],
      ['shouldRetry', 'yes', '"yes"'],
      ['retryOn', 'everything', '"everything"'],
      ['maxRetryAfterMs', -1, '-1'],
      ['totalTimeoutMs', 0, '0'],
      ['resetOnSuccess', 'true', '"true"'],
      ['afterEmit', 'concat', '"concat"'],
      ['onRetry', {}, '{}'],
      ['scheduler', {}, '{}'],
    ];
    for (const [option, value, shown] of bad) {
      it(`rejects ${option}: ${shown}`, () => {
        let caught: unknown;
        try {
          retryWithBackoff({ [option]: value } as never);
        } catch (e) {
          caught = e;
        }
        expect(caught).to.be.instanceOf(InvalidOptionError);
        const err = caught as InvalidOptionError;
        expect(err.option).to.equal(option);
        expect(err.target).to.equal('retryWithBackoff');
        expect(err.message).to.contain(`"${option}"`).and.to.contain(`got ${shown}`);
        if (typeof value === 'number' && Number.isNaN(value)) expect(err.value).to.be.NaN;
        else expect(err.value).to.equal(value);
      });
    }

    it('rejects an unknown option, listing the known ones', () => {
      expect(() => retryWithBackoff({ maxRetry: 3 } as never)).to.throw(InvalidOptionError, /"maxRetry".*maxRetries/);
    });

    it('rejects retryOn together with shouldRetry (one rule decides)', () => {
      expect(() => retryWithBackoff({ retryOn: 'all', shouldRetry: () => true })).to.throw(InvalidOptionError, /"retryOn".*absent when shouldRetry is given/);
    });

    it("requires onRestart with afterEmit: 'restart', and only then", () => {
      expect(() => retryWithBackoff({ afterEmit: 'restart' } as never)).to.throw(
        InvalidOptionError,
        /"onRestart" must be a function when afterEmit is 'restart'/,
      );
      expect(() => retryWithBackoff({ onRestart: () => 1 } as never)).to.throw(InvalidOptionError, /"afterEmit"/);
    });

    it('rejects a non-object', () => {
      expect(() => retryWithBackoff(3 as never)).to.throw(InvalidOptionError, /"options" must be a plain object, got 3/);
    });

    it('treats undefined values as defaults and accepts Infinity where documented', () => {
      expect(() => retryWithBackoff({ maxRetries: undefined, maxRetryAfterMs: Infinity })).not.to.throw();
      expect(() => retryWithBackoff({ maxRetries: Infinity, totalTimeoutMs: 5000 })).not.to.throw();
    });
  });

  it('works with a Subject source and a real error path (no TestScheduler)', () => {
    const subject = new Subject<number>();
    const values: number[] = [];
    let error: unknown;
    subject.pipe(retryWithBackoff()).subscribe({ next: (v) => values.push(v), error: (e: unknown) => (error = e) });
    subject.next(1);
    subject.error(e400);
    expect(values).to.deep.equal([1]);
    expect(error).to.equal(e400);
  });
});

describe('retryWithBackoff: a user callback that throws (the guard rule)', () => {
  // each callback throws; the result errors with what it threw, alone and piped into
  // circuitBreak (the permit is settled), with a source failing synchronously or later
  const cases: [string, (boom: Boom) => RetryWithBackoffOptions<unknown>, readonly unknown[]][] = [
    ['classifier', (boom) => ({ classifier: thrower(boom) }), []],
    ['random', (boom) => ({ jitter: 'full', random: thrower(boom) }), []],
    ['shouldRetry', (boom) => ({ shouldRetry: thrower(boom) }), []],
    ['onRetry', (boom) => ({ onRetry: thrower(boom) }), []],
    ['onRestart', (boom) => ({ afterEmit: 'restart', onRestart: thrower(boom) }), ['partial']],
  ];
  for (const [callback, options, values] of cases) {
    for (const fused of [false, true]) {
      for (const kind of KINDS) {
        it(`${callback} throws → the error downstream (${fused ? 'piped into circuitBreak' : 'alone'}, ${kind} source)`, () => {
          const scheduler = new VirtualTimeScheduler();
          const boom = new Boom(callback);
          const { source, live, subscriptions } = failingSource(kind, scheduler, e503, values);
          const breaker = fused ? halfOpenBreaker(scheduler) : undefined;
          const retry = retryWithBackoff<unknown>({ ...options(boom), scheduler } as RetryWithBackoffOptions<unknown>);
          const result = breaker ? source.pipe(retry, circuitBreak(breaker)) : source.pipe(retry);
          const run = expectThrowDownstream(result, boom, { scheduler, live, subscriptions, breaker });
          expect(run.values).to.deep.equal(values);
          expect(subscriptions()).to.equal(1);
        });
      }
    }
  }

  it('a totalTimeoutMs budget running out under a breaker whose isFailure throws: that throw goes downstream', () => {
    const scheduler = new VirtualTimeScheduler();
    const boom = new Boom('isFailure');
    const breaker = halfOpenBreaker(scheduler, { isFailure: thrower(boom) });
    const never = new Observable<unknown>(() => undefined);
    const result = never.pipe(retryWithBackoff({ totalTimeoutMs: 1_000, scheduler }), circuitBreak(breaker));
    expectThrowDownstream(result, boom, { scheduler, breaker });
  });
});

describe('retryWithBackoff: delays above 2³¹−1 ms (Node clamps such a timer to 1 ms)', () => {
  const DAY = 86_400_000;

  it('a 30-day retry-after with maxRetryAfterMs: Infinity waits 30 days, not 1 ms', () => {
    const scheduler = new NodeTimerScheduler();
    const e429 = new HttpError(429, { 'retry-after': String(30 * 86_400) });
    const { source, subscriptions } = failingSource('async', scheduler, e429);
    const errors: unknown[] = [];
    const sub = source.pipe(retryWithBackoff({ maxRetryAfterMs: Infinity, maxRetries: 1, scheduler })).subscribe({ error: (e: unknown) => errors.push(e) });
    scheduler.advanceTo(30 * DAY);
    expect(subscriptions()).to.equal(1);
    scheduler.advanceTo(30 * DAY + 1);
    expect(subscriptions()).to.equal(2);
    expect(scheduler.warnings).to.deep.equal([]);
    scheduler.flush();
    expect(errors).to.have.length(1);
    expect(errors[0]).to.be.instanceOf(RetriesExhaustedError);
    sub.unsubscribe();
  });

  it('totalTimeoutMs: 3e9 gives up at 3e9 ms, not after 1 ms (alone and piped into circuitBreak)', () => {
    for (const fused of [false, true]) {
      const scheduler = new NodeTimerScheduler();
      const never = new Observable<unknown>(() => undefined);
      const retry = retryWithBackoff<unknown>({ totalTimeoutMs: 3e9, scheduler });
      const result = fused ? never.pipe(retry, circuitBreak({ scheduler })) : never.pipe(retry);
      const errors: unknown[] = [];
      result.subscribe({ error: (e: unknown) => errors.push([scheduler.now(), e]) });
      scheduler.advanceTo(3e9 - 1);
      expect(errors).to.deep.equal([]);
      scheduler.advanceTo(3e9);
      expect(errors).to.have.length(1);
      expect(scheduler.warnings).to.deep.equal([]);
    }
  });

  it('in virtual time (TestScheduler) the same 3e9 budget is the same marble', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('-').pipe(retryWithBackoff({ totalTimeoutMs: 3e9 }))).toBe('3000000000ms #', undefined, new TotalTimeoutError(3e9, 3e9));
    });
  });
});
