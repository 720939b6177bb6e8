/**
 * The seam between a `CircuitBreaker` and the fleet: all a breaker knows of fleets. The fleet's
 * node logic (`core/fleet.ts`: votes, the one prober, holds, the store link and its poll) is
 * reached through the store the user passes — `MemoryBreakerStore` and `RedisBreakerStore` carry
 * it under {@link FLEET_NODE} — so an application whose breakers have no `fleet` option bundles
 * none of it.
 *
 * @module
 */
import type { SchedulerLike } from 'rxjs';
import type { CircuitBreakerOptions, CircuitEvent, CircuitState, TransitionReason } from './CircuitBreaker.js';
import type { BreakerStore } from './fleetStore.js';
import type { FleetOptions } from './fleet.js';
import type { GuardBreaker } from './storeGuard.js';
import { InvalidOptionError } from './errors.js';
import { check } from './options.js';

/**
 * The key under which a {@link BreakerStore} carries the fleet's node logic ({@link fleetNode}).
 * `MemoryBreakerStore` and `RedisBreakerStore` have it; a store of your own gets it with one
 * line (see {@link BreakerStore}). A registered symbol, so that two copies of rxheal in one
 * application agree on it.
 *
 * @example
 * ```ts
 * class MyStore implements BreakerStore {
 *   readonly [FLEET_NODE] = fleetNode;
 *   // …sync, vote, fact, acquireProbe, probeResult, isolate, reset, changes$
 * }
 * ```
 */
export const FLEET_NODE: unique symbol = Symbol.for('rxheal.fleetNode') as never;

/** What the fleet sees of, and does to, one breaker: `CircuitBreaker`'s side of the seam. */
export interface FleetBreaker {
  readonly name: string;
  readonly resetTimeoutMs: number;
  readonly scheduler: SchedulerLike;
  /** The raw state (no refresh). */
  view(): { readonly state: CircuitState; readonly openUntil: number; readonly isolated: boolean };
  /**
   * A fleet verdict applied as it is (the fleet's own rules decide when): open until `until`
   * (scheduler time; `Infinity`: isolated, as by `isolate()`), or closed and not isolated.
   */
  move(to: 'open' | 'closed', reason: TransitionReason, until?: number): void;
  /** Re-reads the state now (a probe lease arrived). */
  refresh(): void;
}

/** What a breaker asks of its fleet (the fleet's side of the seam), one per breaker. */
export interface FleetHook {
  /**
   * The breaker's open period is over: may it go half-open now? `false` keeps it open (another
   * node holds the probe lease, or the lease is being asked for); otherwise the reason to give.
   * `calling`: a call is asking (only then is the lease asked for).
   */
  gate(calling: boolean): false | TransitionReason;
  /**
   * The breaker is half-open and a call asks to probe: may it? A node bound by an open fleet
   * verdict probes only under a live probe lease, whatever ended its last probe (a cancelled probe
   * leaves the breaker half-open, its lease running out): without one it asks for the lease again,
   * and while another node holds it the hook moves the breaker back to open, waiting on that
   * node's result. A node deciding alone (no open verdict, the store not answering) may.
   */
  probe(): boolean;
  /** A counted failure. True when it was a provider fact that opened the breaker (fleet-wide). */
  failed(error: unknown): boolean;
  /** `isolate()` or `reset()` by hand: published fleet-wide. */
  admin(kind: 'isolate' | 'reset'): void;
  /** Every transition of the breaker, as it happens (before `events$` observers see it). */
  transition(event: CircuitEvent): void;
}

/**
 * The fleet's node logic, as a store carries it under {@link FLEET_NODE}: {@link fleetNode}.
 *
 * @example
 * ```ts
 * const node: FleetNode = fleetNode;
 * node.validate('CircuitBreaker', { store, quorum: 2 });
 * ```
 */
export interface FleetNode {
  /** Checks a `fleet` option field by field, throwing `InvalidOptionError` naming the bad one (`fleet.quorum`…). */
  validate(target: string, fleet: unknown): void;
  /** Joins a breaker to the fleet of `options.store`: the hook the breaker calls. */
  attach(breaker: FleetBreaker, options: FleetOptions, makeBreaker: (options: CircuitBreakerOptions) => GuardBreaker): FleetHook;
  /** This process's node id (one per process, unlikely to repeat across processes): the default of every member. */
  nodeId(): string;
}

/** The node logic of the rxheal stores made in this process, for a store that carries none. */
let registered: FleetNode | undefined;

/**
 * Called by rxheal's stores when made: a store of your own that wraps one of them (a proxy
 * cutting some nodes off, a store adding latency) then needs no {@link FLEET_NODE} of its own.
 *
 * @internal
 */
export function registerFleetNode(node: FleetNode): void {
  registered ??= node;
}

/** The `fleet` option's own check: an object (its fields are checked by the store's fleet node). */
export const FleetOptionsCheck = check(
  '{ store: a BreakerStore, node?, quorum?, probeLeaseMs?, facts? }',
  (u): u is FleetOptions => typeof u === 'object' && u !== null && !Array.isArray(u),
);

/**
 * The fleet node logic for a `fleet` option: its store's {@link FLEET_NODE}, else the one rxheal's
 * stores registered; checks the option's fields with it.
 *
 * @throws {InvalidOptionError} naming `fleet.store` when neither is there, or the first bad field.
 */
export function fleetNodeFor(target: string, fleet: FleetOptions): FleetNode {
  const store = fleet.store as (BreakerStore & { [FLEET_NODE]?: FleetNode }) | undefined;
  const node = (typeof store === 'object' && store !== null ? store[FLEET_NODE] : undefined) ?? registered;
  if (node === undefined) {
    throw new InvalidOptionError(target, 'fleet.store', store, 'a BreakerStore carrying the fleet\'s node logic (MemoryBreakerStore, RedisBreakerStore, or a store of your own with `readonly [FLEET_NODE] = fleetNode`)');
  }
  node.validate(target, fleet);
  return node;
}
