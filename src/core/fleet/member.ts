/**
 * One breaker's membership in a fleet ({@link Member}, the {@link FleetHook} its breaker calls): a
 * state machine over the store's verdicts — the generation applied, the open period owed to its own
 * evidence, the probe lease (none, asked for, held), deciding alone while the store fails, and what
 * must be sent again when the store answers. What it needs of its store's link is
 * {@link MemberLink} (fleetLink.ts implements it).
 *
 * @module
 */
import type { Observable } from 'rxjs';
import { rateLimitFactMs } from '../errors/classify.js';
import type { CircuitEvent, TransitionReason } from '../circuit/state.js';
import type { BreakerStore, FleetBreaker, FleetHook, FleetOptions, FleetReason, FleetVerdict, Quorum } from '../breaker/fleetSeam.js';
import type { StoreGuard } from './storeGuard.js';

/** The quorum defaults. */
const DEFAULT_QUORUM: Quorum = { minNodes: 2, minFraction: 0.25, windowMs: 60_000 };
const DEFAULT_PROBE_LEASE_MS = 30_000;

/** Local transitions that are a node's own evidence: they vote (or report the probe's failure). */
const INFERENCE: ReadonlySet<TransitionReason> = new Set<TransitionReason>(['failure_threshold', 'failure_rate', 'probe_failure', 'probe_timeout']);

const HOLD_REASON: Readonly<Partial<Record<FleetReason, TransitionReason>>> = {
  quorum: 'fleet_open',
  rate_limit: 'fleet_rate_limit',
  probe_failure: 'fleet_probe_failure',
};

/** What a {@link Member} needs of its store's link (`FleetLink`, in fleetLink.ts, implements it). */
export interface MemberLink {
  /** The store's `changes$` completed: the link no longer calls it, and its members decide alone. */
  readonly closed: boolean;
  /** The guard every store call goes through: while it is not `available`, members decide alone. */
  readonly guard: Pick<StoreGuard, 'available'>;
  /** A store call whose answer is a verdict, applied to `member`; a failure goes to `failed`. */
  call(member: Member, op: (store: BreakerStore) => Observable<FleetVerdict>, done?: () => void, failed?: () => void): void;
  /** A store call through the guard; its errors go to `failed`. */
  store$<T>(op: (store: BreakerStore) => Observable<T>, next: (value: T) => void, failed?: () => void): void;
  /** Whether another member of `member`'s name and node holds a live probe lease (or is asking for it). */
  probing(member: Member): boolean;
}

/** One breaker's membership in a fleet. */
export class Member implements FleetHook {
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
    readonly link: MemberLink,
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

  /** A local transition, from the breaker's `transitions$` (see `attachFleet`). */
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
    this.link.call(
      this,
      (s) => s.probeResult(this.node, this.breaker.name, success, this.breaker.resetTimeoutMs),
      undefined,
      () => (this.unsentSuccess = success),
    );
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
