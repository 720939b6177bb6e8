/**
 * One store's link in this process ({@link FleetLink}): its `changes$` subscription, the backstop
 * poll, the guard (timeout + breaker) every store call goes through, the re-sync when the store
 * answers again, and the members it serves, held weakly.
 *
 * @module
 */
import { type Observable, type SchedulerLike, Subscription } from 'rxjs';
import { CircuitBreaker } from '../breaker/CircuitBreaker.js';
import type { BreakerStore, FleetVerdict } from '../breaker/fleetSeam.js';
import { after } from '../rx/wait.js';
import { StoreGuard, storeBreakerOptions, type GuardBreaker } from './storeGuard.js';
import type { Member, MemberLink } from './member.js';

/**
 * One store's link in this process: its `changes$` subscription, the backstop poll, the guard
 * (timeout + breaker) every call goes through, and the members (breakers) it serves — held
 * weakly: a breaker nobody holds any more (one made on the fly) is collected, and then neither
 * kept nor synced.
 */
export class FleetLink implements MemberLink {
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
        .run(() =>
          this.store.sync(
            node,
            list.map((m) => m.breaker.name),
          ),
        )
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
