import type { MonoTypeOperatorFunction, Observer, Subscriber, Subscription } from 'rxjs';
import type { HealHub } from '../core/hub/hub.js';
import { after } from '../core/rx/wait.js';
import { operate, subscribeWithin } from '../core/rx/operate.js';
import { Func, Hub, NonNegativeNumber, check, validateOptions } from '../core/errors/options.js';
import { RateLimiter, type RateLimitReservation } from '../core/rate-limit/rateLimit.js';
import { InvalidOptionError, RateLimitExceededError } from '../core/errors/errors.js';

/**
 * Options of {@link rateLimit}.
 *
 * @example
 * ```ts
 * const options: RateLimitOptions<TurnEvent> = { cost: 1_500, hub };
 * ```
 */
export interface RateLimitOptions<T> {
  /**
   * Tokens this call is expected to use (reserved before it starts, reconciled after), or a
   * function giving it at each subscription. Defaults to the limiter's running average of
   * actual usage (`limiter.estimate`).
   */
  readonly cost?: number | (() => number);
  /**
   * Tokens a value reports having used, or undefined. Defaults to a `finish` event's
   * `usage.inputTokens + usage.outputTokens`.
   */
  readonly usage?: (value: T) => number | undefined;
  /**
   * Reports each wait (and each refusal) as a `rate-limited` event, and, with a shared store, the
   * store's health while the hub has listeners: `circuit` events of `rate-limit-store:<name>`
   * (`closed → open` when the store stops answering and the limiter falls back to its local share).
   */
  readonly hub?: HealHub;
}

const props = {
  cost: check('a number >= 0 or a function', (u): u is number | (() => number) => typeof u === 'function' || (NonNegativeNumber.is(u) as boolean)),
  usage: Func,
  hub: Hub,
};

/** The default `usage`: a `finish` event's token counts. */
function finishUsage(value: unknown): number | undefined {
  if (typeof value !== 'object' || value === null || (value as { type?: unknown }).type !== 'finish') return undefined;
  const usage = (value as { usage?: { inputTokens?: unknown; outputTokens?: unknown } }).usage;
  if (typeof usage?.inputTokens !== 'number' || typeof usage.outputTokens !== 'number') return undefined;
  return usage.inputTokens + usage.outputTokens;
}

/**
 * Runs each subscription (one call) under a shared {@link RateLimiter}: it reserves 1 request
 * and `cost` tokens, waits on the limiter's scheduler for its turn (a `rate-limited` event with
 * the wait), then subscribes the source; after the source completes, the reservation is
 * reconciled with the tokens actually used. A call that would wait longer than the limiter's
 * `maxWaitMs` fails with {@link RateLimitExceededError} (category `throttled`) without ever
 * subscribing. Unsubscribing before the source started gives the reservation back — also one
 * still in flight (the store's answer is awaited and a grant nobody took refunded). A failed
 * call's headers correct the shared limit (`x-ratelimit-remaining-*`, `anthropic-ratelimit-*`;
 * a 429's `retry-after` holds every process back).
 *
 * Put it innermost, before `retryWithBackoff` and `circuitBreak`, so every attempt is counted:
 *
 * ```
 * limit 2/min, no burst left:  calls  a-b------------------c
 * result:                       a (at once), b after 30 000 ms, c refused (wait > maxWaitMs)
 * ```
 *
 * @example
 * ```ts
 * const limiter = new RateLimiter({ name: 'openai:prod', requestsPerMinute: 500, tokensPerMinute: 30_000 });
 * const answer$ = streamModel(model, request).pipe(
 *   rateLimit(limiter, { cost: 1_200, hub }),
 *   retryWithBackoff({ maxRetries: 2 }),
 *   circuitBreak(breakers.get('model:gpt-4o')),
 * );
 * ```
 * @throws {InvalidOptionError} at once, for an invalid option.
 */
export function rateLimit<T>(limiter: RateLimiter, options?: RateLimitOptions<T>): MonoTypeOperatorFunction<T> {
  const o = validateOptions('rateLimit', props, options);
  if (!(limiter instanceof RateLimiter)) throw new InvalidOptionError('rateLimit', 'limiter', limiter, 'a RateLimiter');
  const hub = o.hub as HealHub | undefined;
  // the shared store's health on the hub: its breaker's transitions (rate-limit-store:<name>), while the hub has listeners
  if (limiter.storeBreaker !== undefined) hub?.watch(limiter.storeBreaker);
  const cost = o.cost as number | (() => number) | undefined;
  const usageOf = (o.usage as ((value: T) => number | undefined) | undefined) ?? finishUsage;
  return operate<T>((source, subscriber) => {
    let estimate: number;
    try {
      estimate = typeof cost === 'function' ? cost() : (cost ?? limiter.estimate);
      if (!(estimate >= 0) || !Number.isFinite(estimate)) throw new TypeError(`rateLimit: cost must be a finite number >= 0, got ${String(estimate)}`);
    } catch (error) {
      subscriber.error(error);
      return;
    }
    let reservation: RateLimitReservation | undefined;
    let running: AdmittedCall<T> | undefined;
    let waiting: Subscription | undefined;
    const reserving = limiter.reserve(estimate).subscribe({
      next: (r) => {
        reservation = r;
        if (r.waitMs > 0) hub?.report({ type: 'rate-limited', limiter: limiter.name, waitMs: r.waitMs, cost: r.cost, ...(r.local ? { local: true } : {}) });
        const start = (): void => {
          waiting = undefined;
          running = new AdmittedCall(subscriber, r, limiter, usageOf);
          // the source first, then the call: leaving tears the source down, then settles the reservation
          subscribeWithin(subscriber, source, running);
          subscriber.add(running);
        };
        if (r.waitMs > 0) waiting = after(r.waitMs, limiter.scheduler, start);
        else start();
      },
      error: (error: unknown) => {
        if (error instanceof RateLimitExceededError) {
          hub?.report({ type: 'rate-limited', limiter: limiter.name, waitMs: error.retryAfterMs, cost: estimate, rejected: true });
        }
        subscriber.error(error);
      },
    });
    return () => {
      reserving.unsubscribe();
      waiting?.unsubscribe();
      // never started: nothing was sent, everything goes back
      if (reservation && !running) reservation.cancel();
    };
  });
}

/**
 * One admitted call, as the source's observer and as its teardown: forwards values, notes usage,
 * reconciles the reservation when it ends (settling twice changes nothing).
 */
class AdmittedCall<T> implements Observer<T> {
  private tokens: number | undefined;

  constructor(
    private readonly subscriber: Subscriber<T>,
    private readonly reservation: RateLimitReservation,
    private readonly limiter: RateLimiter,
    private readonly usageOf: (value: T) => number | undefined,
  ) {}

  next(value: T): void {
    let used: number | undefined;
    try {
      used = this.usageOf(value);
    } catch {
      // a throwing usage reader only loses the reconciliation (the estimate stays reserved)
    }
    if (typeof used === 'number') this.tokens = used;
    this.subscriber.next(value);
  }

  error(error: unknown): void {
    this.limiter.observe(error);
    this.reservation.settle(this.tokens);
    this.subscriber.error(error);
  }

  complete(): void {
    this.reservation.settle(this.tokens);
    this.subscriber.complete();
  }

  /** Cancelled mid-call: the request was sent, what it used is unknown — the estimate stays. */
  unsubscribe(): void {
    this.reservation.settle(this.tokens);
  }
}
