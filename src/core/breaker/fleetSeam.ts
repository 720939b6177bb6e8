/**
 * The seam between a `CircuitBreaker` and the fleet, defined on the breaker's side: what its
 * `fleet` option is ({@link FleetOptions}, the {@link BreakerStore} contract a store fulfils) and
 * the hook through which a breaker calls the fleet's node logic ({@link FleetHook}). The breaker
 * knows nothing else of fleets; core/fleet implements this seam (its node logic, fleet.ts, is
 * reached through the store the user passes — `MemoryBreakerStore` and `RedisBreakerStore` carry
 * it under {@link FLEET_NODE}), so an application whose breakers have no `fleet` option bundles
 * none of it.
 *
 * The model, per breaker name:
 * - a **verdict**: `closed`, `open` until a store-time deadline, or `isolated`; a **generation**
 *   that grows with every change (`max(previous + 1, store time in ms)`, so it keeps growing
 *   even after a store lost its data), and the reason of the last change;
 * - **votes**: nodes whose own breaker opened on inference (5xx, timeouts, resets), with the
 *   store time of the vote; votes older than the quorum window are forgotten;
 * - **live nodes**: nodes that synced or voted within `nodeTtlMs`;
 * - a **probe lease**: the one node allowed to probe after the open period, until a store time.
 *
 * A **stale** open verdict — its period over and its probe lease free (never taken, or run out
 * without a result: the prober died, or its result never arrived) — counts as closed for votes:
 * a new quorum opens it anew (a new generation, reason `quorum`, a fresh `openMs`), as a fact
 * does. While a lease is live the probe is in progress, and votes change nothing.
 *
 * Every operation reads the store's own clock (a `TIME` in Redis, `scheduler.now()` here) and
 * answers with deadlines as remaining ms: nodes never compare clocks.
 *
 * @module
 */
import type { Observable, SchedulerLike } from 'rxjs';
import type { CircuitEvent, CircuitState, TransitionReason } from '../circuit/state.js';
import type { HealHub } from '../hub/hub.js';
import { InvalidOptionError } from '../errors/errors.js';
import { check } from '../errors/options.js';

/**
 * A breaker's state fleet-wide.
 *
 * @example
 * ```ts
 * const s: FleetState = 'open';
 * ```
 */
export type FleetState = 'closed' | 'open' | 'isolated';

/**
 * Why the fleet verdict is what it is: `quorum` (enough nodes opened on their own), `rate_limit`
 * (a provider said so: 429 with `retry-after`), `probe_failure` / `probe_success` (the one prober's
 * result), `isolated` / `reset` (by hand, fleet-wide), `none` (never changed).
 *
 * @example
 * ```ts
 * const r: FleetReason = 'quorum';
 * ```
 */
export type FleetReason = 'none' | 'quorum' | 'rate_limit' | 'probe_failure' | 'probe_success' | 'isolated' | 'reset';

/**
 * One breaker's verdict as the store sees it, with deadlines as remaining ms.
 *
 * @example
 * ```ts
 * const v: FleetVerdict = { name: 'model:gpt-4o', generation: 7, state: 'open', reason: 'quorum', remainingMs: 59_950 };
 * ```
 */
export interface FleetVerdict {
  readonly name: string;
  /** Grows with every change; a node ignores a verdict whose generation it has already seen. */
  readonly generation: number;
  readonly state: FleetState;
  readonly reason: FleetReason;
  /** Open: ms until a probe may start (0 once due). Isolated: `Infinity`. Closed: 0. */
  readonly remainingMs: number;
  /** Ms left on the probe lease, when a node holds it. */
  readonly leaseRemainingMs?: number;
}

/**
 * The answer to {@link BreakerStore.acquireProbe}.
 *
 * @example
 * ```ts
 * store.acquireProbe('node-a', 'model:gpt-4o', 30_000).subscribe(({ granted }) => granted && probe());
 * ```
 */
export interface ProbeLease {
  /** Whether this node may probe now. */
  readonly granted: boolean;
  readonly verdict: FleetVerdict;
}

/**
 * How many nodes must have opened on their own, within a window, to open a breaker fleet-wide
 * (resolved: every field set; see `QuorumOptions` for the defaults).
 *
 * @example
 * ```ts
 * const quorum: Quorum = { minNodes: 2, minFraction: 0.25, windowMs: 60_000 };
 * ```
 */
export interface Quorum {
  /** Distinct nodes. */
  readonly minNodes: number;
  /** Share of the live nodes, in [0, 1]. */
  readonly minFraction: number;
  /** Votes older than this (store time) are forgotten. */
  readonly windowMs: number;
}

/**
 * Where a fleet of breakers keeps its shared verdicts. Every method returns a cold Observable
 * that performs the operation when subscribed and emits its answer once; the node side
 * (`CircuitBreaker` with a `fleet` option) bounds each one with the store's `timeoutMs` and
 * a breaker of its own, so a slow or dead store never reaches a caller. Implementations:
 * {@link MemoryBreakerStore} (one process, the reference model) and `RedisBreakerStore`
 * (`rxheal/redis`).
 *
 * The store also carries the fleet's node logic, under {@link FLEET_NODE}: a breaker reaches
 * the fleet code through the store it is given, so breakers without a `fleet` option bundle
 * none of it. A store of your own adds `readonly [FLEET_NODE] = fleetNode` (both exported by
 * `rxheal/fleet`); one that wraps a `MemoryBreakerStore` or `RedisBreakerStore` may omit it (rxheal's
 * stores make their node logic known to every breaker when constructed). Either way, complete
 * `changes$` to let go of the store: each process's link to it (its `changes$` subscription and
 * its `pollMs` poll, which keeps a Node process alive) ends then.
 *
 * @example
 * ```ts
 * const store: BreakerStore = new MemoryBreakerStore();
 * store.vote('node-a', 'model:gpt-4o', { minNodes: 2, minFraction: 0.25, windowMs: 60_000 }, 60_000).subscribe((v) => console.log(v.state));
 * ```
 */
export interface BreakerStore {
  /** The fleet's node logic ({@link fleetNode}); see above for when it may be omitted. */
  readonly [FLEET_NODE]?: FleetNode;
  /** Each node's store calls are bounded by this many ms (default 100). */
  readonly timeoutMs?: number;
  /** How often nodes re-read every verdict as a backstop to `changes$` (absent: never). */
  readonly pollMs?: number;
  /** Every verdict change, from any node (pub/sub). Completes when the store is closed. */
  readonly changes$: Observable<FleetVerdict>;
  /** Emits when changes may have been missed (a reconnect): nodes re-sync at once. */
  readonly resync$?: Observable<unknown>;
  /** Marks `node` live for each name and answers each name's verdict. */
  sync(node: string, names: readonly string[]): Observable<readonly FleetVerdict[]>;
  /**
   * `node`'s own breaker opened on inference. Counts its vote; when the votes within the window
   * reach the quorum of live nodes, a closed verdict — or a stale open one (its period over, its
   * probe lease free) — opens for `openMs`.
   */
  vote(node: string, name: string, quorum: Quorum, openMs: number): Observable<FleetVerdict>;
  /** A provider fact (429 with `retry-after`): open for at least `openMs` at once, no quorum. */
  fact(node: string, name: string, openMs: number): Observable<FleetVerdict>;
  /** Asks for the probe lease of an open verdict whose period is over. */
  acquireProbe(node: string, name: string, leaseMs: number): Observable<ProbeLease>;
  /** The lease holder's probe result: success closes, failure re-opens for `openMs`. */
  probeResult(node: string, name: string, success: boolean, openMs: number): Observable<FleetVerdict>;
  /** Isolates the breaker fleet-wide (by hand). */
  isolate(node: string, name: string): Observable<FleetVerdict>;
  /** Closes the breaker fleet-wide and forgets its votes (by hand). */
  reset(node: string, name: string): Observable<FleetVerdict>;
}

/**
 * The `fleet` option of `CircuitBreaker` and `CircuitBreakerRegistry`.
 *
 * @example
 * ```ts
 * const breakers = new CircuitBreakerRegistry({
 *   failureThreshold: 5,
 *   fleet: { store: new MemoryBreakerStore(), quorum: { minNodes: 2, minFraction: 0.25 }, probeLeaseMs: 30_000 },
 * });
 * ```
 */
export interface FleetOptions {
  /** Where verdicts are shared: a {@link MemoryBreakerStore}, or `RedisBreakerStore` from `rxheal/redis`. */
  readonly store: BreakerStore;
  /**
   * This breaker's node id in the fleet. Defaults to one random id per process: every registry and
   * breaker of a process is one node (one vote; its breakers of one name probe once).
   */
  readonly node?: string;
  /** How many nodes must open on their own to open fleet-wide; a number is `{ minNodes }`. */
  readonly quorum?: number | QuorumOptions;
  /** How long the one prober holds its lease, in ms; a dead prober cannot wedge the fleet longer. Defaults to 30 000. */
  readonly probeLeaseMs?: number;
  /** Whether a counted 429 with `retry-after` opens the breaker fleet-wide at once. Defaults to true. */
  readonly facts?: boolean;
  /**
   * Where this process reports the store's health, while the hub has listeners: `circuit` events of
   * the breaker `fleet-store` around store calls — `closed → open` (reason `failure_threshold`:
   * the store stopped answering, each node decides alone), then `half-open → closed` when it
   * answers again (the node re-syncs). None by default.
   */
  readonly hub?: HealHub;
}

/**
 * Opening fleet-wide on inference (5xx, timeouts, resets) needs at least `minNodes` distinct
 * nodes and at least `minFraction` of the live nodes, each having opened on its own within
 * `windowMs`.
 *
 * @example
 * ```ts
 * const quorum: QuorumOptions = { minNodes: 2, minFraction: 0.25, windowMs: 60_000 };
 * ```
 */
export interface QuorumOptions {
  /** Defaults to 2. */
  readonly minNodes?: number;
  /** In [0, 1]. Defaults to 0.25. */
  readonly minFraction?: number;
  /** In whole ms. Defaults to 60 000. */
  readonly windowMs?: number;
}

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
  /**
   * Every transition of the breaker, as it happens: the breaker's one channel, the one its
   * `events$` reads (a subscription here comes before any `events$` observer made later, and
   * schedules no half-open notice).
   */
  readonly transitions$: Observable<CircuitEvent>;
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
  attach(breaker: FleetBreaker, options: FleetOptions): FleetHook;
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
    throw new InvalidOptionError(
      target,
      'fleet.store',
      store,
      "a BreakerStore carrying the fleet's node logic (MemoryBreakerStore, RedisBreakerStore, or a store of your own with `readonly [FLEET_NODE] = fleetNode`)",
    );
  }
  node.validate(target, fleet);
  return node;
}
