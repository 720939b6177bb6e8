/**
 * {@link RateLimiter}: a provider key's requests/min and tokens/min, shared by every process
 * through a {@link RateLimitStore} (GCRA), used by the `rateLimit` operator. A call reserves an
 * estimate before it starts and reconciles with the actual usage after its `finish`; a call
 * that would wait longer than `maxWaitMs` fails with {@link RateLimitExceededError}. When the
 * shared store is down or slow (its calls are bounded like the fleet's), each node falls back to
 * a conservative local share — the limit divided by the live nodes it last heard of, starting
 * with no burst — never to no limit at all.
 *
 * @module
 */
import { asyncScheduler, catchError, defer, map, Observable, take, type SchedulerLike } from 'rxjs';
import { CircuitBreaker } from '../breaker/CircuitBreaker.js';
import { rateLimitFactMs } from '../errors/classify.js';
import { headersOf, readHeader } from '../errors/readError.js';
import { InvalidOptionError, RateLimitExceededError } from '../errors/errors.js';
import { NonEmptyString, NonNegativeNumber, PositiveInteger, PositiveNumber, Scheduler, validateOptions } from '../errors/options.js';
import {
  MemoryRateLimitStore,
  RateLimitStoreCheck,
  type RateLimit,
  type RateLimitAdjustment,
  type RateLimitGrant,
  type RateLimitRequest,
  type RateLimitStore,
} from './rateLimitStore.js';
import { StoreGuard, randomNodeId, storeBreakerOptions } from '../fleet/storeGuard.js';

/**
 * Options of {@link RateLimiter}. Give `requestsPerMinute`, `tokensPerMinute`, or both.
 *
 * @example
 * ```ts
 * const options: RateLimiterOptions = { name: 'openai:prod', requestsPerMinute: 500, tokensPerMinute: 30_000, maxWaitMs: 20_000 };
 * ```
 */
export interface RateLimiterOptions {
  /** The shared key (a provider and API key), e.g. `'openai:prod'`: processes with the same name share the limits. */
  readonly name: string;
  /** Requests per minute across the fleet (each call costs 1). */
  readonly requestsPerMinute?: number;
  /** Tokens per minute across the fleet (each call reserves its estimate, then its actual usage). */
  readonly tokensPerMinute?: number;
  /** The longest a call waits for its turn, in ms; beyond, it fails with `RateLimitExceededError`. Defaults to 30 000. */
  readonly maxWaitMs?: number;
  /** Where the limits are shared: `RedisRateLimitStore` (`rxheal/redis`). Defaults to this process alone. */
  readonly store?: RateLimitStore;
  /** This process's id among the key's users. Defaults to a random id per limiter. */
  readonly node?: string;
  /**
   * Fleet size assumed for the local share while the shared store has never answered (the
   * share is limit ÷ live nodes, and the store reports the live nodes). Defaults to 1.
   */
  readonly expectedNodes?: number;
  /** Its clock and where calls wait. Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
}

const props = {
  name: NonEmptyString,
  requestsPerMinute: PositiveNumber,
  tokensPerMinute: PositiveNumber,
  maxWaitMs: NonNegativeNumber,
  store: RateLimitStoreCheck,
  node: NonEmptyString,
  expectedNodes: PositiveInteger,
  scheduler: Scheduler,
};

/**
 * One call's admission: wait `waitMs`, run, then `settle` with the tokens it actually used (or
 * `cancel` if it never started: everything is given back). The `rateLimit` operator does all of it.
 *
 * @example
 * ```ts
 * limiter.reserve(1_200).subscribe((r) => setTimeout(() => call().then((usage) => r.settle(usage.totalTokens)), r.waitMs));
 * ```
 */
export interface RateLimitReservation {
  /** Ms to wait before starting. */
  readonly waitMs: number;
  /** Tokens reserved (the estimate). */
  readonly cost: number;
  /** Decided on this node's local share (the shared store did not answer). */
  readonly local: boolean;
  /** The call ran: reconcile the estimate with `tokens` (undefined: keep the estimate). Once. */
  settle(tokens?: number): void;
  /** The call never started: give the reservation back. Once. */
  cancel(): void;
}

const MINUTE = 60_000;
/** How fast the usage estimate follows actual usage (exponential moving average). */
const ESTIMATE_WEIGHT = 0.2;

/** Provider headers that say how much of a limit remains, in order of preference. */
const REMAINING: Readonly<Record<'requests' | 'tokens', readonly string[]>> = {
  requests: ['x-ratelimit-remaining-requests', 'anthropic-ratelimit-requests-remaining'],
  tokens: ['x-ratelimit-remaining-tokens', 'anthropic-ratelimit-tokens-remaining', 'anthropic-ratelimit-input-tokens-remaining'],
};

/**
 * A provider key's shared rate limits (see the module). Use it with the `rateLimit` operator;
 * share one instance per key in a process.
 *
 * @example
 * ```ts
 * const limiter = new RateLimiter({ name: 'openai:prod', requestsPerMinute: 500, tokensPerMinute: 30_000, store: new RedisRateLimitStore({ client }) });
 * const answer$ = streamModel(model, request).pipe(rateLimit(limiter, { cost: 1_200 }));
 * ```
 */
export class RateLimiter {
  readonly name: string;
  readonly maxWaitMs: number;
  readonly scheduler: SchedulerLike;
  private readonly node: string;
  private readonly store: RateLimitStore;
  private readonly local: MemoryRateLimitStore;
  private readonly guard: StoreGuard | undefined;
  /**
   * The breaker around shared-store calls (`rate-limit-store:<name>`), with a store: a hub given
   * to `rateLimit` follows it (the store's health), as a fleet's does.
   *
   * @internal
   */
  readonly storeBreaker: CircuitBreaker | undefined;
  private readonly requests: RateLimit | undefined;
  private readonly tokens: RateLimit | undefined;
  /** The most live nodes the store reported within the last minute: the local share divides by it. */
  private liveNodes: number;
  private liveNodesAt = -Infinity;
  /** The last decision was on the local share (the shared store did not answer). */
  private alone = false;
  /** Provider floors (a 429's block, remaining-headers) that never reached the shared store: limit id → its limit and end. */
  private readonly unsentFloors = new Map<string, { readonly limit: RateLimit; readonly until: number }>();
  private average: number | undefined;

  constructor(options: RateLimiterOptions) {
    const o = validateOptions('RateLimiter', props, options);
    if (o.name === undefined) throw new InvalidOptionError('RateLimiter', 'name', undefined, 'a non-empty string');
    if (o.requestsPerMinute === undefined && o.tokensPerMinute === undefined) {
      throw new InvalidOptionError('RateLimiter', 'requestsPerMinute', undefined, 'given (or tokensPerMinute): a limiter needs a limit');
    }
    this.name = o.name;
    this.maxWaitMs = o.maxWaitMs ?? 30_000;
    this.scheduler = o.scheduler ?? asyncScheduler;
    this.node = o.node ?? randomNodeId();
    this.requests = o.requestsPerMinute === undefined ? undefined : { id: 'requests', limit: o.requestsPerMinute, periodMs: MINUTE };
    this.tokens = o.tokensPerMinute === undefined ? undefined : { id: 'tokens', limit: o.tokensPerMinute, periodMs: MINUTE };
    this.local = new MemoryRateLimitStore({ scheduler: this.scheduler });
    this.store = o.store ?? new MemoryRateLimitStore({ scheduler: this.scheduler });
    this.liveNodes = o.expectedNodes ?? 1;
    this.storeBreaker = o.store === undefined ? undefined : new CircuitBreaker(storeBreakerOptions(`rate-limit-store:${o.name}`, this.scheduler));
    this.guard = this.storeBreaker === undefined ? undefined : new StoreGuard(this.storeBreaker, o.store!.timeoutMs ?? 100, this.scheduler);
  }

  /** Tokens a call is expected to use: the moving average of reconciled usage (0 before any). */
  get estimate(): number {
    return Math.round(this.average ?? 0);
  }

  /**
   * Reserves one call (1 request, `cost` tokens) and emits its reservation once, or errors with
   * {@link RateLimitExceededError} when the wait would exceed `maxWaitMs`. Store failures never
   * reach the caller: the local share decides instead. Unsubscribing before it emits gives back
   * whatever the shared store still reserves for it (the request was sent: its answer is awaited,
   * and a grant nobody took is refunded), and so does an answer past the store call's timeout.
   */
  reserve(cost: number = this.estimate): Observable<RateLimitReservation> {
    return defer(() => {
      const tokens = Math.max(0, cost);
      const limits = this.limits(1, tokens);
      const request = { key: this.name, node: this.node, limits, maxWaitMs: this.maxWaitMs };
      // the local share: limit ÷ live nodes, starting empty (no burst) each time the store stops answering
      const local$ = defer(() => {
        const share = this.share(limits);
        if (!this.alone) {
          this.alone = true;
          this.local.adjust({ key: this.name, limits: share.map((l) => ({ ...l, floorMs: l.periodMs })) }).subscribe();
        }
        return this.local.reserve({ ...request, limits: share });
      }).pipe(map((g) => ({ ...g, local: true })));
      const decided$ = !this.guard
        ? this.sent(request).pipe(map((g) => ({ ...g, local: false })))
        : this.guard
            .run(() => {
              this.resendFloors();
              return this.sent(request);
            })
            .pipe(
              map((g) => {
                this.heard(g.liveNodes);
                this.alone = false;
                return { ...g, local: false };
              }),
              catchError(() => local$),
            );
      return decided$.pipe(
        map((g) => {
          if (!g.granted) throw new RateLimitExceededError(this.name, g.waitMs, this.maxWaitMs);
          return this.reservation(g.waitMs, tokens, g.local);
        }),
      );
    });
  }

  /**
   * Corrects the shared limits from a provider's response headers (OpenAI's
   * `x-ratelimit-remaining-requests` / `-tokens`, Anthropic's `anthropic-ratelimit-requests-remaining`
   * / `-tokens-remaining`): when the provider says fewer units remain than the limiter thinks, the
   * limiter believes it (it never loosens). `rateLimit` calls it with a failed call's headers;
   * call it with a successful response's headers when your client exposes them.
   */
  correct(headers: unknown): void {
    const limits: (RateLimit & { floorMs: number })[] = [];
    for (const limit of [this.requests, this.tokens]) {
      if (!limit) continue;
      const remaining = firstNumber(headers, REMAINING[limit.id as 'requests' | 'tokens']);
      if (remaining === undefined || remaining >= limit.limit) continue;
      limits.push({ ...limit, floorMs: (limit.limit - Math.max(0, remaining)) * (limit.periodMs / limit.limit) });
    }
    if (limits.length) this.adjust({ key: this.name, limits }, false);
  }

  /**
   * The provider refused with a 429 and `retry-after` on this key: nothing starts for `ms`, then
   * calls resume at the limit's pace. Like every provider correction, when the shared store does
   * not take it (down), it holds the local share, and is sent again, for what is left of it,
   * before this node's next shared reservation.
   */
  block(ms: number): void {
    if (!(ms > 0)) return;
    const limits: (RateLimit & { floorMs: number })[] = [];
    const unit = (l: RateLimit): number => l.periodMs / l.limit;
    if (this.requests) limits.push({ ...this.requests, floorMs: ms + (this.requests.limit - 1) * unit(this.requests) });
    if (this.tokens) limits.push({ ...this.tokens, floorMs: ms + Math.max(0, this.tokens.limit - Math.max(1, this.estimate)) * unit(this.tokens) });
    this.adjust({ key: this.name, limits }, false);
  }

  /** What a failed call says about the key: its headers, and a 429's `retry-after` (at most `MAX_RETRY_AFTER_MS`, 60 s). */
  observe(error: unknown): void {
    const headers = headersOf(error);
    if (headers === undefined) return;
    this.correct(headers);
    const holdMs = rateLimitFactMs(error, this.scheduler.now());
    if (holdMs !== undefined) this.block(holdMs);
  }

  /**
   * The store's reservation as a command sent: unsubscribing (the caller left, the guard's
   * timeout) stops listening, not the command — Redis runs the script anyway. So the answer is
   * still awaited, and a grant that arrives when nobody listens is given back to the shared store
   * (calls that never started must not use up the fleet's allowance).
   */
  private sent(request: RateLimitRequest): Observable<RateLimitGrant> {
    return new Observable<RateLimitGrant>((subscriber) => {
      let listening = true;
      this.store
        .reserve(request)
        .pipe(take(1))
        .subscribe({
          next: (grant) => {
            if (listening) subscriber.next(grant);
            else if (grant.granted) this.refund(request.limits);
          },
          error: (error: unknown) => subscriber.error(error),
          complete: () => subscriber.complete(),
        });
      return () => {
        listening = false;
      };
    });
  }

  /** Gives back on the shared store what a late answer reserved (if the refund is lost, so is the grant). */
  private refund(limits: readonly (RateLimit & { cost: number })[]): void {
    this.tell({ key: this.name, limits: given(limits) }, () => undefined);
  }

  /**
   * An adjustment straight to the shared store, past the guard: only where the store is believed
   * to answer (an answer just came; the guard just let a call through), and no call waits for it.
   */
  private tell(adjustment: RateLimitAdjustment, failed: () => void): void {
    defer(() => this.store.adjust(adjustment)).subscribe({ error: failed });
  }

  private limits(requests: number, tokens: number): (RateLimit & { cost: number })[] {
    const out: (RateLimit & { cost: number })[] = [];
    if (this.requests) out.push({ ...this.requests, cost: requests });
    if (this.tokens) out.push({ ...this.tokens, cost: tokens });
    return out;
  }

  /** The store reported `live` nodes: keep the largest count of the last minute (conservative). */
  private heard(live: number): void {
    const now = this.scheduler.now();
    if (live >= this.liveNodes || now - this.liveNodesAt > MINUTE) {
      this.liveNodes = Math.max(1, live);
      this.liveNodesAt = now;
    }
  }

  /** The limits divided among the live nodes: this node's conservative share. */
  private share<L extends RateLimit>(limits: readonly L[]): L[] {
    return limits.map((l) => ({ ...l, limit: l.limit / this.liveNodes }));
  }

  private adjust(adjustment: RateLimitAdjustment, local: boolean): void {
    const onLocal = (): void => void this.local.adjust({ ...adjustment, limits: this.share(adjustment.limits) }).subscribe();
    if (!this.guard) this.store.adjust(adjustment).subscribe();
    else if (local) onLocal();
    else {
      const sentAt = this.scheduler.now();
      this.guard
        .run(() => this.store.adjust(adjustment))
        .subscribe({
          error: () => {
            onLocal();
            this.keepFloors(adjustment, sentAt);
          },
        });
    }
  }

  /** A provider's floors the shared store never received: kept (the latest end per limit) to be sent again. */
  private keepFloors(adjustment: RateLimitAdjustment, sentAt: number): void {
    for (const l of adjustment.limits) {
      if (l.floorMs === undefined) continue;
      const until = sentAt + l.floorMs;
      const kept = this.unsentFloors.get(l.id);
      if (!kept || kept.until < until) this.unsentFloors.set(l.id, { limit: { id: l.id, limit: l.limit, periodMs: l.periodMs }, until });
    }
  }

  /**
   * Before a shared reservation (the guard let it through: the store is believed to answer), the
   * provider floors it never received, for what is left of them — sent first, so the reservation
   * already waits for them, and every other process with it.
   */
  private resendFloors(): void {
    if (this.unsentFloors.size === 0) return;
    const now = this.scheduler.now();
    const limits = [...this.unsentFloors.values()].filter((f) => f.until > now).map((f) => ({ ...f.limit, floorMs: f.until - now }));
    this.unsentFloors.clear();
    if (limits.length === 0) return;
    const adjustment = { key: this.name, limits };
    this.tell(adjustment, () => this.keepFloors(adjustment, now));
  }

  private reservation(waitMs: number, cost: number, local: boolean): RateLimitReservation {
    let done = false;
    const once = (): boolean => !done && (done = true);
    return {
      waitMs,
      cost,
      local,
      settle: (tokens) => {
        if (!once() || tokens === undefined || !Number.isFinite(tokens) || tokens < 0) return;
        this.average = this.average === undefined ? tokens : this.average + ESTIMATE_WEIGHT * (tokens - this.average);
        if (this.tokens && tokens !== cost) this.adjust({ key: this.name, limits: [{ ...this.tokens, delta: tokens - cost }] }, local);
      },
      cancel: () => {
        if (!once()) return;
        this.adjust({ key: this.name, limits: given(this.limits(1, cost)) }, local);
      },
    };
  }
}

/** A reservation given back: each limit's cost as a negative delta. */
function given(limits: readonly (RateLimit & { cost: number })[]): (RateLimit & { delta: number })[] {
  return limits.map(({ cost, ...l }) => ({ ...l, delta: -cost }));
}

/** The first of `names` that holds a number. */
function firstNumber(headers: unknown, names: readonly string[]): number | undefined {
  for (const name of names) {
    const raw = readHeader(headers, name);
    if (raw === undefined || raw.trim() === '') continue;
    const n = Number(raw);
    if (Number.isFinite(n)) return n;
  }
  return undefined;
}
