/**
 * The events hub: where every operator reports what the healing did. Operators never log or
 * export on their own; users (and `runAgent`) subscribe to `events$`.
 *
 * @module
 */
import { Subject, type Observable } from 'rxjs';
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
  private readonly watched = new WeakSet<CircuitBreaker>();

  /** Every event reported, as it happens. Hot: subscribe before the work starts. */
  readonly events$: Observable<HealEvent> = this.subject.asObservable();

  /** Reports one event to every subscriber. */
  report(event: HealEvent): void {
    this.subject.next(event);
  }

  /** Reports a breaker's transitions from now on (once per breaker, however often called). */
  watch(breaker: CircuitBreaker): void {
    if (this.watched.has(breaker)) return;
    this.watched.add(breaker);
    breaker.events$.subscribe(({ breaker: name, from, to, at, reason, failures, retryAfterMs }) =>
      this.report({ type: 'circuit', breaker: name, kind: 'transition', from, to, reason, failures, at, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) }),
    );
  }
}
