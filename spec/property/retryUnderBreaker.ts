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
import { concat, defer, EMPTY, mergeMap, NEVER, Observable, of, throwError, timer, type MonoTypeOperatorFunction } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { CircuitBreaker, type CircuitBreakerOptions } from '../../src/core/CircuitBreaker.js';
import { RUN_UNDER_PERMIT } from '../../src/core/permit.js';
import { HttpError } from '../../src/core/errors.js';
import { circuitBreak } from '../../src/operators/circuitBreak.js';
import { retryWithBackoff, type RetryWithBackoffOptions } from '../../src/operators/retryWithBackoff.js';

/** One scripted subscription to the source: after `latency` ms, `values`, then how it ends. */
interface Attempt {
  readonly latency: number;
  readonly values: number;
  readonly end: 'complete' | '503' | '400' | '429' | 'never';
  readonly retryAfterS: number;
}

/** One call: subscribed at `at`, unsubscribed `cancelAfter` ms later (or never). */
interface Call {
  readonly at: number;
  readonly cancelAfter: number | undefined;
}

interface Scenario {
  readonly retry: {
    maxRetries: number;
    initialBackoffMs: number;
    maxBackoffMs: number;
    jitter: 'none' | 'full' | 'equal' | 'decorrelated';
    totalTimeoutMs?: number;
    maxRetryAfterMs?: number;
    resetOnSuccess: boolean;
    afterEmit: 'error' | 'resubscribe' | 'restart';
  };
  readonly breaker: CircuitBreakerOptions;
  readonly randoms: readonly number[];
  readonly script: readonly Attempt[];
  readonly calls: readonly Call[];
}

const attemptArb: fc.Arbitrary<Attempt> = fc.record({
  latency: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 400 })),
  values: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 2 }) }),
  end: fc.constantFrom<Attempt['end']>('complete', 'complete', '503', '503', '503', '400', '429', 'never'),
  retryAfterS: fc.integer({ min: 0, max: 5 }),
});

export const scenarioArb: fc.Arbitrary<Scenario> = fc
  .record({
  retry: fc
    .record({
      maxRetries: fc.integer({ min: 0, max: 4 }),
      initialBackoffMs: fc.integer({ min: 0, max: 1_000 }),
      maxBackoffMs: fc.integer({ min: 0, max: 4_000 }),
      jitter: fc.constantFrom('none' as const, 'full' as const, 'equal' as const, 'decorrelated' as const),
      totalTimeoutMs: fc.option(fc.integer({ min: 1, max: 8_000 }), { nil: undefined }),
      maxRetryAfterMs: fc.option(fc.integer({ min: 0, max: 6_000 }), { nil: undefined }),
      resetOnSuccess: fc.boolean(),
      afterEmit: fc.constantFrom('error' as const, 'resubscribe' as const, 'restart' as const),
    })
    .map((r) => ({ ...r, maxBackoffMs: Math.max(r.maxBackoffMs, r.initialBackoffMs) })),
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
  script: fc.array(attemptArb, { minLength: 1, maxLength: 10 }),
  calls: fc.array(
    fc.record({ at: fc.integer({ min: 0, max: 20_000 }), cancelAfter: fc.option(fc.integer({ min: 0, max: 6_000 }), { nil: undefined }) }),
    { minLength: 1, maxLength: 8 },
  ),
})
  // with resetOnSuccess an attempt that emits and then fails resets the count: repeated (the
  // script cycles) it would retry forever, by design; so failing attempts emit nothing then
  .map((s) => (s.retry.resetOnSuccess ? { ...s, script: s.script.map((a) => (a.end === 'complete' || a.end === 'never' ? a : { ...a, values: 0 })) } : s));

/** Passes everything through, but is not a retryWithBackoff observable: prevents fusion. */
const opaque =
  <T>(): MonoTypeOperatorFunction<T> =>
  (source) =>
    new Observable<T>((subscriber) => source.subscribe(subscriber));

/** Everything observable about one run: per-call logs, source subscriptions, breaker events and state. */
export function runCalls(s: Scenario, fused: boolean): { log: string[]; fusedPath: boolean } {
  const log: string[] = [];
  let fusedPath = false;
  const ts = new TestScheduler((a, b) => {
    expect(a).to.deep.equal(b);
  });
  ts.run(({ flush }) => {
    ts.maxFrames = 10 * 86_400_000;
    let subscriptions = 0;
    let r = 0;
    const breaker = new CircuitBreaker({ ...s.breaker, name: 'b' });
    breaker.events$.subscribe((e) => log.push(`${ts.now()} breaker ${e.from}->${e.to} ${e.reason}`));
    const source = defer(() => {
      const a = s.script[subscriptions % s.script.length]!;
      const n = subscriptions++;
      log.push(`${ts.now()} subscribe #${n}`);
      const error = a.end === '503' ? new HttpError(503) : a.end === '400' ? new HttpError(400) : a.end === '429' ? new HttpError(429, { 'retry-after': String(a.retryAfterS) }) : undefined;
      const end: Observable<never> = error ? throwError(() => error) : a.end === 'never' ? NEVER : EMPTY;
      const body = concat(of(...Array.from({ length: a.values }, (_, i) => `#${n}.${i}`)), end);
      return a.latency === 0 ? body : timer(a.latency).pipe(mergeMap(() => body));
    });
    const { afterEmit, ...rest } = s.retry;
    const common = { ...rest, random: () => s.randoms[r++ % s.randoms.length]! };
    const options = (afterEmit === 'restart' ? { ...common, afterEmit, onRestart: () => 'RESET' } : { ...common, afterEmit }) as RetryWithBackoffOptions<string>;
    const retried = source.pipe(retryWithBackoff(options));
    fusedPath = RUN_UNDER_PERMIT in retried;
    const guarded = fused ? retried.pipe(circuitBreak(breaker)) : retried.pipe(opaque(), circuitBreak(breaker));
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
    ts.schedule(() => log.push(`${ts.now()} end state ${breaker.state} ${JSON.stringify(breaker.snapshot())}`), 86_400_000);
    flush();
  });
  return { log, fusedPath };
}

/** Fused and unfused runs of the same scenario are indistinguishable. */
export const retryUnderBreakerProperty = fc.property(scenarioArb, (s) => {
  const fused = runCalls(s, true);
  const plain = runCalls(s, false);
  expect(fused.fusedPath, 'retryWithBackoff offers the fused path').to.equal(true);
  expect(fused.log).to.deep.equal(plain.log);
});
