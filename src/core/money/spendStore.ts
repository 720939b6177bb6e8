/**
 * Shared money limits: the {@link SpendStore} contract a fleet-wide `SpendLimiter` reserves on,
 * and the rule every store follows. `MemorySpendStore` (`./memorySpendStore.ts`) is its reference
 * model on a scheduler (also each node's local share while the shared store is down);
 * `RedisSpendStore` (`rxheal/redis`) runs the same rule in one Lua script.
 *
 * The rule. Money is kept in whole **nanodollars** (10⁻⁹ $: {@link toNanos} rounds a reservation
 * up, so rounding never lets a limit overshoot; a cheap model's output token costs ~10⁻⁷ $). A
 * limit is `limitNanos` per fixed window of `windowMs`, windows aligned on the store's clock at
 * multiples of `windowMs` since the epoch (a day's window starts at 00:00 UTC). One number per key
 * and window — `used`, reserved and not yet given back — and the operations:
 *
 * - `reserve`: at the store's `now`, `window = now − now mod windowMs`; granted when
 *   `used + nanos ≤ limitNanos` (then `used += nanos`), refused otherwise (nothing written). The
 *   grant names its window: the adjustments of that reservation go to it.
 * - `adjust`: `used = max(0, used + deltaNanos)` in the named window (negative: given back — a
 *   settle below the hold, a refund —; positive: charged — an attempt that cost more than it held).
 *   An adjustment of a window that has ended changes what is kept of it and nothing else.
 *
 * A window's number is kept at least until its end (then may be dropped). Each operation is atomic:
 * concurrent reservations never grant more than the limit between them.
 *
 * @module
 */
import type { Observable } from 'rxjs';
import { check } from '../errors/options.js';

/** Nanodollars per dollar. */
export const NANOS_PER_USD = 1_000_000_000;

/**
 * Dollars as whole nanodollars, rounded up (a reservation or a charge never shrinks by rounding).
 *
 * @example
 * ```ts
 * toNanos(0.0159); // 15_900_000
 * toNanos(1e-12); // 1
 * ```
 */
export function toNanos(usd: number): number {
  return usd <= 0 ? 0 : Math.ceil(usd * NANOS_PER_USD - 1e-6);
}

/**
 * A reservation: `nanos` more on `key`'s current window, granted only if the window's `used`
 * stays within `limitNanos`.
 *
 * @example
 * ```ts
 * const request: SpendRequest = { key: 'team:search', node: 'n1', windowMs: 3_600_000, limitNanos: 5 * NANOS_PER_USD, nanos: 20_000_000 };
 * ```
 */
export interface SpendRequest {
  /** The limit's key: the limiter's name and the key it derived from the run (user, team, tag). */
  readonly key: string;
  /** This process's id (for the live-node count the local share divides by). */
  readonly node: string;
  readonly windowMs: number;
  readonly limitNanos: number;
  readonly nanos: number;
}

/**
 * The answer to a reservation.
 *
 * @example
 * ```ts
 * store.reserve(request).subscribe((g: SpendGrant) => console.log(g.granted ? `held in window ${g.window}` : `refused at ${g.usedNanos}`));
 * ```
 */
export interface SpendGrant {
  readonly granted: boolean;
  /** The start (ms since the epoch, on the store's clock) of the window the reservation went to. */
  readonly window: number;
  /** The window's `used` after the operation (refused: as it stands, without this reservation). */
  readonly usedNanos: number;
  /** Nodes that reserved on this key within the store's node TTL, this one included. */
  readonly liveNodes: number;
}

/**
 * A correction of an earlier reservation, in the window it was granted in.
 *
 * @example
 * ```ts
 * const settle: SpendAdjustment = { key: 'team:search', window: grant.window, windowMs: 3_600_000, deltaNanos: -12_100_000 };
 * ```
 */
export interface SpendAdjustment {
  readonly key: string;
  readonly window: number;
  readonly windowMs: number;
  readonly deltaNanos: number;
}

/**
 * Where a fleet's money limits are kept (see the module header for the rule). Methods return
 * cold Observables that perform the operation when subscribed and emit once. Implementations:
 * `MemorySpendStore` and `RedisSpendStore` (`rxheal/redis`).
 *
 * @example
 * ```ts
 * const store: SpendStore = new MemorySpendStore();
 * store.reserve({ key: 'k', node: 'n', windowMs: 60_000, limitNanos: NANOS_PER_USD, nanos: 1000 }).subscribe((g) => console.log(g.granted));
 * ```
 */
export interface SpendStore {
  /** Each call is bounded by this many ms (default 100). */
  readonly timeoutMs?: number;
  reserve(request: SpendRequest): Observable<SpendGrant>;
  adjust(adjustment: SpendAdjustment): Observable<true>;
}

/** A structural check for option validation. */
export const SpendStoreCheck = check(
  'a SpendStore (reserve, adjust)',
  (u): u is SpendStore =>
    typeof u === 'object' && u !== null && typeof (u as SpendStore).reserve === 'function' && typeof (u as SpendStore).adjust === 'function',
);

/**
 * The window a reservation at `now` goes to: its start.
 *
 * @example
 * ```ts
 * windowStart(90_000, 60_000); // 60_000
 * ```
 */
export function windowStart(now: number, windowMs: number): number {
  return now - (now % windowMs);
}
