import { asyncScheduler, Observable, timer, type MonoTypeOperatorFunction, type SchedulerLike, type Subscription } from 'rxjs';
import { backoffDelay, type Jitter } from '../core/backoff.js';
import { classifyError, type ErrorClassification, type ErrorClassifier } from '../core/classify.js';
import { InvalidOptionError, RetriesExhaustedError, TotalTimeoutError } from '../core/errors.js';
import type { HealHub } from '../core/hub.js';
import { errorText } from '../core/sanitize.js';
import {
  AtLeastOne,
  Bool,
  Func,
  Hub,
  NonEmptyString,
  NonNegativeIntegerOrInfinity,
  NonNegativeNumber,
  NonNegativeOrInfinity,
  PositiveNumber,
  Scheduler,
  oneOf,
  validateOptions,
} from '../core/options.js';

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

/** Options shared by every `afterEmit` mode of {@link retryWithBackoff}. */
export interface RetryWithBackoffBaseOptions {
  /** Retries after the first subscription (so at most `maxRetries + 1` attempts). Defaults to 3. */
  readonly maxRetries?: number;
  /** Delay before the first retry, in ms. Defaults to 500. */
  readonly initialBackoffMs?: number;
  /** Each retry's delay is the previous one times this. Defaults to 2. */
  readonly backoffMultiplier?: number;
  /** Upper bound of any computed delay, in ms. Defaults to 30 000. */
  readonly maxBackoffMs?: number;
  /** How delays are randomised; see {@link Jitter}. Defaults to `'equal'` (at least half the delay). */
  readonly jitter?: Jitter;
  /** Source of numbers in `[0, 1)` for jitter. Defaults to `Math.random`; inject one in tests. */
  readonly random?: () => number;
  /**
   * Decides whether an error is worth a retry; `attempt` is the retry that would follow
   * (1-based). Errors it rejects pass through unchanged, at once. Defaults to the classifier's
   * `retryable`.
   */
  readonly shouldRetry?: (error: unknown, attempt: number) => boolean;
  /** The classifier that reads `retryable` and `retryAfterMs`. Defaults to {@link classifyError}. */
  readonly classifier?: ErrorClassifier;
  /**
   * The longest server-requested wait (`retry-after`) to honour, in ms. A longer request makes
   * the operator give up at once with {@link RetriesExhaustedError} (reason
   * `'retry_after_too_long'`), so a fallback can take over. Defaults to 60 000.
   */
  readonly maxRetryAfterMs?: number;
  /**
   * Budget for the whole operation, attempts and waits included, in ms. When it runs out, the
   * attempt in flight is cancelled and the operator errors with {@link TotalTimeoutError}; a
   * wait that would end past it fails at once instead. No budget by default.
   */
  readonly totalTimeoutMs?: number;
  /** Reset the retry count (and backoff) whenever the source emits a value. Defaults to false. */
  readonly resetOnSuccess?: boolean;
  /** Called before each retry's wait starts. */
  readonly onRetry?: (info: RetryInfo) => void;
  /** Where waits are scheduled and time is read. Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
  /**
   * Reports a `retry` event for each retry and one `retry-succeeded` when an attempt after a retry
   * succeeds (its first value, or completion) — e.g. the run's hub in `runAgent`'s pipelines.
   */
  readonly hub?: HealHub;
  /** What is being retried, in events (e.g. `tool:get_weather`, `model:gpt-4o`). Defaults to `'source'`. */
  readonly target?: string;
}

/**
 * Options of {@link retryWithBackoff}. `afterEmit` says what happens when an attempt fails
 * after it had emitted values:
 * - `'error'` (default): no retry; the error passes on unchanged. Token streams never get two
 *   attempts' text concatenated.
 * - `'restart'`: emit `onRestart(info)` first (e.g. a reset event telling the consumer to
 *   discard the partial output), then retry.
 * - `'resubscribe'`: plain RxJS behaviour, for streams of independent events (polling).
 */
export type RetryWithBackoffOptions<T> = RetryWithBackoffBaseOptions &
  (
    | { readonly afterEmit?: 'error' | 'resubscribe'; readonly onRestart?: undefined }
    | {
        readonly afterEmit: 'restart';
        /** The value to emit before retrying an attempt that had emitted. */
        readonly onRestart: (info: RetryInfo) => T;
      }
  );

const props = {
  maxRetries: NonNegativeIntegerOrInfinity,
  initialBackoffMs: NonNegativeNumber,
  backoffMultiplier: AtLeastOne,
  maxBackoffMs: NonNegativeNumber,
  jitter: oneOf('none', 'full', 'equal', 'decorrelated'),
  random: Func,
  shouldRetry: Func,
  classifier: Func,
  maxRetryAfterMs: NonNegativeOrInfinity,
  totalTimeoutMs: PositiveNumber,
  resetOnSuccess: Bool,
  afterEmit: oneOf('error', 'restart', 'resubscribe'),
  onRestart: Func,
  onRetry: Func,
  scheduler: Scheduler,
  hub: Hub,
  target: NonEmptyString,
};

/**
 * Retries a failing source with exponential backoff, the way an LLM or tool call should be
 * retried: only errors worth it (per the classifier), honouring the server's `retry-after`, never
 * concatenating two attempts of a stream, and never giving up silently.
 *
 * Delay before retry n (0-based), jitter `'none'`: `min(initialBackoffMs · backoffMultiplierⁿ,
 * maxBackoffMs)`. An error's `retryAfterMs` replaces it when longer.
 *
 * ```
 * source:   --#                 (each subscription fails after 20 ms: a 503)
 * result:   --- 500 ms --- 1000 ms --- 2000 ms ---#   RetriesExhaustedError { attempts: 4 }
 * ```
 *
 * Gives up with: the error itself, unchanged, when `shouldRetry` rejects it (or, with
 * `afterEmit: 'error'`, when the attempt had emitted); {@link RetriesExhaustedError} after
 * `maxRetries` or when `retry-after` exceeds `maxRetryAfterMs`; {@link TotalTimeoutError} when
 * `totalTimeoutMs` runs out. Unsubscribing cancels the attempt in flight or the wait.
 *
 * @example
 * ```ts
 * const answer$ = defer(() => callTool(args)).pipe(
 *   retryWithBackoff({ maxRetries: 3, initialBackoffMs: 500, jitter: 'equal' }),
 * );
 * ```
 * @example Token streams: tell the UI to discard partial text, then retry
 * ```ts
 * tokens$.pipe(retryWithBackoff({ afterEmit: 'restart', onRestart: (i) => ({ type: 'reset', attempt: i.attempt }) }));
 * ```
 * @throws {InvalidOptionError} at once, for an invalid option.
 */
export function retryWithBackoff<T>(options?: RetryWithBackoffOptions<T>): MonoTypeOperatorFunction<T> {
  const o = validateOptions('retryWithBackoff', props, options);
  const afterEmit = o.afterEmit ?? 'error';
  const onRestart = o.onRestart as ((info: RetryInfo) => T) | undefined;
  if (afterEmit === 'restart' && !onRestart) {
    throw new InvalidOptionError('retryWithBackoff', 'onRestart', onRestart, "a function when afterEmit is 'restart'");
  }
  if (afterEmit !== 'restart' && onRestart) {
    throw new InvalidOptionError('retryWithBackoff', 'afterEmit', o.afterEmit, "'restart' when onRestart is given");
  }
  const maxRetries = o.maxRetries ?? 3;
  const policy = {
    initialBackoffMs: o.initialBackoffMs ?? 500,
    backoffMultiplier: o.backoffMultiplier ?? 2,
    maxBackoffMs: o.maxBackoffMs ?? 30_000,
    jitter: o.jitter ?? 'equal',
    random: (o.random as (() => number) | undefined) ?? Math.random,
  };
  const shouldRetry = o.shouldRetry as ((error: unknown, attempt: number) => boolean) | undefined;
  const classifier = (o.classifier as ErrorClassifier | undefined) ?? classifyError;
  const maxRetryAfterMs = o.maxRetryAfterMs ?? 60_000;
  const totalTimeoutMs = o.totalTimeoutMs;
  const resetOnSuccess = o.resetOnSuccess ?? false;
  const onRetry = o.onRetry as ((info: RetryInfo) => void) | undefined;
  const scheduler = o.scheduler ?? asyncScheduler;
  const hub = o.hub as HealHub | undefined;
  const target = o.target ?? 'source';

  return (source) =>
    new Observable<T>((subscriber) => {
      let retries = 0;
      let previousDelay = policy.initialBackoffMs;
      let errors: unknown[] | undefined;
      let emitted = false;
      let attempt: Subscription | undefined;
      let wait: Subscription | undefined;
      let deadline: Subscription | undefined;
      const start = totalTimeoutMs === undefined ? 0 : scheduler.now();

      const giveUpOnTime = (): void => {
        attempt?.unsubscribe();
        wait?.unsubscribe();
        const last = errors?.[errors.length - 1];
        subscriber.error(new TotalTimeoutError(totalTimeoutMs ?? 0, scheduler.now() - start, errors ? { cause: last } : undefined));
      };

      const onError = (error: unknown): void => {
        (errors ??= []).push(error);
        const next = retries + 1;
        if (emitted && afterEmit === 'error') return subscriber.error(error);
        const classification = classifier(error, { now: scheduler.now() });
        let retry: boolean;
        try {
          retry = shouldRetry ? shouldRetry(error, next) : classification.retryable;
        } catch (predicateError) {
          return subscriber.error(predicateError);
        }
        if (!retry) return subscriber.error(error);
        if (retries >= maxRetries) return subscriber.error(new RetriesExhaustedError(retries + 1, errors, 'max_retries'));
        const retryAfter = classification.retryAfterMs;
        if (retryAfter !== undefined && retryAfter > maxRetryAfterMs) {
          return subscriber.error(new RetriesExhaustedError(retries + 1, errors, 'retry_after_too_long'));
        }
        let delayMs = backoffDelay(retries, previousDelay, policy);
        previousDelay = delayMs;
        if (retryAfter !== undefined && retryAfter > delayMs) delayMs = retryAfter;
        if (totalTimeoutMs !== undefined && scheduler.now() + delayMs - start > totalTimeoutMs) {
          // the wait alone would overrun the budget: fail now, so a fallback starts sooner
          return subscriber.error(new TotalTimeoutError(totalTimeoutMs, scheduler.now() - start, { cause: error }));
        }
        retries = next;
        const info: RetryInfo = { attempt: next, maxRetries, error, classification, delayMs, emitted };
        hub?.report({ type: 'retry', target, attempt: next, max: maxRetries, delayMs, category: classification.category, error: errorText(error, 200) });
        try {
          onRetry?.(info);
          if (emitted && onRestart) subscriber.next(onRestart(info));
        } catch (callbackError) {
          return subscriber.error(callbackError);
        }
        wait = timer(delayMs, scheduler).subscribe(() => {
          wait = undefined;
          subscribeToSource();
        });
      };

      let succeeded = false;
      const reportSuccess = (): void => {
        if (succeeded || retries === 0) return;
        succeeded = true;
        hub?.report({ type: 'retry-succeeded', target, attempt: retries + 1 });
      };

      const subscribeToSource = (): void => {
        emitted = false;
        attempt = source.subscribe({
          next: (value) => {
            if (hub && !emitted) reportSuccess();
            emitted = true;
            if (resetOnSuccess && retries > 0) {
              retries = 0;
              previousDelay = policy.initialBackoffMs;
              errors = undefined;
            }
            subscriber.next(value);
          },
          error: onError,
          complete: () => {
            if (hub) reportSuccess();
            subscriber.complete();
          },
        });
      };

      if (totalTimeoutMs !== undefined) deadline = scheduler.schedule(giveUpOnTime, totalTimeoutMs);
      subscribeToSource();
      return () => {
        attempt?.unsubscribe();
        wait?.unsubscribe();
        deadline?.unsubscribe();
      };
    });
}
