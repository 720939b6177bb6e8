import { Observable, type MonoTypeOperatorFunction, type Subscriber } from 'rxjs';
import { CircuitBreaker, type CircuitBreakerOptions } from '../core/breaker/CircuitBreaker.js';
import { failWith, settleUnsubscribed, type CircuitPermit } from '../core/circuit/permit.js';
import { Link, operate, subscribeWithin } from '../core/rx/operate.js';
import { defaultHub, type HealHub } from '../core/hub/hub.js';
import { Hub, validateOptions } from '../core/errors/options.js';
import type { CircuitOpenError } from '../core/errors/errors.js';

/** Options of {@link circuitBreak} beyond the breaker's own. */
export interface CircuitBreakOptions {
  /**
   * Reports the breaker's transitions and each rejected call as `circuit` events. Created inside
   * `fallbackModel`'s `perModel` without one, the run's hub.
   */
  readonly hub?: HealHub;
}

/**
 * Guards a source with a circuit breaker. Each subscription is one call: it is admitted or
 * rejected when it subscribes, and its outcome is reported when it ends.
 *
 * - Admitted: the source is subscribed. Completion, or unsubscribing after at least one value,
 *   is a success; an error the breaker's `isFailure` accepts is a failure (recorded before the
 *   error reaches downstream, so a retry downstream sees the new state); other errors are
 *   ignored; unsubscribing before any value is not counted and frees a half-open slot.
 * - Rejected (open, or half-open with every probe slot taken): the subscription errors
 *   synchronously with {@link CircuitOpenError} and the source is never subscribed.
 *
 * ```
 * source (5 × 503):   -#  -#  -#  -#  -#
 * result:             -#  -#  -#  -#  -#  #  #  (CircuitOpenError, at once)
 * after 60 000 ms:    one probe passes; success closes, failure re-opens
 * ```
 *
 * Pass a {@link CircuitBreaker} to share it (across pipelines, or from a registry), or options
 * to create one that every subscription to the resulting observable shares.
 *
 * Piped after `retryWithBackoff`, the whole retried call holds one permit (the retries' waits
 * included) and its final outcome is what counts: the breaker sees the retried call as one
 * subscription, whatever is upstream of it.
 *
 * @example
 * ```ts
 * const breakers = new CircuitBreakerRegistry({ failureThreshold: 5, resetTimeoutMs: 60_000 });
 * const weather$ = defer(() => getWeather(city)).pipe(
 *   retryWithBackoff({ maxRetries: 2 }),
 *   circuitBreak(breakers.get('tool:get_weather')),
 * );
 * ```
 * @param options `hub`: report transitions and rejections as `circuit` events.
 * @throws {InvalidOptionError} at once, for invalid breaker options.
 */
export function circuitBreak<T>(breakerOrOptions: CircuitBreaker | CircuitBreakerOptions = {}, options?: CircuitBreakOptions): MonoTypeOperatorFunction<T> {
  const breaker = breakerOrOptions instanceof CircuitBreaker ? breakerOrOptions : new CircuitBreaker(breakerOrOptions);
  const hub = (validateOptions('circuitBreak', { hub: Hub }, options).hub as HealHub | undefined) ?? defaultHub()?.hub;
  hub?.watch(breaker);
  return operate<T>((source, subscriber) => subscribeUnderBreaker(source, subscriber, breaker, hub));
}

/**
 * `source` guarded by `breaker`, as `circuitBreak(breaker, { hub })` guards it, without making
 * the operator (nor watching the breaker: `circuitBreak` does that once, when it is made). For
 * `fallbackModel`, which guards each model it calls with the breaker and the run's hub.
 *
 * @internal
 */
export function underBreaker<T>(source: Observable<T>, breaker: CircuitBreaker, hub: HealHub | undefined): Observable<T> {
  return new Observable<T>((subscriber) => subscribeUnderBreaker(source, subscriber, breaker, hub));
}

/**
 * One call through a breaker: admitted, `source` runs under the permit; rejected, `subscriber`
 * errors at once with the {@link CircuitOpenError} (reported to `hub`) and `source` is never
 * subscribed. Used by `circuitBreak` and `hedge`.
 *
 * @internal
 */
export function subscribeUnderBreaker<T>(source: Observable<T>, subscriber: Subscriber<T>, breaker: CircuitBreaker, hub: HealHub | undefined): void {
  const permit = admit(breaker, subscriber, hub);
  if (permit !== undefined) runUnderPermit(source, subscriber, permit);
}

/**
 * One call admitted already (`permit`, from `breaker.acquire()`): `source` runs under it, settled
 * by `circuitBreak`'s rules. For `hedge`, which asks a hedge's breaker before spending a token on it.
 *
 * @internal
 */
export function runUnderPermit<T>(source: Observable<T>, subscriber: Subscriber<T>, permit: CircuitPermit): void {
  // the call is its own subscription (a Link): unsubscribing downstream tears the source down, then settles the permit
  subscribeWithin(subscriber, source, new PermitCall(subscriber, permit));
}

/**
 * Asks `breaker` to admit one call: the permit, or `undefined` after erroring `subscriber` at once
 * with the {@link CircuitOpenError} (reported to `hub`).
 *
 * @internal
 */
export function admit(breaker: CircuitBreaker, subscriber: Subscriber<unknown>, hub: HealHub | undefined): CircuitPermit | undefined {
  const permit = acquire(breaker, hub);
  if (!(permit instanceof Error)) return permit;
  subscriber.error(permit);
  return undefined;
}

/**
 * Asks `breaker` to admit one call: the permit, or the {@link CircuitOpenError} (reported to
 * `hub`) — for a caller that settles the permit in an observer of its own (`fallbackModel`'s attempt).
 *
 * @internal
 */
export function acquire(breaker: CircuitBreaker, hub: HealHub | undefined): CircuitPermit | CircuitOpenError {
  const permit = breaker.acquire();
  if (permit instanceof Error) hub?.report({ type: 'circuit', breaker: permit.breaker, kind: 'rejected', retryAfterMs: permit.retryAfterMs });
  return permit;
}

/**
 * One admitted call, as the source's observer and as the call's teardown: forwards to
 * downstream and settles the permit exactly as the rules say — success on completion (before
 * downstream hears), failure before the error goes downstream, and on an unsubscribe before
 * either, success if it had emitted, else release.
 */
class PermitCall<T> extends Link<T> {
  private emitted = false;
  private settled = false;

  constructor(
    private readonly subscriber: Subscriber<T>,
    private readonly permit: CircuitPermit,
  ) {
    super();
  }

  protected onNext(value: T): void {
    this.emitted = true;
    this.subscriber.next(value);
  }

  protected onError(error: unknown): void {
    if (this.settled) return;
    this.settled = true;
    // recorded before the error reaches downstream, so a retry downstream sees the new state
    // (a breaker listener that ended this very call on the state change leaves nobody to tell:
    // a closed subscriber ignores it)
    this.subscriber.error(failWith(this.permit, error));
  }

  protected onComplete(): void {
    if (this.settled) return;
    this.settled = true;
    this.permit.success();
    this.subscriber.complete();
  }

  override unsubscribe(): void {
    if (this.closed) return;
    // the source's teardown first, then the permit settled (a call that ended settled it already)
    super.unsubscribe();
    if (this.settled) return;
    this.settled = true;
    settleUnsubscribed(this.permit, this.emitted);
  }
}
