/**
 * The fleet's shared breaker state: the {@link BreakerStore} contract (what a store keeps and how
 * each operation changes it) and {@link MemoryBreakerStore}, its reference model on a scheduler.
 * `rxheal/redis` implements the same contract in Lua on Redis; `src/core/fleet.ts` is the node
 * side that talks to a store.
 *
 * The model, per breaker name:
 * - a **verdict**: `closed`, `open` until a store-time deadline, or `isolated`; a **generation**
 *   that grows with every change (`max(previous + 1, store time in ms)`, so it keeps growing
 *   even after a store lost its data), and the reason of the last change;
 * - **votes**: nodes whose own breaker opened on inference (5xx, timeouts, resets), with the
 *   store time of the vote; votes older than the quorum window are forgotten;
 * - **live nodes**: nodes that synced or voted within `nodeTtlMs`;
 * - a **probe lease**: the one node allowed to probe after the open period, until a store time.
 *
 * A **stale** open verdict — its period over and its probe lease free (never taken, or run out
 * without a result: the prober died, or its result never arrived) — counts as closed for votes:
 * a new quorum opens it anew (a new generation, reason `quorum`, a fresh `openMs`), as a fact
 * does. While a lease is live the probe is in progress, and votes change nothing.
 *
 * Every operation reads the store's own clock (a `TIME` in Redis, `scheduler.now()` here) and
 * answers with deadlines as remaining ms: nodes never compare clocks.
 *
 * @module
 */
import { asyncScheduler, Observable, Subject, type SchedulerLike, type Subscription } from 'rxjs';
import { after } from './wait.js';
import { NonNegativeNumber, PositiveNumber, Scheduler, validateOptions } from './options.js';
import { fleetNode } from './fleet.js';
import { FLEET_NODE, registerFleetNode, type FleetNode } from './fleetHook.js';

/**
 * A breaker's state fleet-wide.
 *
 * @example
 * ```ts
 * const s: FleetState = 'open';
 * ```
 */
export type FleetState = 'closed' | 'open' | 'isolated';

/**
 * Why the fleet verdict is what it is: `quorum` (enough nodes opened on their own), `rate_limit`
 * (a provider said so: 429 with `retry-after`), `probe_failure` / `probe_success` (the one prober's
 * result), `isolated` / `reset` (by hand, fleet-wide), `none` (never changed).
 *
 * @example
 * ```ts
 * const r: FleetReason = 'quorum';
 * ```
 */
export type FleetReason = 'none' | 'quorum' | 'rate_limit' | 'probe_failure' | 'probe_success' | 'isolated' | 'reset';

/**
 * One breaker's verdict as the store sees it, with deadlines as remaining ms.
 *
 * @example
 * ```ts
 * const v: FleetVerdict = { name: 'model:gpt-4o', generation: 7, state: 'open', reason: 'quorum', remainingMs: 59_950 };
 * ```
 */
export interface FleetVerdict {
  readonly name: string;
  /** Grows with every change; a node ignores a verdict whose generation it has already seen. */
  readonly generation: number;
  readonly state: FleetState;
  readonly reason: FleetReason;
  /** Open: ms until a probe may start (0 once due). Isolated: `Infinity`. Closed: 0. */
  readonly remainingMs: number;
  /** Ms left on the probe lease, when a node holds it. */
  readonly leaseRemainingMs?: number;
}

/**
 * The answer to {@link BreakerStore.acquireProbe}.
 *
 * @example
 * ```ts
 * store.acquireProbe('node-a', 'model:gpt-4o', 30_000).subscribe(({ granted }) => granted && probe());
 * ```
 */
export interface ProbeLease {
  /** Whether this node may probe now. */
  readonly granted: boolean;
  readonly verdict: FleetVerdict;
}

/**
 * How many nodes must have opened on their own, within a window, to open a breaker fleet-wide
 * (resolved: every field set; see `QuorumOptions` for the defaults).
 *
 * @example
 * ```ts
 * const quorum: Quorum = { minNodes: 2, minFraction: 0.25, windowMs: 60_000 };
 * ```
 */
export interface Quorum {
  /** Distinct nodes. */
  readonly minNodes: number;
  /** Share of the live nodes, in [0, 1]. */
  readonly minFraction: number;
  /** Votes older than this (store time) are forgotten. */
  readonly windowMs: number;
}

/**
 * Where a fleet of breakers keeps its shared verdicts. Every method returns a cold Observable
 * that performs the operation when subscribed and emits its answer once; the node side
 * (`CircuitBreaker` with a `fleet` option) bounds each one with the store's `timeoutMs` and
 * a breaker of its own, so a slow or dead store never reaches a caller. Implementations:
 * {@link MemoryBreakerStore} (one process, the reference model) and `RedisBreakerStore`
 * (`rxheal/redis`).
 *
 * The store also carries the fleet's node logic, under {@link FLEET_NODE}: a breaker reaches
 * the fleet code through the store it is given, so breakers without a `fleet` option bundle
 * none of it. A store of your own adds `readonly [FLEET_NODE] = fleetNode` (both exported by
 * `rxheal`); one that wraps a `MemoryBreakerStore` or `RedisBreakerStore` may omit it (rxheal's
 * stores make their node logic known to every breaker when constructed). Either way, complete
 * `changes$` to let go of the store: each process's link to it (its `changes$` subscription and
 * its `pollMs` poll, which keeps a Node process alive) ends then.
 *
 * @example
 * ```ts
 * const store: BreakerStore = new MemoryBreakerStore();
 * store.vote('node-a', 'model:gpt-4o', { minNodes: 2, minFraction: 0.25, windowMs: 60_000 }, 60_000).subscribe((v) => console.log(v.state));
 * ```
 */
export interface BreakerStore {
  /** The fleet's node logic ({@link fleetNode}); see above for when it may be omitted. */
  readonly [FLEET_NODE]?: FleetNode;
  /** Each node's store calls are bounded by this many ms (default 100). */
  readonly timeoutMs?: number;
  /** How often nodes re-read every verdict as a backstop to `changes$` (absent: never). */
  readonly pollMs?: number;
  /** Every verdict change, from any node (pub/sub). Completes when the store is closed. */
  readonly changes$: Observable<FleetVerdict>;
  /** Emits when changes may have been missed (a reconnect): nodes re-sync at once. */
  readonly resync$?: Observable<unknown>;
  /** Marks `node` live for each name and answers each name's verdict. */
  sync(node: string, names: readonly string[]): Observable<readonly FleetVerdict[]>;
  /**
   * `node`'s own breaker opened on inference. Counts its vote; when the votes within the window
   * reach the quorum of live nodes, a closed verdict — or a stale open one (its period over, its
   * probe lease free) — opens for `openMs`.
   */
  vote(node: string, name: string, quorum: Quorum, openMs: number): Observable<FleetVerdict>;
  /** A provider fact (429 with `retry-after`): open for at least `openMs` at once, no quorum. */
  fact(node: string, name: string, openMs: number): Observable<FleetVerdict>;
  /** Asks for the probe lease of an open verdict whose period is over. */
  acquireProbe(node: string, name: string, leaseMs: number): Observable<ProbeLease>;
  /** The lease holder's probe result: success closes, failure re-opens for `openMs`. */
  probeResult(node: string, name: string, success: boolean, openMs: number): Observable<FleetVerdict>;
  /** Isolates the breaker fleet-wide (by hand). */
  isolate(node: string, name: string): Observable<FleetVerdict>;
  /** Closes the breaker fleet-wide and forgets its votes (by hand). */
  reset(node: string, name: string): Observable<FleetVerdict>;
}

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
export function simulated<T>(scheduler: SchedulerLike, latencyMs: number, timeoutMs: number, isDown: () => boolean, op: () => T, replyLatencyMs = 0): Observable<T> {
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
    return this.run(() => names.map((name) => {
      const e = this.entry(name);
      e.nodes.set(node, this.now());
      return this.verdict(name, e);
    }));
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
