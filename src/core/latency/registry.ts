/**
 * {@link LatencyRegistry}: one {@link LatencyTracker} per name (a tool, a model), created on
 * first use with shared defaults, as breakers are kept by `CircuitBreakerRegistry`.
 *
 * @module
 */
import { InvalidOptionError } from '../errors/errors.js';
import { validateOptions } from '../errors/options.js';
import { LatencyTracker, latencyTrackerOptionProps, type LatencySnapshot, type LatencyTrackerOptions } from './tracker.js';

/**
 * One latency tracker per name (`model:<id>`, `tool:<name>`), created on first use with the
 * registry's defaults and, for that name, `overrides`.
 *
 * @example
 * ```ts
 * const latency = new LatencyRegistry({ windowMs: 60_000 });
 * streamModel(gpt, request).pipe(latency.get('model:gpt').track()).subscribe(render);
 * latency.snapshot(); // [{ name: 'model:gpt', first: { count: 1, p50: 420, … }, gap: { … } }]
 * ```
 * @throws {InvalidOptionError} at construction, for an invalid default.
 */
export class LatencyRegistry {
  private readonly trackers = new Map<string, LatencyTracker>();

  constructor(private readonly defaults: LatencyTrackerOptions = {}) {
    validateOptions('LatencyRegistry', latencyTrackerOptionProps, defaults);
  }

  /** The tracker called `name`, created with the defaults and `overrides` on first use (later `overrides` are ignored). */
  get(name: string, overrides?: LatencyTrackerOptions): LatencyTracker {
    if (typeof name !== 'string' || name === '') throw new InvalidOptionError('LatencyRegistry.get', 'name', name, 'a non-empty string');
    let tracker = this.trackers.get(name);
    if (!tracker) {
      tracker = new LatencyTracker(name, { ...this.defaults, ...overrides });
      this.trackers.set(name, tracker);
    }
    return tracker;
  }

  /** Whether a tracker called `name` exists. */
  has(name: string): boolean {
    return this.trackers.has(name);
  }

  /** Names of every tracker created so far. */
  names(): string[] {
    return [...this.trackers.keys()];
  }

  /** Every tracker's quantiles now, in creation order. */
  snapshot(): LatencySnapshot[] {
    return [...this.trackers.values()].map((t) => t.snapshot());
  }
}
