import type { MonoTypeOperatorFunction, Observable, ObservableInput } from 'rxjs';
import { abortable, type AbortContext } from '../core/model/abortable.js';
import { CircuitBreaker, type CircuitBreakerOptions } from '../core/breaker/CircuitBreaker.js';
import { InvalidOptionError } from '../core/errors/errors.js';
import type { HealHub } from '../core/hub/hub.js';
import { Hub, check, validateOptions } from '../core/errors/options.js';
import { underBreaker } from './circuitBreak.js';
import { retryWithBackoff, type RetryWithBackoffOptions } from './retryWithBackoff.js';

/** Options of {@link callPolicy}. */
export interface CallPolicyOptions<R = never> {
  /**
   * The retry, as {@link retryWithBackoff}'s options; `false` for none. Defaults to
   * `retryWithBackoff()`'s defaults (3 retries, 500 ms × 2, equal jitter).
   */
  readonly retry?: RetryWithBackoffOptions<R> | false;
  /**
   * A {@link CircuitBreaker} to share (e.g. from a registry), options for one the policy owns,
   * or `false` for none. Defaults to a breaker with default options, owned by the policy.
   */
  readonly breaker?: CircuitBreaker | CircuitBreakerOptions | false;
  /** Reports the breaker's transitions and each rejected call (as `circuitBreak`'s `hub`). */
  readonly hub?: HealHub;
}

/** A retry and a breaker, made once, that guard any number of calls. See {@link callPolicy}. */
export interface CallPolicy<R = never> {
  /** The breaker the policy's calls go through, if any. */
  readonly breaker: CircuitBreaker | undefined;
  /**
   * A cold observable of one guarded call: each subscription calls `work` (again on each retry),
   * exactly as `defer(work).pipe(retryWithBackoff(retry), circuitBreak(breaker, { hub }))` would,
   * and unsubscribing aborts `context.signal` of the attempt in flight (as `abortable` of rxheal/providers does).
   */
  call<T>(work: (context: AbortContext) => ObservableInput<T>): Observable<T | R>;
}

const props = {
  retry: check('retryWithBackoff options, or false', (u): u is object | false => u === false || (typeof u === 'object' && u !== null)),
  breaker: check('a CircuitBreaker, its options, or false', (u): u is object | false => u === false || (typeof u === 'object' && u !== null)),
  hub: Hub,
};

/**
 * The per-call shape: a retry and a breaker made once, then one observable per call.
 * `policy.call(() => callTool(args))` is
 * `defer(() => callTool(args)).pipe(retryWithBackoff(retry), circuitBreak(breaker, { hub }))`
 * with the operators made once — the same operators, so the same retries, admissions, outcomes
 * and events — on `abortable(work)` instead of `defer`: `work` also gets an
 * {@link AbortContext}, and unsubscribing aborts the attempt in flight.
 *
 * Use it where calls are made in a loop (an agent's tool calls, a batch); `pipe` stays the way
 * to compose anything else (fallbacks, deadlines, reflection).
 *
 * @example
 * ```ts
 * import { lastValueFrom } from 'rxjs';
 * import { CircuitBreakerRegistry, callPolicy } from 'rxheal';
 *
 * const breakers = new CircuitBreakerRegistry({ failureThreshold: 5 });
 * const weather = callPolicy({ retry: { maxRetries: 2, initialBackoffMs: 200 }, breaker: breakers.get('tool:get_weather') });
 * const getWeather = (city: string) => weather.call(({ signal }) => fetch(`https://wttr.in/${city}?format=j1`, { signal }).then((r) => r.json()));
 * const today = await lastValueFrom(getWeather('Paris'));
 * ```
 * @throws {InvalidOptionError} at once, for an invalid option (a retry or breaker option is
 *   named by its path, e.g. `retry.maxRetries`).
 */
export function callPolicy<R = never>(options?: CallPolicyOptions<R>): CallPolicy<R> {
  const o = validateOptions('callPolicy', props, options);
  const retry =
    o.retry === false ? undefined : nested('retry', () => retryWithBackoff<unknown>((o.retry ?? undefined) as RetryWithBackoffOptions<unknown> | undefined));
  const breaker =
    o.breaker === false
      ? undefined
      : o.breaker instanceof CircuitBreaker
        ? o.breaker
        : nested('breaker', () => new CircuitBreaker(o.breaker as CircuitBreakerOptions | undefined));
  const hub = o.hub as HealHub | undefined;
  if (breaker) hub?.watch(breaker);
  return new Policy<R>(retry, breaker, hub);
}

/** Builds a nested part, naming its bad option by its path under `key`. */
function nested<X>(key: string, make: () => X): X {
  try {
    return make();
  } catch (error) {
    if (error instanceof InvalidOptionError) throw new InvalidOptionError('callPolicy', `${key}.${error.option}`, error.value, error.expected);
    throw error;
  }
}

class Policy<R> implements CallPolicy<R> {
  constructor(
    private readonly retry: MonoTypeOperatorFunction<unknown> | undefined,
    readonly breaker: CircuitBreaker | undefined,
    private readonly hub: HealHub | undefined,
  ) {}

  call<T>(work: (context: AbortContext) => ObservableInput<T>): Observable<T | R> {
    // the pipeline `retryWithBackoff(retry)` then `circuitBreak(breaker, { hub })` makes, on the cancellable work
    const attempts = abortable(work) as Observable<unknown>;
    const retried = this.retry ? this.retry(attempts) : attempts;
    return (this.breaker ? underBreaker(retried, this.breaker, this.hub) : retried) as Observable<T | R>;
  }
}
