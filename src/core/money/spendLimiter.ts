/**
 * {@link SpendLimiter}: a dollar budget per key and fixed window (`$50 per team per day`), shared by
 * every process through a {@link SpendStore}, behind the {@link SpendGate} seam (`runAgent({ spend })`).
 *
 * The protocol, per attempt:
 *
 * 1. `reserve(usd, context)` reserves `toNanos(usd)` (rounded up) on the store's key
 *    `<name>:<key(context)>`, against `limitNanos` = the limit in nanodollars rounded **down**:
 *    rounding never lets the window's `used` pass the limit. Granted: one {@link SpendHold}, then
 *    complete. Refused: `BudgetExceededError('usd', limit, used + usd)` (and a `spend-refused` event).
 * 2. `hold.settle(actualUsd)` sends `toNanos(actualUsd) − held` to the hold's window (nothing when
 *    0); `hold.refund()` sends `−held`. The first call counts, a later one is ignored; neither
 *    throws nor waits.
 *
 * Cancellation: a reservation sent cannot be unsent. Unsubscribing before the hold arrives (or the
 * store call's timeout) stops listening, not the request: its answer is still awaited, and a grant
 * that arrives with nobody listening is given back to the store at once.
 *
 * A store that is down or slow. With a `store`, each call is bounded by `store.timeoutMs` (default
 * 100 ms) on the scheduler and guarded by a breaker (`spend-store:<name>`: after 2 failures no
 * call is tried for 1 s). A reservation the store did not answer is decided on this node's
 * **local share**: `limit ÷ liveNodes` (the most live nodes the store reported within the last
 * minute; `expectedNodes` before it ever answered), rounded down, on a local `MemorySpendStore`
 * in the same window — never without a limit. What this node reserved on the shared store in the
 * window counts against its share (every shared grant, and its settlement, is mirrored on the
 * local store), and once the store has answered for the key in the window, the share is at most
 * what this node held then plus its part (÷ liveNodes) of what the store had left then. So while
 * the store is out of reach the fleet's local decisions together spend at most what the store last
 * told them was left (each node's last answer: one that heard long ago may count on more than is
 * left now); before any answer in the window, at most one share per node. Never unlimited. A
 * `spend-local` event says when a reservation was decided so. A hold decided so is owed to the
 * shared store: it and its settlement are kept with the adjustments not sent yet (below) and sent
 * before this node's next shared call, so once the store answers again the fleet's count holds it.
 *
 * Adjustments that fail. A settlement or refund the store may not have received: when it was
 * never sent (the breaker was open), it is kept and sent again, summed per key and window, before
 * this node's next shared reservation or settlement; when it was sent and failed or timed out (it
 * may have been applied), a charge (`delta > 0`) is sent again and a give-back (`delta < 0`) is
 * dropped — each error only ever holds more than was spent, never less, until the window ends.
 *
 * @module
 */
import { asyncScheduler, catchError, defer, map, Observable, take, type SchedulerLike } from 'rxjs';
import { CircuitBreaker } from '../breaker/CircuitBreaker.js';
import { BudgetExceededError, CircuitOpenError, InvalidOptionError } from '../errors/errors.js';
import { Func, Hub, NonEmptyString, PositiveInteger, PositiveNumber, Scheduler, check, validateOptions } from '../errors/options.js';
import { StoreGuard, randomNodeId, storeBreakerOptions } from '../fleet/storeGuard.js';
import type { HealEvent } from '../events/events.js';
import type { HealHub } from '../hub/hub.js';
import { MemorySpendStore } from './memorySpendStore.js';
import type { SpendContext, SpendGate, SpendHold } from './spendGate.js';
import {
  NANOS_PER_USD,
  SpendStoreCheck,
  toNanos,
  windowStart,
  type SpendAdjustment,
  type SpendGrant,
  type SpendRequest,
  type SpendStore,
} from './spendStore.js';

/**
 * Options of {@link SpendLimiter}.
 *
 * @example
 * ```ts
 * const options: SpendLimiterOptions = { name: 'team', usd: 50, per: 'day', key: (c) => c.tags?.team ?? 'none', store: new RedisSpendStore({ client }) };
 * ```
 */
export interface SpendLimiterOptions {
  /** The limit's name: processes with the same name (and key) share the budget. In events and the store's keys. */
  readonly name: string;
  /** Dollars per window (per key), > 0. */
  readonly usd: number;
  /** The window: `'hour'`, `'day'` (aligned on the store's clock: 00:00 UTC) or a whole number of ms. */
  readonly per: 'hour' | 'day' | number;
  /** The budget's key for a run (user, team, tag). Defaults to one budget for all. A throw errors the reservation. */
  readonly key?: (context: SpendContext) => string;
  /** Where the budget is shared: `RedisSpendStore` (`rxheal/redis`). Defaults to this process alone. */
  readonly store?: SpendStore;
  /** Its clock. Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
  /** This process's id among the key's users. Defaults to a random id per limiter. */
  readonly node?: string;
  /** Fleet size assumed for the local share while the shared store has never answered. Defaults to 1. */
  readonly expectedNodes?: number;
  /** Where `spend-refused` and `spend-local` events go (and the store breaker's transitions). */
  readonly hub?: HealHub;
}

const Per = check(
  '"hour" | "day" | a positive integer of ms',
  (u): u is 'hour' | 'day' | number => u === 'hour' || u === 'day' || (Number.isInteger(u) && (u as number) >= 1),
);

const props = {
  name: NonEmptyString,
  usd: PositiveNumber,
  per: Per,
  key: Func,
  store: SpendStoreCheck,
  scheduler: Scheduler,
  node: NonEmptyString,
  expectedNodes: PositiveInteger,
  hub: Hub,
};

const HOUR = 3_600_000;
const DAY = 86_400_000;
const MINUTE = 60_000;

/**
 * What {@link SpendLimiter.reserve} emits: a {@link SpendHold}, and whether it was decided on this
 * node's local share (the shared store did not answer: the hold and its settlement are owed to it, sent once it answers again).
 *
 * @example
 * ```ts
 * team.reserve(0.02, context).subscribe((hold: SpendLimitHold) => console.log(hold.local ? 'decided alone' : 'shared'));
 * ```
 */
export interface SpendLimitHold extends SpendHold {
  /** Decided on the local share: it and its settlement are owed to the shared store (sent once it answers again). */
  readonly local: boolean;
}

/** A grant, and whether it was decided on the local share. */
type Decision = SpendGrant & { readonly local: boolean; readonly limitNanos: number };

/**
 * A dollar budget per key and window, shared across processes (see the module header for the
 * protocol, cancellation, and what happens while the store is down).
 *
 * @example
 * ```ts
 * const team = new SpendLimiter({ name: 'team', usd: 50, per: 'day', key: (c) => c.tags?.team ?? 'none', store: new RedisSpendStore({ client }) });
 * team.reserve(0.02, { runId: 'r1', model: 'gpt-5-mini', tags: { team: 'search' } }).subscribe({
 *   next: (hold) => callModel().then((usage) => hold.settle(costOf(usage)), () => hold.refund()),
 *   error: (e) => console.log(e), // BudgetExceededError: resource 'usd'
 * });
 * ```
 */
export class SpendLimiter implements SpendGate {
  /** Its name: in events, and the prefix of its store keys. */
  readonly name: string;
  /** Dollars per window, per key. */
  readonly usd: number;
  /** The window's length in ms. */
  readonly windowMs: number;
  /** Its clock. */
  readonly scheduler: SchedulerLike;
  /**
   * The breaker around shared-store calls (`spend-store:<name>`), with a store.
   *
   * @internal
   */
  readonly storeBreaker: CircuitBreaker | undefined;
  private readonly limitNanos: number;
  private readonly keyOf: (context: SpendContext) => string;
  private readonly node: string;
  private readonly store: SpendStore;
  private readonly local: MemorySpendStore;
  private readonly guard: StoreGuard | undefined;
  private readonly hub: HealHub | undefined;
  /** What the store last answered per key (for the local share): its window, what it had left, what this node's local store held then. */
  private readonly heardOf = new Map<string, { readonly window: number; readonly remainingNanos: number; readonly localNanos: number }>();
  /** The most live nodes the store reported within the last minute: the local share divides by it. */
  private liveNodes: number;
  private liveNodesAt = -Infinity;
  /** Adjustments the shared store has not taken, summed: key → window → its length and delta. */
  private readonly pending = new Map<string, Map<number, { windowMs: number; deltaNanos: number }>>();

  constructor(options: SpendLimiterOptions) {
    const o = validateOptions('SpendLimiter', props, options);
    if (o.name === undefined) throw new InvalidOptionError('SpendLimiter', 'name', undefined, 'a non-empty string');
    if (o.usd === undefined) throw new InvalidOptionError('SpendLimiter', 'usd', undefined, 'a finite number > 0');
    if (o.per === undefined) throw new InvalidOptionError('SpendLimiter', 'per', undefined, Per.name);
    this.name = o.name;
    this.usd = o.usd;
    this.windowMs = o.per === 'hour' ? HOUR : o.per === 'day' ? DAY : o.per;
    // rounded down: the limit never grows by rounding (the reservations are rounded up)
    this.limitNanos = Math.floor(o.usd * NANOS_PER_USD + 1e-6);
    if (this.limitNanos < 1) throw new InvalidOptionError('SpendLimiter', 'usd', o.usd, 'at least one nanodollar (1e-9)');
    this.keyOf = (o.key as SpendLimiterOptions['key']) ?? (() => 'all');
    this.scheduler = o.scheduler ?? asyncScheduler;
    this.node = o.node ?? randomNodeId();
    this.hub = o.hub as HealHub | undefined;
    this.local = new MemorySpendStore({ scheduler: this.scheduler });
    this.store = o.store ?? new MemorySpendStore({ scheduler: this.scheduler });
    this.liveNodes = o.expectedNodes ?? 1;
    this.storeBreaker = o.store === undefined ? undefined : new CircuitBreaker(storeBreakerOptions(`spend-store:${o.name}`, this.scheduler));
    this.guard = this.storeBreaker === undefined ? undefined : new StoreGuard(this.storeBreaker, o.store!.timeoutMs ?? 100, this.scheduler);
    if (this.storeBreaker !== undefined) this.hub?.watch(this.storeBreaker);
  }

  /**
   * Reserves `usd` (≥ 0) for `context`'s key: one {@link SpendHold} then complete, or
   * `BudgetExceededError` (`resource: 'usd'`). Store failures never reach the caller (the local
   * share decides); a `key` that throws, or a bad `usd`, errors the reservation.
   */
  reserve(usd: number, context: SpendContext): Observable<SpendLimitHold> {
    return defer(() => {
      if (typeof usd !== 'number' || !Number.isFinite(usd) || usd < 0)
        throw new InvalidOptionError(`SpendLimiter ${this.name}`, 'usd', usd, 'a finite number >= 0');
      const derived = this.keyOf(context);
      if (typeof derived !== 'string') throw new InvalidOptionError(`SpendLimiter ${this.name}`, 'key', derived, 'a function returning a string');
      const key = `${this.name}:${derived}`;
      const nanos = toNanos(usd);
      const request: SpendRequest = { key, node: this.node, windowMs: this.windowMs, limitNanos: this.limitNanos, nanos };
      // decided locally after all (the store past its bound): a late grant of this request then holds the local hold on the store
      const ticket = { local: false };
      const local$ = defer(() => {
        ticket.local = true;
        const limitNanos = this.localLimit(key);
        this.report({ type: 'spend-local', limiter: this.name, key, share: limitNanos / NANOS_PER_USD });
        return this.local.reserve({ ...request, limitNanos }).pipe(map((g): Decision => ({ ...g, local: true, limitNanos })));
      });
      const shared$ = (sent$: Observable<SpendGrant>): Observable<Decision> =>
        sent$.pipe(map((g): Decision => ({ ...g, local: false, limitNanos: this.limitNanos })));
      const decided$: Observable<Decision> = !this.guard
        ? shared$(this.sent(request, ticket))
        : this.guard
            .run(() => {
              this.resend();
              return this.sent(request, ticket);
            })
            .pipe(
              map((g) => {
                this.heard(g.liveNodes);
                return g;
              }),
              (g$) => shared$(g$),
              catchError(() => local$),
            );
      return decided$.pipe(
        map((g) => {
          if (!g.granted) {
            if (!g.local && this.guard) this.remember(key, g);
            const limitUsd = g.limitNanos / NANOS_PER_USD;
            const usedUsd = (g.usedNanos + nanos) / NANOS_PER_USD;
            this.report({ type: 'spend-refused', limiter: this.name, key, usd, limitUsd, usedUsd });
            throw new BudgetExceededError('usd', limitUsd, usedUsd);
          }
          if (!g.local && this.guard) {
            this.mirror(key, nanos);
            this.remember(key, g);
          }
          return this.hold(usd, nanos, key, g);
        }),
      );
    });
  }

  /**
   * The store's reservation as a command sent: unsubscribing stops listening, not the command. The
   * answer is still awaited, and a grant that arrives when nobody listens is given back — at once
   * when the caller left; when the reservation was decided on the local share meanwhile (`ticket`),
   * the grant holds that local hold on the store, and what the hold owes the store is lessened by it
   * instead (so the fleet sees the hold from the moment the store granted it).
   */
  private sent(request: SpendRequest, ticket: { readonly local: boolean }): Observable<SpendGrant> {
    return new Observable<SpendGrant>((subscriber) => {
      let listening = true;
      defer(() => this.store.reserve(request))
        .pipe(take(1))
        .subscribe({
          next: (grant) => {
            if (listening) subscriber.next(grant);
            else if (grant.granted && request.nanos > 0) {
              const giveBack = { key: request.key, window: grant.window, windowMs: request.windowMs, deltaNanos: -request.nanos };
              if (ticket.local) this.owe(giveBack);
              else this.tell(giveBack);
            }
          },
          error: (error: unknown) => subscriber.error(error),
          complete: () => subscriber.complete(),
        });
      return () => {
        listening = false;
      };
    });
  }

  private hold(usd: number, nanos: number, key: string, grant: Decision): SpendLimitHold {
    let done = false;
    // a hold decided alone is owed to the shared store: once it answers again, the fleet sees it
    if (grant.local && this.guard) this.owe({ key, window: grant.window, windowMs: this.windowMs, deltaNanos: nanos });
    const localWindow = windowStart(this.scheduler.now(), this.windowMs);
    const send = (deltaNanos: number): void => {
      if (deltaNanos === 0) return;
      if (grant.local) {
        void this.local.adjust({ key, window: grant.window, windowMs: this.windowMs, deltaNanos }).subscribe({ error: () => undefined });
        // and owed to the shared store, with the hold itself: sent before this node's next shared call
        this.owe({ key, window: grant.window, windowMs: this.windowMs, deltaNanos });
        return;
      }
      if (this.guard) void this.local.adjust({ key, window: localWindow, windowMs: this.windowMs, deltaNanos }).subscribe({ error: () => undefined });
      this.adjust({ key, window: grant.window, windowMs: this.windowMs, deltaNanos });
    };
    return {
      usd,
      local: grant.local,
      settle: (actualUsd) => {
        if (done) return;
        done = true;
        // a cost that is not a number keeps the hold as it is (the worst case reserved)
        if (typeof actualUsd !== 'number' || !Number.isFinite(actualUsd) || actualUsd < 0) return;
        send(toNanos(actualUsd) - nanos);
      },
      refund: () => {
        if (done) return;
        done = true;
        send(-nanos);
      },
    };
  }

  /**
   * The local share of `key` now: `limit ÷ liveNodes`, and — when the store answered for `key` in
   * this window — no more than what this node held then plus its part (÷ liveNodes) of what the
   * store had left then: a node that cannot reach the store spends at most its part of what was
   * left, so the fleet's local decisions together stay within what the store last saw left.
   */
  private localLimit(key: string): number {
    const share = Math.floor(this.limitNanos / this.liveNodes);
    const heard = this.heardOf.get(key);
    if (heard === undefined || heard.window !== windowStart(this.scheduler.now(), this.windowMs)) return share;
    return Math.min(share, heard.localNanos + Math.floor(heard.remainingNanos / this.liveNodes));
  }

  /** What the store answered for `key` (its window, what was left of the limit), with what this node's local store held then. */
  private remember(key: string, g: SpendGrant): void {
    const heardOf = this.heardOf;
    if (heardOf.size >= 256 && !heardOf.has(key)) {
      // keys of ended windows go first: one entry per key in use
      const now = this.scheduler.now();
      for (const [k, h] of heardOf) if (h.window + this.windowMs <= now) heardOf.delete(k);
      if (heardOf.size >= 256) heardOf.delete(heardOf.keys().next().value!);
    }
    heardOf.set(key, {
      window: g.window,
      remainingNanos: Math.max(0, this.limitNanos - g.usedNanos),
      localNanos: this.local.usedNanos(key, this.windowMs),
    });
  }

  /** A shared grant counts against this node's local share too (in the local store's current window). */
  private mirror(key: string, nanos: number): void {
    if (nanos === 0) return;
    const window = windowStart(this.scheduler.now(), this.windowMs);
    void this.local.adjust({ key, window, windowMs: this.windowMs, deltaNanos: nanos }).subscribe({ error: () => undefined });
  }

  /** An adjustment through the guard (bounded, never waited for); what may not have reached the store is kept (see the module). */
  private adjust(adjustment: SpendAdjustment): void {
    if (!this.guard) {
      void this.store.adjust(adjustment).subscribe({ error: () => undefined });
      return;
    }
    this.guard
      .run(() => {
        this.resend();
        return this.store.adjust(adjustment);
      })
      .subscribe({ error: (error: unknown) => this.failed(adjustment, error instanceof CircuitOpenError) });
  }

  /**
   * An adjustment straight to the store, past the guard: where the store is believed to answer
   * (an answer just came; the guard just let a call through). No call waits for it.
   */
  private tell(adjustment: SpendAdjustment): void {
    defer(() => this.store.adjust(adjustment)).subscribe({ error: () => this.failed(adjustment, false) });
  }

  /** What a hold decided on the local share owes the shared store (kept with the adjustments not sent yet). */
  private owe(adjustment: SpendAdjustment): void {
    if (this.guard) this.failed(adjustment, true);
  }

  /** An adjustment that failed: kept to send again when it surely never arrived, or when it is a charge. */
  private failed(adjustment: SpendAdjustment, unsent: boolean): void {
    if (!unsent && adjustment.deltaNanos < 0) return;
    let windows = this.pending.get(adjustment.key);
    if (!windows) this.pending.set(adjustment.key, (windows = new Map()));
    const kept = windows.get(adjustment.window);
    windows.set(adjustment.window, { windowMs: adjustment.windowMs, deltaNanos: (kept?.deltaNanos ?? 0) + adjustment.deltaNanos });
  }

  /** The kept adjustments, sent again (those of windows that have ended on this clock are dropped). */
  private resend(): void {
    if (this.pending.size === 0) return;
    const now = this.scheduler.now();
    const adjustments: SpendAdjustment[] = [];
    for (const [key, windows] of this.pending) {
      for (const [window, { windowMs, deltaNanos }] of windows)
        if (deltaNanos !== 0 && window + windowMs > now) adjustments.push({ key, window, windowMs, deltaNanos });
    }
    this.pending.clear();
    for (const adjustment of adjustments) this.tell(adjustment);
  }

  /** The store reported `live` nodes: keep the largest count of the last minute (conservative). */
  private heard(live: number): void {
    const now = this.scheduler.now();
    if (live >= this.liveNodes || now - this.liveNodesAt > MINUTE) {
      this.liveNodes = Math.max(1, live);
      this.liveNodesAt = now;
    }
  }

  private report(event: HealEvent): void {
    try {
      this.hub?.report(event);
    } catch {
      // a hub's subscriber that throws is not the reservation's failure
    }
  }
}
