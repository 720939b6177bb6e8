/**
 * A `BreakerStore` of one's own, as a user writes one: every operation delegated to `inner` (a
 * memory store), the fleet's node logic carried under `FLEET_NODE`; `overrides` replace
 * operations or fields (a store counting its syncs, one with a poll).
 */
import { FLEET_NODE, type BreakerStore } from '../../src/core/breaker/fleetSeam.js';
import { fleetNode } from '../../src/core/fleet/fleet.js';
import type { MemoryBreakerStore } from '../../src/core/fleet/fleetStore.js';

export function ownStore(inner: MemoryBreakerStore, overrides: Partial<BreakerStore> = {}): BreakerStore {
  return {
    [FLEET_NODE]: fleetNode,
    changes$: inner.changes$,
    sync: (...a) => inner.sync(...a),
    vote: (...a) => inner.vote(...a),
    fact: (...a) => inner.fact(...a),
    acquireProbe: (...a) => inner.acquireProbe(...a),
    probeResult: (...a) => inner.probeResult(...a),
    isolate: (...a) => inner.isolate(...a),
    reset: (...a) => inner.reset(...a),
    ...overrides,
  };
}
