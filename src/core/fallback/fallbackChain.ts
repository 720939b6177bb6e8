/**
 * The rules of a fallback chain, once for `fallbackTo` and `fallbackModel`: which errors move on
 * to the next alternative (and the reason reported), how an alternative whose breaker is open is
 * skipped without a call, and the `fallback` / `circuit` events of each hand-over. What happens to
 * output already emitted (error, restart, continue) stays with each operator.
 *
 * @module
 */
import { defer, type MonoTypeOperatorFunction, type Observable, type ObservableInput } from 'rxjs';
import type { CircuitBreaker } from '../breaker/CircuitBreaker.js';
import type { ErrorClassification, ErrorClassifier } from '../errors/classify.js';
import { CircuitOpenError } from '../errors/errors.js';
import { guard, Thrown } from '../rx/guard.js';
import type { HealHub } from '../hub/hub.js';

/** One alternative of a chain, as the walker sees it. */
export interface ChainLink {
  /** As reported in `fallback` events (`from`, `to`). */
  readonly name: string;
  /** Its breaker, if any: open means skipped without a call. */
  readonly breaker: CircuitBreaker | undefined;
}

/** Why a failed alternative hands over: the classifier's verdict and the reported reason. */
export interface FallbackVerdict {
  readonly classification: ErrorClassification;
  /** The error's category, or `'circuit_open'` for an alternative its breaker rejected. */
  readonly reason: string;
}

/**
 * Whether `error` moves on to the next alternative: `shouldFallback` decides when given, else the
 * classifier's `fallback`. A {@link CircuitOpenError} from an alternative that was never called
 * (its breaker was half-open with every probe slot taken) always moves on, as `'circuit_open'`.
 * `undefined`: the error passes through unchanged. Throws what the classifier or predicate throws.
 *
 * @example
 * ```ts
 * fallbackVerdict(new HttpError(503), true, classifyError, undefined); // { classification, reason: 'service_unavailable' }
 * fallbackVerdict(new TypeError('bug'), true, classifyError, undefined); // undefined
 * ```
 */
export function fallbackVerdict(
  error: unknown,
  called: boolean,
  classifier: ErrorClassifier,
  shouldFallback: ((error: unknown) => boolean) | undefined,
): FallbackVerdict | undefined {
  const classification = classifier(error);
  if (!called && error instanceof CircuitOpenError) return { classification, reason: 'circuit_open' };
  const moveOn = shouldFallback ? shouldFallback(error) : classification.fallback;
  return moveOn ? { classification, reason: classification.category } : undefined;
}

/**
 * {@link fallbackVerdict}, total: the verdict, or the error to fail with instead — the error
 * itself when it is not worth a fallback, or what the classifier or predicate threw.
 *
 * @example
 * ```ts
 * const decision = decideFallback(error, called, classifyError, undefined);
 * if ('fail' in decision) return subscriber.error(decision.fail);
 * ```
 */
export function decideFallback(
  error: unknown,
  called: boolean,
  classifier: ErrorClassifier,
  shouldFallback: ((error: unknown) => boolean) | undefined,
): FallbackVerdict | { readonly fail: unknown } {
  const verdict = guard(fallbackVerdict, error, called, classifier, shouldFallback);
  return verdict instanceof Thrown ? { fail: verdict.error } : (verdict ?? { fail: error });
}

/** One hand-over: from where (`undefined` for the chain's start: nothing to report), why, and whether `from` had emitted. */
export interface Hop {
  readonly from: string | undefined;
  readonly reason: string;
  readonly midStream: boolean;
}

/**
 * The next alternative to call, searching from `start`. Reports each hand-over as a `fallback`
 * event (`midStream`: the alternative left had emitted; a hop past a skipped one never is); an
 * alternative whose breaker is open is skipped without a call — its {@link CircuitOpenError}
 * joins `errors` and is reported as a `circuit` rejection. Returns the index, or -1 when none is
 * left.
 *
 * @example
 * ```ts
 * const next = nextAlternative(links, 1, { from: 'primary', reason: 'rate_limit', midStream: false }, errors, hub);
 * if (next < 0) subscriber.error(new AllFallbacksFailedError(errors));
 * ```
 */
export function nextAlternative(links: readonly ChainLink[], start: number, hop: Hop, errors: unknown[], hub: HealHub | undefined): number {
  let { from, reason, midStream } = hop;
  for (let j = start; j < links.length; j++) {
    const link = links[j]!;
    if (from !== undefined) hub?.report({ type: 'fallback', from, to: link.name, reason, midStream });
    const breaker = link.breaker;
    if (breaker && breaker.state === 'open') {
      const rejection = breaker.acquire();
      if (rejection instanceof CircuitOpenError) {
        errors.push(rejection);
        hub?.report({ type: 'circuit', breaker: breaker.name, kind: 'rejected', retryAfterMs: rejection.retryAfterMs });
        from = link.name;
        reason = 'circuit_open';
        midStream = false;
        continue;
      }
      // admitted after all (the reset timeout ended between two reads of the clock): the call
      // takes its own permit through its guard
      rejection.release();
    }
    return j;
  }
  return -1;
}

/**
 * One call to an alternative: `start()` deferred, so `called()` tells whether it ran (a breaker
 * may reject first), through the alternative's `guard` (its `circuitBreak`) when it has one.
 *
 * @example
 * ```ts
 * const { input, called } = guardedAttempt(() => backup$, circuitBreak(breaker));
 * input.subscribe({ error: (e) => onError(e, called()) });
 * ```
 */
export function guardedAttempt<T>(
  start: () => ObservableInput<T>,
  guard: MonoTypeOperatorFunction<T> | undefined,
): { readonly input: Observable<T>; readonly called: () => boolean } {
  let called = false;
  const input = defer(() => {
    called = true;
    return start();
  });
  return { input: guard ? input.pipe(guard) : input, called: () => called };
}
