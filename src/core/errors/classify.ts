/**
 * Error classification: the one place that decides whether an error is worth a retry, a
 * fallback, or neither. Every operator asks this module; none has rules of its own. What an error
 * says of itself (status, headers, `retry-after`, the API error type of its body, a failure to
 * parse a response) is read in readError.ts; the rules here decide what it means.
 *
 * @module
 */
import { asyncScheduler } from 'rxjs';
import {
  AllFallbacksFailedError,
  BudgetExceededError,
  CircuitOpenError,
  RateLimitExceededError,
  RetriesExhaustedError,
  ToolError,
  TotalTimeoutError,
} from './errors.js';
import { HTTP_CATEGORIES, type ErrorCategory } from './httpCategories.js';
import { check, validateOptions } from './options.js';
import {
  apiErrorType,
  get,
  headersOf,
  impliedStatus,
  isInstance,
  isResponseParseError,
  message,
  parseRetryAfter,
  readHeader,
  readStatus,
  str,
} from './readError.js';

export type { ErrorCategory } from './httpCategories.js';

/** What to do about an error. */
export type RecoveryStrategy =
  /** Retry after an exponentially growing wait. */
  | 'exponential_backoff'
  /** Retry, and give the next attempt more time. */
  | 'retry_with_longer_timeout'
  /** Don't retry; another provider or tool may still help. */
  | 'fallback'
  /** Don't retry and don't fall back: surface the error. */
  | 'fail_fast'
  /** The consumer cancelled; do nothing. */
  | 'abort';

/** The verdict on one error. */
export interface ErrorClassification {
  /** Worth another attempt at the same target. */
  readonly retryable: boolean;
  /** Worth trying an alternative (another model, tool or value). */
  readonly fallback: boolean;
  readonly category: ErrorCategory;
  readonly strategy: RecoveryStrategy;
  /** How long the server asked us to wait (`retry-after-ms` / `retry-after`), in ms. */
  readonly retryAfterMs?: number;
  /**
   * Why no retry may run the call again, whatever rule asks for one (`retryable` is then false,
   * and `retryWithBackoff` withholds the retry under `retryOn: 'all'` too): `'not_idempotent'` — a
   * tool that is not idempotent ran and failed, so a side effect may have happened. Set on every
   * such failure, whatever the error: a plain `Error` or a 400 as much as a 503.
   * `retryWithBackoff` reports a `retry-withheld` event when its rule would have retried the error
   * but for this (see {@link ErrorClassification.retryableIfIdempotent}).
   */
  readonly withheld?: 'not_idempotent';
  /**
   * With {@link ErrorClassification.withheld}: whether the error itself is worth a retry — what
   * `retryable` would be, were the tool idempotent (a 503: true; a plain `Error`, a 400: false).
   */
  readonly retryableIfIdempotent?: boolean;
}

/** What a classifier may know beyond the error itself. */
export interface ClassifyContext {
  /**
   * Current time in ms, used to turn an HTTP-date `retry-after` into a delay. Operators pass
   * `scheduler.now()`; defaults to `asyncScheduler.now()`.
   */
  readonly now?: number;
}

/**
 * A user rule: return a classification to decide, or `undefined` to let the next rule (and
 * finally the defaults) decide. A rule that throws is skipped.
 */
export type ClassificationRule = (error: unknown, context: ClassifyContext) => ErrorClassification | undefined;

/** A function from any thrown value to its classification. Never throws. */
export type ErrorClassifier = (error: unknown, context?: ClassifyContext) => ErrorClassification;

/** Options of {@link createClassifier}. */
export interface ClassifierOptions {
  /** Rules tried in order, before the built-in ones. */
  readonly rules?: readonly ClassificationRule[];
  /**
   * Extra message patterns that make an error retryable (category `transient`). Strings match
   * case-insensitively as substrings.
   */
  readonly retryablePatterns?: readonly (string | RegExp)[];
}

const MAX_CAUSE_DEPTH = 8;

const classifierProps = {
  rules: check('an array of functions', (u): u is readonly ClassificationRule[] => Array.isArray(u) && u.every((r) => typeof r === 'function')),
  retryablePatterns: check(
    'an array of strings and RegExps',
    (u): u is readonly (string | RegExp)[] => Array.isArray(u) && u.every((p) => typeof p === 'string' || p instanceof RegExp),
  ),
};

const RETRYABLE_STATUS = new Set([408, 409, 429]);

const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'EAI_AGAIN',
  'ENOTFOUND',
  'ENETUNREACH',
  'ENETDOWN',
  'EHOSTUNREACH',
  'EHOSTDOWN',
]);

/** Message fragments of fetch's network `TypeError` in Node (undici) and browsers. */
const FETCH_FAILURE = /^(fetch failed|failed to fetch|networkerror when attempting to fetch resource|load failed|network request failed|terminated)/i;

/** Default message patterns and the category each implies. */
const DEFAULT_PATTERNS: readonly (readonly [RegExp, ErrorCategory])[] = [
  [/rate[ _-]?limit|too many requests/i, 'rate_limit'],
  [/overloaded|temporarily unavailable|service unavailable|at capacity|server is busy/i, 'service_unavailable'],
  [/timed? ?out|timeout|deadline exceeded/i, 'timeout'],
  [/connection (reset|refused|closed|error)|socket hang up|network error|econnreset/i, 'connection'],
  [/bad gateway/i, 'bad_gateway'],
  [/gateway timeout/i, 'gateway_timeout'],
  [/internal server error|server error/i, 'server_error'],
  [/try again|retry later|please retry/i, 'transient'],
];

const verdict = (category: ErrorCategory, retryable: boolean, fallback: boolean, strategy: RecoveryStrategy, retryAfterMs?: number): ErrorClassification =>
  retryAfterMs === undefined ? { retryable, fallback, category, strategy } : { retryable, fallback, category, strategy, retryAfterMs };

const UNKNOWN = verdict('unknown', false, true, 'fallback');
/** A response that could not be read: as `MalformedStreamError` (502). */
const MALFORMED = verdict('bad_gateway', true, true, 'exponential_backoff');

/** `name` of an error, or of its class for realms where `name` was not set. */
function errorName(error: unknown): string | undefined {
  return str(get(error, 'name'));
}

/** The name of an error's class: the SDKs' errors (`openai`) keep `name` at `'Error'`. */
function className(error: unknown): string | undefined {
  return str(get(get(error, 'constructor'), 'name'));
}

/**
 * The longest server-requested wait (`retry-after`) rxheal takes on a server's word, in ms: what
 * `retryWithBackoff` honours by default (`maxRetryAfterMs`; beyond, it gives up), and the longest a
 * 429's `retry-after` holds other processes back ({@link rateLimitFactMs}: a fleet's fact, a shared
 * rate limit's block). A longer one — an HTTP date read on a clock running behind, a daily quota —
 * holds them this long; the next call's answer says again.
 *
 * @example
 * ```ts
 * retryWithBackoff({ maxRetryAfterMs: MAX_RETRY_AFTER_MS }); // the default
 * ```
 */
export const MAX_RETRY_AFTER_MS = 60_000;

/**
 * A provider's fact in an error, to share with other processes: how long a 429 (category
 * `rate_limit`) with a `retry-after` above 0 says to hold calls, at most {@link MAX_RETRY_AFTER_MS};
 * undefined for any other error. `now` turns an HTTP-date `retry-after` into a delay.
 *
 * @example
 * ```ts
 * rateLimitFactMs(new HttpError(429, { 'retry-after': '5' }), 0); // 5000
 * rateLimitFactMs(new HttpError(429, { 'retry-after': 'Fri, 02 Jan 1970 00:00:00 GMT' }), 0); // 60000, not a day
 * rateLimitFactMs(new HttpError(503, { 'retry-after': '5' }), 0); // undefined
 * ```
 */
export function rateLimitFactMs(error: unknown, now: number): number | undefined {
  return rateLimitHoldMs(classifyError(error, { now }));
}

/**
 * {@link rateLimitFactMs}'s rule for a classification already made (by a classifier of one's
 * own): a `rate_limit` with a `retryAfterMs` above 0 holds that long, at most
 * {@link MAX_RETRY_AFTER_MS}; undefined otherwise.
 *
 * @example
 * ```ts
 * rateLimitHoldMs({ retryable: true, fallback: true, category: 'rate_limit', strategy: 'exponential_backoff', retryAfterMs: 2000 }); // 2000
 * ```
 */
export function rateLimitHoldMs(c: ErrorClassification): number | undefined {
  if (c.category !== 'rate_limit' || c.retryAfterMs === undefined || !(c.retryAfterMs > 0)) return undefined;
  return Math.min(c.retryAfterMs, MAX_RETRY_AFTER_MS);
}

/** Types that mean "your quota is spent": no retry helps, another provider may. */
const QUOTA_TYPES = new Set(['insufficient_quota', 'billing_error']);

function classifyHttp(error: unknown, status: number, now: number, type: string | undefined = apiErrorType(error)): ErrorClassification {
  const category = HTTP_CATEGORIES[status] ?? (status >= 500 ? 'server_error' : 'client_error');
  const headers = headersOf(error);
  let retryable = status >= 500 || RETRYABLE_STATUS.has(status);
  // the AI SDK's APICallError says itself whether a retry may help
  const flag = get(error, 'isRetryable');
  if (typeof flag === 'boolean') retryable = flag;
  if (type !== undefined && QUOTA_TYPES.has(type)) retryable = false;
  const override = readHeader(headers, 'x-should-retry')?.trim().toLowerCase();
  if (override === 'true') retryable = true;
  else if (override === 'false') retryable = false;
  return verdict(category, retryable, true, retryable ? 'exponential_backoff' : 'fail_fast', parseRetryAfter(headers, now));
}

function codeOf(error: unknown): string | undefined {
  const code = get(error, 'code');
  return typeof code === 'string' ? code : undefined;
}

function isNetworkCode(code: string | undefined): boolean {
  return code !== undefined && (NETWORK_CODES.has(code) || code.startsWith('UND_ERR_'));
}

function isFetchNetworkError(error: unknown, name: string | undefined): boolean {
  return name === 'TypeError' && FETCH_FAILURE.test(message(error));
}

const PROGRAMMING = new Set(['TypeError', 'RangeError', 'ReferenceError', 'SyntaxError']);

/** The AI SDK's errors for a response it could not read: what `fromAiSdk` turns into a `MalformedStreamError`, and more. */
const AI_SDK_MALFORMED: ReadonlySet<string> = new Set(['AI_JSONParseError', 'AI_InvalidResponseDataError', 'AI_TypeValidationError']);

function isProgramming(error: unknown, name: string | undefined): boolean {
  if (name !== undefined && PROGRAMMING.has(name)) return true;
  return isInstance(error, TypeError) || isInstance(error, RangeError) || isInstance(error, ReferenceError) || isInstance(error, SyntaxError);
}

/** The give-up errors of our own operators: never retried again, judged by their cause. */
function isGiveUp(error: unknown, name: string | undefined): boolean {
  return (
    isInstance(error, RetriesExhaustedError) ||
    isInstance(error, AllFallbacksFailedError) ||
    isInstance(error, TotalTimeoutError) ||
    name === 'RetriesExhaustedError' ||
    name === 'AllFallbacksFailedError' ||
    name === 'TotalTimeoutError'
  );
}

/**
 * Builds a classifier with your rules in front of the defaults.
 *
 * @example
 * ```ts
 * const classify = createClassifier({
 *   rules: [(e) => (e instanceof QuotaError ? { retryable: false, fallback: true, category: 'rate_limit', strategy: 'fallback' } : undefined)],
 *   retryablePatterns: ['upstream hiccup', /flaky/i],
 * });
 * classify(new Error('Upstream hiccup, sorry')).retryable; // true
 * ```
 */
export function createClassifier(options: ClassifierOptions = {}): ErrorClassifier {
  validateOptions('createClassifier', classifierProps, options);
  const rules = options.rules ?? [];
  const extra = (options.retryablePatterns ?? []).map((p) => (typeof p === 'string' ? new RegExp(p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'i') : p));

  const byMessage = (text: string): ErrorCategory | undefined => {
    if (text === '') return undefined;
    for (const [pattern, category] of DEFAULT_PATTERNS) if (pattern.test(text)) return category;
    for (const pattern of extra) {
      pattern.lastIndex = 0;
      if (pattern.test(text)) return 'transient';
    }
    return undefined;
  };

  /** The built-in rules on the error itself, or `undefined` when none matches. */
  const own = (error: unknown, now: number): ErrorClassification | undefined => {
    const name = errorName(error);
    const cls = className(error);
    // APIUserAbortError: the openai and @anthropic-ai/sdk clients, aborted by their caller
    if (name === 'AbortError' || name === 'APIUserAbortError' || cls === 'APIUserAbortError') return verdict('cancelled', false, false, 'abort');
    const code = codeOf(error);
    // a response that could not be parsed: a provider fault (as MalformedStreamError), not a bug
    // (the AI SDK's AI_InvalidResponseDataError: e.g. "Response stream ended without a finish
    // reason"; AI_TypeValidationError: a chunk its provider's schema rejects)
    if ((name !== undefined && AI_SDK_MALFORMED.has(name)) || isResponseParseError(error, name)) return MALFORMED;
    if (isProgramming(error, name)) return verdict('programming', false, false, 'fail_fast');
    if (isInstance(error, CircuitOpenError) || name === 'CircuitOpenError') {
      return verdict('circuit_open', false, true, 'fallback');
    }
    if (isInstance(error, RateLimitExceededError) || name === 'RateLimitExceededError') {
      const wait = get(error, 'retryAfterMs');
      return verdict('throttled', false, true, 'fallback', typeof wait === 'number' && wait >= 0 ? Math.ceil(wait) : undefined);
    }
    // by name alone: the class stays out of bundles that never make a bulkhead (its `name` is fixed)
    if (name === 'BulkheadRejectedError') return verdict('bulkhead_full', false, true, 'fallback');
    if (isInstance(error, BudgetExceededError) || name === 'BudgetExceededError') {
      return verdict('budget_exceeded', false, false, 'fail_fast');
    }
    const status = readStatus(error);
    if (status !== undefined) return classifyHttp(error, status, now);
    // no status (an error event mid-stream): the body's code or API error type says what it would have been
    const implied = impliedStatus(error);
    if (implied !== undefined) return classifyHttp(error, implied, now);
    if (
      name === 'TimeoutError' ||
      name === 'APIConnectionTimeoutError' ||
      cls === 'APIConnectionTimeoutError' ||
      code === 'ETIMEDOUT' ||
      code === 'ESOCKETTIMEDOUT'
    ) {
      return verdict('timeout', true, true, 'retry_with_longer_timeout');
    }
    if (isNetworkCode(code)) return verdict('connection', true, true, 'exponential_backoff');
    const category = byMessage(message(error));
    if (category === undefined) return undefined;
    return verdict(category, true, true, category === 'timeout' ? 'retry_with_longer_timeout' : 'exponential_backoff');
  };

  const classify = (error: unknown, now: number, depth: number, seen: Set<unknown>): ErrorClassification => {
    if (isGiveUp(error, errorName(error))) {
      const cause = get(error, 'cause');
      const inner = nested(cause, now, depth, seen);
      // A give-up is final for retrying; a fallback may still help unless the cause rules it out.
      return verdict(inner.category, false, inner.fallback, inner.fallback ? 'fallback' : 'fail_fast');
    }
    // the tool said its effect did not happen: judged by why (a 503 behind it is worth a retry)
    if (errorName(error) === 'NotAppliedError') return nested(get(error, 'cause'), now, depth, seen);
    if (isInstance(error, ToolError) || errorName(error) === 'ToolError') {
      if (get(error, 'phase') === 'validate') return verdict('validation_error', false, false, 'fail_fast');
      const inner = nested(get(error, 'cause'), now, depth, seen);
      if (get(error, 'idempotent') === true) return inner;
      // the tool ran: a side effect may have happened, so never run it again automatically,
      // whatever the error and whatever rule a retry follows
      const ran = verdict(inner.category, false, inner.fallback, inner.fallback ? 'fallback' : 'fail_fast');
      return { ...ran, withheld: 'not_idempotent', retryableIfIdempotent: inner.retryable };
    }
    const name = errorName(error);
    if (name === 'AI_RetryError') {
      // the AI SDK gave up retrying: judged by its last attempt's error (it has no `cause`)
      const errors = get(error, 'errors');
      return nested(get(error, 'lastError') ?? (Array.isArray(errors) ? (errors as unknown[])[errors.length - 1] : undefined), now, depth, seen);
    }
    const cls = className(error);
    if (isFetchNetworkError(error, name) || ((name === 'APIConnectionError' || cls === 'APIConnectionError') && readStatus(error) === undefined)) {
      // fetch's network TypeError, an SDK's APIConnectionError: the cause (ECONNRESET, UND_ERR_*,
      // a timeout) says more, if any.
      const inner = nested(get(error, 'cause'), now, depth, seen);
      return inner.category === 'unknown' ? verdict('connection', true, true, 'exponential_backoff') : inner;
    }
    const mine = own(error, now);
    if (mine !== undefined) return mine;
    const cause = get(error, 'cause');
    const inner = cause !== undefined && cause !== null ? nested(cause, now, depth, seen) : UNKNOWN;
    // the AI SDK's APICallError without a status (a network failure) says whether to retry
    if (inner.category === 'unknown' && get(error, 'isRetryable') === true) return verdict('transient', true, true, 'exponential_backoff');
    return inner;
  };

  const nested = (cause: unknown, now: number, depth: number, seen: Set<unknown>): ErrorClassification => {
    if (cause === undefined || cause === null || depth >= MAX_CAUSE_DEPTH || seen.has(cause)) return UNKNOWN;
    seen.add(cause);
    return classify(cause, now, depth + 1, seen);
  };

  return (error, context = {}) => {
    try {
      for (const rule of rules) {
        try {
          const result = rule(error, context);
          // anything but a classification object (undefined, null, a typo) means "not mine"
          if (typeof result === 'object' && result !== null) return result;
        } catch {
          // a broken user rule must not break error handling; fall through to the next one
        }
      }
      const now = context.now ?? asyncScheduler.now();
      return classify(error, now, 0, new Set([error]));
    } catch {
      return UNKNOWN;
    }
  };
}

const SERVICE_FAILURES: ReadonlySet<ErrorCategory> = new Set<ErrorCategory>([
  'request_timeout',
  'rate_limit',
  'server_error',
  'bad_gateway',
  'service_unavailable',
  'gateway_timeout',
  'timeout',
  'connection',
  'transient',
  'unknown',
]);

/**
 * Whether a classified error says the *service* is failing (what a circuit breaker counts), as
 * opposed to the caller being wrong (bad request, validation, auth, programming error), the call
 * being cancelled, or a breaker already open. Wrappers such as `RetriesExhaustedError` count by
 * their cause's category.
 *
 * @example
 * ```ts
 * isServiceFailure(classifyError(new HttpError(503))); // true
 * isServiceFailure(classifyError(new HttpError(400))); // false
 * ```
 */
export function isServiceFailure(classification: ErrorClassification): boolean {
  return classification.retryable || SERVICE_FAILURES.has(classification.category);
}

/**
 * The default classifier. Never throws, whatever it is given.
 *
 * Rules, first match wins: cancellation (`AbortError`, the SDKs' `APIUserAbortError`) →
 * `cancelled`; a response that could not be parsed (the AI SDK's `AI_JSONParseError`,
 * `AI_TypeValidationError` and `AI_InvalidResponseDataError` — its providers' "stream ended
 * without a finish reason" —, or a `SyntaxError` from `JSON.parse` called by a dependency — an SDK reading a provider's stream,
 * `Response.json()`; `openai` 7's own `Error reading response: …` in its place) → `bad_gateway`, like `MalformedStreamError`; programming errors
 * (`TypeError` other than fetch's network failure, `RangeError`, `ReferenceError`,
 * `SyntaxError` from the app's own code, `JSON.parse` of its own literals included) → no retry,
 * no fallback; `CircuitOpenError`, `RateLimitExceededError` and `BulkheadRejectedError` → fallback only; HTTP status (from `status`, `statusCode` or
 * `response.status`; the AI SDK's `isRetryable`, then `x-should-retry`, override;
 * `retry-after(-ms)` read from `headers`, `responseHeaders` or `response.headers`); without a
 * status, what the error's body implies ({@link impliedStatus}: a numeric `code` of 400–599, as
 * OpenRouter sends mid-stream, else the API error type — `type`, `error.type`, `error.error.type`,
 * `code`: `server_error` → 500, `rate_limit_exceeded` → 429, `overloaded_error` → 529…). The
 * type is read in `HttpError.body` and `APICallError.data` too, so `insufficient_quota` /
 * `billing_error` are never retried whoever threw them. Every HTTP error allows a fallback, 4xx
 * included: a 400 `context_length_exceeded`, a 413 or a 401 is not worth a retry of the same
 * model, but another model (a bigger context window, other credentials) may answer; to stop a
 * chain there, add a rule. Then timeouts (the SDKs'
 * `APIConnectionTimeoutError` included); network error codes and the SDKs'
 * `APIConnectionError`; message patterns; the `cause` of wrappers; the AI SDK's `RetryError` by
 * its `lastError`; otherwise `transient` when an AI SDK error says `isRetryable: true`, else
 * `unknown` (no retry, fallback allowed). A `ToolError` is judged by its
 * cause, except that bad arguments are a `validation_error` and a non-idempotent tool that ran is
 * never retryable (`withheld: 'not_idempotent'`, whatever the error). Our give-up errors
 * (`RetriesExhaustedError`, `TotalTimeoutError`, `AllFallbacksFailedError`) are never
 * retryable again.
 *
 * @example
 * ```ts
 * classifyError(new HttpError(429, { 'retry-after': '2' }));
 * // { retryable: true, fallback: true, category: 'rate_limit', strategy: 'exponential_backoff', retryAfterMs: 2000 }
 * classifyError(new TypeError('x is not a function'));
 * // { retryable: false, fallback: false, category: 'programming', strategy: 'fail_fast' }
 * ```
 */
export const classifyError: ErrorClassifier = createClassifier();
