/**
 * The events hub: where every operator reports what the healing did. Operators never log or
 * export on their own; users (and `runAgent`) subscribe to `events$`.
 *
 * @module
 */
import { Observable, Subject, type Subscription } from 'rxjs';
import type { CircuitBreaker } from './CircuitBreaker.js';
import type { HealEvent } from './events.js';

/**
 * A stream of {@link HealEvent}s. Give one to operators (`hub` option) and to `runAgent`, which
 * surfaces its events in the run's own stream.
 *
 * @example
 * ```ts
 * const hub = new HealHub();
 * hub.events$.subscribe((e) => console.log(e.type, e));
 * call$.pipe(retryWithBackoff({ hub, target: 'tool:get_weather' }));
 * ```
 */
export class HealHub {
  private readonly subject = new Subject<HealEvent>();
  /** Breakers watched, with their subscription while the hub has subscribers. */
  private readonly watched = new Map<CircuitBreaker, Subscription | undefined>();
  private listeners = 0;

  /**
   * Every event reported, as it happens. Hot: subscribe before the work starts. Watched breakers
   * are followed only while someone subscribes, so a hub nobody listens to (a finished run's)
   * holds no observer on a breaker that outlives it. A listener that throws disturbs neither the
   * operators reporting nor the other listeners: RxJS reports the throw (`config.onUnhandledError`),
   * as for any subscriber.
   */
  readonly events$: Observable<HealEvent> = new Observable<HealEvent>((subscriber) => {
    const inner = this.subject.subscribe(subscriber);
    if (++this.listeners === 1) for (const breaker of this.watched.keys()) this.follow(breaker);
    return () => {
      inner.unsubscribe();
      if (--this.listeners === 0) {
        for (const [breaker, subscription] of this.watched) {
          subscription?.unsubscribe();
          this.watched.set(breaker, undefined);
        }
      }
    };
  });

  /** Reports one event to every subscriber. */
  report(event: HealEvent): void {
    this.subject.next(event);
  }

  /** Reports a breaker's transitions (once per breaker, however often called). */
  watch(breaker: CircuitBreaker): void {
    if (this.watched.has(breaker)) return;
    this.watched.set(breaker, undefined);
    if (this.listeners > 0) this.follow(breaker);
  }

  private follow(breaker: CircuitBreaker): void {
    this.watched.set(
      breaker,
      breaker.events$.subscribe(({ breaker: name, from, to, at, reason, failures, retryAfterMs }) =>
        this.report({ type: 'circuit', breaker: name, kind: 'transition', from, to, reason, failures, at, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) }),
      ),
    );
  }
}
