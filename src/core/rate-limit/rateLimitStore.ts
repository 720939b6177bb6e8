/**
 * Shared rate limits: the {@link RateLimitStore} contract, the GCRA rule it follows, and
 * {@link MemoryRateLimitStore}, its reference model on a scheduler (also each node's local share
 * while the shared store is down). `rxheal/redis` implements the same rule in Lua on Redis.
 *
 * GCRA (the generic cell rate algorithm) keeps one number per limit: the theoretical arrival time
 * `tat`. With `limit` units per `periodMs`, one unit is worth `T = periodMs / limit` ms and the
 * burst is a whole period's worth. A request costing `cost` units at `now` may start after
 * `wait = max(0, max(tat, now) + cost·T − periodMs − now)`; reserving it moves `tat` to
 * `max(tat, now) + cost·T`. A cost above 1 (tokens) is just more units; the wait is what the
 * caller waits on its scheduler.
 *
 * @module
 */
import { Observable, type SchedulerLike } from 'rxjs';
import { simulated, simulatedStore, type SimulatedStoreOptions } from '../fleet/fleetStore.js';
import { check } from '../errors/options.js';

/**
 * One limit of a key: `limit` units per `periodMs`.
 *
 * @example
 * ```ts
 * const tokens: RateLimit = { id: 'tokens', limit: 30_000, periodMs: 60_000 };
 * ```
 */
export interface RateLimit {
  /** Which limit of the key, e.g. `'requests'`, `'tokens'`. */
  readonly id: string;
  readonly limit: number;
  readonly periodMs: number;
}

/**
 * A reservation request: every limit's cost, granted only if every limit's wait is at most
 * `maxWaitMs` (then reserved on all of them at once, atomically).
 *
 * @example
 * ```ts
 * const request: RateLimitRequest = { key: 'openai:prod', node: 'n1', maxWaitMs: 30_000, limits: [{ id: 'requests', limit: 500, periodMs: 60_000, cost: 1 }] };
 * ```
 */
export interface RateLimitRequest {
  readonly key: string;
  readonly node: string;
  readonly limits: readonly (RateLimit & { readonly cost: number })[];
  readonly maxWaitMs: number;
}

/**
 * The answer to a reservation.
 *
 * @example
 * ```ts
 * store.reserve(request).subscribe((g: RateLimitGrant) => console.log(g.granted ? `start in ${g.waitMs} ms` : 'refused'));
 * ```
 */
export interface RateLimitGrant {
  readonly granted: boolean;
  /** Ms to wait before the call may start (when not granted: the wait it would have needed). */
  readonly waitMs: number;
  /** Nodes that reserved on this key within the store's `nodeTtlMs`, this one included. */
  readonly liveNodes: number;
}

/**
 * A correction of earlier reservations: `delta` units more (negative: given back), and/or a
 * floor: `tat` at least `floorMs` from now (a provider's headers said fewer units remain).
 *
 * @example
 * ```ts
 * const refund: RateLimitAdjustment = { key: 'openai:prod', limits: [{ id: 'tokens', limit: 30_000, periodMs: 60_000, delta: -120 }] };
 * ```
 */
export interface RateLimitAdjustment {
  readonly key: string;
  readonly limits: readonly (RateLimit & { readonly delta?: number; readonly floorMs?: number })[];
}

/**
 * Where a fleet's rate limits are kept. Methods return cold Observables that perform the
 * operation when subscribed and emit once. Implementations: {@link MemoryRateLimitStore} and
 * `RedisRateLimitStore` (`rxheal/redis`).
 *
 * @example
 * ```ts
 * const store: RateLimitStore = new MemoryRateLimitStore();
 * store
 *   .reserve({ key: 'k', node: 'n', maxWaitMs: 1000, limits: [{ id: 'requests', limit: 60, periodMs: 60_000, cost: 1 }] })
 *   .subscribe((g) => console.log(g.waitMs));
 * ```
 */
export interface RateLimitStore {
  /** Each call is bounded by this many ms (default 100). */
  readonly timeoutMs?: number;
  reserve(request: RateLimitRequest): Observable<RateLimitGrant>;
  adjust(adjustment: RateLimitAdjustment): Observable<true>;
}

/** A structural check for option validation. */
export const RateLimitStoreCheck = check(
  'a RateLimitStore (reserve, adjust)',
  (u): u is RateLimitStore =>
    typeof u === 'object' && u !== null && typeof (u as RateLimitStore).reserve === 'function' && typeof (u as RateLimitStore).adjust === 'function',
);

/**
 * GCRA for one limit: the wait before a request of `cost` units may start at `now`, and the
 * `tat` once it is reserved. `tat` undefined: nothing reserved yet.
 *
 * @example
 * ```ts
 * gcra(undefined, 0, { id: 'r', limit: 2, periodMs: 1000 }, 1); // { waitMs: 0, tat: 500 }
 * ```
 */
export function gcra(tat: number | undefined, now: number, limit: RateLimit, cost: number): { waitMs: number; tat: number } {
  const unit = limit.periodMs / limit.limit;
  const next = Math.max(tat ?? now, now) + cost * unit;
  return { waitMs: Math.max(0, next - limit.periodMs - now), tat: next };
}

/**
 * GCRA's correction: `tat` moved by `delta` units (never below now) and raised to at least
 * `now + floorMs`.
 *
 * @example
 * ```ts
 * gcraAdjust(900, 0, { id: 'r', limit: 2, periodMs: 1000 }, -1, undefined); // 400
 * ```
 */
export function gcraAdjust(tat: number | undefined, now: number, limit: RateLimit, delta: number, floorMs: number | undefined): number {
  const unit = limit.periodMs / limit.limit;
  const moved = Math.max(now, Math.max(tat ?? now, now) + delta * unit);
  return floorMs === undefined ? moved : Math.max(moved, now + floorMs);
}

/**
 * Options of {@link MemoryRateLimitStore}.
 *
 * @example
 * ```ts
 * const options: MemoryRateLimitStoreOptions = { latencyMs: 1, replyLatencyMs: 1 };
 * ```
 */
export type MemoryRateLimitStoreOptions = SimulatedStoreOptions;

/**
 * The {@link RateLimitStore} reference model in one process, on a scheduler: GCRA per limit,
 * live nodes per key. `down`, `latencyMs` and `replyLatencyMs` simulate a dead or slow store, with
 * Redis's window: an operation whose caller left (unsubscribed, timed out) before its answer still
 * runs — only an operation arriving after its caller's timeout has no effect.
 *
 * @example
 * ```ts
 * const limiter = new RateLimiter({ name: 'openai:prod', requestsPerMinute: 500, store: new MemoryRateLimitStore() });
 * ```
 */
export class MemoryRateLimitStore implements RateLimitStore {
  readonly timeoutMs: number;
  /** While true, every operation fails (a dead store). */
  down = false;
  private readonly scheduler: SchedulerLike;
  private readonly latencyMs: number;
  private readonly replyLatencyMs: number;
  private readonly nodeTtlMs: number;
  private readonly tats = new Map<string, number>();
  private readonly nodes = new Map<string, Map<string, number>>();

  constructor(options: MemoryRateLimitStoreOptions = {}) {
    ({
      scheduler: this.scheduler,
      latencyMs: this.latencyMs,
      replyLatencyMs: this.replyLatencyMs,
      timeoutMs: this.timeoutMs,
      nodeTtlMs: this.nodeTtlMs,
    } = simulatedStore('MemoryRateLimitStore', options));
  }

  reserve(request: RateLimitRequest): Observable<RateLimitGrant> {
    return this.run(() => {
      const now = this.scheduler.now();
      let nodes = this.nodes.get(request.key);
      if (!nodes) this.nodes.set(request.key, (nodes = new Map()));
      nodes.set(request.node, now);
      for (const [node, at] of nodes) if (at <= now - this.nodeTtlMs) nodes.delete(node);
      const steps = request.limits.map((l) => ({ id: `${request.key}\u0000${l.id}`, ...gcra(this.tats.get(`${request.key}\u0000${l.id}`), now, l, l.cost) }));
      const waitMs = Math.max(0, ...steps.map((s) => s.waitMs));
      const granted = waitMs <= request.maxWaitMs;
      if (granted) for (const s of steps) this.tats.set(s.id, s.tat);
      return { granted, waitMs, liveNodes: nodes.size };
    });
  }

  adjust(adjustment: RateLimitAdjustment): Observable<true> {
    return this.run(() => {
      const now = this.scheduler.now();
      for (const l of adjustment.limits) {
        const id = `${adjustment.key}\u0000${l.id}`;
        this.tats.set(id, gcraAdjust(this.tats.get(id), now, l, l.delta ?? 0, l.floorMs));
      }
      return true as const;
    });
  }

  private run<T>(op: () => T): Observable<T> {
    return simulated(this.scheduler, this.latencyMs, this.timeoutMs, () => this.down, op, this.replyLatencyMs);
  }
}
