/**
 * A circuit breaker's admission to one call, the internal protocol that lets an operator run a
 * call under a permit acquired by a `circuitBreak` piped right after it, and the one by which a
 * hub or a registry follows a breaker's transitions. Kept apart from the breaker so that
 * `retryWithBackoff` and the hub can use them without bundling the breaker.
 *
 * @module
 */
import type { Subscriber } from 'rxjs';
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
 * Internal protocol between operators: an observable carrying this key can run one subscription
 * under a permit that a `circuitBreak` piped right after it has acquired, settling the permit
 * itself (success, failure before the error goes downstream, release) exactly as `circuitBreak`'s
 * own subscriber would. `retryWithBackoff` implements it, so `retryWithBackoff()` followed by
 * `circuitBreak()` costs one subscriber per call instead of two.
 *
 * @internal
 */
export const RUN_UNDER_PERMIT: unique symbol = Symbol('rxheal.runUnderPermit');

/** @internal An observable that implements {@link RUN_UNDER_PERMIT}. */
export interface RunsUnderPermit<T> {
  [RUN_UNDER_PERMIT](subscriber: Subscriber<T>, permit: CircuitPermit): void;
}

/**
 * Internal protocol: how a hub or a registry follows a breaker — a listener called on each
 * transition, added (`on`) and removed by the same function object — without a subscription to
 * its `events$` per follower (a run's hub follows every breaker its pipelines use). A listener
 * counts as an observer: while the breaker has one, its half-open notice is scheduled.
 *
 * @internal
 */
export const WATCH: unique symbol = Symbol('rxheal.breakerWatch');

/** @internal Something that can be followed through {@link WATCH} (a `CircuitBreaker`). */
export interface Watchable {
  [WATCH](listener: (event: CircuitEvent) => void, on: boolean): void;
}
