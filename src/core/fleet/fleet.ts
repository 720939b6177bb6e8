/**
 * The node side of a fleet: what a `CircuitBreaker` with a `fleet` option does with a shared
 * {@link BreakerStore}. The breaker's own state machine stays local and synchronous; the fleet
 * only adds restrictions, each bounded in time:
 *
 * - **votes**: when a breaker opens on its own evidence (failure threshold or rate, a failed or
 *   timed-out probe), its node votes; a quorum of live nodes opens the breaker fleet-wide;
 * - **facts**: a 429 with `retry-after` opens it fleet-wide at once (no quorum), as do
 *   `isolate()` and `reset()` by hand;
 * - **holds**: a fleet verdict opens every node's breaker until the fleet deadline (never
 *   shortening a later local one); a remote "closed" never closes a breaker open on its own
 *   evidence;
 * - **one prober**: when a fleet-held open period ends, a node probes only under the store's
 *   lease; the others stay open until the prober's result arrives (or its lease runs out); a
 *   success the store missed goes again when it answers; a node whose breaker closed since it
 *   applied an open verdict no longer probes for it (it decides alone until the next generation);
 *   a half-open node admits a probe only under a live lease, whatever ended its last one (a
 *   cancelled probe leaves it half-open while its lease runs out): it asks again, and waits open
 *   while another node probes;
 * - **propagation**: the store's `changes$` (pub/sub), a poll every `store.pollMs` as backstop,
 *   generations to drop stale verdicts, deadlines as remaining ms;
 * - **store down or slow**: every store call is bounded (`store.timeoutMs`, 100 ms by default)
 *   and runs behind a breaker of its own ({@link StoreGuard}); a failed call only means the node
 *   decides alone (its local breaker, a local probe); on recovery it re-syncs.
 *
 * This file checks a `fleet` option and joins a breaker to its fleet; a breaker's membership is
 * member.ts, a store's link in this process fleetLink.ts.
 *
 * @module
 */
import { InvalidOptionError } from '../errors/errors.js';
import type { BreakerStore, FleetBreaker, FleetHook, FleetNode, FleetOptions, Quorum } from '../breaker/fleetSeam.js';
import { Bool, Hub, NonEmptyString, PositiveInteger, PositiveIntegerMs, PositiveNumber, check, validateOptions } from '../errors/options.js';
import { processNodeId } from './storeGuard.js';
import { FleetLink } from './fleetLink.js';
import { Member } from './member.js';

const UnitInterval = check('a number in [0, 1]', (u): u is number => typeof u === 'number' && u >= 0 && u <= 1);

// windowMs in whole ms: a Redis store expires the votes after it (PEXPIRE takes no fraction)
const quorumProps = { minNodes: PositiveInteger, minFraction: UnitInterval, windowMs: PositiveIntegerMs };
const quorumCheck = check(
  'a positive integer (minNodes) or { minNodes?: integer >= 1, minFraction?: [0, 1], windowMs?: integer ms from 1 to 2147483647 }',
  (u): u is number | Quorum => {
    if (PositiveInteger.is(u)) return true;
    if (typeof u !== 'object' || u === null || Array.isArray(u)) return false;
    const q = u as Record<string, unknown>;
    return Object.keys(q).every((k) => k in quorumProps && (q[k] === undefined || quorumProps[k as keyof typeof quorumProps].is(q[k])));
  },
);

/** A structural check for option validation: an object with every {@link BreakerStore} method. */
const BreakerStoreCheck = check(
  'a BreakerStore (sync, vote, fact, acquireProbe, probeResult, isolate, reset, changes$)',
  (u): u is BreakerStore =>
    typeof u === 'object' &&
    u !== null &&
    ['sync', 'vote', 'fact', 'acquireProbe', 'probeResult', 'isolate', 'reset'].every((k) => typeof (u as Record<string, unknown>)[k] === 'function') &&
    typeof (u as { changes$?: { subscribe?: unknown } }).changes$?.subscribe === 'function',
);

const fleetProps = { store: BreakerStoreCheck, node: NonEmptyString, quorum: quorumCheck, probeLeaseMs: PositiveNumber, facts: Bool, hub: Hub };

/** Checks a `fleet` option field by field, naming the bad one (`fleet.store`, `fleet.quorum`…). */
function validateFleetOptions(target: string, fleet: unknown): void {
  validateOptions(target, fleetProps, fleet, 'fleet');
  const store = (fleet as { store?: unknown }).store;
  if (store === undefined) throw new InvalidOptionError(target, 'fleet.store', store, BreakerStoreCheck.name);
}

const links = new WeakMap<BreakerStore, FleetLink>();

/**
 * Joins a breaker to its fleet: the hook the breaker calls. One link per store object in a
 * process (one `changes$` subscription, one poll, one guard), one member per breaker. The link
 * lives until the store's `changes$` completes (`store.close()`): then it stops polling and
 * listening, and its breakers decide alone.
 *
 * @example
 * ```ts
 * const hook = attachFleet(breakerSide, { store }, (o) => new CircuitBreaker(o));
 * ```
 */
function attachFleet(breaker: FleetBreaker, options: FleetOptions): FleetHook {
  let link = links.get(options.store);
  if (!link || link.closed) links.set(options.store, (link = new FleetLink(options.store, breaker.scheduler)));
  const member = new Member(link, breaker, options.node ?? processNodeId(), options);
  link.add(member);
  // the member listens on the breaker's transitions like any observer (first: attached while the breaker is made)
  breaker.transitions$.subscribe((event) => member.transition(event));
  // the store's own breaker, followed while the hub has listeners (once per hub); a closed store has none to follow
  if (!link.closed) options.hub?.watch(link.storeBreaker);
  return member;
}

/**
 * The fleet's node logic, as a {@link BreakerStore} carries it (under `FLEET_NODE`): what a
 * `CircuitBreaker` with a `fleet` option runs. `MemoryBreakerStore` and `RedisBreakerStore`
 * carry it; give a store of your own the same line.
 *
 * @example
 * ```ts
 * import { FLEET_NODE, fleetNode, type BreakerStore } from 'rxheal/fleet';
 *
 * class MyStore implements BreakerStore {
 *   readonly [FLEET_NODE] = fleetNode;
 *   // …sync, vote, fact, acquireProbe, probeResult, isolate, reset, changes$
 * }
 * ```
 */
export const fleetNode: FleetNode = { validate: validateFleetOptions, attach: attachFleet, nodeId: processNodeId };
