/**
 * Persisting breakers: {@link snapshotBreaker} / {@link restoreBreaker} for one breaker,
 * {@link snapshotRegistry} / {@link restoreRegistry} for a registry's. Functions of their own,
 * not methods, so that only code that persists breakers bundles the snapshot's rules (its fields,
 * the field-by-field check of one read back); a breaker gives them its state through its
 * `PERSIST` hook (snapshot.ts) and keeps none of those rules.
 *
 * @module
 */
import type { CircuitBreaker } from './CircuitBreaker.js';
import type { CircuitBreakerRegistry } from './registry.js';
import { PERSIST, readSnapshot, readWindow, type CircuitSnapshot, type CircuitSnapshotV1 } from './snapshot.js';

/**
 * The breaker's state as JSON, to persist across restarts. In-flight probes are not part of it.
 * Times are scheduler times, so a snapshot taken with `asyncScheduler` (epoch ms) stays valid
 * across processes; read it back with {@link restoreBreaker}.
 *
 * @example
 * ```ts
 * const breaker = new CircuitBreaker({ name: 'weather-api' });
 * writeFileSync('breaker.json', JSON.stringify(snapshotBreaker(breaker)));
 * ```
 */
export function snapshotBreaker(breaker: CircuitBreaker): CircuitSnapshot {
  const side = breaker[PERSIST]();
  const s = side.read();
  const w = s.window;
  return {
    version: 2,
    name: breaker.name,
    state: s.state,
    isolated: s.isolated,
    openUntil: s.state === 'open' && !s.isolated ? s.openUntil : null,
    consecutiveFailures: s.consecutiveFailures,
    halfOpenSuccesses: s.state === 'half-open' ? s.halfOpenSuccesses : 0,
    window: w ? { bucketMs: side.bucketMs!, latest: Number.isFinite(w.latest) ? w.latest : null, calls: [...w.calls], failures: [...w.failures] } : null,
  };
}

/**
 * Takes the breaker's state from a {@link snapshotBreaker | snapshot}, as one `restored`
 * transition. Times are scheduler times, so a snapshot taken with `asyncScheduler` (epoch ms)
 * stays valid across processes. A failure-rate window is restored only into a breaker with the
 * same bucket width (`windowMs / 10`); a window whose newest bucket is later than now's is
 * refused (it would stop the window sliding). A version-1 snapshot is taken when unambiguous (its
 * window, which does not record the width, empty or unused).
 *
 * @throws {InvalidOptionError} naming the first field that cannot be restored (e.g.
 * `snapshot.window.bucketMs`, `snapshot.window.calls[3]`); the breaker is left as it was.
 *
 * @example
 * ```ts
 * const breaker = new CircuitBreaker({ name: 'weather-api' });
 * if (existsSync('breaker.json')) restoreBreaker(breaker, JSON.parse(readFileSync('breaker.json', 'utf8')));
 * ```
 */
export function restoreBreaker(breaker: CircuitBreaker, snapshot: CircuitSnapshot | CircuitSnapshotV1): void {
  const side = breaker[PERSIST]();
  const s = readSnapshot(snapshot);
  const now = side.scheduler.now();
  // read whole before anything is set: a field that cannot be restored leaves the breaker as it was
  const window = side.bucketMs !== undefined && s.window ? readWindow(s.window, s.version, side.bucketMs, now) : undefined;
  side.write({
    state: s.isolated ? 'open' : s.state,
    isolated: s.isolated,
    openUntil: s.isolated ? Infinity : (s.openUntil ?? now),
    consecutiveFailures: s.consecutiveFailures,
    halfOpenSuccesses: s.halfOpenSuccesses ?? 0,
    window,
  });
}

/**
 * Every breaker of the registry as a {@link snapshotBreaker | snapshot}, by name.
 *
 * @example
 * ```ts
 * const breakers = new CircuitBreakerRegistry({ failureThreshold: 3 });
 * writeFileSync('breakers.json', JSON.stringify(snapshotRegistry(breakers)));
 * ```
 */
export function snapshotRegistry(registry: CircuitBreakerRegistry): Record<string, CircuitSnapshot> {
  const out: Record<string, CircuitSnapshot> = {};
  for (const name of registry.names()) out[name] = snapshotBreaker(registry.get(name));
  return out;
}

/**
 * Restores each named breaker of the registry ({@link restoreBreaker}), creating it with the
 * registry's defaults if needed.
 *
 * @throws {InvalidOptionError} as {@link restoreBreaker}, for the first snapshot that cannot be
 * restored (the breakers before it are restored).
 *
 * @example
 * ```ts
 * const breakers = new CircuitBreakerRegistry({ failureThreshold: 3 });
 * if (existsSync('breakers.json')) restoreRegistry(breakers, JSON.parse(readFileSync('breakers.json', 'utf8')));
 * ```
 */
export function restoreRegistry(registry: CircuitBreakerRegistry, snapshots: Record<string, CircuitSnapshot | CircuitSnapshotV1>): void {
  for (const [name, snap] of Object.entries(snapshots)) restoreBreaker(registry.get(name), snap);
}
