/**
 * {@link modelPool}: one logical model over several members (keys, deployments, regions of the
 * same model). Each call is a fallback chain whose order the pool decides: the conversation's
 * member first (affinity keeps its prompt cache warm), then the others by the strategy. Around
 * each attempt the pool runs the member's rate limiter, waits out a 429's `retry-after` when the
 * wait-or-move rule says so, and keeps what it learns (blocks, successes, the cached prefix). What
 * it takes is in modelPoolOptions.ts, what it remembers in core/pool/poolState.ts.
 *
 * @module
 */
import { asyncScheduler, Observable, type SchedulerLike, type Subscriber, type TeardownLogic } from 'rxjs';
import { classifyError, rateLimitHoldMs, type ErrorClassifier } from '../core/errors/classify.js';
import { InvalidOptionError, RateLimitExceededError } from '../core/errors/errors.js';
import { check, Func, NonNegativeNumber, PositiveInteger, oneOf, Scheduler, validateOptions } from '../core/errors/options.js';
import type { PoolEvent, TurnEvent } from '../core/events/events.js';
import { joinHubs, type HealHub } from '../core/hub/hub.js';
import { LatencyRegistry } from '../core/latency/registry.js';
import type { Model, ModelCallContext, ModelContext, ModelRequest } from '../core/model/model.js';
import { checkPrices, priceOf, type Prices } from '../core/money/prices.js';
import { RateLimiter } from '../core/rate-limit/rateLimit.js';
import { guard, Thrown } from '../core/rx/guard.js';
import { after } from '../core/rx/wait.js';
import { PoolState, waitOrMove, type Placement } from '../core/pool/poolState.js';
import { rateLimit } from '../operators/rateLimit.js';
import { chainModel, checkModels, fallbackProps, type CallRoute } from './fallbackModel.js';
import type { FallbackModelOptions } from './fallbackModelOptions.js';
import type { ModelPoolOptions, PoolMember, PoolStrategy, WaitOrMoveFigures } from './modelPoolOptions.js';

export type { ModelPoolOptions, PoolMember, PoolStrategy, WaitOrMoveFigures } from './modelPoolOptions.js';

// a chain's options but `cheaperBelow` (a pool's members are one model at one price): refused, never ignored
const chainProps = Object.fromEntries(Object.entries(fallbackProps).filter(([key]) => key !== 'cheaperBelow')) as Omit<typeof fallbackProps, 'cheaperBelow'>;
const props = {
  ...chainProps,
  strategy: oneOf('round-robin', 'least-loaded', 'lowest-latency'),
  latency: check('a LatencyRegistry', (u): u is LatencyRegistry => u instanceof LatencyRegistry),
  affinity: check('false or a function (request, context) => key', (u): u is false | ((...args: never[]) => unknown) => u === false || typeof u === 'function'),
  maxWaitMs: NonNegativeNumber,
  prices: check('a price list', (u): u is Prices => typeof u === 'object' && u !== null),
  usdPerSecond: NonNegativeNumber,
  deadline: Func,
  decide: Func,
  maxConversations: PositiveInteger,
  scheduler: Scheduler,
};

/**
 * A {@link Model} over several members of one logical model — two keys of a provider, an Azure
 * deployment, a regional endpoint — that spreads conversations over them and keeps each
 * conversation where its prompt cache is warm:
 *
 * - **Placement.** A conversation (its affinity key: by default the request's `promptCacheKey`,
 *   else the run's id) is placed on a member by the `strategy` (`'round-robin'`, `'least-loaded'`,
 *   `'lowest-latency'`), members blocked by a 429 or with an open breaker last, and stays there.
 *   Its key goes to the provider as the request's `promptCacheKey` (OpenAI's `prompt_cache_key`).
 * - **Skipping.** Each call tries the conversation's member, then the others by the strategy, as
 *   a fallback chain (`breakers`, `midStream`, `perModel`… as in `fallbackModel`): a member
 *   whose breaker is open, whose limiter would wait past its `maxWaitMs`, or that fails with an
 *   error worth a fallback is skipped, and the conversation moves to the member that answers
 *   (a `pool` event `move`).
 * - **Wait or move.** When the conversation's member answers 429 with a `retry-after` (or is
 *   still blocked by one), the pool weighs waiting for it, warm, against moving to a cold member
 *   (the cached prefix written again there, at `prices`), by `decide` (default: {@link waitOrMove}'s
 *   rule); each decision is a `pool` event with its figures.
 * - **Return.** A moved conversation returns to its member once the `retry-after` passed and a
 *   call there succeeded (the first such call is a probe, one at a time): a `pool` event `return`.
 *
 * ```
 * member a:  429 (retry-after 20 s)     …20 s…   probe ok
 * key k:     a ──move──▶ b  b  b                  ──return──▶ a
 * ```
 *
 * @example
 * ```ts
 * const pool = modelPool(
 *   [{ model: gptKeyA, limiter: limiterA }, { model: gptKeyB, limiter: limiterB }, { model: gptAzure }],
 *   { strategy: 'least-loaded', breakers, prices, maxWaitMs: 8_000, hub },
 * );
 * runAgent({ model: fallbackModel([pool, claude]), tools, prices, budget: { maxUsd: 1 } }).subscribe(render);
 * ```
 * @throws {InvalidOptionError} at once, for no members, a member that is not `{ model, limiter? }`,
 * duplicate model ids, an invalid option, `'lowest-latency'` without `latency`, or `prices`
 * missing a member.
 */
export function modelPool(members: readonly (PoolMember | Model)[], options?: ModelPoolOptions): Model {
  const target = 'modelPool';
  if (!Array.isArray(members) || members.length === 0) throw new InvalidOptionError(target, 'members', members, 'a non-empty array of { model, limiter? }');
  const list: PoolMember[] = Array.from(members, (m: unknown, i) => {
    if (typeof m === 'object' && m !== null && 'model' in m) {
      const { limiter } = m as PoolMember;
      if (limiter !== undefined && !(limiter instanceof RateLimiter)) throw new InvalidOptionError(target, `members[${i}].limiter`, limiter, 'a RateLimiter');
      return m as PoolMember;
    }
    return { model: m as Model };
  });
  const models = list.map((m) => m.model);
  checkModels(target, models, 'members');
  const o = validateOptions(target, props, options) as ModelPoolOptions;
  const strategy = o.strategy ?? 'round-robin';
  if (strategy === 'lowest-latency' && o.latency === undefined)
    throw new InvalidOptionError(target, 'latency', undefined, "a LatencyRegistry (strategy 'lowest-latency' reads it)");
  const prices = o.prices === undefined ? undefined : checkPrices(target, o.prices);
  if (prices) for (const m of models) priceOf(target, prices, m.id);
  const id = o.id ?? `pool(${models.map((m) => m.id).join(', ')})`;
  const names = models.map((m) => `model:${m.id}`);
  const breakers = o.breakers && names.map((name) => o.breakers!.get(name));
  const pool: Pool = {
    id,
    members: list,
    names,
    state: new PoolState(list.length, o.maxConversations ?? 10_000),
    strategy,
    latency: o.latency,
    affinity: o.affinity === false ? undefined : (o.affinity ?? defaultAffinity),
    maxWaitMs: o.maxWaitMs ?? 3_000,
    prices,
    usdPerSecond: o.usdPerSecond ?? 0.01,
    deadline: o.deadline,
    decide: o.decide ?? waitOrMove,
    scheduler: o.scheduler ?? asyncScheduler,
    classifier: o.classifier ?? classifyError,
    hub: o.hub,
    open: (j) => breakers?.[j]!.state === 'open',
  };
  return chainModel(models, o as FallbackModelOptions, id, (request, context) => route(pool, request, context));
}

/** The default affinity key: the request's `promptCacheKey`, else the run's id. */
const defaultAffinity = (request: ModelRequest, context: ModelCallContext): string | undefined => request.promptCacheKey ?? context.runId;

/** What every call of one pool shares. */
interface Pool {
  readonly id: string;
  readonly members: readonly PoolMember[];
  readonly names: readonly string[];
  readonly state: PoolState;
  readonly strategy: PoolStrategy;
  readonly latency: LatencyRegistry | undefined;
  readonly affinity: ((request: ModelRequest, context: ModelCallContext) => string | undefined) | undefined;
  readonly maxWaitMs: number;
  readonly prices: Prices | undefined;
  readonly usdPerSecond: number;
  readonly deadline: ((request: ModelRequest, context: ModelCallContext) => number | undefined) | undefined;
  readonly decide: (figures: WaitOrMoveFigures) => 'wait' | 'move';
  readonly scheduler: SchedulerLike;
  readonly classifier: ErrorClassifier;
  readonly hub: HealHub | undefined;
  /** Whether member `j`'s breaker is open. */
  readonly open: (j: number) => boolean;
}

/** One call's route: the conversation's member first (or its home, when it may return), then the others by the strategy. */
function route(pool: Pool, request: ModelRequest, context: ModelContext): CallRoute {
  const { state, scheduler } = pool;
  const now = scheduler.now();
  const key = pool.affinity ? pool.affinity(request, context) : undefined;
  if (key !== undefined && typeof key !== 'string') throw new TypeError(`modelPool: affinity must return a string or undefined, got ${typeof key}`);
  const deadlineAt = pool.deadline ? pool.deadline(request, context) : undefined;
  if (deadlineAt !== undefined && (typeof deadlineAt !== 'number' || Number.isNaN(deadlineAt)))
    throw new TypeError(`modelPool: deadline must return a time (a number) or undefined, got ${String(deadlineAt)}`);
  const latency = (j: number): number | undefined => pool.latency?.get(pool.names[j]!).quantile('first', 0.5);
  const known = key === undefined ? undefined : state.placement(key);
  const ranked = state.rank(pool.strategy, now, pool.open, latency, known === undefined);
  const sent = key !== undefined && request.promptCacheKey === undefined ? { ...request, promptCacheKey: key } : request;
  const hub = joinHubs([pool.hub, context.hub]);
  if (key === undefined) return new PoolRoute(pool, sent, ranked, undefined, undefined, false, hub, deadlineAt);
  const placed = known ?? state.place(key, ranked[0]!);
  const { home, current } = placed;
  const health = state.members[home]!;
  // a moved conversation goes back first when its home's block is over and the home is not down:
  // once a call there succeeded since the block, or as the one probe in flight
  const recovered = current !== home && !state.blocked(home, now) && !pool.open(home);
  const probe = recovered && health.okAt < health.blockedUntil && !health.probing;
  const back = recovered && (probe || health.okAt >= health.blockedUntil);
  const first = back ? [home, current] : [current];
  const order = [...first, ...ranked.filter((j) => !first.includes(j))];
  if (probe) health.probing = true;
  return new PoolRoute(pool, sent, order, key, placed, probe, hub, deadlineAt);
}

/** One call through the pool: its order, and what runs around each of its attempts. */
class PoolRoute implements CallRoute {
  /** The figures of the move decided in this call, for its `move` event. */
  private decided: WaitOrMoveFigures | undefined;
  /** What the call waited so far, in ms (every wait counts against `maxWaitMs`). */
  waited = 0;

  constructor(
    readonly pool: Pool,
    readonly request: ModelRequest,
    readonly order: readonly number[],
    readonly key: string | undefined,
    readonly placed: Placement | undefined,
    /** This call probes the conversation's home (its first attempt). */
    private probing: boolean,
    readonly hub: HealHub | undefined,
    private readonly deadlineAt: number | undefined,
  ) {}

  attempt(j: number, attempt$: Observable<TurnEvent>): Observable<TurnEvent> {
    const { members, names, latency } = this.pool;
    let input = attempt$;
    const limiter = members[j]!.limiter;
    if (limiter) input = input.pipe(rateLimit(limiter, this.hub ? { hub: this.hub } : {}));
    if (latency) input = input.pipe(latency.get(names[j]!).track());
    return new PoolAttempt(this, j, input);
  }

  failed(): void {
    this.endProbe();
  }

  /** What `decide` threw, or its answer's TypeError: the call's error, never a reason to move on. */
  private readonly thrown = new WeakSet<object>();

  fatal(error: unknown): boolean {
    return typeof error === 'object' && error !== null && this.thrown.has(error);
  }

  /** `waitFor`, guarded: a throw is kept as fatal (see {@link fatal}). */
  decide(j: number, waitMs: number): number | undefined | Thrown {
    const decided = guard(this.waitFor.bind(this), j, waitMs);
    if (!(decided instanceof Thrown)) return decided;
    const error = typeof decided.error === 'object' && decided.error !== null ? decided.error : new Error(String(decided.error));
    this.thrown.add(error);
    return new Thrown(error);
  }

  /** The probe (if this call is one) is over. */
  endProbe(): void {
    if (!this.probing) return;
    this.probing = false;
    this.pool.state.members[this.placed!.home]!.probing = false;
  }

  /** The figures of waiting `waitMs` for member `j` (the conversation's) instead of moving on. */
  figures(j: number, waitMs: number): WaitOrMoveFigures {
    const { pool, placed } = this;
    const now = pool.scheduler.now();
    const next = this.order[this.order.indexOf(j) + 1];
    const cachedTokens = placed?.cachedTokens ?? 0;
    let moveUsd: number | undefined;
    if (pool.prices && next !== undefined) {
      const here = pool.prices[pool.members[j]!.model.id]!;
      const there = pool.prices[pool.members[next]!.model.id]!;
      moveUsd = (cachedTokens * ((there.cacheWrite ?? there.input) - (here.cachedInput ?? here.input))) / 1e6;
    }
    return {
      key: this.key!,
      member: pool.names[j]!,
      to: next === undefined ? undefined : pool.names[next],
      waitMs,
      maxWaitMs: Math.max(0, pool.maxWaitMs - this.waited),
      deadlineLeftMs: this.deadlineAt === undefined ? undefined : this.deadlineAt - now,
      cachedTokens,
      moveUsd,
      waitUsd: (waitMs / 1000) * pool.usdPerSecond,
    };
  }

  /** Decides about waiting for member `j`: the wait in ms, or undefined to move on. Reports a wait; keeps a move's figures for its event. */
  waitFor(j: number, waitMs: number): number | undefined {
    const figures = this.figures(j, waitMs);
    const decision = this.pool.decide(figures);
    if (decision !== 'wait' && decision !== 'move') throw new TypeError(`modelPool: decide must return 'wait' or 'move', got ${String(decision)}`);
    if (decision === 'move') {
      this.decided = figures;
      return undefined;
    }
    this.report('wait', figures.member, figures.to, undefined, figures);
    this.waited += waitMs;
    return waitMs;
  }

  /** Member `j` answered: the conversation is there now (a move or a return reported when it changed). */
  landed(j: number, inputTokens: number | undefined): void {
    const { placed, pool } = this;
    const health = pool.state.members[j]!;
    health.okAt = pool.scheduler.now();
    this.endProbe();
    if (!placed) return;
    const from = placed.current;
    if (j !== from) {
      if (j === placed.home) this.report('return', pool.names[from]!, pool.names[j]!, undefined, undefined);
      else {
        const reason = this.decided ? 'rate_limit' : (this.reason ?? (pool.open(from) ? 'circuit_open' : undefined));
        this.report('move', pool.names[from]!, pool.names[j]!, reason, this.decided);
      }
      placed.current = j;
    }
    if (inputTokens !== undefined) placed.cachedTokens = inputTokens;
  }

  /** Why the conversation's member was left in this call (the category of its failure). */
  reason: string | undefined;

  private report(kind: 'wait' | 'move' | 'return', from: string, to: string | undefined, reason: string | undefined, f: WaitOrMoveFigures | undefined): void {
    const { hub, pool, key } = this;
    if (!hub) return;
    const event: { -readonly [K in keyof PoolEvent]: PoolEvent[K] } = { type: 'pool', pool: pool.id, kind, key: key!, from };
    if (to !== undefined) event.to = to;
    if (reason !== undefined) event.reason = reason;
    if (f) {
      event.waitMs = f.waitMs;
      if (f.deadlineLeftMs !== undefined) event.deadlineLeftMs = f.deadlineLeftMs;
      event.cachedTokens = f.cachedTokens;
      if (f.moveUsd !== undefined) event.moveUsd = f.moveUsd;
      event.waitUsd = f.waitUsd;
    }
    hub.report(event);
  }
}

/**
 * One attempt at a member, as the pool runs it: blocked (an earlier 429's `retry-after`), it waits
 * or skips; in flight, it is counted; a 429 before any output blocks the member and, for the
 * conversation's member, is waited out or moved on from; an answer records where the
 * conversation is and what it cached.
 */
class PoolAttempt extends Observable<TurnEvent> {
  constructor(
    private readonly route: PoolRoute,
    private readonly j: number,
    private readonly input: Observable<TurnEvent>,
  ) {
    super();
  }

  protected _subscribe(subscriber: Subscriber<TurnEvent>): TeardownLogic {
    const { route, j } = this;
    const { pool } = route;
    const { state, scheduler } = pool;
    const health = state.members[j]!;
    // the conversation's own member (warm): its blocks are waited out or moved on from; another's are skipped
    const warm = route.placed?.current === j;
    let timer: { unsubscribe(): void } | undefined;
    let running: { unsubscribe(): void } | undefined;
    let emitted = false;
    let counted = false;
    const leave = (): void => {
      if (counted) health.inFlight--;
      counted = false;
    };
    /** Blocked for `waitMs`: wait (then run), or fail with `error` (the chain moves on). */
    const waitOrFail = (waitMs: number, error: () => unknown): void => {
      const decided = warm ? route.decide(j, waitMs) : undefined;
      if (decided instanceof Thrown) return subscriber.error(decided.error);
      if (decided === undefined) {
        if (warm) route.reason = 'rate_limit';
        return subscriber.error(error());
      }
      timer = after(decided, scheduler, run);
    };
    const run = (): void => {
      timer = undefined;
      health.inFlight++;
      counted = true;
      running = this.input.subscribe({
        next: (event) => {
          emitted = true;
          if (event.type === 'finish') route.landed(j, event.usage?.inputTokens);
          subscriber.next(event);
        },
        error: (error: unknown) => {
          leave();
          const holdMs = emitted ? undefined : this.blockedBy(error, warm);
          if (holdMs === undefined) return subscriber.error(error);
          waitOrFail(holdMs, () => error);
        },
        complete: () => {
          leave();
          subscriber.complete();
        },
      });
    };
    // still blocked by an earlier 429 (of any conversation)
    const now = scheduler.now();
    if (state.blocked(j, now)) {
      const waitMs = health.blockedUntil - now;
      waitOrFail(waitMs, () => new RateLimitExceededError(pool.names[j]!, waitMs, warm ? Math.max(0, pool.maxWaitMs - route.waited) : 0));
    } else run();
    return () => {
      timer?.unsubscribe();
      running?.unsubscribe();
      leave();
    };
  }

  /**
   * A 429 with a `retry-after` (classify's rule: `rateLimitHoldMs`): the member is blocked until
   * then, and the hold is returned; undefined for another error (for the conversation's member,
   * its category is why the conversation leaves).
   */
  private blockedBy(error: unknown, warm: boolean): number | undefined {
    const { pool } = this.route;
    const c = guard(pool.classifier, error, { now: pool.scheduler.now() });
    if (c instanceof Thrown) return undefined;
    const holdMs = rateLimitHoldMs(c);
    if (holdMs === undefined) {
      if (warm) this.route.reason = c.category;
      return undefined;
    }
    const health = pool.state.members[this.j]!;
    health.blockedUntil = Math.max(health.blockedUntil, pool.scheduler.now() + holdMs);
    return holdMs;
  }
}
