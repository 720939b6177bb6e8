/**
 * Backoff maths: the one place that turns "retry number n" into a delay. Pure functions, no
 * timers: operators wait with `timer(delay, scheduler)`.
 *
 * @module
 */

/**
 * How a computed delay is randomised, so that many clients that failed together do not retry
 * together.
 *
 * - `'none'`: exactly `min(initialBackoffMs · multiplierⁿ, maxBackoffMs)`.
 * - `'full'`: uniformly random in `[0, base)` (AWS "full jitter"; may retry at once).
 * - `'equal'`: `base/2 + random · base/2`: never less than half the base delay. **The default**:
 *   a rate-limited provider is never hit again immediately, and a herd is still spread.
 * - `'decorrelated'`: random in `[initialBackoffMs, 3 · previous delay)`, capped (AWS
 *   "decorrelated jitter"); each delay depends on the previous one, not on n.
 */
export type Jitter = 'none' | 'full' | 'equal' | 'decorrelated';

/** Inputs of {@link backoffDelay}. */
export interface BackoffPolicy {
  readonly initialBackoffMs: number;
  readonly backoffMultiplier: number;
  readonly maxBackoffMs: number;
  readonly jitter: Jitter;
  /** A source of numbers in `[0, 1)`. */
  readonly random: () => number;
}

/**
 * The un-jittered delay for retry `n` (0-based): `min(initial · multiplierⁿ, max)`.
 *
 * @example
 * ```ts
 * baseDelay(3, { initialBackoffMs: 500, backoffMultiplier: 2, maxBackoffMs: 30_000 }); // 4000
 * ```
 */
export function baseDelay(n: number, policy: Pick<BackoffPolicy, 'initialBackoffMs' | 'backoffMultiplier' | 'maxBackoffMs'>): number {
  const raw = policy.initialBackoffMs * Math.pow(policy.backoffMultiplier, n);
  // pow overflows to Infinity for large n: the cap still applies.
  return Math.min(Number.isFinite(raw) ? raw : Infinity, policy.maxBackoffMs);
}

/** A random number clamped to `[0, 1)`, so a user's `random` cannot produce negative waits. */
function unit(random: () => number): number {
  const r = random();
  return r >= 0 && r < 1 ? r : r >= 1 ? 1 - Number.EPSILON : 0;
}

/**
 * The delay, in whole milliseconds, before retry `n` (0-based).
 *
 * @param previousMs the delay used before the previous retry (only `'decorrelated'` reads it;
 *   pass `initialBackoffMs` for the first retry).
 * @example
 * ```ts
 * const policy = { initialBackoffMs: 500, backoffMultiplier: 2, maxBackoffMs: 30_000, jitter: 'none', random: Math.random } as const;
 * [0, 1, 2, 10].map((n) => backoffDelay(n, 500, policy)); // [500, 1000, 2000, 30000]
 * ```
 */
export function backoffDelay(n: number, previousMs: number, policy: BackoffPolicy): number {
  switch (policy.jitter) {
    case 'none':
      return Math.round(baseDelay(n, policy));
    case 'full':
      return Math.floor(unit(policy.random) * baseDelay(n, policy));
    case 'equal': {
      const base = baseDelay(n, policy);
      return Math.round(base / 2 + (unit(policy.random) * base) / 2);
    }
    case 'decorrelated': {
      const low = policy.initialBackoffMs;
      const high = Math.max(low, previousMs * 3);
      return Math.round(Math.min(policy.maxBackoffMs, low + unit(policy.random) * (high - low)));
    }
  }
}
