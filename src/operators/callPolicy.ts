import { Observable, type MonoTypeOperatorFunction, type ObservableInput, type Subscriber, type TeardownLogic } from 'rxjs';
import { Abortable, AbortRun, subscribeResult, type AbortContext } from '../core/model/abortable.js';
import { CircuitBreaker, type CircuitBreakerOptions } from '../core/breaker/CircuitBreaker.js';
import { InvalidOptionError } from '../core/errors/errors.js';
import type { HealHub } from '../core/hub/hub.js';
import { Hub, check, validateOptions } from '../core/errors/options.js';
import { failWith, settleUnsubscribed, type CircuitPermit, type RunsUnderPermit } from '../core/circuit/permit.js';
import { admit, PermitSubscriber, subscribeUnderBreaker } from './circuitBreak.js';
import { AttemptSubscriber, retryAfterError, type RetryConfig } from './retryLoop.js';
import { retryConfigOf, retryWithBackoff, type RetryWithBackoffOptions } from './retryWithBackoff.js';

/** Options of {@link callPolicy}. */
export interface CallPolicyOptions<R = never> {
  /**
   * The retry, as {@link retryWithBackoff}'s options; `false` for none. Defaults to
   * `retryWithBackoff()`'s defaults (3 retries, 500 ms × 2, equal jitter).
   */
  readonly retry?: RetryWithBackoffOptions<R> | false;
  /**
   * A {@link CircuitBreaker} to share (e.g. from a registry), options for one the policy owns,
   * or `false` for none. Defaults to a breaker with default options, owned by the policy.
   */
  readonly breaker?: CircuitBreaker | CircuitBreakerOptions | false;
  /** Reports the breaker's transitions and each rejected call (as `circuitBreak`'s `hub`). */
  readonly hub?: HealHub;
}

/** A retry and a breaker, made once, that guard any number of calls. See {@link callPolicy}. */
export interface CallPolicy<R = never> {
  /** The breaker the policy's calls go through, if any. */
  readonly breaker: CircuitBreaker | undefined;
  /**
   * A cold observable of one guarded call: each subscription calls `work` (again on each retry),
   * exactly as `defer(work).pipe(retryWithBackoff(retry), circuitBreak(breaker, { hub }))` would,
   * and unsubscribing aborts `context.signal` of the attempt in flight (as `abortable` of rxheal/providers does).
   */
  call<T>(work: (context: AbortContext) => ObservableInput<T>): Observable<T | R>;
}

const props = {
  retry: check('retryWithBackoff options, or false', (u): u is object | false => u === false || (typeof u === 'object' && u !== null)),
  breaker: check('a CircuitBreaker, its options, or false', (u): u is object | false => u === false || (typeof u === 'object' && u !== null)),
  hub: Hub,
};

/**
 * The per-call shape, made cheap: a retry and a breaker made once, then one observable per call.
 * `policy.call(() => callTool(args))` behaves exactly as
 * `defer(() => callTool(args)).pipe(retryWithBackoff(retry), circuitBreak(breaker, { hub }))`
 * with the operators made once — same retries, same admissions and outcomes, same events — but
 * builds one observable per call instead of a pipeline of four, and subscribes to a promise
 * directly. The retry and the breaker still run fused (one subscriber per call). `work` also gets
 * an {@link AbortContext}: unsubscribing aborts the attempt in flight.
 *
 * Use it where calls are made in a loop (an agent's tool calls, a batch); `pipe` stays the way
 * to compose anything else (fallbacks, deadlines, reflection).
 *
 * @example
 * ```ts
 * import { lastValueFrom } from 'rxjs';
 * import { CircuitBreakerRegistry, callPolicy } from 'rxheal';
 *
 * const breakers = new CircuitBreakerRegistry({ failureThreshold: 5 });
 * const weather = callPolicy({ retry: { maxRetries: 2, initialBackoffMs: 200 }, breaker: breakers.get('tool:get_weather') });
 * const getWeather = (city: string) => weather.call(({ signal }) => fetch(`https://wttr.in/${city}?format=j1`, { signal }).then((r) => r.json()));
 * const today = await lastValueFrom(getWeather('Paris'));
 * ```
 * @throws {InvalidOptionError} at once, for an invalid option (a retry or breaker option is
 *   named by its path, e.g. `retry.maxRetries`).
 */
export function callPolicy<R = never>(options?: CallPolicyOptions<R>): CallPolicy<R> {
  const o = validateOptions('callPolicy', props, options);
  const retry =
    o.retry === false ? undefined : nested('retry', () => retryWithBackoff<unknown>((o.retry ?? undefined) as RetryWithBackoffOptions<unknown> | undefined));
  const breaker =
    o.breaker === false
      ? undefined
      : o.breaker instanceof CircuitBreaker
        ? o.breaker
        : nested('breaker', () => new CircuitBreaker(o.breaker as CircuitBreakerOptions | undefined));
  const hub = o.hub as HealHub | undefined;
  if (breaker) hub?.watch(breaker);
  return new Policy<R>(retry, breaker, hub);
}

/** Builds a nested part, naming its bad option by its path under `key`. */
function nested<X>(key: string, make: () => X): X {
  try {
    return make();
  } catch (error) {
    if (error instanceof InvalidOptionError) throw new InvalidOptionError('callPolicy', `${key}.${error.option}`, error.value, error.expected);
    throw error;
  }
}

class Policy<R> implements CallPolicy<R> {
  /** The retry's resolved options, when there is a retry. */
  readonly config: RetryConfig<unknown> | undefined;

  constructor(
    readonly retry: MonoTypeOperatorFunction<unknown> | undefined,
    readonly breaker: CircuitBreaker | undefined,
    readonly hub: HealHub | undefined,
  ) {
    this.config = retry && retryConfigOf(retry);
  }

  call<T>(work: (context: AbortContext) => ObservableInput<T>): Observable<T | R> {
    return new GuardedCall<T | R>(work as (context: AbortContext) => ObservableInput<T | R>, this as Policy<unknown>);
  }
}

/**
 * One guarded call: an Observable whose every subscription is one call through the policy.
 *
 * The first attempt runs here, not through an operator chain: admission (`admit`, as
 * `circuitBreak`), then `work`; a promise it returns is followed directly (no `from()`, no
 * subscriber per layer). At the attempt's first error the call is handed to the retry loop
 * (`retryAfterError`), which makes any further attempts exactly as `retryWithBackoff` does. With
 * a total budget (`totalTimeoutMs`), armed at subscription, the call runs through the operators.
 */
class GuardedCall<T> extends Observable<T> {
  constructor(
    private readonly work: (context: AbortContext) => ObservableInput<T>,
    private readonly policy: Policy<unknown>,
  ) {
    super();
  }

  /** RxJS calls this for each subscription. */
  protected _subscribe(subscriber: Subscriber<T>): TeardownLogic {
    const { retry, config, breaker, hub } = this.policy;
    if (retry && config?.totalTimeoutMs !== undefined) {
      // the budget is armed when the call starts: the operators' own path
      const source = retry(new Abortable(this.work) as Observable<unknown>) as Observable<T>;
      if (breaker) subscribeUnderBreaker(source, source as Observable<T> & RunsUnderPermit<T>, subscriber, breaker, hub);
      else source.subscribe(subscriber);
      return;
    }
    let permit: CircuitPermit | undefined;
    if (breaker) {
      permit = admit(breaker, subscriber, hub);
      if (permit === undefined) return;
    }
    const call = new FirstAttempt(this.work, subscriber, config as RetryConfig<T> | undefined, permit);
    let result: ObservableInput<T>;
    try {
      result = this.work(call);
    } catch (error) {
      call.failed(error);
      return call;
    }
    if (result instanceof Promise) {
      (result as Promise<T>).then(
        (value) => call.succeeded(value),
        (error: unknown) => call.failed(error),
      );
      return call;
    }
    // anything else (an Observable, an array…): through the subscriber the operators would use,
    // which settles the permit; `call` stays the teardown that aborts an unfinished attempt
    call.settled = true;
    const attempt = config
      ? new AttemptSubscriber<T>(subscriber, new Abortable(this.work), config as RetryConfig<T>, undefined, permit)
      : permit
        ? new PermitSubscriber<T>(subscriber, permit)
        : subscriber;
    attempt.add(subscribeResult(result, call, attempt));
    return undefined;
  }
}

/**
 * The first attempt of a call made by {@link GuardedCall}, and its teardown: settles the permit
 * as `circuitBreak` would (success on completion, before downstream hears; failure before the
 * error goes downstream; on an early unsubscribe, success if it had emitted, else release), and
 * aborts `signal` if the consumer leaves before the work finished.
 */
class FirstAttempt<T> extends AbortRun {
  /** The permit is settled, or no longer this attempt's to settle (handed to the retry loop). */
  settled = false;
  private emitted = false;

  constructor(
    private readonly work: (context: AbortContext) => ObservableInput<T>,
    private readonly subscriber: Subscriber<T>,
    private readonly config: RetryConfig<T> | undefined,
    private readonly permit: CircuitPermit | undefined,
  ) {
    super();
  }

  succeeded(value: T): void {
    this.finished = true;
    const { subscriber } = this;
    if (subscriber.closed) return;
    this.emitted = true;
    subscriber.next(value);
    // downstream left while handling the value: the teardown settled the permit (a success)
    if (subscriber.closed) return;
    this.settled = true;
    this.permit?.success();
    subscriber.complete();
  }

  failed(error: unknown): void {
    this.finished = true;
    const { subscriber, config, permit } = this;
    if (subscriber.closed) return;
    this.settled = true;
    if (config) {
      retryAfterError(error, false, new Abortable(this.work), subscriber, config, permit);
      return;
    }
    subscriber.error(failWith(permit, error));
  }

  override unsubscribe(): void {
    super.unsubscribe();
    if (this.settled) return;
    this.settled = true;
    if (this.permit) settleUnsubscribed(this.permit, this.emitted);
  }
}
