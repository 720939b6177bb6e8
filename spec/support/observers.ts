/**
 * Who follows a breaker's transitions, read off its private parts: the soaks check that no run
 * leaves one behind (a hub's watch outliving its run held the hub, and grew with the runs).
 */
import type { CircuitBreaker } from '../../src/core/breaker/CircuitBreaker.js';

/** Observers of a breaker's (private) transition subject, and its listeners (hubs, registries). */
export function breakerObservers(breaker: CircuitBreaker): number {
  const b = breaker as unknown as { subject?: { observers: unknown[] }; listeners?: Set<unknown> };
  return (b.subject?.observers.length ?? 0) + (b.listeners?.size ?? 0);
}
