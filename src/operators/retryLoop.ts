/**
 * The retry loop behind {@link retryWithBackoff}: one subscription's attempts
 * ({@link RetryAttempt}), the decision after each failure, the wait before the next attempt and
 * the total budget ({@link RetryRun}).
 *
 * @module
 */
import type { Observable, SchedulerLike, Subscriber, Subscription } from 'rxjs';
import { backoffDelay, type BackoffPolicy } from '../core/rx/backoff.js';
import type { ErrorClassification, ErrorClassifier } from '../core/errors/classify.js';
import { RetriesExhaustedError, TotalTimeoutError } from '../core/errors/errors.js';
import type { HealHub } from '../core/hub/hub.js';
import { errorText } from '../core/errors/sanitize.js';
import { guard, Thrown } from '../core/rx/guard.js';
import { after, wait as waitFor } from '../core/rx/wait.js';
import { Link, subscribeWithin } from '../core/rx/operate.js';

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
 * One subscription of `retryWithBackoff`: its first attempt (and its total budget, when there is
 * one). The retry bookkeeping is made at the first error (or now, for the total budget): a
 * subscription that never fails costs one observer.
 *
 * @internal
 */
export function startRetry<T>(source: Observable<T>, subscriber: Subscriber<T>, config: RetryConfig<T>): void {
  const run = config.totalTimeoutMs === undefined ? undefined : new RetryRun(source, subscriber, config);
  run?.startBudget();
  subscribeAttempt(source, subscriber, config, run);
}

/** Subscribes one attempt, linked to `subscriber` (unsubscribing downstream cancels it). */
function subscribeAttempt<T>(source: Observable<T>, subscriber: Subscriber<T>, config: RetryConfig<T>, run: RetryRun<T> | undefined): void {
  const attempt = subscribeWithin(subscriber, source, new RetryAttempt(subscriber, source, config, run));
  // (an attempt that failed at once may have started the run and its wait already)
  if (run !== undefined && !attempt.closed) run.attempt = attempt;
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

/** One subscription's retry state: counts, errors, the wait and the total budget. */
class RetryRun<T> {
  retries = 0;
  previousDelay: number;
  errors: unknown[] | undefined = undefined;
  succeeded = false;
  /** The attempt in flight (with a total budget, which cancels it). */
  attempt: Subscription | undefined = undefined;
  wait: Subscription | undefined = undefined;
  private readonly start: number;

  constructor(
    private readonly source: Observable<T>,
    private readonly subscriber: Subscriber<T>,
    private readonly config: RetryConfig<T>,
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
    this.attempt?.unsubscribe();
    this.wait?.unsubscribe();
    this.subscriber.error(error);
  }

  /** Gives up with `error`. */
  private fail(error: unknown): void {
    this.subscriber.error(error);
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
      subscribeAttempt(this.source, subscriber, config, this);
    });
    this.wait = wait;
    subscriber.add(wait);
  }
}

/**
 * One attempt's observer: values go downstream (after the run's bookkeeping, once there is a
 * run); an error goes to the {@link RetryRun} (made at the first one) instead of downstream.
 */
class RetryAttempt<T> extends Link<T> {
  private emitted = false;

  constructor(
    private readonly subscriber: Subscriber<T>,
    private readonly source: Observable<T>,
    private readonly config: RetryConfig<T>,
    private run: RetryRun<T> | undefined,
  ) {
    super();
  }

  protected onNext(value: T): void {
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
    this.subscriber.next(value);
  }

  protected onError(error: unknown): void {
    (this.run ??= new RetryRun(this.source, this.subscriber, this.config)).onError(error, this.emitted);
  }

  protected onComplete(): void {
    if (this.config.hub) this.run?.reportSuccess();
    this.subscriber.complete();
  }
}
