/**
 * The retryWithBackoff property, shared by `retryWithBackoff.spec.ts` (a few hundred runs) and
 * `bench/soak.ts` (tens of thousands): random options and a random script of attempts (latency,
 * values, then completion, a 503, a 400, a 429 with retry-after, or never), run in virtual time.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { asyncScheduler, concat, defer, EMPTY, mergeMap, NEVER, of, throwError, timer, type Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { HttpError, RetriesExhaustedError, TotalTimeoutError } from '../../src/core/errors/errors.js';
import { retryWithBackoff, type RetryInfo, type RetryWithBackoffOptions } from '../../src/operators/retryWithBackoff.js';

/** One scripted subscription to the source: after `latency` ms, `values`, then how it ends. */
export interface Attempt {
  readonly latency: number;
  readonly values: number;
  readonly end: 'complete' | '503' | '400' | '429' | 'never';
  readonly retryAfterS: number;
}

/** Random attempts; `'never'` only when allowed (a budget or the end of the run will cut it). */
export const attemptArb = (allowNever: boolean, maxRetryAfterS = 90): fc.Arbitrary<Attempt> =>
  fc.record({
    latency: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 500 })),
    values: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 2 }) }),
    end: fc.constantFrom<Attempt['end']>(...(['complete', '503', '503', '503', '400', '429'] as const), ...(allowNever ? (['never'] as const) : [])),
    retryAfterS: fc.integer({ min: 0, max: maxRetryAfterS }),
  });

/** The error an attempt ends with, if it ends with one. */
export function attemptError(a: Attempt): HttpError | undefined {
  return a.end === '503'
    ? new HttpError(503)
    : a.end === '400'
      ? new HttpError(400)
      : a.end === '429'
        ? new HttpError(429, { 'retry-after': String(a.retryAfterS) })
        : undefined;
}

/** An attempt as an observable (virtual time): `value(i)` for its i-th value, then its end. */
export function attemptObservable<V>(a: Attempt, value: (i: number) => V, error = attemptError(a)): Observable<V> {
  const end: Observable<never> = error ? throwError(() => error) : a.end === 'never' ? NEVER : EMPTY;
  const body = concat(of(...Array.from({ length: a.values }, (_, i) => value(i))), end);
  return a.latency === 0 ? body : timer(a.latency).pipe(mergeMap(() => body));
}

/** Drawn retryWithBackoff options (`onRestart` and `random` are added by {@link retryOptions}). */
export interface RetryDraw {
  maxRetries: number;
  initialBackoffMs: number;
  backoffMultiplier?: number;
  maxBackoffMs: number;
  jitter: 'none' | 'full' | 'equal' | 'decorrelated';
  maxRetryAfterMs?: number;
  totalTimeoutMs?: number;
  resetOnSuccess: boolean;
  afterEmit: 'error' | 'resubscribe' | 'restart';
}

/** The options for a draw: jitter from `randoms` (cycled), `onRestart` giving `marker`. */
export function retryOptions<T>(
  draw: RetryDraw,
  randoms: readonly number[],
  marker: T,
  extra: { onRetry?: (i: RetryInfo) => void } = {},
): RetryWithBackoffOptions<T> {
  let r = 0;
  const { afterEmit, ...rest } = draw;
  const common = { ...rest, ...extra, random: () => randoms[r++ % randoms.length]! };
  return (afterEmit === 'restart' ? { ...common, afterEmit, onRestart: () => marker } : { ...common, afterEmit }) as RetryWithBackoffOptions<T>;
}

interface Scenario {
  readonly options: RetryDraw & { backoffMultiplier: number };
  readonly randoms: readonly number[];
  readonly script: readonly Attempt[];
}

/** Random retry options within the given maxima (every option the operator has but callbacks). */
export const retryDrawArb = (max: {
  retries: number;
  initial: number;
  cap: number;
  retryAfter: number;
  total: number;
}): fc.Arbitrary<RetryDraw & { backoffMultiplier: number }> =>
  fc
    .record({
      maxRetries: fc.integer({ min: 0, max: max.retries }),
      initialBackoffMs: fc.integer({ min: 0, max: max.initial }),
      backoffMultiplier: fc.double({ min: 1, max: 3, noNaN: true }),
      maxBackoffMs: fc.integer({ min: 0, max: max.cap }),
      jitter: fc.constantFrom('none' as const, 'full' as const, 'equal' as const, 'decorrelated' as const),
      maxRetryAfterMs: fc.option(fc.integer({ min: 0, max: max.retryAfter }), { nil: undefined }),
      totalTimeoutMs: fc.option(fc.integer({ min: 1, max: max.total }), { nil: undefined }),
      resetOnSuccess: fc.boolean(),
      afterEmit: fc.constantFrom('error' as const, 'resubscribe' as const, 'restart' as const),
    })
    // maxBackoffMs >= initialBackoffMs (the operator rejects the opposite at construction)
    .map((options) => ({ ...options, maxBackoffMs: Math.max(options.maxBackoffMs, options.initialBackoffMs) }));

export const scenarioArb: fc.Arbitrary<Scenario> = retryDrawArb({ retries: 6, initial: 2_000, cap: 10_000, retryAfter: 120_000, total: 60_000 }).chain(
  (options) =>
    fc.record({
      options: fc.constant(options),
      randoms: fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), { minLength: 1, maxLength: 8 }),
      // an attempt that never ends only when a total budget will end it; with resetOnSuccess the
      // last attempt (which repeats) emits nothing, or emit-then-fail would retry forever (by design)
      script: fc
        .array(attemptArb(options.totalTimeoutMs !== undefined), { minLength: 1, maxLength: 8 })
        .map((list) => (options.resetOnSuccess ? [...list.slice(0, -1), { ...list[list.length - 1]!, values: 0 }] : list)),
    }),
);

interface Outcome {
  subscriptions: number;
  values: unknown[];
  error?: unknown;
  completed: boolean;
  endAt?: number;
  retries: RetryInfo[];
  attemptErrors: unknown[];
  attemptLatencies: number[];
  lastAttemptEnd: Attempt['end'] | undefined;
}

const RESET = { reset: true };

function run(s: Scenario): Outcome {
  const out: Outcome = { subscriptions: 0, values: [], completed: false, retries: [], attemptErrors: [], attemptLatencies: [], lastAttemptEnd: undefined };
  const ts = new TestScheduler((a, b) => {
    expect(a).to.deep.equal(b);
  });
  ts.run(({ flush }) => {
    // a safety net: a run that has not ended after a virtual day fails the property instead of hanging
    ts.maxFrames = 86_400_000;
    const source: Observable<number> = defer(() => {
      const a = s.script[Math.min(out.subscriptions, s.script.length - 1)]!;
      out.subscriptions++;
      out.attemptLatencies.push(a.end === 'never' ? Infinity : a.latency);
      out.lastAttemptEnd = a.end;
      const error = attemptError(a);
      if (error) out.attemptErrors.push(error);
      return attemptObservable(a, (i) => i, error);
    });
    const options = retryOptions<unknown>(s.options, s.randoms, RESET, { onRetry: (i) => void out.retries.push(i) });
    const started = asyncScheduler.now();
    source.pipe(retryWithBackoff(options)).subscribe({
      next: (v) => void out.values.push(v),
      error: (e: unknown) => {
        out.error = e;
        out.endAt = asyncScheduler.now() - started;
      },
      complete: () => {
        out.completed = true;
        out.endAt = asyncScheduler.now() - started;
      },
    });
    flush();
  });
  return out;
}

/** subscriptions ≤ maxRetries + 1; never completes silently after an error (it errors with the
 * error itself, RetriesExhaustedError or TotalTimeoutError); virtual time = attempts + reported delays. */
export const retryProperty = fc.property(scenarioArb, (s) => {
  const o = run(s);
  const { maxRetries, totalTimeoutMs, resetOnSuccess, maxRetryAfterMs = 60_000 } = s.options;

  // it always ends (the script's last attempt repeats; 'never' only with a budget)
  expect(o.completed || o.error !== undefined, 'the result ended').to.equal(true);

  // subscriptions (a value resets the count with resetOnSuccess, so only then may there be more)
  if (!resetOnSuccess) expect(o.subscriptions).to.be.at.most(maxRetries + 1);
  // every announced retry resubscribes (a wait that would end at or past the total budget is
  // never announced: the operator gives up at once)
  expect(o.retries.length).to.equal(o.subscriptions - 1);

  // never completes silently after an error: completion only when the last attempt completed
  if (o.completed) expect(o.lastAttemptEnd).to.equal('complete');
  if (o.error !== undefined) {
    const last = o.attemptErrors[o.attemptErrors.length - 1];
    const allowed = o.error === last || o.error instanceof RetriesExhaustedError || o.error instanceof TotalTimeoutError;
    expect(allowed, `terminal error ${String(o.error)}`).to.equal(true);
    if (o.error instanceof RetriesExhaustedError) {
      expect(o.error.attempts).to.be.at.least(1);
      expect(o.error.errors[o.error.errors.length - 1]).to.equal(last);
      if (o.error.reason === 'max_retries' && !resetOnSuccess) expect(o.subscriptions).to.equal(maxRetries + 1);
    }
  }

  // each reported delay: finite, ≥ 0, within the cap unless retry-after asked for more, and honouring retry-after
  for (const info of o.retries) {
    expect(Number.isFinite(info.delayMs) && info.delayMs >= 0, `delay ${info.delayMs}`).to.equal(true);
    const retryAfter = info.classification.retryAfterMs;
    if (retryAfter !== undefined) {
      expect(retryAfter).to.be.at.most(maxRetryAfterMs);
      expect(info.delayMs).to.be.at.least(retryAfter);
      expect(info.delayMs).to.equal(Math.max(retryAfter, Math.min(info.delayMs, s.options.maxBackoffMs)));
    } else {
      expect(info.delayMs).to.be.at.most(s.options.maxBackoffMs);
    }
  }

  // virtual time: every attempt's latency plus every reported delay (or the budget)
  const expected = o.attemptLatencies.reduce((a, b) => a + b, 0) + o.retries.reduce((a, i) => a + i.delayMs, 0);
  if (o.error instanceof TotalTimeoutError) {
    expect(o.error.timeoutMs).to.equal(totalTimeoutMs);
    expect(o.endAt).to.be.at.most(totalTimeoutMs!);
    expect(o.endAt).to.be.at.most(expected);
  } else {
    expect(o.endAt).to.equal(expected);
  }

  // restart markers: one per retry of an attempt that had emitted
  if (s.options.afterEmit === 'restart') expect(o.values.filter((v) => v === RESET).length).to.equal(o.retries.filter((i) => i.emitted).length);
});
