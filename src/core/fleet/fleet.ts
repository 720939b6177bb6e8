/**
 * The node side of a fleet: what a `CircuitBreaker` with a `fleet` option does with a shared
 * {@link BreakerStore}. The breaker's own state machine stays local and synchronous; the fleet
 * only adds restrictions, each bounded in time:
 *
 * - **votes**: when a breaker opens on its own evidence (failure threshold or rate, a failed or
 *   timed-out probe), its node votes; a quorum of live nodes opens the breaker fleet-wide;
 * - **facts**: a 429 with `retry-after` opens it fleet-wide at once (no quorum), as do
 *   `isolate()` and `reset()` by hand;
 * - **holds**: a fleet verdict opens every node's breaker until the fleet deadline (never
 *   shortening a later local one); a remote "closed" never closes a breaker open on its own
 *   evidence;
 * - **one prober**: when a fleet-held open period ends, a node probes only under the store's
 *   lease; the others stay open until the prober's result arrives (or its lease runs out); a
 *   success the store missed goes again when it answers; a node whose breaker closed since it
 *   applied an open verdict no longer probes for it (it decides alone until the next generation);
 *   a half-open node admits a probe only under a live lease, whatever ended its last one (a
 *   cancelled probe leaves it half-open while its lease runs out): it asks again, and waits open
 *   while another node probes;
 * - **propagation**: the store's `changes$` (pub/sub), a poll every `store.pollMs` as backstop,
 *   generations to drop stale verdicts, deadlines as remaining ms;
 * - **store down or slow**: every store call is bounded (`store.timeoutMs`, 100 ms by default)
 *   and runs behind a breaker of its own ({@link StoreGuard}); a failed call only means the node
 *   decides alone (its local breaker, a local probe); on recovery it re-syncs.
 *
 * @module
 */
import { type Observable, type SchedulerLike, Subscription } from 'rxjs';
import { rateLimitFactMs } from '../errors/classify.js';
import { InvalidOptionError } from '../errors/errors.js';
import { CircuitBreaker } from '../breaker/CircuitBreaker.js';
import type { CircuitEvent, TransitionReason } from '../circuit/state.js';
import type { BreakerStore, FleetBreaker, FleetHook, FleetNode, FleetOptions, FleetReason, FleetVerdict, Quorum } from '../breaker/fleetSeam.js';
import { Bool, Hub, NonEmptyString, PositiveInteger, PositiveIntegerMs, PositiveNumber, check, validateOptions } from '../errors/options.js';
import { after } from '../rx/wait.js';
import { StoreGuard, processNodeId, storeBreakerOptions, type GuardBreaker } from './storeGuard.js';

/** The quorum defaults. */
const DEFAULT_QUORUM: Quorum = { minNodes: 2, minFraction: 0.25, windowMs: 60_000 };
const DEFAULT_PROBE_LEASE_MS = 30_000;

const UnitInterval = check('a number in [0, 1]', (u): u is number => typeof u === 'number' && u >= 0 && u <= 1);

// windowMs in whole ms: a Redis store expires the votes after it (PEXPIRE takes no fraction)
const quorumProps = { minNodes: PositiveInteger, minFraction: UnitInterval, windowMs: PositiveIntegerMs };
const quorumCheck = check(
  'a positive integer (minNodes) or { minNodes?: integer >= 1, minFraction?: [0, 1], windowMs?: integer ms from 1 to 2147483647 }',
  (u): u is number | Quorum => {
    if (PositiveInteger.is(u)) return true;
    if (typeof u !== 'object' || u === null || Array.isArray(u)) return false;
    const q = u as Record<string, unknown>;
    return Object.keys(q).every((k) => k in quorumProps && (q[k] === undefined || quorumProps[k as keyof typeof quorumProps].is(q[k])));
  },
);

/** A structural check for option validation: an object with every {@link BreakerStore} method. */
const BreakerStoreCheck = check(
  'a BreakerStore (sync, vote, fact, acquireProbe, probeResult, isolate, reset, changes$)',
  (u): u is BreakerStore =>
    typeof u === 'object' &&
    u !== null &&
    ['sync', 'vote', 'fact', 'acquireProbe', 'probeResult', 'isolate', 'reset'].every((k) => typeof (u as Record<string, unknown>)[k] === 'function') &&
    typeof (u as { changes$?: { subscribe?: unknown } }).changes$?.subscribe === 'function',
);

const fleetProps = { store: BreakerStoreCheck, node: NonEmptyString, quorum: quorumCheck, probeLeaseMs: PositiveNumber, facts: Bool, hub: Hub };

/** Checks a `fleet` option field by field, naming the bad one (`fleet.store`, `fleet.quorum`…). */
function validateFleetOptions(target: string, fleet: unknown): void {
  validateOptions(target, fleetProps, fleet, 'fleet');
  const store = (fleet as { store?: unknown }).store;
  if (store === undefined) throw new InvalidOptionError(target, 'fleet.store', store, BreakerStoreCheck.name);
}

/** Local transitions that are a node's own evidence: they vote (or report the probe's failure). */
const INFERENCE: ReadonlySet<TransitionReason> = new Set<TransitionReason>(['failure_threshold', 'failure_rate', 'probe_failure', 'probe_timeout']);

const HOLD_REASON: Readonly<Partial<Record<FleetReason, TransitionReason>>> = {
  quorum: 'fleet_open',
  rate_limit: 'fleet_rate_limit',
  probe_failure: 'fleet_probe_failure',
};

/** One breaker's membership in a fleet. */
class Member implements FleetHook {
  /** Last generation applied. */
  private seen = 0;
  private verdict: FleetVerdict | undefined;
  /** End of the open period this breaker owes to its own evidence (a remote "closed" won't cut it). */
  private localUntil = -Infinity;
  private lease: 'none' | 'asking' | 'mine' = 'none';
  private leaseUntil = 0;
  /** Another node holds the lease (or the period is not over here) until then: don't ask before. */
  private askAgainAt = -Infinity;
  /** The store failed us during this verdict: decide locally. */
  private alone = false;
  private inGate = false;
  private pendingAdmin: 'isolate' | 'reset' | undefined;
  /** This node's probe success never reached the store: sent again when the store answers. */
  private unsentSuccess = false;
  /** The end of a provider fact (a 429's `retry-after`) that never reached the store: sent again, as a fact, when the store answers. */
  private unsentFactUntil = -Infinity;
  private readonly quorum: Quorum;
  private readonly leaseMs: number;
  private readonly facts: boolean;

  constructor(
    readonly link: FleetLink,
    readonly breaker: FleetBreaker,
    readonly node: string,
    options: FleetOptions,
  ) {
    const quorum = typeof options.quorum === 'number' ? { minNodes: options.quorum } : (options.quorum ?? {});
    this.quorum = { ...DEFAULT_QUORUM, ...stripUndefined(quorum) };
    this.leaseMs = options.probeLeaseMs ?? DEFAULT_PROBE_LEASE_MS;
    this.facts = options.facts ?? true;
  }

  private get now(): number {
    return this.breaker.scheduler.now();
  }

  gate(calling: boolean): false | TransitionReason {
    if (this.decidesAlone()) return 'reset_timeout';
    if (this.leased(calling)) return 'probe_lease';
    return this.alone ? 'reset_timeout' : false;
  }

  probe(): boolean {
    if (this.decidesAlone() || this.leased(true) || this.alone) return true;
    // another node holds the lease (or it is being asked for): no probe here; open again, waiting on its result
    if (this.lease !== 'asking') this.rejoin(0);
    return false;
  }

  /** Whether this member holds a live probe lease or is asking for one. */
  leaseLive(): boolean {
    return this.lease === 'asking' || (this.lease === 'mine' && this.now < this.leaseUntil);
  }

  /** No open verdict binds this breaker (none, or the store is not answering): it decides alone. */
  private decidesAlone(): boolean {
    const v = this.verdict;
    return this.link.closed || !this.link.guard.available || v === undefined || v.state !== 'open' || this.alone;
  }

  /**
   * Whether this node holds a live probe lease; with a call to make, it asks for one when it has
   * none (an idle node would hold it for nothing), unless it is being asked for or another node
   * holds it. True only when the lease is this node's now (a store answering at once).
   */
  private leased(calling: boolean): boolean {
    if (this.lease === 'mine' && this.now < this.leaseUntil) return true;
    // a breaker of the same name and node (another registry of this process) probes: the node's one probe
    if (!calling || this.lease === 'asking' || this.now < this.askAgainAt || this.link.probing(this)) return false;
    this.inGate = true;
    try {
      this.askLease();
    } finally {
      this.inGate = false;
    }
    return this.lease === 'mine';
  }

  /**
   * A half-open breaker that does not hold the lease (its last probe cancelled, the lease run out,
   * another node probing): open again, like every node waiting on the prober — its period over,
   * or what the store says is left of it.
   */
  private rejoin(remainingMs: number): void {
    const v = this.verdict;
    if (v?.state === 'open' && this.breaker.view().state === 'half-open') this.hold(HOLD_REASON[v.reason] ?? 'fleet_open', this.now + remainingMs);
  }

  failed(error: unknown): boolean {
    if (!this.facts || this.link.closed) return false;
    const now = this.now;
    const waitMs = rateLimitFactMs(error, now);
    if (waitMs === undefined || this.breaker.view().isolated) return false;
    this.localUntil = Math.max(this.localUntil, now + waitMs);
    this.hold('rate_limit', now + waitMs);
    this.fact(now + waitMs);
    return true;
  }

  /** Tells the store a provider fact holding calls until `until`; one it never received waits for the store's next answer. */
  private fact(until: number): void {
    this.unsentFactUntil = -Infinity;
    this.link.call(
      this,
      (s) => s.fact(this.node, this.breaker.name, until - this.now),
      undefined,
      () => (this.unsentFactUntil = Math.max(this.unsentFactUntil, until)),
    );
  }

  admin(kind: 'isolate' | 'reset'): void {
    if (this.link.closed) return;
    if (kind === 'reset') this.localUntil = -Infinity;
    this.pendingAdmin = kind;
    this.link.call(
      this,
      (s) => (kind === 'isolate' ? s.isolate(this.node, this.breaker.name) : s.reset(this.node, this.breaker.name)),
      () => (this.pendingAdmin = undefined),
    );
  }

  /** A verdict from the store (an answer, `changes$`, a poll): applied once per generation. */
  apply(v: FleetVerdict): void {
    if (v.generation <= this.seen) return;
    this.seen = v.generation;
    this.verdict = v;
    // a new generation ends any lease, its retry, any unsent probe result and any local decision
    this.lease = 'none';
    this.unsentSuccess = false;
    this.askAgainAt = -Infinity;
    this.alone = false;
    const now = this.now;
    const view = this.breaker.view();
    if (v.state === 'isolated') {
      if (!view.isolated) this.breaker.move('open', 'fleet_isolated', Infinity);
    } else if (v.state === 'open') {
      this.hold(HOLD_REASON[v.reason] ?? 'fleet_open', now + v.remainingMs);
    } else if (v.reason === 'reset') {
      this.localUntil = -Infinity;
      if (view.state !== 'closed' || view.isolated) this.breaker.move('closed', 'fleet_reset');
    } else if (v.reason === 'probe_success' && view.state !== 'closed' && !view.isolated && now >= this.localUntil) {
      // the fleet's prober spoke for this breaker (open, or half-open without the lease); one open on
      // its own evidence waits for its own deadline
      this.breaker.move('closed', 'fleet_probe_success');
    }
  }

  /** Open (or stay open) until at least `until`: never shortens a later deadline, never touches an isolated breaker. */
  private hold(reason: TransitionReason, until: number): void {
    const view = this.breaker.view();
    if (view.isolated || (view.state === 'open' && view.openUntil >= until)) return;
    this.breaker.move('open', reason, until);
  }

  /**
   * The store answers again (or may have missed changes): what this member must tell it again —
   * a fact it never received as a fact (what is left of it: no quorum needed), and a vote for
   * its own evidence beyond it.
   */
  resend(): void {
    this.alone = false;
    if (this.pendingAdmin !== undefined) return this.admin(this.pendingAdmin);
    const now = this.now;
    const fact = this.unsentFactUntil;
    if (fact > now) this.fact(fact);
    if (this.localUntil > Math.max(now, fact) && this.breaker.view().state === 'open') this.vote();
  }

  /** The store failed to answer our lease request: decide alone (a local probe) until the next verdict. */
  private leaseFailed(): void {
    if (this.lease === 'asking') this.lease = 'none';
    this.alone = true;
    if (!this.inGate) this.breaker.refresh();
  }

  /** A local transition (the breaker calls it directly: the fleet is not an `events$` observer). */
  transition(e: CircuitEvent): void {
    if (this.link.closed) return;
    if (e.to === 'open' && INFERENCE.has(e.reason)) {
      this.localUntil = e.at + (e.retryAfterMs ?? 0);
      if (this.lease === 'mine' && e.from === 'half-open') this.probeResult(false);
      else this.vote();
    } else if (e.to === 'closed') {
      this.localUntil = -Infinity;
      // a closed breaker has left the verdict it applied: until a new generation it decides alone
      // (a stale open verdict — its prober's result lost — must not make it probe for the fleet)
      this.verdict = undefined;
      if (e.reason === 'probe_success' && this.lease === 'mine') this.probeResult(true);
    }
  }

  private vote(): void {
    this.link.call(this, (s) => s.vote(this.node, this.breaker.name, this.quorum, this.breaker.resetTimeoutMs));
  }

  private probeResult(success: boolean): void {
    this.lease = 'none';
    this.link.call(this, (s) => s.probeResult(this.node, this.breaker.name, success, this.breaker.resetTimeoutMs), undefined, () => (this.unsentSuccess = success));
  }

  /**
   * The store answered a sync: a fact it never received goes again (what is left of it), and so
   * does a probe success (it still counts if no node took the lease since; otherwise the store
   * ignores it). Without it the verdict would stay open, its lease running out before another
   * node probes again. A lost failure is not re-sent: the verdict stays open anyway, and a late
   * failure must not re-open a later window.
   */
  answered(): void {
    if (this.unsentFactUntil > this.now) this.fact(this.unsentFactUntil);
    if (!this.unsentSuccess) return;
    this.unsentSuccess = false;
    this.probeResult(true);
  }

  private askLease(): void {
    this.lease = 'asking';
    this.link.store$(
      (s) => s.acquireProbe(this.node, this.breaker.name, this.leaseMs),
      ({ granted, verdict }) => {
        if (this.lease === 'asking') this.lease = 'none';
        this.apply(verdict);
        if (granted && verdict.generation === this.seen) {
          this.lease = 'mine';
          this.leaseUntil = this.now + this.leaseMs;
          if (!this.inGate) this.breaker.refresh();
        } else if (this.verdict?.state === 'open') {
          // another node probes (or the period is not quite over here): ask again when its lease ends
          this.askAgainAt = this.now + (verdict.remainingMs > 0 ? verdict.remainingMs : (verdict.leaseRemainingMs ?? this.leaseMs));
          this.rejoin(verdict.remainingMs);
        }
      },
      () => this.leaseFailed(),
    );
  }
}

/** Drops keys whose value is undefined (so they don't override defaults). */
function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * One store's link in this process: its `changes$` subscription, the backstop poll, the guard
 * (timeout + breaker) every call goes through, and the members (breakers) it serves — held
 * weakly: a breaker nobody holds any more (one made on the fly) is collected, and then neither
 * kept nor synced.
 */
class FleetLink {
  readonly guard: StoreGuard;
  /** The breaker around store calls (`fleet-store`): a hub given as `fleet.hub` follows it. */
  readonly storeBreaker: GuardBreaker;
  closed = false;
  /** The members by breaker name, held weakly (a member lives as long as its breaker, which holds it). */
  private readonly members = new Map<string, Set<WeakRef<Member>>>();
  /** Forgets a collected member's entry. */
  private readonly released = new FinalizationRegistry<{ name: string; ref: WeakRef<Member> }>(({ name, ref }) => this.forget(name, ref));
  /** Everything the link holds (listeners, the poll): torn down by `close()`; added after it, torn down at once. */
  private readonly subscriptions = new Subscription();

  constructor(
    readonly store: BreakerStore,
    scheduler: SchedulerLike,
  ) {
    this.storeBreaker = new CircuitBreaker(storeBreakerOptions('fleet-store', scheduler));
    this.guard = new StoreGuard(this.storeBreaker, store.timeoutMs ?? 100, scheduler);
    const quiet = { error: () => undefined };
    // a store already closed completes changes$ right here: the link is closed before it listens or polls
    this.subscriptions.add(store.changes$.subscribe({ next: (v) => this.dispatch(v), complete: () => this.close(), ...quiet }));
    if (this.closed) return;
    this.subscriptions.add(this.guard.recovered$.subscribe(() => this.resync()));
    if (store.resync$) this.subscriptions.add(store.resync$.subscribe({ next: () => this.resync(), ...quiet }));
    const pollMs = store.pollMs;
    if (pollMs !== undefined && Number.isFinite(pollMs) && pollMs > 0) {
      let poll: Subscription;
      const tick = (): void => {
        this.subscriptions.remove(poll);
        this.sync();
        if (!this.closed) this.subscriptions.add((poll = after(pollMs, scheduler, tick)));
      };
      this.subscriptions.add((poll = after(pollMs, scheduler, tick)));
    }
  }

  add(member: Member): void {
    const name = member.breaker.name;
    let set = this.members.get(name);
    if (!set) this.members.set(name, (set = new Set()));
    const ref = new WeakRef(member);
    set.add(ref);
    this.released.register(member, { name, ref });
    // learn the current verdict (and count this node live)
    this.sync([member]);
  }

  /**
   * A store call whose answer is a verdict, applied to `member`. A failure goes to `failed` (or
   * is dropped): what matters is re-sent when the store answers again (`resend`, `answered`), and
   * the guard's breaker, open after repeated failures, makes every member decide alone meanwhile.
   */
  call(member: Member, op: (store: BreakerStore) => Observable<FleetVerdict>, done?: () => void, failed?: () => void): void {
    this.store$(
      op,
      (v) => {
        done?.();
        member.apply(v);
      },
      failed,
    );
  }

  /** A store call through the guard (timeout, breaker); its errors (a dead store, a throw) go to `failed`. */
  store$<T>(op: (store: BreakerStore) => Observable<T>, next: (value: T) => void, failed: () => void = () => undefined): void {
    if (this.closed) return;
    this.guard.run(() => op(this.store)).subscribe({ next, error: failed });
  }

  /** Whether another member of `member`'s name and node holds a live probe lease (or is asking for it). */
  probing(member: Member): boolean {
    for (const m of this.named(member.breaker.name)) if (m !== member && m.node === member.node && m.leaseLive()) return true;
    return false;
  }

  /** Re-reads the verdicts of `members` (all by default): the poll, the re-sync. */
  sync(members: readonly Member[] = this.all()): void {
    if (this.closed || members.length === 0) return;
    // one node may serve several names (and one name several nodes, in tests): one sync per node
    const byNode = new Map<string, Member[]>();
    for (const m of members) {
      const list = byNode.get(m.node);
      if (list) list.push(m);
      else byNode.set(m.node, [m]);
    }
    for (const [node, list] of byNode) {
      this.guard
        .run(() => this.store.sync(node, list.map((m) => m.breaker.name)))
        .subscribe({
          next: (verdicts) =>
            verdicts.forEach((v, i) => {
              list[i]?.apply(v);
              list[i]?.answered();
            }),
          error: () => undefined,
        });
    }
  }

  private dispatch(v: FleetVerdict): void {
    for (const member of this.named(v.name)) member.apply(v);
  }

  private resync(): void {
    this.sync();
    for (const m of this.all()) m.resend();
  }

  /** The live members serving `name` (a collected one's entry goes now, if its finaliser has not run yet). */
  private named(name: string): Member[] {
    const out: Member[] = [];
    for (const ref of this.members.get(name) ?? []) {
      const m = ref.deref();
      if (m) out.push(m);
      else this.forget(name, ref);
    }
    return out;
  }

  /** Every live member. */
  private all(): Member[] {
    return [...this.members.keys()].flatMap((name) => this.named(name));
  }

  private forget(name: string, ref: WeakRef<Member>): void {
    const set = this.members.get(name);
    if (set?.delete(ref) === true && set.size === 0) this.members.delete(name);
  }

  private close(): void {
    this.closed = true;
    this.subscriptions.unsubscribe();
  }
}

const links = new WeakMap<BreakerStore, FleetLink>();

/**
 * Joins a breaker to its fleet: the hook the breaker calls. One link per store object in a
 * process (one `changes$` subscription, one poll, one guard), one member per breaker. The link
 * lives until the store's `changes$` completes (`store.close()`): then it stops polling and
 * listening, and its breakers decide alone.
 *
 * @example
 * ```ts
 * const hook = attachFleet(breakerSide, { store }, (o) => new CircuitBreaker(o));
 * ```
 */
function attachFleet(breaker: FleetBreaker, options: FleetOptions): FleetHook {
  let link = links.get(options.store);
  if (!link || link.closed) links.set(options.store, (link = new FleetLink(options.store, breaker.scheduler)));
  const member = new Member(link, breaker, options.node ?? processNodeId(), options);
  link.add(member);
  // the store's own breaker, followed while the hub has listeners (once per hub); a closed store has none to follow
  if (!link.closed) options.hub?.watch(link.storeBreaker);
  return member;
}

/**
 * The fleet's node logic, as a {@link BreakerStore} carries it (under `FLEET_NODE`): what a
 * `CircuitBreaker` with a `fleet` option runs. `MemoryBreakerStore` and `RedisBreakerStore`
 * carry it; give a store of your own the same line.
 *
 * @example
 * ```ts
 * import { FLEET_NODE, fleetNode, type BreakerStore } from 'rxheal';
 *
 * class MyStore implements BreakerStore {
 *   readonly [FLEET_NODE] = fleetNode;
 *   // …sync, vote, fact, acquireProbe, probeResult, isolate, reset, changes$
 * }
 * ```
 */
export const fleetNode: FleetNode = { validate: validateFleetOptions, attach: attachFleet, nodeId: processNodeId };
