import { expect } from 'chai';
import { asapScheduler, defer, lastValueFrom, NEVER, of, Subscription, take, throwError, type Observable } from 'rxjs';
import { CircuitBreaker, type CircuitPermit } from '../../src/core/breaker/CircuitBreaker.js';
import { snapshotBreaker } from '../../src/core/breaker/persist.js';
import { CircuitOpenError, HttpError, InvalidOptionError, RetriesExhaustedError, TotalTimeoutError } from '../../src/core/errors/errors.js';
import type { HealEvent } from '../../src/core/events/events.js';
import { HealHub } from '../../src/core/hub/hub.js';
import { callPolicy } from '../../src/operators/callPolicy.js';
import { circuitBreak } from '../../src/operators/circuitBreak.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { testScheduler } from '../support/marbles.js';

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Collects what a subscription sees. */
function observe<T>(o: Observable<T>): { log: string[]; sub: Subscription } {
  const log: string[] = [];
  const sub = o.subscribe({
    next: (v) => log.push(`next ${String(v)}`),
    error: (e: unknown) => log.push(`error ${(e as Error).name}`),
    complete: () => log.push('complete'),
  });
  return { log, sub };
}

describe('callPolicy', () => {
  describe('options', () => {
    it('rejects bad options by name, nested ones by their path', () => {
      expect(() => callPolicy({ retry: 1 as never })).to.throw(InvalidOptionError, 'callPolicy: option "retry"');
      expect(() => callPolicy({ breaker: 'b' as never })).to.throw(InvalidOptionError, 'callPolicy: option "breaker"');
      expect(() => callPolicy({ hub: {} as never })).to.throw(InvalidOptionError, 'callPolicy: option "hub"');
      expect(() => callPolicy({ retries: 3 } as never)).to.throw(InvalidOptionError, 'option "retries"');
      expect(() => callPolicy({ retry: { maxRetries: -1 } })).to.throw(
        InvalidOptionError,
        'callPolicy: option "retry.maxRetries" must be a non-negative integer or Infinity, got -1',
      );
      expect(() => callPolicy({ breaker: { failureThreshold: 0 } })).to.throw(
        InvalidOptionError,
        'callPolicy: option "breaker.failureThreshold" must be a positive integer, got 0',
      );
      const error = (() => {
        try {
          callPolicy({ retry: { jitter: 'lots' as never } });
        } catch (e) {
          return e as InvalidOptionError;
        }
        return undefined;
      })();
      expect(error?.option).to.equal('retry.jitter');
      expect(error?.value).to.equal('lots');
    });

    it('defaults to a retry and a breaker of its own; false turns either off', () => {
      expect(callPolicy().breaker).to.be.instanceOf(CircuitBreaker);
      expect(callPolicy({ breaker: false }).breaker).to.equal(undefined);
      const shared = new CircuitBreaker({ name: 'shared' });
      expect(callPolicy({ breaker: shared }).breaker).to.equal(shared);
      expect(callPolicy({ breaker: { name: 'own' } }).breaker?.name).to.equal('own');
    });
  });

  describe('promises', () => {
    it('a resolved call: the value, then completion, and a success for the breaker', async () => {
      const breaker = new CircuitBreaker({ failureThreshold: 1 });
      const policy = callPolicy({ breaker });
      expect(await lastValueFrom(policy.call(async () => 42))).to.equal(42);
      expect(snapshotBreaker(breaker).consecutiveFailures).to.equal(0);
    });

    it('a rejected call is retried (work runs again), then gives up as retryWithBackoff does', async () => {
      let runs = 0;
      const policy = callPolicy({ retry: { maxRetries: 2, initialBackoffMs: 0, scheduler: asapScheduler }, breaker: false });
      const error = await lastValueFrom(policy.call(() => (runs++, Promise.reject(new HttpError(503))))).catch((e: unknown) => e);
      expect(runs).to.equal(3);
      expect(error).to.be.instanceOf(RetriesExhaustedError);
      expect((error as RetriesExhaustedError).attempts).to.equal(3);
    });

    it('a synchronous throw in work is an attempt that failed', async () => {
      let runs = 0;
      const policy = callPolicy({ retry: { maxRetries: 1, initialBackoffMs: 0, scheduler: asapScheduler }, breaker: false });
      const value = await lastValueFrom(
        policy.call(() => {
          if (runs++ === 0) throw new HttpError(503);
          return Promise.resolve('second');
        }),
      );
      expect([runs, value]).to.deep.equal([2, 'second']);
    });

    it('an error not worth a retry passes through unchanged, and the breaker counts what its isFailure accepts', async () => {
      const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 60_000 });
      const policy = callPolicy({ breaker });
      const bad = new HttpError(400);
      expect(await lastValueFrom(policy.call(() => Promise.reject(bad))).catch((e: unknown) => e)).to.equal(bad);
      expect(breaker.state).to.equal('closed');
      const down = new HttpError(503);
      const noRetry = callPolicy({ retry: false, breaker });
      expect(await lastValueFrom(noRetry.call(() => Promise.reject(down))).catch((e: unknown) => e)).to.equal(down);
      expect(breaker.state).to.equal('open');
    });

    it('a breaker whose isFailure throws: the call fails with what it threw and counts as failed, as circuitBreak does (the guard rule)', async () => {
      const boom = new Error('isFailure broke');
      const breaker = new CircuitBreaker({
        failureThreshold: 1,
        resetTimeoutMs: 60_000,
        isFailure: () => {
          throw boom;
        },
      });
      const noRetry = callPolicy({ retry: false, breaker });
      expect(await lastValueFrom(noRetry.call(() => Promise.reject(new HttpError(503)))).catch((e: unknown) => e)).to.equal(boom);
      expect(breaker.state).to.equal('open');
      const piped = new CircuitBreaker({
        failureThreshold: 1,
        resetTimeoutMs: 60_000,
        isFailure: () => {
          throw boom;
        },
      });
      expect(await lastValueFrom(defer(() => Promise.reject(new HttpError(503))).pipe(circuitBreak(piped))).catch((e: unknown) => e)).to.equal(boom);
    });

    it('an open breaker rejects at once, never calls work, and reports the rejection to the hub', () => {
      const breaker = new CircuitBreaker({ name: 'tool:x' });
      breaker.isolate();
      const hub = new HealHub();
      const events: HealEvent[] = [];
      hub.events$.subscribe((e) => events.push(e));
      let runs = 0;
      const { log } = observe(callPolicy({ breaker, hub }).call(() => (runs++, Promise.resolve(1))));
      expect(log).to.deep.equal(['error CircuitOpenError']);
      expect(runs).to.equal(0);
      expect(events).to.deep.include({ type: 'circuit', breaker: 'tool:x', kind: 'rejected', retryAfterMs: Infinity });
    });

    it('unsubscribing before the promise settles aborts the signal and gives the half-open slot back', async () => {
      const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 0, halfOpenMaxCalls: 1 });
      (breaker.acquire() as CircuitPermit).failure(new HttpError(503));
      expect(breaker.state).to.equal('half-open');
      let signal: AbortSignal | undefined;
      const { log, sub } = observe(
        callPolicy({ breaker }).call(({ signal: s }) => {
          signal = s;
          return new Promise<number>(() => undefined);
        }),
      );
      // the probe slot is taken
      expect(breaker.acquire()).to.be.instanceOf(CircuitOpenError);
      sub.unsubscribe();
      expect(signal?.aborted).to.equal(true);
      expect((signal?.reason as DOMException).name).to.equal('AbortError');
      expect(log).to.deep.equal([]);
      // released, not counted: the slot is free again
      expect(breaker.state).to.equal('half-open');
      expect(breaker.acquire()).not.to.be.instanceOf(CircuitOpenError);
    });

    it('no AbortController is made unless work reads the signal, and none is aborted after the call ended', async () => {
      let signal: AbortSignal | undefined;
      const { log, sub } = observe(callPolicy().call((context) => ((signal = context.signal), Promise.resolve('v'))));
      await settle();
      sub.unsubscribe();
      expect(log).to.deep.equal(['next v', 'complete']);
      expect(signal?.aborted).to.equal(false);
    });

    it('a consumer that leaves while handling the value: the call counts as a success', async () => {
      const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 0 });
      (breaker.acquire() as CircuitPermit).failure(new HttpError(503));
      expect(breaker.state).to.equal('half-open');
      const seen: number[] = [];
      callPolicy({ breaker })
        .call(() => Promise.resolve(7))
        .pipe(take(1))
        .subscribe((v) => seen.push(v));
      await settle();
      expect(seen).to.deep.equal([7]);
      expect(breaker.state).to.equal('closed');
    });
  });

  describe('observables', () => {
    it('retries an observable call in virtual time exactly as the operators do', () => {
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold('-#', undefined, new HttpError(503));
        const policy = callPolicy({ retry: { maxRetries: 2, initialBackoffMs: 10, jitter: 'none' }, breaker: { failureThreshold: 5 } });
        expectObservable(policy.call(() => source)).toBe(
          '33ms #',
          undefined,
          new RetriesExhaustedError(3, [new HttpError(503), new HttpError(503), new HttpError(503)]),
        );
        expectSubscriptions(source.subscriptions).toBe(['^!', '11ms ^!', '32ms ^!']);
      });
    });

    it('a total budget runs the call through the operators (armed when the call starts)', () => {
      testScheduler().run(({ expectObservable }) => {
        const policy = callPolicy({ retry: { totalTimeoutMs: 50 }, breaker: false });
        expectObservable(policy.call(() => NEVER)).toBe('50ms #', undefined, new TotalTimeoutError(50, 50));
      });
    });

    it('unsubscribing an unfinished observable attempt aborts its signal', () => {
      let signal: AbortSignal | undefined;
      const sub = callPolicy()
        .call((context) => ((signal = context.signal), NEVER))
        .subscribe();
      sub.unsubscribe();
      expect(signal?.aborted).to.equal(true);
    });

    it('arrays and other ObservableInputs work as with defer', () => {
      const { log } = observe(callPolicy({ breaker: false }).call(() => [1, 2]));
      expect(log).to.deep.equal(['next 1', 'next 2', 'complete']);
    });
  });

  it('is cold: each subscription is one more call', async () => {
    let runs = 0;
    const call$ = callPolicy().call(() => Promise.resolve(++runs));
    expect(runs).to.equal(0);
    expect([await lastValueFrom(call$), await lastValueFrom(call$)]).to.deep.equal([1, 2]);
  });

  it('throws nothing else on junk work results: an error notification, as defer does', () => {
    const { log } = observe(callPolicy({ breaker: false, retry: false }).call(() => 42 as never));
    const plain = observe(defer(() => 42 as never));
    expect(log).to.deep.equal(plain.log);
    expect(log[0]).to.match(/^error /);
  });

  it('of() through the policy equals of() through defer', () => {
    expect(observe(callPolicy().call(() => of(1, 2))).log).to.deep.equal(observe(defer(() => of(1, 2)).pipe(retryWithBackoff(), circuitBreak())).log);
    expect(observe(callPolicy({ retry: false }).call(() => throwError(() => new HttpError(400)))).log).to.deep.equal(['error HttpError']);
  });
});
