/**
 * `rxheal/fleet`: breakers, rate limits and dollar budgets beyond one process, and one model over
 * several keys and deployments ({@link modelPool}: affinity that keeps prompt caches warm, wait or
 * move on a 429 by expected cost) — the in-process stores
 * ({@link MemoryBreakerStore}, {@link MemoryRateLimitStore}, {@link MemorySpendStore}; the Redis ones are
 * `rxheal/redis`'s), the fleet-wide {@link SpendLimiter}, the contracts a store of your own implements
 * ({@link BreakerStore}, {@link RateLimitStore}, {@link SpendStore}) with
 * the fleet's node logic it carries ({@link fleetNode} under {@link FLEET_NODE}), and snapshots that
 * keep breakers across a restart ({@link snapshotRegistry}, {@link restoreRegistry}). A breaker
 * joins a fleet through its `fleet` option (`new CircuitBreakerRegistry({ fleet: { store } })`);
 * see marble-docs/fleet.md.
 *
 * @example
 * ```ts
 * import { CircuitBreakerRegistry } from 'rxheal';
 * import { MemoryBreakerStore } from 'rxheal/fleet';
 *
 * const store = new MemoryBreakerStore(); // one per test: every registry on it is a node of one fleet
 * const a = new CircuitBreakerRegistry({ fleet: { store, node: 'a', quorum: { minNodes: 2 } } });
 * const b = new CircuitBreakerRegistry({ fleet: { store, node: 'b', quorum: { minNodes: 2 } } });
 * ```
 *
 * @module
 */
export { modelPool } from '../sources/modelPool.js';
export type { ModelPoolOptions, PoolMember, PoolStrategy, WaitOrMoveFigures } from '../sources/modelPool.js';
export { waitOrMove } from '../core/pool/poolState.js';
export type { WaitFigures } from '../core/pool/poolState.js';
export { MemoryBreakerStore } from '../core/fleet/fleetStore.js';
export type { MemoryBreakerStoreOptions, SimulatedStoreOptions } from '../core/fleet/fleetStore.js';
export type { BreakerStore, FleetReason, FleetState, FleetVerdict, ProbeLease, Quorum, FleetOptions, QuorumOptions } from '../core/breaker/fleetSeam.js';
// a BreakerStore of your own carries the fleet's node logic: `readonly [FLEET_NODE] = fleetNode`
export { fleetNode } from '../core/fleet/fleet.js';
export { FLEET_NODE } from '../core/breaker/fleetSeam.js';
export type { FleetBreaker, FleetHook, FleetNode } from '../core/breaker/fleetSeam.js';
export type { GuardBreaker } from '../core/fleet/storeGuard.js';
export type { Watchable } from '../core/circuit/permit.js';
export { MemoryRateLimitStore } from '../core/rate-limit/rateLimitStore.js';
export type {
  MemoryRateLimitStoreOptions,
  RateLimit,
  RateLimitAdjustment,
  RateLimitGrant,
  RateLimitRequest,
  RateLimitStore,
} from '../core/rate-limit/rateLimitStore.js';
export { SpendLimiter } from '../core/money/spendLimiter.js';
export type { SpendLimitHold, SpendLimiterOptions } from '../core/money/spendLimiter.js';
export { MemorySpendStore } from '../core/money/memorySpendStore.js';
export type { MemorySpendStoreOptions } from '../core/money/memorySpendStore.js';
export type { SpendContext, SpendGate, SpendHold } from '../core/money/spendGate.js';
export { NANOS_PER_USD, toNanos } from '../core/money/spendStore.js';
export type { SpendAdjustment, SpendGrant, SpendRequest, SpendStore } from '../core/money/spendStore.js';
// persisting breakers across a restart: functions of their own, so a plain circuitBreak bundles none of it
export { restoreBreaker, restoreRegistry, snapshotBreaker, snapshotRegistry } from '../core/breaker/persist.js';
export type { CircuitSnapshot, CircuitSnapshotV1, CircuitSnapshotWindow } from '../core/breaker/CircuitBreaker.js';
