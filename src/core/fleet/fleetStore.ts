/**
 * {@link MemoryBreakerStore}: the {@link BreakerStore} contract's reference model on a scheduler
 * (the contract and its model are described in breaker/fleetSeam.ts), and the simulated network
 * both memory stores run their operations through. `rxheal/redis` implements the same contract in
 * Lua on Redis; core/fleet's node logic (fleet.ts) is the side that talks to a store.
 *
 * @module
 */
import { asyncScheduler, Observable, Subject, type SchedulerLike, type Subscription } from 'rxjs';
import { after } from '../rx/wait.js';
import { NonNegativeNumber, PositiveNumber, Scheduler, validateOptions } from '../errors/options.js';
import { fleetNode } from './fleet.js';
import {
  FLEET_NODE,
  registerFleetNode,
  type BreakerStore,
  type FleetNode,
  type FleetReason,
  type FleetState,
  type FleetVerdict,
  type ProbeLease,
  type Quorum,
} from '../breaker/fleetSeam.js';

/** A new verdict generation: above the last one and at least the store time (survives data loss). */
export function nextGeneration(previous: number, nowMs: number): number {
  return Math.max(previous + 1, Math.floor(nowMs));
}

/**
 * A memory store's operation as a network would run it: `op` reaches the store and runs
 * `latencyMs` after the call (at once for 0), and its answer arrives `replyLatencyMs` after that;
 * it fails while `isDown()`; an operation arriving after its caller gave up (`timeoutMs`) has no
 * effect, as in the Redis stores (whose scripts drop a command that reaches Redis past its
 * deadline). A command sent cannot be unsent: unsubscribing stops listening for the answer, never
 * the operation — as on Redis, where the script runs whether or not its caller still waits.
 */
export function simulated<T>(
  scheduler: SchedulerLike,
  latencyMs: number,
  timeoutMs: number,
  isDown: () => boolean,
  op: () => T,
  replyLatencyMs = 0,
): Observable<T> {
  return new Observable<T>((subscriber) => {
    const sentAt = scheduler.now();
    let reply: Subscription | undefined;
    const arrive = (): void => {
      let answer: (() => void) | undefined;
      if (isDown()) answer = () => subscriber.error(new Error('the memory store is down'));
      else if (scheduler.now() - sentAt > timeoutMs) answer = () => subscriber.error(new Error('the operation reached the memory store after its deadline'));
      else {
        const value = op();
        answer = () => {
          subscriber.next(value);
          subscriber.complete();
        };
      }
      if (replyLatencyMs === 0) answer();
      else if (!subscriber.closed) reply = after(replyLatencyMs, scheduler, answer);
    };
    if (latencyMs === 0) arrive();
    else after(latencyMs, scheduler, arrive);
    return () => reply?.unsubscribe();
  });
}

/**
 * Options of a memory store that stands in for a shared one on a scheduler (`MemoryRateLimitStore`,
 * `MemorySpendStore`): its clock, and the network it simulates with Redis's window — an operation
 * whose caller left still runs; only one arriving after its caller's timeout has no effect.
 *
 * @example
 * ```ts
 * const options: SimulatedStoreOptions = { latencyMs: 1, replyLatencyMs: 1, nodeTtlMs: 30_000 };
 * ```
 */
export interface SimulatedStoreOptions {
  /** Its clock. Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
  /**
   * Each operation reaches the store, and runs, this many ms after the call, whether or not the
   * caller still listens (a command sent cannot be unsent, as on Redis). Defaults to 0.
   */
  readonly latencyMs?: number;
  /** Its answer arrives this many ms after it ran (the way back; it may come after the caller's timeout). Defaults to 0. */
  readonly replyLatencyMs?: number;
  /** Callers' timeout; an operation reaching the store later than this after its call has no effect. Defaults to 100. */
  readonly timeoutMs?: number;
  /** A node that has not reserved for this long is not live. Defaults to 60 000. */
  readonly nodeTtlMs?: number;
}

const simulatedStoreProps = {
  scheduler: Scheduler,
  latencyMs: NonNegativeNumber,
  replyLatencyMs: NonNegativeNumber,
  timeoutMs: PositiveNumber,
  nodeTtlMs: PositiveNumber,
};

/**
 * A simulated store's settings: `options` checked (an `InvalidOptionError` naming `target` and the
 * option), with the defaults.
 *
 * @example
 * ```ts
 * const { scheduler, latencyMs, replyLatencyMs, timeoutMs, nodeTtlMs } = simulatedStore('MemorySpendStore', { latencyMs: 2 });
 * ```
 */
export function simulatedStore(
  target: string,
  options: SimulatedStoreOptions,
): { scheduler: SchedulerLike; latencyMs: number; replyLatencyMs: number; timeoutMs: number; nodeTtlMs: number } {
  const o = validateOptions(target, simulatedStoreProps, options);
  return {
    scheduler: o.scheduler ?? asyncScheduler,
    latencyMs: o.latencyMs ?? 0,
    replyLatencyMs: o.replyLatencyMs ?? 0,
    timeoutMs: o.timeoutMs ?? 100,
    nodeTtlMs: o.nodeTtlMs ?? 60_000,
  };
}

/**
 * Options of {@link MemoryBreakerStore}.
 *
 * @example
 * ```ts
 * const options: MemoryBreakerStoreOptions = { latencyMs: 2, pollMs: 1000 };
 * ```
 */
export interface MemoryBreakerStoreOptions {
  /** Its clock and the delivery of answers. Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
  /** Each operation runs, and answers, this many ms after it is called (a network). Defaults to 0: at once. */
  readonly latencyMs?: number;
  /** Nodes' store-call timeout. Defaults to 100. */
  readonly timeoutMs?: number;
  /** Backstop re-read interval for nodes. Defaults to none: this store never loses a change. */
  readonly pollMs?: number;
  /** A node that has not synced or voted for this long is not live. Defaults to 3 × `pollMs`, or forever. */
  readonly nodeTtlMs?: number;
}

const memoryOptionProps = {
  scheduler: Scheduler,
  latencyMs: NonNegativeNumber,
  timeoutMs: PositiveNumber,
  pollMs: PositiveNumber,
  nodeTtlMs: PositiveNumber,
};

interface Entry {
  generation: number;
  state: FleetState;
  reason: FleetReason;
  until: number;
  votes: Map<string, number>;
  nodes: Map<string, number>;
  lease: { node: string; until: number } | undefined;
}

/**
 * The {@link BreakerStore} reference model, in one process: the same rules as the Redis store,
 * on a scheduler (so N breakers sharing one are spec'd with marbles in virtual time). `down`
 * and `latencyMs` simulate a dead or slow store; an operation arriving after its caller's
 * timeout has no effect.
 *
 * @example
 * ```ts
 * const store = new MemoryBreakerStore();
 * const fleet = { store, quorum: { minNodes: 2 } };
 * const a = new CircuitBreaker({ name: 'model:gpt-4o', fleet: { ...fleet, node: 'a' } });
 * const b = new CircuitBreaker({ name: 'model:gpt-4o', fleet: { ...fleet, node: 'b' } });
 * ```
 */
export class MemoryBreakerStore implements BreakerStore {
  // set in the constructor: a computed class field would keep the class (and the fleet code) in every bundle
  declare readonly [FLEET_NODE]: FleetNode;
  readonly timeoutMs: number;
  readonly pollMs: number | undefined;
  /** While true, every operation fails (a dead store). */
  down = false;
  private readonly scheduler: SchedulerLike;
  private readonly latencyMs: number;
  private readonly nodeTtlMs: number;
  private readonly entries = new Map<string, Entry>();
  private readonly subject = new Subject<FleetVerdict>();
  readonly changes$: Observable<FleetVerdict> = this.subject.asObservable();

  constructor(options: MemoryBreakerStoreOptions = {}) {
    const o = validateOptions('MemoryBreakerStore', memoryOptionProps, options);
    (this as { [FLEET_NODE]: FleetNode })[FLEET_NODE] = fleetNode;
    registerFleetNode(fleetNode);
    this.scheduler = o.scheduler ?? asyncScheduler;
    this.latencyMs = o.latencyMs ?? 0;
    this.timeoutMs = o.timeoutMs ?? 100;
    this.pollMs = o.pollMs;
    this.nodeTtlMs = o.nodeTtlMs ?? (o.pollMs === undefined ? Infinity : 3 * o.pollMs);
  }

  /** Completes `changes$`: nodes stop listening and polling (their breakers then decide alone). */
  close(): void {
    this.subject.complete();
  }

  sync(node: string, names: readonly string[]): Observable<readonly FleetVerdict[]> {
    return this.run(() =>
      names.map((name) => {
        const e = this.entry(name);
        e.nodes.set(node, this.now());
        return this.verdict(name, e);
      }),
    );
  }

  vote(node: string, name: string, quorum: Quorum, openMs: number): Observable<FleetVerdict> {
    return this.run(() => {
      const now = this.now();
      const e = this.entry(name);
      e.nodes.set(node, now);
      e.votes.set(node, now);
      for (const [voter, at] of e.votes) if (at <= now - quorum.windowMs) e.votes.delete(voter);
      // a stale open verdict (its period over, no probe under a live lease) counts as closed
      if (e.state === 'closed' || (e.state === 'open' && now >= e.until && (e.lease === undefined || now >= e.lease.until))) {
        const live = this.live(e, now);
        const needed = Math.max(quorum.minNodes, Math.ceil(quorum.minFraction * live));
        if (e.votes.size >= needed) {
          e.votes.clear();
          this.change(name, e, 'open', 'quorum', now + openMs);
        }
      }
      return this.verdict(name, e);
    });
  }

  fact(node: string, name: string, openMs: number): Observable<FleetVerdict> {
    return this.run(() => {
      const now = this.now();
      const e = this.entry(name);
      e.nodes.set(node, now);
      // never shorten a live deadline; an isolated breaker stays isolated
      if (e.state !== 'isolated' && !(e.state === 'open' && e.until >= now + openMs)) this.change(name, e, 'open', 'rate_limit', now + openMs);
      return this.verdict(name, e);
    });
  }

  acquireProbe(node: string, name: string, leaseMs: number): Observable<ProbeLease> {
    return this.run(() => {
      const now = this.now();
      const e = this.entry(name);
      let granted = false;
      if (e.state === 'open' && now >= e.until && (e.lease === undefined || e.lease.node === node || now >= e.lease.until)) {
        e.lease = { node, until: now + leaseMs };
        granted = true;
      }
      return { granted, verdict: this.verdict(name, e) };
    });
  }

  probeResult(node: string, name: string, success: boolean, openMs: number): Observable<FleetVerdict> {
    return this.run(() => {
      const now = this.now();
      const e = this.entry(name);
      // only the holder's result counts (even past its lease, as long as no one took it since)
      if (e.state === 'open' && e.lease?.node === node) {
        if (success) {
          e.votes.clear();
          this.change(name, e, 'closed', 'probe_success', 0);
        } else {
          this.change(name, e, 'open', 'probe_failure', Math.max(e.until, now + openMs));
        }
      }
      return this.verdict(name, e);
    });
  }

  isolate(_node: string, name: string): Observable<FleetVerdict> {
    return this.run(() => {
      const e = this.entry(name);
      if (e.state !== 'isolated') this.change(name, e, 'isolated', 'isolated', Infinity);
      return this.verdict(name, e);
    });
  }

  reset(_node: string, name: string): Observable<FleetVerdict> {
    return this.run(() => {
      const e = this.entry(name);
      e.votes.clear();
      this.change(name, e, 'closed', 'reset', 0);
      return this.verdict(name, e);
    });
  }

  private now(): number {
    return this.scheduler.now();
  }

  private run<T>(op: () => T): Observable<T> {
    return simulated(this.scheduler, this.latencyMs, this.timeoutMs, () => this.down, op);
  }

  private entry(name: string): Entry {
    let e = this.entries.get(name);
    if (!e) this.entries.set(name, (e = { generation: 0, state: 'closed', reason: 'none', until: 0, votes: new Map(), nodes: new Map(), lease: undefined }));
    return e;
  }

  private live(e: Entry, now: number): number {
    for (const [node, at] of e.nodes) if (at <= now - this.nodeTtlMs) e.nodes.delete(node);
    return e.nodes.size;
  }

  private change(name: string, e: Entry, state: FleetState, reason: FleetReason, until: number): void {
    e.generation = nextGeneration(e.generation, this.now());
    e.state = state;
    e.reason = reason;
    e.until = until;
    e.lease = undefined;
    this.subject.next(this.verdict(name, e));
  }

  private verdict(name: string, e: Entry): FleetVerdict {
    const now = this.now();
    const remainingMs = e.state === 'isolated' ? Infinity : e.state === 'open' ? Math.max(0, e.until - now) : 0;
    const base = { name, generation: e.generation, state: e.state, reason: e.reason, remainingMs };
    return e.lease !== undefined && e.lease.until > now ? { ...base, leaseRemainingMs: e.lease.until - now } : base;
  }
}
