/**
 * A guard around a shared store (Redis): every call bounded by a short timeout, and a circuit
 * breaker around the store itself, so a dead or stalled store costs a node at most a couple of
 * timeouts and then nothing until it answers again. Callers catch the guard's errors and fall back
 * to their local state: no store error ever reaches a user's call.
 *
 * @module
 */
import { defer, filter, map, Observable, take, timeout, type SchedulerLike } from 'rxjs';
import type { CircuitBreaker, CircuitBreakerOptions } from '../breaker/CircuitBreaker.js';
import type { Watchable } from '../circuit/permit.js';

/**
 * What the guard needs of its breaker (a `CircuitBreaker` with `isFailure: () => true`), and what
 * a hub needs to follow it (the fleet's `hub` option reports the store's health).
 */
export type GuardBreaker = Pick<CircuitBreaker, 'acquire' | 'state' | 'events$'> & Watchable;

/** Consecutive store failures that stop store calls for a while. */
const STORE_FAILURE_THRESHOLD = 2;
/** How long store calls stop after that, before one is tried again. */
const STORE_RETRY_MS = 1_000;

/**
 * Options of the breaker around a shared store (the fleet's, a rate limiter's): open after
 * {@link STORE_FAILURE_THRESHOLD} failures of any kind, try again after {@link STORE_RETRY_MS}.
 *
 * @example
 * ```ts
 * const guard = new StoreGuard(new CircuitBreaker(storeBreakerOptions('fleet-store', asyncScheduler)), 100, asyncScheduler);
 * ```
 */
export function storeBreakerOptions(name: string, scheduler: SchedulerLike): CircuitBreakerOptions {
  return { name, failureThreshold: STORE_FAILURE_THRESHOLD, resetTimeoutMs: STORE_RETRY_MS, halfOpenTimeoutMs: Infinity, isFailure: () => true, scheduler };
}

let nodeCount = 0;
/**
 * A node id unlikely to repeat across processes (a fleet member's, a rate limiter's).
 *
 * @example
 * ```ts
 * const node = randomNodeId(); // e.g. 'k3j9x0qa-1'
 * ```
 */
export function randomNodeId(): string {
  return `${Math.random().toString(36).slice(2, 10)}-${(++nodeCount).toString(36)}`;
}

let processNode: string | undefined;
/**
 * This process's node id, the default of every fleet member and of every store it uses: one
 * process is one node (one vote, one live node), however many registries and breakers it makes.
 *
 * @example
 * ```ts
 * const node = processNodeId(); // the same id for the whole process
 * ```
 */
export function processNodeId(): string {
  return (processNode ??= randomNodeId());
}

/**
 * Runs store calls under a timeout and a breaker.
 *
 * @example
 * ```ts
 * const guard = new StoreGuard(new CircuitBreaker({ name: 'store', failureThreshold: 2, resetTimeoutMs: 1000, isFailure: () => true }), 100, asyncScheduler);
 * guard.run(() => store.sync('node-a', ['model:gpt-4o'])).pipe(catchError(() => EMPTY)).subscribe(apply);
 * ```
 */
export class StoreGuard {
  /** Emits each time the store answers again after its breaker had opened (re-sync then). */
  readonly recovered$: Observable<void>;

  constructor(
    private readonly breaker: GuardBreaker,
    private readonly timeoutMs: number,
    private readonly scheduler: SchedulerLike,
  ) {
    this.recovered$ = breaker.events$.pipe(
      filter((e) => e.to === 'closed' && e.from === 'half-open'),
      map(() => undefined),
    );
  }

  /** Whether store calls are being made (false while the store's breaker is open). */
  get available(): boolean {
    return this.breaker.state !== 'open';
  }

  /**
   * One store call: its first answer, or an error (the store's, a timeout, a throw from `call`,
   * or `CircuitOpenError` at once while the store's breaker is open). Unsubscribing gives the
   * admission back uncounted.
   */
  run<T>(call: () => Observable<T>): Observable<T> {
    return new Observable<T>((subscriber) => {
      const permit = this.breaker.acquire();
      if (permit instanceof Error) {
        subscriber.error(permit);
        return;
      }
      let settled = false;
      const inner = defer(call)
        .pipe(take(1), timeout({ first: this.timeoutMs, scheduler: this.scheduler }))
        .subscribe({
          next: (value) => {
            settled = true;
            permit.success();
            subscriber.next(value);
            subscriber.complete();
          },
          error: (error: unknown) => {
            settled = true;
            permit.failure(error);
            subscriber.error(error);
          },
          complete: () => {
            if (settled) return;
            settled = true;
            const error = new Error('the store completed without an answer');
            permit.failure(error);
            subscriber.error(error);
          },
        });
      return () => {
        inner.unsubscribe();
        if (!settled) permit.release();
      };
    });
  }
}
