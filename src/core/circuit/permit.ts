/**
 * A circuit breaker's admission to one call, and what a hub or a registry follows of a breaker.
 * Kept apart from the breaker so that operators and the hub can use them without bundling the breaker.
 *
 * @module
 */
import type { Observable } from 'rxjs';
import type { CircuitEvent } from './state.js';

/**
 * Admission to one call. Obtained from `CircuitBreaker.acquire()`; settle it exactly once
 * with `success`, `failure` or `release`. Later settlements are ignored.
 */
export interface CircuitPermit {
  /** Report that the call succeeded (completed, or was cancelled after it produced a value). */
  success(): void;
  /**
   * Report that the call failed; counted only if the breaker's `isFailure` accepts `error`.
   * Returns the error to fail the call with: `error` itself, or — when `isFailure` threw — what
   * it threw (the call then counts as failed). Callers pass the result downstream.
   */
  failure(error: unknown): unknown;
  /** Give the admission back uncounted (cancelled before any value). Frees a half-open slot. */
  release(): void;
}

/**
 * A call ended by unsubscribing (not by completing or failing): a success if it had produced a
 * value, else its admission is given back uncounted (freeing a half-open slot).
 *
 * @example
 * ```ts
 * settleUnsubscribed(permit, emitted);
 * ```
 */
export function settleUnsubscribed(permit: CircuitPermit, emitted: boolean): void {
  if (emitted) permit.success();
  else permit.release();
}

/**
 * A call failed with `error`: the permit (if any) records it, and the error to fail downstream
 * with is returned — `error`, or what the breaker's `isFailure` threw about it. Every operator
 * that settles a permit on an error goes through here.
 *
 * @example
 * ```ts
 * subscriber.error(failWith(permit, error));
 * ```
 */
export function failWith(permit: CircuitPermit | undefined, error: unknown): unknown {
  return permit ? permit.failure(error) : error;
}

/**
 * What a hub or a registry follows: something with a breaker's transitions as `events$` (a
 * `CircuitBreaker`, a store's own breaker). Following it is subscribing to `events$`, like any
 * observer: while followed, an open breaker's half-open notice is scheduled.
 *
 * @example
 * ```ts
 * const followed: Watchable = new CircuitBreaker({ name: 'model:gpt' });
 * followed.events$.subscribe((e) => console.log(e.from, '→', e.to));
 * ```
 */
export interface Watchable {
  /** Every transition, as it happens. */
  readonly events$: Observable<CircuitEvent>;
}
