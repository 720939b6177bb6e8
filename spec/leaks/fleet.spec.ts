/**
 * A fleet's link to its store (one per store in a process) serves the breakers attached to it,
 * and must not keep them: a breaker made on the fly and dropped is released — no longer held,
 * and no longer synced by every poll.
 */
import { expect } from 'chai';
import type { Observable } from 'rxjs';
import { CircuitBreaker } from '../../src/core/breaker/CircuitBreaker.js';
import { CircuitBreakerRegistry } from '../../src/core/breaker/registry.js';
import { MemoryBreakerStore } from '../../src/core/fleet/fleetStore.js';
import type { FleetVerdict } from '../../src/core/breaker/fleetSeam.js';
import { testScheduler } from '../support/marbles.js';
import { ownStore } from '../support/ownStore.js';
import { fullGc } from '../support/gc.js';

describe('leaks: the fleet link releases the breakers nobody holds', () => {
  it('breakers (and a registry) made on the fly and dropped are collected, and the poll syncs only the breakers still held', async () => {
    // a TestScheduler outside run(): flush() runs the poll up to its 750 frames
    const ts = testScheduler();
    const inner = new MemoryBreakerStore({ scheduler: ts, pollMs: 100 });
    const synced: string[] = [];
    const store = ownStore(inner, {
      pollMs: inner.pollMs,
      sync: (node: string, names: readonly string[]): Observable<readonly FleetVerdict[]> => {
        synced.push(...names);
        return inner.sync(node, names);
      },
    });
    const kept = new CircuitBreaker({ name: 'model:kept', scheduler: ts, fleet: { store } });
    const collected: string[] = [];
    const watch = new FinalizationRegistry<string>((name) => collected.push(name));
    // a breaker per call, as `circuitBreak({ name, fleet })` inside a request handler makes one
    (() => {
      for (let i = 0; i < 50; i++) watch.register(new CircuitBreaker({ name: `tool:${i}`, scheduler: ts, fleet: { store } }), `tool:${i}`);
      const registry = new CircuitBreakerRegistry({ scheduler: ts, fleet: { store } });
      for (let i = 0; i < 50; i++) watch.register(registry.get(`model:${i}`), `model:${i}`);
    })();
    // finalization callbacks run some time after the collection (a task of their own, later
    // under load): collect again until they have, a bounded number of times — then every
    // dropped breaker is gone (one full collection under load had left some: CI, 2026-12-07)
    for (let i = 0; i < 20 && collected.length < 100; i++) await fullGc();
    expect(collected.length, 'breakers collected').to.equal(100);
    synced.length = 0;
    ts.flush();
    expect(new Set(synced), 'names synced by the polls after the collection').to.deep.equal(new Set(['model:kept']));
    expect(synced.length, 'one poll every 100 ms').to.be.at.least(7);
    expect(kept.state).to.equal('closed');
    inner.close();
  });
});
