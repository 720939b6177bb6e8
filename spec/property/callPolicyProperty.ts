/**
 * `callPolicy({ retry, breaker }).call(work)` is `abortable(work)` through `retryWithBackoff(retry)`
 * and `circuitBreak(breaker)`, built from those very operators; this property checks a user sees
 * no difference from `defer(work).pipe(retryWithBackoff(retry), circuitBreak(breaker))`: random
 * retry options, breaker options and a random schedule of overlapping calls (each maybe
 * unsubscribed early) run both ways in virtual time, and every call's notifications and times,
 * every subscription to the source, every breaker transition and the final breaker state must be
 * identical. Shared by `callPolicy.spec.ts` and `bench/soak.ts`.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { defer, type Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { CircuitBreaker, type CircuitBreakerOptions } from '../../src/core/breaker/CircuitBreaker.js';
import { snapshotBreaker } from '../../src/core/breaker/persist.js';
import { callPolicy } from '../../src/operators/callPolicy.js';
import { circuitBreak } from '../../src/operators/circuitBreak.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { attemptArb, attemptObservable, retryDrawArb, retryOptions, type Attempt, type RetryDraw } from './retryProperty.js';

/** One call: subscribed at `at`, unsubscribed `cancelAfter` ms later (or never). */
interface Call {
  readonly at: number;
  readonly cancelAfter: number | undefined;
}

interface Scenario {
  readonly retry: RetryDraw;
  readonly breaker: CircuitBreakerOptions;
  readonly randoms: readonly number[];
  readonly script: readonly Attempt[];
  readonly calls: readonly Call[];
}

export const scenarioArb: fc.Arbitrary<Scenario> = fc
  .record({
    retry: retryDrawArb({ retries: 4, initial: 1_000, cap: 4_000, retryAfter: 6_000, total: 8_000 }),
    breaker: fc.oneof(
      fc.record({
        failureThreshold: fc.integer({ min: 1, max: 3 }),
        resetTimeoutMs: fc.integer({ min: 1, max: 5_000 }),
        halfOpenMaxCalls: fc.integer({ min: 1, max: 2 }),
        halfOpenTimeoutMs: fc.option(fc.integer({ min: 1, max: 3_000 }), { nil: undefined }),
      }),
      fc.record({
        window: fc.record({
          windowMs: fc.integer({ min: 100, max: 10_000 }),
          minimumCalls: fc.integer({ min: 1, max: 4 }),
          failureRateThreshold: fc.double({ min: 0.1, max: 1, noNaN: true }),
        }),
        resetTimeoutMs: fc.integer({ min: 1, max: 5_000 }),
      }),
    ),
    randoms: fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), { minLength: 1, maxLength: 6 }),
    script: fc.array(attemptArb(true, 5), { minLength: 1, maxLength: 10 }),
    calls: fc.array(fc.record({ at: fc.integer({ min: 0, max: 20_000 }), cancelAfter: fc.option(fc.integer({ min: 0, max: 6_000 }), { nil: undefined }) }), {
      minLength: 1,
      maxLength: 8,
    }),
  })
  // with resetOnSuccess an attempt that emits and then fails resets the count: repeated (the
  // script cycles) it would retry forever, by design; so failing attempts emit nothing then
  .map((s) => (s.retry.resetOnSuccess ? { ...s, script: s.script.map((a) => (a.end === 'complete' || a.end === 'never' ? a : { ...a, values: 0 })) } : s));

/**
 * Everything observable about one run: per-call logs, source subscriptions, breaker events and
 * state. `policy`: each call made by a `callPolicy` (true), or by `defer` through the two
 * operators piped (false).
 */
export function runCalls(s: Scenario, policy: boolean): string[] {
  const log: string[] = [];
  const ts = new TestScheduler((a, b) => {
    expect(a).to.deep.equal(b);
  });
  ts.run(({ flush }) => {
    ts.maxFrames = 10 * 86_400_000;
    let subscriptions = 0;
    const breaker = new CircuitBreaker({ ...s.breaker, name: 'b' });
    breaker.events$.subscribe((e) => log.push(`${ts.now()} breaker ${e.from}->${e.to} ${e.reason}`));
    const attempt = (): Observable<string> => {
      const a = s.script[subscriptions % s.script.length]!;
      const n = subscriptions++;
      log.push(`${ts.now()} subscribe #${n}`);
      return attemptObservable(a, (i) => `#${n}.${i}`);
    };
    const guarded = policy
      ? callPolicy({ retry: retryOptions(s.retry, s.randoms, 'RESET'), breaker }).call(attempt)
      : defer(attempt).pipe(retryWithBackoff(retryOptions(s.retry, s.randoms, 'RESET')), circuitBreak(breaker));
    s.calls.forEach((call, i) => {
      ts.schedule(() => {
        const sub = guarded.subscribe({
          next: (v) => log.push(`${ts.now()} call ${i} next ${v}`),
          error: (e: unknown) => log.push(`${ts.now()} call ${i} error ${(e as Error).name}: ${(e as Error).message}`),
          complete: () => log.push(`${ts.now()} call ${i} complete`),
        });
        if (call.cancelAfter !== undefined) {
          ts.schedule(() => {
            if (!sub.closed) log.push(`${ts.now()} call ${i} unsubscribe`);
            sub.unsubscribe();
          }, call.cancelAfter);
        }
      }, call.at);
    });
    // calls that never end (a 'never' attempt without a budget) are cut at the end of the day
    ts.schedule(() => log.push(`${ts.now()} end state ${breaker.state} ${JSON.stringify(snapshotBreaker(breaker))}`), 86_400_000);
    flush();
  });
  return log;
}

/** A callPolicy making each call is indistinguishable from the operators piped. */
export const callPolicyProperty = fc.property(scenarioArb, (s) => {
  expect(runCalls(s, true)).to.deep.equal(runCalls(s, false));
});
