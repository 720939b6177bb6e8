/**
 * Every wait in rxheal, in one place: retries' backoff, total budgets, a breaker's half-open
 * notice and probe deadline, `degradeAfter`'s deadlines, marble scripts. Time goes through the
 * scheduler (virtual in `TestScheduler.run`), and a delay means what it says at any size: Node
 * clamps a timer above 2³¹−1 ms (about 24.8 days) to 1 ms with a `TimeoutOverflowWarning`, so a
 * longer wait is made of chunks of at most that long, and `Infinity` never fires.
 *
 * @module
 */
import { Observable, Subscription, type SchedulerAction, type SchedulerLike } from 'rxjs';

/** The longest delay one timer can hold (2³¹−1 ms); longer waits are chained chunks of it. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Runs `work` once, `delayMs` after now on `scheduler`; unsubscribing the result cancels it.
 * A delay above {@link MAX_TIMER_MS} waits in chunks (so it really waits that long, with no
 * `TimeoutOverflowWarning`); `Infinity` never runs `work` and holds no timer; a negative or
 * `NaN` delay runs it as soon as the scheduler can (`0`).
 *
 * `background`: the timer only announces something (a breaker turning half-open) and must not
 * keep a Node process alive on its own — its Node timer is `unref`'d, so a script or a test run
 * that opened a breaker exits when its work is done instead of waiting out the reset timeout.
 * Waits that work depends on (a retry's backoff) stay ordinary timers.
 *
 * @example
 * ```ts
 * const notice = after(30 * 86_400_000, asyncScheduler, () => console.log('30 days later'));
 * notice.unsubscribe(); // cancelled
 * ```
 */
export function after(delayMs: number, scheduler: SchedulerLike, work: () => void, options?: { readonly background?: boolean }): Subscription {
  return scheduleWork(delayMs, scheduler, work, undefined, options?.background === true);
}

/**
 * {@link after}, handing `state` to `work`: one function can serve every wait (a subscriber's
 * deadline, `work` a shared function of the subscriber), where `after` takes a closure per wait.
 *
 * @example
 * ```ts
 * const deadline = afterWith(subscriber, 30_000, scheduler, onDeadline); // onDeadline(subscriber) in 30 s
 * ```
 */
export function afterWith<S>(state: S, delayMs: number, scheduler: SchedulerLike, work: (state: S) => void): Subscription {
  return scheduleWork(delayMs, scheduler, work, state, false);
}

function scheduleWork<S>(delayMs: number, scheduler: SchedulerLike, work: (state: S) => void, state: S, background: boolean): Subscription {
  // the common case: one timer, exactly as scheduler.schedule would make it (no closure per wait)
  if (delayMs <= MAX_TIMER_MS) return armed(scheduler.schedule<S>(work as (state?: S) => void, delayMs > 0 ? delayMs : 0, state), background);
  if (Number.isNaN(delayMs)) return armed(scheduler.schedule<S>(work as (state?: S) => void, 0, state), background);
  if (delayMs === Infinity) return new Subscription();
  // one action re-armed per chunk: its state is what is left after the chunk now running
  return armed(
    scheduler.schedule<number>(
      function (this: SchedulerAction<number>, left?: number) {
        if (left === undefined || left <= 0) return work(state);
        const chunk = Math.min(left, MAX_TIMER_MS);
        armed(this.schedule(left - chunk, chunk), background);
      },
      MAX_TIMER_MS,
      delayMs - MAX_TIMER_MS,
    ),
    background,
  );
}

/** A scheduled action, its timer `unref`'d when it only announces something (`background`). */
function armed(action: Subscription, background: boolean): Subscription {
  return background ? unref(action) : action;
}

/**
 * Lets the process exit while this scheduled action's timer is pending: an RxJS `AsyncAction`
 * keeps its Node timer in `id`; `unref` it where there is one (virtual and browser timers have none).
 */
function unref(action: Subscription): Subscription {
  const id = (action as { id?: unknown }).id;
  if (typeof id === 'object' && id !== null && typeof (id as { unref?: unknown }).unref === 'function') (id as { unref(): void }).unref();
  return action;
}

/**
 * A cold observable that emits `0` and completes `delayMs` after subscription on `scheduler` —
 * `timer(delayMs, scheduler)` with {@link after}'s rule for huge delays (`Infinity`: never).
 *
 * @example
 * ```ts
 * wait(retryAfterMs, scheduler).subscribe(() => retry());
 * ```
 */
export function wait(delayMs: number, scheduler: SchedulerLike): Observable<0> {
  return new Observable<0>((subscriber) =>
    after(delayMs, scheduler, () => {
      subscriber.next(0);
      subscriber.complete();
    }),
  );
}

/**
 * `scheduler` for waits that must not keep a Node process alive on their own: every action it
 * schedules has its Node timer `unref`'d ({@link after}'s `background`, for an operator's waits).
 * Time and order are `scheduler`'s (virtual in `TestScheduler.run`, where there is no timer to let go of).
 *
 * @example
 * ```ts
 * // a reconnection's backoff: nobody waits on it, so a script that is done exits
 * source$.pipe(retryWithBackoff({ maxRetries: Infinity, scheduler: inBackground(asyncScheduler) }));
 * ```
 */
export function inBackground(scheduler: SchedulerLike): SchedulerLike {
  return {
    now: () => scheduler.now(),
    schedule: <T>(work: (this: SchedulerAction<T>, state?: T) => void, delay?: number, state?: T): Subscription =>
      unref(scheduler.schedule<T>(work, delay, state as T)),
  };
}
