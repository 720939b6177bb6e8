/**
 * {@link retryWithBackoff}: its options, their checks, and the operator they make. The loop that
 * retries (attempts, waits, the total budget) is in retryLoop.ts.
 *
 * @module
 */
import { asyncScheduler, type MonoTypeOperatorFunction, type SchedulerLike } from 'rxjs';
import type { Jitter } from '../core/rx/backoff.js';
import { libraryRandom } from '../core/rx/random.js';
import { classifyError, MAX_RETRY_AFTER_MS, type ErrorClassifier } from '../core/errors/classify.js';
import { InvalidOptionError } from '../core/errors/errors.js';
import { defaultHub, type HealHub } from '../core/hub/hub.js';
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
} from '../core/errors/options.js';
import { operate } from '../core/rx/operate.js';
import { startRetry, type RetryConfig, type RetryInfo } from './retryLoop.js';

export type { RetryInfo } from './retryLoop.js';

/** Options shared by every `afterEmit` mode of {@link retryWithBackoff}. */
export interface RetryWithBackoffBaseOptions {
  /**
   * Retries after the first subscription (so at most `maxRetries + 1` attempts). Defaults to 3.
   * `Infinity` retries until an attempt succeeds or fails with an error not worth a retry; it
   * needs no `totalTimeoutMs` (add one only to bound the time as well).
   */
  readonly maxRetries?: number;
  /** Delay before the first retry, in ms. Defaults to 500. */
  readonly initialBackoffMs?: number;
  /** Each retry's delay is the previous one times this. Defaults to 2. */
  readonly backoffMultiplier?: number;
  /** Upper bound of any computed delay, in ms. Defaults to 30 000. */
  readonly maxBackoffMs?: number;
  /** How delays are randomised; see {@link Jitter}. Defaults to `'equal'` (at least half the delay). */
  readonly jitter?: Jitter;
  /**
   * Source of numbers in `[0, 1)` for jitter. Defaults to `Math.random` (seeded inside rxheal/chaos's
   * replays); inject one in tests. If
   * it throws, the operator errors with what it threw (no retry).
   */
  readonly random?: () => number;
  /**
   * Which errors are retried (when `shouldRetry` is not given):
   * - `'retryable'` (default): those the classifier calls `retryable` — HTTP 408, 409, 429 and
   *   5xx, timeouts, network errors, a stream cut short. A plain `Error` is `unknown`: not retried.
   * - `'all'`: every error, as RxJS's `retry` does — except cancellation (`AbortError`), a crossed
   *   budget (`BudgetExceededError`), and a non-idempotent tool that ran (withheld, with a
   *   `retry-withheld` event: a side effect may have happened).
   */
  readonly retryOn?: 'retryable' | 'all';
  /**
   * Decides whether an error is worth a retry; `attempt` is the retry that would follow
   * (1-based). Errors it rejects pass through unchanged, at once. Defaults to `retryOn`'s rule
   * (the classifier's `retryable`). Give one or the other, not both. It replaces the rules
   * entirely, the withheld retry of a non-idempotent tool included: what it accepts is retried. If
   * it throws, the operator errors with what it threw.
   */
  readonly shouldRetry?: (error: unknown, attempt: number) => boolean;
  /**
   * The classifier that reads `retryable` and `retryAfterMs`. Defaults to {@link classifyError}.
   * If it throws, the operator errors with what it threw.
   */
  readonly classifier?: ErrorClassifier;
  /**
   * The longest server-requested wait (`retry-after`) to honour, in ms. A longer request makes
   * the operator give up at once with {@link RetriesExhaustedError} (reason
   * `'retry_after_too_long'`), so a fallback can take over. Defaults to 60 000.
   */
  readonly maxRetryAfterMs?: number;
  /**
   * Budget for the whole operation, attempts and waits included, in ms. Gives up with
   * {@link TotalTimeoutError} — exactly at the budget when an attempt is in flight then (the
   * attempt is cancelled; `elapsedMs` equals `totalTimeoutMs`), or early, as soon as an attempt
   * fails, when the wait before the next one would end at or past the budget (`elapsedMs` is
   * then the time of that failure, so a fallback starts sooner). No budget by default.
   */
  readonly totalTimeoutMs?: number;
  /** Reset the retry count (and backoff) whenever the source emits a value. Defaults to false. */
  readonly resetOnSuccess?: boolean;
  /** Called before each retry's wait starts. If it throws, the operator errors with what it threw (no retry). */
  readonly onRetry?: (info: RetryInfo) => void;
  /** Where waits are scheduled and time is read. Defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
  /**
   * Reports a `retry` event for each retry and one `retry-succeeded` when an attempt after a retry
   * succeeds (its first value, or completion) — e.g. the run's hub in `runAgent`'s pipelines —
   * and a `retry-withheld` event when `retryOn`'s rule would retry the error but a tool that is not
   * idempotent ran (the retry is withheld: under `'retryable'` for an error worth a retry, such as a
   * 503; under `'all'` for any error but a cancellation or a crossed budget). Created inside `fallbackModel`'s `perModel` without
   * one, the run's hub.
   */
  readonly hub?: HealHub;
  /**
   * What is being retried, in events (e.g. `tool:get_weather`, `model:gpt-4o`). Defaults to
   * `'source'` (inside `fallbackModel`'s `perModel`, to `'model:<id>'`).
   */
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
        /** The value to emit before retrying an attempt that had emitted. If it throws, the operator errors with what it threw. */
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
  retryOn: oneOf('retryable', 'all'),
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
 * Gives up with: the error itself, unchanged, when it is not worth a retry (`retryOn`,
 * `shouldRetry`) or, with `afterEmit: 'error'`, when the attempt had emitted;
 * {@link RetriesExhaustedError} after `maxRetries` or when `retry-after` exceeds
 * `maxRetryAfterMs`; {@link TotalTimeoutError} when `totalTimeoutMs` runs out — exactly at the
 * budget if an attempt is in flight, or early, at a failure whose wait would end at or past it.
 * Unsubscribing cancels the attempt in flight or the wait.
 *
 * Tools: a tool defined without `idempotent: true` (the safe default of `defineTool`) is never
 * re-run after it ran and failed — a side effect may have happened — whatever it failed with (a
 * 503, or under `retryOn: 'all'` a plain `Error`, a 400); the retry is withheld, reported as a
 * `retry-withheld` event (`reason: 'not_idempotent'`), and the error passes on. Declare read-only tools `idempotent: true` to have them retried.
 *
 * Coming from RxJS `retry`: `retry(3)` retries every error at once, and resubscribes after
 * values. `retryWithBackoff({ retryOn: 'all', maxRetries: 3 })` retries every error too, with
 * backoff (500 ms, ×2, jittered); an attempt that had emitted is not retried (two attempts of a
 * token stream are never concatenated) unless `afterEmit: 'resubscribe'` (streams of independent
 * values, polling). An exact port of `retry(3)`: add `initialBackoffMs: 0, jitter: 'none',
 * afterEmit: 'resubscribe'` — the same values, times and subscriptions; only the give-up error
 * differs: {@link RetriesExhaustedError} (`cause`: the last error, `errors`: all of them) where
 * `retry` rethrows the last error. `retry({ count: 3, delay: 1000 })`: `{ retryOn: 'all', maxRetries: 3,
 * initialBackoffMs: 1000, backoffMultiplier: 1, jitter: 'none' }`. `retry()` (no count):
 * `maxRetries: Infinity`. `resetOnSuccess` is the same option. Without `retryOn: 'all'`, only
 * errors the classifier calls retryable are retried (a plain `Error` is not).
 *
 * @example
 * ```ts
 * const answer$ = defer(() => callTool(args)).pipe(
 *   retryWithBackoff({ maxRetries: 3, initialBackoffMs: 500, jitter: 'equal' }),
 * );
 * ```
 * @example Coming from RxJS retry(3): every error, with backoff
 * ```ts
 * const data$ = defer(() => fetchJson(url)).pipe(retryWithBackoff({ retryOn: 'all', maxRetries: 3 }));
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
  if (o.retryOn !== undefined && o.shouldRetry !== undefined) {
    throw new InvalidOptionError('retryWithBackoff', 'retryOn', o.retryOn, 'absent when shouldRetry is given (shouldRetry decides which errors are retried)');
  }
  if ((o.initialBackoffMs ?? 500) > (o.maxBackoffMs ?? 30_000)) {
    // name the option the caller set: maxBackoffMs when given, else initialBackoffMs (vs the default cap)
    throw o.maxBackoffMs === undefined
      ? new InvalidOptionError('retryWithBackoff', 'initialBackoffMs', o.initialBackoffMs, '<= maxBackoffMs (default 30000)')
      : new InvalidOptionError('retryWithBackoff', 'maxBackoffMs', o.maxBackoffMs, `>= initialBackoffMs (${o.initialBackoffMs ?? 500})`);
  }
  // created inside a callback with a default hub (fallbackModel's perModel): report there
  const ambient = o.hub === undefined || o.target === undefined ? defaultHub() : undefined;
  const config: RetryConfig<T> = {
    maxRetries: o.maxRetries ?? 3,
    policy: {
      initialBackoffMs: o.initialBackoffMs ?? 500,
      backoffMultiplier: o.backoffMultiplier ?? 2,
      maxBackoffMs: o.maxBackoffMs ?? 30_000,
      jitter: o.jitter ?? 'equal',
      random: (o.random as (() => number) | undefined) ?? libraryRandom,
    },
    shouldRetry: o.shouldRetry as ((error: unknown, attempt: number) => boolean) | undefined,
    retryAll: o.retryOn === 'all',
    classifier: (o.classifier as ErrorClassifier | undefined) ?? classifyError,
    maxRetryAfterMs: o.maxRetryAfterMs ?? MAX_RETRY_AFTER_MS,
    totalTimeoutMs: o.totalTimeoutMs,
    resetOnSuccess: o.resetOnSuccess ?? false,
    afterEmit,
    onRestart,
    onRetry: o.onRetry as ((info: RetryInfo) => void) | undefined,
    scheduler: o.scheduler ?? asyncScheduler,
    hub: (o.hub as HealHub | undefined) ?? ambient?.hub,
    target: o.target ?? ambient?.target ?? 'source',
  };

  return operate<T>((source, subscriber) => startRetry(source, subscriber, config));
}
