/**
 * Who follows a breaker's transitions, read off its private parts: the soaks check that no run
 * leaves one behind (a hub's watch outliving its run held the hub, and grew with the runs).
 */
import type { CircuitBreaker } from '../../src/core/breaker/CircuitBreaker.js';

/** Observers of a breaker's (private) transition subject: `events$` observers (hubs and registries among them) and its fleet. */
export function breakerObservers(breaker: CircuitBreaker): number {
  return (breaker as unknown as { subject?: { observers: unknown[] } }).subject?.observers.length ?? 0;
}
