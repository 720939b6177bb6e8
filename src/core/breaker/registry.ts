/**
 * {@link CircuitBreakerRegistry}: one breaker per name (a tool, a model), created on first use
 * with shared defaults, and the registry's `events$` over all of them (its snapshots:
 * `snapshotRegistry` / `restoreRegistry`, persist.ts).
 *
 * @module
 */
import { Observable, Subject, Subscription } from 'rxjs';
import { CircuitBreaker, circuitBreakerOptionProps, type CircuitBreakerOptions } from './CircuitBreaker.js';
import type { CircuitEvent } from '../circuit/state.js';
import { InvalidOptionError } from '../errors/errors.js';
import { fleetNodeFor } from './fleetSeam.js';
import { validateOptions } from '../errors/options.js';

/**
 * One breaker per name (a tool, a model), created on first use with shared defaults.
 *
 * @example
 * ```ts
 * const breakers = new CircuitBreakerRegistry({ failureThreshold: 3, resetTimeoutMs: 30_000 });
 * const weather$ = callWeather().pipe(circuitBreak(breakers.get('tool:get_weather')));
 * const gpt$ = streamGpt().pipe(circuitBreak(breakers.get('model:gpt-4o', { failureThreshold: 5 })));
 * breakers.events$.subscribe((e) => console.log(e.breaker, e.from, '→', e.to));
 * ```
 */
export class CircuitBreakerRegistry {
  private readonly defaults: Omit<CircuitBreakerOptions, 'name'>;
  private readonly breakers = new Map<string, CircuitBreaker>();
  private readonly subject = new Subject<CircuitEvent>();
  /** Each breaker's `events$`, followed while the registry's `events$` is observed. */
  private following: Subscription | undefined = undefined;
  /** How the registry forwards a breaker's transition: one function for all of them. */
  private readonly forward = (event: CircuitEvent): void => this.subject.next(event);

  /**
   * Transitions of every breaker in the registry, including ones created later. The registry
   * follows its breakers only while this is observed, so an unobserved registry keeps no open
   * breaker's half-open notice scheduled.
   */
  readonly events$: Observable<CircuitEvent> = new Observable<CircuitEvent>((subscriber) => {
    const first = !this.subject.observed;
    this.subject.subscribe(subscriber);
    if (first) {
      const following = (this.following = new Subscription());
      for (const breaker of this.breakers.values()) following.add(breaker.events$.subscribe(this.forward));
    }
    // (the subject has let go of `subscriber` already: its own teardown came first)
    return () => {
      if (this.subject.observed) return;
      this.following?.unsubscribe();
      this.following = undefined;
    };
  });

  constructor(defaults: Omit<CircuitBreakerOptions, 'name'> = {}) {
    validateOptions('CircuitBreakerRegistry', circuitBreakerOptionProps, defaults);
    const fleet = defaults.fleet === undefined ? undefined : fleetNodeFor('CircuitBreakerRegistry', defaults.fleet);
    if ('name' in defaults)
      throw new InvalidOptionError('CircuitBreakerRegistry', 'name', (defaults as { name?: unknown }).name, 'absent (names are given to get())');
    // a fleet: the registry's breakers are one node (this process's, by default), whatever breakers it holds
    this.defaults = fleet && defaults.fleet!.node === undefined ? { ...defaults, fleet: { ...defaults.fleet!, node: fleet.nodeId() } } : defaults;
  }

  /**
   * The breaker called `name`, created with the defaults and `overrides` on first use.
   * `overrides` are applied only when the breaker is created.
   */
  get(name: string, overrides?: Omit<CircuitBreakerOptions, 'name'>): CircuitBreaker {
    // no default `{}`: a lookup allocates nothing
    if (typeof overrides === 'object' && overrides !== null && 'name' in overrides) {
      throw new InvalidOptionError('CircuitBreakerRegistry.get', 'name', (overrides as { name?: unknown }).name, "absent (the name is get()'s first argument)");
    }
    let breaker = this.breakers.get(name);
    if (!breaker) {
      breaker = new CircuitBreaker({ ...this.defaults, ...overrides, name });
      this.breakers.set(name, breaker);
      this.following?.add(breaker.events$.subscribe(this.forward));
    }
    return breaker;
  }

  /** Whether a breaker called `name` exists. */
  has(name: string): boolean {
    return this.breakers.has(name);
  }

  /** Names of every breaker created so far. */
  names(): string[] {
    return [...this.breakers.keys()];
  }
}
