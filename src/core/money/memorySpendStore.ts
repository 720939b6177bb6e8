/**
 * {@link MemorySpendStore}: the {@link SpendStore} rule (spendStore.ts) in one process, on a
 * scheduler — the reference model the Redis store is checked against, the default store of a
 * `SpendLimiter` (this process alone), and each node's local share while the shared store is down.
 *
 * What it keeps: per key and window length, the `used` nanodollars of each window that has not
 * ended yet, and per key the nodes that reserved on it within `nodeTtlMs`. A window is dropped
 * once it has ended (at the next operation of any key after its end), and a key with no window
 * and no live node is dropped with it: what it keeps is bounded by what is live.
 *
 * @module
 */
import type { Observable, SchedulerLike } from 'rxjs';
import { simulated, simulatedStore, type SimulatedStoreOptions } from '../fleet/fleetStore.js';
import { windowStart, type SpendAdjustment, type SpendGrant, type SpendRequest, type SpendStore } from './spendStore.js';

/**
 * Options of {@link MemorySpendStore}.
 *
 * @example
 * ```ts
 * const options: MemorySpendStoreOptions = { latencyMs: 1, replyLatencyMs: 1, nodeTtlMs: 30_000 };
 * ```
 */
export type MemorySpendStoreOptions = SimulatedStoreOptions;

/** One key's state: `used` per window (by `windowMs`, then window start), and its nodes' last reservation. */
interface KeyState {
  readonly windows: Map<number, Map<number, number>>;
  readonly nodes: Map<string, number>;
}

/**
 * The {@link SpendStore} reference model in one process, on a scheduler: `used` per key and fixed
 * window, live nodes per key. `down`, `latencyMs` and `replyLatencyMs` simulate a dead or slow
 * store, with Redis's window: an operation whose caller left (unsubscribed, timed out) before its
 * answer still runs — only an operation arriving after its caller's timeout has no effect.
 *
 * @example
 * ```ts
 * const store = new MemorySpendStore();
 * const team = new SpendLimiter({ name: 'team', usd: 50, per: 'day', key: (c) => c.tags?.team ?? 'none', store });
 * ```
 */
export class MemorySpendStore implements SpendStore {
  /** Callers' timeout (see the options). */
  readonly timeoutMs: number;
  /** While true, every operation fails (a dead store). */
  down = false;
  /** Ms an operation takes to reach the store (see the options); may be changed at any time: a store that slows down. */
  latencyMs: number;
  /** Ms its answer takes to come back (see the options); may be changed at any time. */
  replyLatencyMs: number;
  private readonly scheduler: SchedulerLike;
  private readonly nodeTtlMs: number;
  private readonly keys = new Map<string, KeyState>();
  /** The earliest time a kept window ends or a node expires: nothing to drop before it. */
  private nextSweep = Infinity;

  constructor(options: MemorySpendStoreOptions = {}) {
    ({
      scheduler: this.scheduler,
      latencyMs: this.latencyMs,
      replyLatencyMs: this.replyLatencyMs,
      timeoutMs: this.timeoutMs,
      nodeTtlMs: this.nodeTtlMs,
    } = simulatedStore('MemorySpendStore', options));
  }

  /** Reserves `request.nanos` on its key's current window when it fits (the rule in spendStore.ts). */
  reserve(request: SpendRequest): Observable<SpendGrant> {
    return this.run(() => {
      const now = this.scheduler.now();
      this.sweep(now);
      const state = this.state(request.key);
      state.nodes.set(request.node, now);
      this.due(now + this.nodeTtlMs);
      const window = windowStart(now, request.windowMs);
      const windows = this.windows(state, request.windowMs);
      const used = windows.get(window) ?? 0;
      const granted = used + request.nanos <= request.limitNanos;
      if (granted) {
        windows.set(window, used + request.nanos);
        this.due(window + request.windowMs);
      }
      return { granted, window, usedNanos: granted ? used + request.nanos : used, liveNodes: state.nodes.size };
    });
  }

  /** Moves the named window's `used` by `deltaNanos` (never below 0); a window that has ended is left alone. */
  adjust(adjustment: SpendAdjustment): Observable<true> {
    return this.run(() => {
      const now = this.scheduler.now();
      this.sweep(now);
      const end = adjustment.window + adjustment.windowMs;
      // a window that has ended is dropped (or about to be): the adjustment changes nothing else
      if (end <= now) return true as const;
      const windows = this.windows(this.state(adjustment.key), adjustment.windowMs);
      windows.set(adjustment.window, Math.max(0, (windows.get(adjustment.window) ?? 0) + adjustment.deltaNanos));
      this.due(end);
      return true as const;
    });
  }

  /**
   * The `used` nanodollars of `key`'s window of `windowMs` that holds `at` (default: now), read at
   * once — outside the simulated network, whether or not the store is `down`. For specs and tools.
   *
   * @example
   * ```ts
   * store.usedNanos('team:search', 86_400_000); // 12_100_000
   * ```
   */
  usedNanos(key: string, windowMs: number, at: number = this.scheduler.now()): number {
    const start = windowStart(at, windowMs);
    if (start + windowMs <= this.scheduler.now()) return 0;
    return this.keys.get(key)?.windows.get(windowMs)?.get(start) ?? 0;
  }

  /** How many windows it keeps, over every key (what its sweep of ended windows bounds). For specs. */
  get windowCount(): number {
    let n = 0;
    for (const state of this.keys.values()) for (const windows of state.windows.values()) n += windows.size;
    return n;
  }

  private run<T>(op: () => T): Observable<T> {
    return simulated(this.scheduler, this.latencyMs, this.timeoutMs, () => this.down, op, this.replyLatencyMs);
  }

  private state(key: string): KeyState {
    let state = this.keys.get(key);
    if (!state) this.keys.set(key, (state = { windows: new Map(), nodes: new Map() }));
    return state;
  }

  private windows(state: KeyState, windowMs: number): Map<number, number> {
    let windows = state.windows.get(windowMs);
    if (!windows) state.windows.set(windowMs, (windows = new Map()));
    return windows;
  }

  private due(at: number): void {
    if (at < this.nextSweep) this.nextSweep = at;
  }

  /** Drops the windows that have ended and the nodes past their TTL, then the keys left empty. */
  private sweep(now: number): void {
    if (now < this.nextSweep) return;
    let next = Infinity;
    for (const [key, state] of this.keys) {
      for (const [windowMs, windows] of state.windows) {
        for (const start of windows.keys()) {
          if (start + windowMs <= now) windows.delete(start);
          else next = Math.min(next, start + windowMs);
        }
        if (windows.size === 0) state.windows.delete(windowMs);
      }
      for (const [node, at] of state.nodes) {
        if (at <= now - this.nodeTtlMs) state.nodes.delete(node);
        else next = Math.min(next, at + this.nodeTtlMs);
      }
      if (state.windows.size === 0 && state.nodes.size === 0) this.keys.delete(key);
    }
    this.nextSweep = next;
  }
}
