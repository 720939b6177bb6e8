/**
 * Persisting breakers: {@link snapshotBreaker} / {@link restoreBreaker} for one breaker,
 * {@link snapshotRegistry} / {@link restoreRegistry} for a registry's. Functions of their own,
 * not methods, so that only code that persists breakers bundles the snapshot's rules (its fields,
 * the field-by-field check of one read back). They read and set a breaker's private state as its
 * own `Permit` does (by name: the minifier keeps property names), so the breaker class carries no
 * persistence code at all.
 *
 * @module
 */
import type { SchedulerLike } from 'rxjs';
import type { CircuitState, TransitionReason } from '../circuit/state.js';
import type { CircuitBreaker, FailureRateWindow } from './CircuitBreaker.js';
import { BUCKETS, RateWindow } from './rateWindow.js';
import type { CircuitBreakerRegistry } from './registry.js';
import { readSnapshot, readWindow, type CircuitSnapshot, type CircuitSnapshotV1 } from './snapshot.js';

/** The private state of a {@link CircuitBreaker} that persisting reads and sets (the class's own field names). */
interface Inside {
  current: CircuitState;
  isolatedByHand: boolean;
  openUntil: number;
  consecutive: number;
  probeSuccesses: number;
  window: RateWindow | undefined;
  readonly rate: FailureRateWindow | undefined;
  readonly scheduler: SchedulerLike;
  /** Open → half-open once the reset timeout has passed. */
  refresh(): void;
  /** One transition (a restore is one, reason `restored`). */
  enter(to: CircuitState, reason: TransitionReason, failures: number, from: CircuitState, extra: { openUntil?: number; consecutive?: number }): void;
}

const inside = (breaker: CircuitBreaker): Inside => breaker as unknown as Inside;

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
  const b = inside(breaker);
  b.refresh();
  const w = b.window;
  return {
    version: 2,
    name: breaker.name,
    state: b.current,
    isolated: b.isolatedByHand,
    openUntil: b.current === 'open' && !b.isolatedByHand ? b.openUntil : null,
    consecutiveFailures: b.consecutive,
    halfOpenSuccesses: b.current === 'half-open' ? b.probeSuccesses : 0,
    window:
      b.rate && w
        ? { bucketMs: b.rate.windowMs / BUCKETS, latest: Number.isFinite(w.latest) ? w.latest : null, calls: [...w.calls], failures: [...w.failures] }
        : null,
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
  const b = inside(breaker);
  const s = readSnapshot(snapshot);
  const now = b.scheduler.now();
  // read whole before anything is set: a field that cannot be restored leaves the breaker as it was
  const window = b.rate && s.window ? readWindow(s.window, s.version, b.rate.windowMs / BUCKETS, now) : undefined;
  b.refresh();
  const from = b.current;
  b.isolatedByHand = s.isolated;
  b.enter(s.isolated ? 'open' : s.state, 'restored', 0, from, { openUntil: s.isolated ? Infinity : (s.openUntil ?? now), consecutive: s.consecutiveFailures });
  if (b.current === 'half-open') b.probeSuccesses = s.halfOpenSuccesses ?? 0;
  // (after entering: a transition clears the window)
  if (b.rate && window) Object.assign((b.window ??= new RateWindow(b.rate.windowMs)), window);
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
