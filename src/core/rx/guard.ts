/**
 * The one rule for user callbacks — classifiers, predicates (`shouldRetry`, `isFailure`,
 * `shouldFallback`, `onError`, `shouldReflect`), hooks (`onRetry`, `onRestart`), sources of
 * numbers (`random`), factories (fallbacks, degraded values, pipelines), validators and
 * adapters: a callback that throws never hangs a pipeline and never escapes as an uncaught
 * exception. What it threw becomes the error downstream, as is, and whatever the call held (a
 * breaker's permit, a wait, a subscription) is settled and released on the way.
 *
 * Every operator and source calls user code through {@link guard} wherever a throw would
 * otherwise escape (inside a subscriber's `error` or `complete`, a scheduled action, a breaker's
 * bookkeeping). Where RxJS already turns a throw into an error (`defer`, `catchError`'s
 * selector, a subscribe function), that is the same rule, kept by RxJS.
 *
 * @module
 */

/**
 * What a guarded callback threw, as returned by {@link guard}. Only `guard` makes one, so a
 * callback's own result is never mistaken for it.
 *
 * @example
 * ```ts
 * const verdict = guard(shouldRetry, error, attempt);
 * if (verdict instanceof Thrown) return fail(verdict.error);
 * ```
 */
export class Thrown {
  constructor(
    /** The value the callback threw. */
    readonly error: unknown,
  ) {}
}

/**
 * Calls `fn(...args)` and returns its result, or a {@link Thrown} holding what it threw: the
 * caller then sends `thrown.error` downstream (settling what it holds first). Costs nothing
 * extra when the callback returns.
 *
 * @example
 * ```ts
 * const classification = guard(classifier, error, { now: scheduler.now() });
 * if (classification instanceof Thrown) return subscriber.error(classification.error);
 * ```
 */
export function guard<A extends readonly unknown[], R>(fn: (...args: A) => R, ...args: A): R | Thrown {
  try {
    return fn(...args);
  } catch (error) {
    return new Thrown(error);
  }
}
