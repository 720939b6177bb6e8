/**
 * `retryWithBackoff()` piped straight into `circuitBreak()` runs fused: the retry loop settles the
 * breaker's permit itself, with one subscriber per call instead of two. This property checks the
 * fusion changes nothing a user can see: random retry options, breaker options and a random
 * schedule of overlapping calls (each maybe unsubscribed early) run twice in virtual time — fused,
 * and with an identity layer between the operators that prevents fusion — and every call's
 * notifications and times, every subscription to the source, every breaker transition and the
 * final breaker state must be identical. Shared by `retryUnderBreaker.spec.ts` and `bench/soak.ts`.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { defer, Observable, type MonoTypeOperatorFunction } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { CircuitBreaker, type CircuitBreakerOptions } from '../../src/core/breaker/CircuitBreaker.js';
import { snapshotBreaker } from '../../src/core/breaker/persist.js';
import { RUN_UNDER_PERMIT } from '../../src/core/circuit/permit.js';
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

/** Passes everything through, but is not a retryWithBackoff observable: prevents fusion. */
const opaque =
  <T>(): MonoTypeOperatorFunction<T> =>
  (source) =>
    new Observable<T>((subscriber) => source.subscribe(subscriber));

/**
 * Everything observable about one run: per-call logs, source subscriptions, breaker events and
 * state. `fused`: the operators piped together (true), apart (false), or the same retry and
 * breaker as a `callPolicy` making each call (`'policy'`).
 */
export function runCalls(s: Scenario, fused: boolean | 'policy'): { log: string[]; fusedPath: boolean } {
  const log: string[] = [];
  let fusedPath = false;
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
    const retried = defer(attempt).pipe(retryWithBackoff(retryOptions(s.retry, s.randoms, 'RESET')));
    fusedPath = RUN_UNDER_PERMIT in retried;
    const guarded =
      fused === 'policy'
        ? callPolicy({ retry: retryOptions(s.retry, s.randoms, 'RESET'), breaker }).call(attempt)
        : fused
          ? retried.pipe(circuitBreak(breaker))
          : retried.pipe(opaque(), circuitBreak(breaker));
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
  return { log, fusedPath };
}

/** A callPolicy making each call is indistinguishable from the operators piped apart. */
export const callPolicyProperty = fc.property(scenarioArb, (s) => {
  expect(runCalls(s, 'policy').log).to.deep.equal(runCalls(s, false).log);
});

/** Fused and unfused runs of the same scenario are indistinguishable. */
export const retryUnderBreakerProperty = fc.property(scenarioArb, (s) => {
  const fused = runCalls(s, true);
  const plain = runCalls(s, false);
  expect(fused.fusedPath, 'retryWithBackoff offers the fused path').to.equal(true);
  expect(fused.log).to.deep.equal(plain.log);
});
