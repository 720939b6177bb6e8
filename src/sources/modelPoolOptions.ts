/**
 * What {@link modelPool} takes: its members ({@link PoolMember}: a model, and its own rate
 * limiter), its options ({@link ModelPoolOptions}: the strategy, affinity, the wait-or-move rule,
 * and what a fallback chain takes), and the figures of each wait-or-move decision
 * ({@link WaitOrMoveFigures}).
 *
 * @module
 */
import type { SchedulerLike } from 'rxjs';
import type { CircuitBreakerRegistry } from '../core/breaker/registry.js';
import type { ErrorClassifier } from '../core/errors/classify.js';
import type { LatencyRegistry } from '../core/latency/registry.js';
import type { ModelCallContext, Model, ModelRequest } from '../core/model/model.js';
import type { Prices } from '../core/money/prices.js';
import type { RateLimiter } from '../core/rate-limit/rateLimit.js';
import type { FallbackModelOptions } from './fallbackModelOptions.js';

/**
 * How a pool picks a member for a conversation it has not placed yet (and orders the others to
 * move to): `'round-robin'` (each new conversation the next member), `'least-loaded'` (the fewest
 * calls in flight), `'lowest-latency'` (the lowest median time to first token, from the pool's
 * `latency` trackers; a member with no sample yet first, so each is measured).
 *
 * @example
 * ```ts
 * const strategy: PoolStrategy = 'least-loaded';
 * ```
 */
export type PoolStrategy = 'round-robin' | 'least-loaded' | 'lowest-latency';

/**
 * One member of a pool: a deployment or key of the pool's model, and optionally its own rate
 * limiter (requests and tokens per minute, shared by every process with a `RedisRateLimitStore`):
 * each attempt at the member waits its turn there; one that would wait past the limiter's
 * `maxWaitMs` skips the member (`RateLimitExceededError`, the pool moves on).
 *
 * @example
 * ```ts
 * const member: PoolMember = { model: openai({ model: 'gpt-5-mini', apiKey: keyA, id: 'gpt-5-mini@a' }), limiter: limiterA };
 * ```
 */
export interface PoolMember {
  readonly model: Model;
  readonly limiter?: RateLimiter;
}

/**
 * The figures of one wait-or-move decision: the conversation's member answered 429 (or is still
 * blocked by an earlier 429's `retry-after`), and the pool weighs waiting for it, warm, against
 * moving to a cold member. Reported with the decision in a `pool` event.
 *
 * @example
 * ```ts
 * const figures: WaitOrMoveFigures = {
 *   key: 'run-7', member: 'model:gpt@a', to: 'model:gpt@b', waitMs: 4_000, maxWaitMs: 10_000,
 *   deadlineLeftMs: undefined, cachedTokens: 20_000, moveUsd: 0.069, waitUsd: 0.04,
 * };
 * ```
 */
export interface WaitOrMoveFigures {
  /** The conversation's affinity key. */
  readonly key: string;
  /** `model:<id>` of the member it is on (warm). */
  readonly member: string;
  /** `model:<id>` of the member it would move to (the next in this call's order); undefined: none is left. */
  readonly to: string | undefined;
  /** How long waiting takes: what is left of the member's `retry-after`, in ms. */
  readonly waitMs: number;
  /** The pool's `maxWaitMs`. */
  readonly maxWaitMs: number;
  /** What is left until the call's deadline (the `deadline` option), in ms; undefined: none. */
  readonly deadlineLeftMs: number | undefined;
  /** The conversation's prefix cached on the member: its last call's input tokens there (an estimate before any call). */
  readonly cachedTokens: number;
  /**
   * What moving costs: `cachedTokens` written again on `to` (at its `cacheWrite` price, else
   * `input`) instead of read on the member (its `cachedInput` price, else `input`), in dollars.
   * Undefined without `prices`.
   */
  readonly moveUsd: number | undefined;
  /** What waiting costs: `waitMs` at the pool's `usdPerSecond`, in dollars. */
  readonly waitUsd: number;
}

/**
 * Options of {@link modelPool}: its own, and those of a fallback chain (the pool moves on through
 * its members like `fallbackModel` does: the same `breakers`, `midStream`, `perModel`, `adapt`,
 * `shouldFallback` and `classifier`).
 *
 * @example
 * ```ts
 * const options: ModelPoolOptions = { strategy: 'least-loaded', breakers, prices, maxWaitMs: 8_000, usdPerSecond: 0.01, hub };
 * ```
 */
export interface ModelPoolOptions extends Omit<FallbackModelOptions, 'cheaperBelow'> {
  /** The pool's id (its `model.id`). Defaults to `pool(<id>, <id>, …)`. */
  readonly id?: string;
  /**
   * Gives `fallback` (whether a member's error moves the call on) and the category (a `move`
   * event's `reason`; `rate_limit` with a `retryAfterMs` is what the pool waits out or moves on
   * from). Defaults to rxheal's `classifyError`. If it throws, the call errors with what it threw.
   */
  readonly classifier?: ErrorClassifier;
  /** How a new conversation is placed, and the others ordered. Defaults to `'round-robin'`. */
  readonly strategy?: PoolStrategy;
  /** The trackers `'lowest-latency'` reads (`model:<id>`); each attempt is tracked into them. Required by that strategy. */
  readonly latency?: LatencyRegistry;
  /**
   * The conversation a request belongs to: `(request, context) => key`. Calls with the same key
   * stick to one member (its prompt cache stays warm), move only when it is skipped (breaker
   * open, limiter full, an error worth a fallback, or a 429 the wait-or-move rule would not wait
   * for), and return to it once it is healthy again: its `retry-after` passed and a call there
   * (a probe, one at a time) succeeded. The key is sent as the request's `promptCacheKey` unless
   * the request has one. Defaults to the request's `promptCacheKey`, else the run's id
   * (`context.runId`, set by `runAgent`); `false`, or a key of `undefined`: no affinity (each
   * call placed by the strategy). A throw errors the call.
   */
  readonly affinity?: false | ((request: ModelRequest, context: ModelCallContext) => string | undefined);
  /**
   * The longest a call waits for its conversation's member (its `retry-after`), in ms, all waits of
   * the call together. Defaults to 3 000: longer waits keep more caches warm but cost time to first
   * token (bench figure t: at 10 s the pool's p99 was 4.5 s against the fixed chain's 1.4 s; at 3 s,
   * 1.35 s).
   */
  readonly maxWaitMs?: number;
  /** The members' prices ($ per million tokens, by model id): what moving costs. None: moving is weighed by time alone (see `decide`). */
  readonly prices?: Prices;
  /** What a second of waiting is worth, in dollars: `waitUsd = waitMs / 1000 × usdPerSecond`. Defaults to 0.01 ($36 an hour). */
  readonly usdPerSecond?: number;
  /**
   * The call's deadline, as a time on the pool's scheduler (`scheduler.now()` scale): a wait that
   * would pass it is not made. None by default (`runAgent` has no deadline of its own).
   */
  readonly deadline?: (request: ModelRequest, context: ModelCallContext) => number | undefined;
  /**
   * The wait-or-move rule. Defaults to: wait when `waitMs <= maxWaitMs`, the wait ends before the
   * deadline (if any), a member to move to exists, and waiting costs no more than moving
   * (`waitUsd <= moveUsd`; without prices, every wait within `maxWaitMs` is made). A throw, or an
   * answer other than `'wait'` / `'move'`, errors the call.
   */
  readonly decide?: (figures: WaitOrMoveFigures) => 'wait' | 'move';
  /** Conversations remembered (least recently used forgotten first). Defaults to 10 000. */
  readonly maxConversations?: number;
  /** The pool's clock and where it waits. Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
  /** Pool members' breakers: one per member, named `model:<id>`, as in a fallback chain. */
  readonly breakers?: CircuitBreakerRegistry;
}
