/**
 * {@link DeadlineSource}: a deadline read when a wait is armed, what `hedge` and `degradeAfter`
 * take besides a number. On its own, without the histograms of tracker.ts, so an operator that
 * accepts one does not bring them into a bundle that never tracks latency.
 *
 * @module
 */

/**
 * A deadline that can change between calls: what `degradeAfter` and `hedge` accept wherever they
 * take a number of ms. `LatencyDeadline` (rxheal) is one, derived from observed latency.
 *
 * @example
 * ```ts
 * const fixed: DeadlineSource = { deadlineMs: () => 2000 };
 * ```
 */
export interface DeadlineSource {
  /** The deadline now, in ms (> 0; `Infinity`: none). Read when a wait is armed. */
  deadlineMs(): number;
}

/**
 * Whether `u` is a {@link DeadlineSource} (an object with a `deadlineMs` function).
 *
 * @example
 * ```ts
 * isDeadlineSource(tracker.deadline({ quantile: 0.99, defaultMs: 2000 })); // true
 * isDeadlineSource(2000); // false
 * ```
 */
export function isDeadlineSource(u: unknown): u is DeadlineSource {
  return typeof u === 'object' && u !== null && typeof (u as DeadlineSource).deadlineMs === 'function';
}
