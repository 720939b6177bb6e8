/**
 * The retry loop behind {@link retryWithBackoff}, and behind `callPolicy`, which makes a call's
 * first attempt itself and hands the call to this loop at its first error: one subscription's
 * attempts ({@link AttemptSubscriber}), the decision after each failure, the wait before the next
 * attempt and the total budget ({@link RetryRun}), settling the permit of a `circuitBreak` fused
 * after the retry.
 *
 * @module
 */
import { Observable, Subscriber, type SchedulerLike, type Subscription } from 'rxjs';
import { type CircuitPermit, failWith, RUN_UNDER_PERMIT, settleUnsubscribed, type RunsUnderPermit } from '../core/circuit/permit.js';
import { backoffDelay, type BackoffPolicy } from '../core/rx/backoff.js';
import type { ErrorClassification, ErrorClassifier } from '../core/errors/classify.js';
import { RetriesExhaustedError, TotalTimeoutError } from '../core/errors/errors.js';
import type { HealHub } from '../core/hub/hub.js';
import { errorText } from '../core/errors/sanitize.js';
import { guard, Thrown } from '../core/rx/guard.js';
import { after, wait as waitFor } from '../core/rx/wait.js';

/** What `retryWithBackoff` knows about a retry it is about to make. */
export interface RetryInfo {
  /** Which retry this is, 1-based (the first retry is 1). */
  readonly attempt: number;
  /** `maxRetries`. */
  readonly maxRetries: number;
  /** The error that failed the previous attempt. */
  readonly error: unknown;
  /** The classifier's verdict on `error`. */
  readonly classification: ErrorClassification;
  /** The wait before the retry, in ms (backoff, or the server's `retry-after` when longer). */
  readonly delayMs: number;
  /** Whether the failed attempt had emitted values before it failed. */
  readonly emitted: boolean;
}

/**
 * The retry loop taking over a call whose first attempt, made by the caller, failed with `error`
 * (after emitting, if `emitted`): exactly what happens when an attempt of its own fails. Further
 * attempts subscribe to `source`; under a `permit`, the loop settles it.
 *
 * @internal
 */
export function retryAfterError<T>(
  error: unknown,
  emitted: boolean,
  source: Observable<T>,
  subscriber: Subscriber<T>,
  config: RetryConfig<T>,
  permit: CircuitPermit | undefined,
): void {
  new RetryRun(source, subscriber, config, permit).onError(error, emitted);
}

/**
 * What `retryOn`'s rule says of an error, the classifier's `withheld` aside: the classifier's
 * `retryable` (for a withheld one, what it would be were the tool idempotent), or — `'all'` —
 * every error but cancellation and a crossed budget.
 */
function ruleRetries(classification: ErrorClassification, all: boolean): boolean {
  const { category, withheld, retryable, retryableIfIdempotent } = classification;
  if (all) return category !== 'cancelled' && category !== 'budget_exceeded';
  return withheld === undefined ? retryable : retryableIfIdempotent === true;
}

/**
 * What `retryWithBackoff` returns: an `Observable` that also implements the internal
 * {@link RUN_UNDER_PERMIT} protocol, so a `circuitBreak` piped right after it runs the retry loop
 * under its permit without a subscriber of its own (one subscriber per call, not two).
 */
export class RetryObservable<T> extends Observable<T> implements RunsUnderPermit<T> {
  constructor(
    private readonly upstream: Observable<T>,
    private readonly config: RetryConfig<T>,
  ) {
    super((subscriber) => start(upstream, subscriber, config, undefined));
  }

  [RUN_UNDER_PERMIT](subscriber: Subscriber<T>, permit: CircuitPermit): void {
    start(this.upstream, subscriber, this.config, permit);
  }
}

/** Starts one subscription's first attempt (and its total budget, when there is one). */
function start<T>(source: Observable<T>, subscriber: Subscriber<T>, config: RetryConfig<T>, permit: CircuitPermit | undefined): void {
  // the retry bookkeeping is made at the first error (or now, for the total budget): a
  // subscription that never fails costs one subscriber
  const run = config.totalTimeoutMs === undefined ? undefined : new RetryRun(source, subscriber, config, permit);
  run?.startBudget();
  source.subscribe(new AttemptSubscriber(subscriber, source, config, run, permit));
}

/** The options, resolved once per operator. @internal */
export interface RetryConfig<T> {
  readonly maxRetries: number;
  readonly policy: BackoffPolicy;
  readonly shouldRetry: ((error: unknown, attempt: number) => boolean) | undefined;
  /** `retryOn: 'all'`. */
  readonly retryAll: boolean;
  readonly classifier: ErrorClassifier;
  readonly maxRetryAfterMs: number;
  readonly totalTimeoutMs: number | undefined;
  readonly resetOnSuccess: boolean;
  readonly afterEmit: 'error' | 'restart' | 'resubscribe';
  readonly onRestart: ((info: RetryInfo) => T) | undefined;
  readonly onRetry: ((info: RetryInfo) => void) | undefined;
  readonly scheduler: SchedulerLike;
  readonly hub: HealHub | undefined;
  readonly target: string;
}

/**
 * One subscription's retry state: counts, errors, the wait and the total budget. Under a permit
 * (a `circuitBreak` fused after the retry), it settles the permit on every way the call ends
 * while no attempt is live: a terminal error (failure, before the error goes downstream) or
 * unsubscribing during a wait (success if anything was emitted, else release).
 */
class RetryRun<T> {
  retries = 0;
  previousDelay: number;
  errors: unknown[] | undefined = undefined;
  succeeded = false;
  /** Whether any attempt emitted (so a value went downstream; `onRestart` only follows one that did). */
  emitted = false;
  attempt: AttemptSubscriber<T> | undefined = undefined;
  wait: Subscription | undefined = undefined;
  private readonly start: number;

  constructor(
    private readonly source: Observable<T>,
    private readonly subscriber: Subscriber<T>,
    private readonly config: RetryConfig<T>,
    readonly permit: CircuitPermit | undefined,
  ) {
    this.previousDelay = config.policy.initialBackoffMs;
    this.start = config.totalTimeoutMs === undefined ? 0 : config.scheduler.now();
  }

  /** Arms the total budget (only with `totalTimeoutMs`); unsubscribing downstream cancels it. */
  startBudget(): void {
    const { scheduler, totalTimeoutMs } = this.config;
    this.subscriber.add(after(totalTimeoutMs ?? Infinity, scheduler, () => this.giveUpOnTime()));
  }

  private giveUpOnTime(): void {
    const { scheduler, totalTimeoutMs } = this.config;
    const errors = this.errors;
    const last = errors?.[errors.length - 1];
    const error = new TotalTimeoutError(totalTimeoutMs ?? 0, scheduler.now() - this.start, errors ? { cause: last } : undefined);
    // settled first: cancelling the attempt below must not release the permit
    const out = failWith(this.permit, error);
    this.attempt?.unsubscribe();
    this.wait?.unsubscribe();
    this.subscriber.error(out);
  }

  /** Gives up: the permit (if any) records the failure before the error goes downstream. */
  private fail(error: unknown): void {
    this.subscriber.error(failWith(this.permit, error));
  }

  /** The source's first value (or completion) after a retry: report the retry succeeded, once. */
  reportSuccess(): void {
    if (this.succeeded || this.retries === 0) return;
    this.succeeded = true;
    this.config.hub?.report({ type: 'retry-succeeded', target: this.config.target, attempt: this.retries + 1 });
  }

  onError(error: unknown, emitted: boolean): void {
    const { subscriber, config } = this;
    const { scheduler, totalTimeoutMs, maxRetries, hub } = config;
    (this.errors ??= []).push(error);
    if (emitted) this.emitted = true;
    const errors = this.errors;
    const next = this.retries + 1;
    if (emitted && config.afterEmit === 'error') return this.fail(error);
    const classification = guard(config.classifier, error, { now: scheduler.now() });
    if (classification instanceof Thrown) return this.fail(classification.error);
    // a withheld retry (a tool that is not idempotent ran) is never made, whatever retryOn says
    const rule = config.shouldRetry ? undefined : ruleRetries(classification, config.retryAll);
    const retry = config.shouldRetry ? guard(config.shouldRetry, error, next) : rule === true && classification.withheld === undefined;
    if (retry instanceof Thrown) return this.fail(retry.error);
    if (!retry) {
      // the rule would have retried the error, but the tool that failed is not idempotent: say so
      if (rule === true && classification.withheld !== undefined) {
        hub?.report({
          type: 'retry-withheld',
          target: config.target,
          reason: classification.withheld,
          category: classification.category,
          error: errorText(error, 200),
        });
      }
      return this.fail(error);
    }
    if (this.retries >= maxRetries) return this.fail(new RetriesExhaustedError(this.retries + 1, errors, 'max_retries'));
    const retryAfter = classification.retryAfterMs;
    if (retryAfter !== undefined && retryAfter > config.maxRetryAfterMs) {
      return this.fail(new RetriesExhaustedError(this.retries + 1, errors, 'retry_after_too_long'));
    }
    const backoff = guard(backoffDelay, this.retries, this.previousDelay, config.policy);
    if (backoff instanceof Thrown) return this.fail(backoff.error);
    let delayMs = backoff;
    this.previousDelay = delayMs;
    if (retryAfter !== undefined && retryAfter > delayMs) delayMs = retryAfter;
    // a wait ending at (or past) the deadline could not retry: the budget runs out first
    if (totalTimeoutMs !== undefined && scheduler.now() + delayMs - this.start >= totalTimeoutMs) {
      // the wait alone would overrun the budget: fail now, so a fallback starts sooner
      return this.fail(new TotalTimeoutError(totalTimeoutMs, scheduler.now() - this.start, { cause: error }));
    }
    this.retries = next;
    const info: RetryInfo = { attempt: next, maxRetries, error, classification, delayMs, emitted };
    hub?.report({
      type: 'retry',
      target: config.target,
      attempt: next,
      max: maxRetries,
      delayMs,
      category: classification.category,
      error: errorText(error, 200),
    });
    const retrying = config.onRetry ? guard(config.onRetry, info) : undefined;
    if (retrying instanceof Thrown) return this.fail(retrying.error);
    if (emitted && config.onRestart) {
      const marker = guard(config.onRestart, info);
      if (marker instanceof Thrown) return this.fail(marker.error);
      subscriber.next(marker);
    }
    const wait = waitFor(delayMs, scheduler).subscribe(() => {
      this.wait = undefined;
      this.source.subscribe(new AttemptSubscriber(subscriber, this.source, config, this, this.permit));
    });
    this.wait = wait;
    subscriber.add(wait);
    // unsubscribed while waiting: the call ends here (a wait that fires has cleared `this.wait`)
    if (this.permit) wait.add(() => this.wait === wait && settleUnsubscribed(this.permit!, this.emitted));
  }
}

/**
 * One subscription to the source. Linked to the downstream subscriber, so unsubscribing it
 * cancels the attempt; errors go to the {@link RetryRun} (made at the first one) instead of
 * downstream. Under a permit, completion settles it as a success (before downstream hears), and
 * unsubscribing settles it unless the run has taken the call over after an error.
 *
 * @internal exported for `callPolicy`'s first attempt
 */
export class AttemptSubscriber<T> extends Subscriber<T> {
  private emitted = false;
  /** The permit is no longer this attempt's to settle: it completed, or the run took the call over. */
  private handedOver = false;

  constructor(
    destination: Subscriber<T>,
    private readonly source: Observable<T>,
    private readonly config: RetryConfig<T>,
    private run: RetryRun<T> | undefined,
    private readonly permit: CircuitPermit | undefined,
  ) {
    super(destination);
    if (run) run.attempt = this;
  }

  protected override _next(value: T): void {
    const run = this.run;
    if (run !== undefined) {
      if (this.config.hub && !this.emitted) run.reportSuccess();
      if (this.config.resetOnSuccess && run.retries > 0) {
        run.retries = 0;
        run.previousDelay = this.config.policy.initialBackoffMs;
        run.errors = undefined;
      }
    }
    this.emitted = true;
    this.destination.next(value);
  }

  protected override _error(error: unknown): void {
    const destination = this.destination as Subscriber<T>;
    this.handedOver = true;
    try {
      (this.run ??= new RetryRun(this.source, destination, this.config, this.permit)).onError(error, this.emitted);
    } finally {
      this.unsubscribe();
    }
  }

  protected override _complete(): void {
    if (this.config.hub) this.run?.reportSuccess();
    this.handedOver = true;
    this.permit?.success();
    // a breaker listener may have ended this very call on the state change: nobody to tell
    if (!this.closed) super._complete();
  }

  override unsubscribe(): void {
    if (this.closed) return;
    super.unsubscribe();
    if (this.permit !== undefined && !this.handedOver) settleUnsubscribed(this.permit, this.emitted || this.run?.emitted === true);
  }
}
