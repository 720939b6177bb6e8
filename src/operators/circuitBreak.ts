import { Observable, Subscriber, type MonoTypeOperatorFunction } from 'rxjs';
import { CircuitBreaker, type CircuitBreakerOptions } from '../core/breaker/CircuitBreaker.js';
import { failWith, RUN_UNDER_PERMIT, settleUnsubscribed, type CircuitPermit, type RunsUnderPermit } from '../core/circuit/permit.js';
import { defaultHub, type HealHub } from '../core/hub/hub.js';
import { Hub, validateOptions } from '../core/errors/options.js';

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
 * Piped right after `retryWithBackoff`, the whole retried call holds one permit (the retries'
 * waits included) and its final outcome is what counts; the two operators then run as one
 * subscriber per call, with exactly the behaviour they have apart.
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
  return (source) => underBreaker(source, breaker, hub);
}

/**
 * `source` guarded by `breaker`, as `circuitBreak(breaker, { hub })` guards it, without making
 * the operator (nor watching the breaker: `circuitBreak` does that once, when it is made). For
 * `fallbackModel`, which guards each model it calls with the breaker and the run's hub.
 *
 * @internal
 */
export function underBreaker<T>(source: Observable<T>, breaker: CircuitBreaker, hub: HealHub | undefined): Observable<T> {
  // right after a retryWithBackoff: it runs its retry loop under our permit and settles it by
  // the same rules, so a call costs one subscriber instead of two
  const underPermit = permitRunner(source);
  return new Observable<T>((subscriber) => subscribeUnderBreaker(source, underPermit, subscriber, breaker, hub));
}

/**
 * One call through a breaker: admitted, `source` runs under the permit (by its own
 * {@link RUN_UNDER_PERMIT} protocol when it has one, `underPermit`); rejected, `subscriber` errors
 * at once with the {@link CircuitOpenError} (reported to `hub`) and `source` is never subscribed.
 * Used by `circuitBreak` and by `callPolicy`.
 *
 * @internal
 */
export function subscribeUnderBreaker<T>(
  source: Observable<T>,
  underPermit: RunsUnderPermit<T> | undefined,
  subscriber: Subscriber<T>,
  breaker: CircuitBreaker,
  hub: HealHub | undefined,
): void {
  const permit = admit(breaker, subscriber, hub);
  if (permit === undefined) return;
  runUnderPermit(source, underPermit, subscriber, permit);
}

/**
 * One call admitted already (`permit`, from `breaker.acquire()`): `source` runs under it (by its
 * own {@link RUN_UNDER_PERMIT} protocol when it has one, `underPermit`), which settles it by
 * `circuitBreak`'s rules. For `hedge`, which asks a hedge's breaker before spending a token on it.
 *
 * @internal
 */
export function runUnderPermit<T>(source: Observable<T>, underPermit: RunsUnderPermit<T> | undefined, subscriber: Subscriber<T>, permit: CircuitPermit): void {
  if (underPermit) underPermit[RUN_UNDER_PERMIT](subscriber, permit);
  // linked to `subscriber`: unsubscribing downstream unsubscribes it (and settles the permit)
  else source.subscribe(new PermitSubscriber(subscriber, permit));
}

/** What runs `source` under a permit of its own protocol: `source` itself when it has one ({@link RUN_UNDER_PERMIT}). @internal */
export function permitRunner<T>(source: Observable<T>): RunsUnderPermit<T> | undefined {
  return RUN_UNDER_PERMIT in source ? (source as Observable<T> & RunsUnderPermit<T>) : undefined;
}

/**
 * Asks `breaker` to admit one call: the permit, or `undefined` after erroring `subscriber` at once
 * with the {@link CircuitOpenError} (reported to `hub`).
 *
 * @internal
 */
export function admit(breaker: CircuitBreaker, subscriber: Subscriber<unknown>, hub: HealHub | undefined): CircuitPermit | undefined {
  const permit = breaker.acquire();
  if (!(permit instanceof Error)) return permit;
  hub?.report({ type: 'circuit', breaker: permit.breaker, kind: 'rejected', retryAfterMs: permit.retryAfterMs });
  subscriber.error(permit);
  return undefined;
}

/**
 * One admitted call: forwards to downstream and settles the permit exactly as the rules say.
 * A `Subscriber` subclass rather than an observer object: the happy path allocates nothing else.
 *
 * @internal exported for `callPolicy`
 */
export class PermitSubscriber<T> extends Subscriber<T> {
  private emitted = false;
  private settled = false;

  constructor(
    destination: Subscriber<T>,
    private readonly permit: CircuitPermit,
  ) {
    super(destination);
  }

  protected override _next(value: T): void {
    this.emitted = true;
    this.destination.next(value);
  }

  protected override _error(error: unknown): void {
    this.settled = true;
    // recorded before the error reaches downstream, so a retry downstream sees the new state
    const recorded = failWith(this.permit, error);
    // a breaker listener may have ended this very call on the state change: nobody to tell
    if (!this.closed) super._error(recorded);
  }

  protected override _complete(): void {
    this.settled = true;
    this.permit.success();
    if (!this.closed) super._complete();
  }

  override unsubscribe(): void {
    if (this.closed) return;
    super.unsubscribe();
    if (this.settled) return;
    this.settled = true;
    settleUnsubscribed(this.permit, this.emitted);
  }
}
