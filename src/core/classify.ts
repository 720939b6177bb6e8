/**
 * Error classification: the one place that decides whether an error is worth a retry, a
 * fallback, or neither. Every operator asks this module; none has rules of its own.
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
import { check, validateOptions } from './options.js';

/** What kind of failure an error is. */
export type ErrorCategory =
  | 'cancelled'
  | 'programming'
  | 'circuit_open'
  // our own rate limiter refused the call before sending it (RateLimitExceededError)
  | 'throttled'
  | 'budget_exceeded'
  | 'request_timeout'
  | 'conflict'
  | 'rate_limit'
  | 'server_error'
  | 'bad_gateway'
  | 'service_unavailable'
  | 'gateway_timeout'
  | 'bad_request'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'validation_error'
  | 'client_error'
  | 'timeout'
  | 'connection'
  | 'transient'
  | 'unknown';

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

const HTTP_CATEGORIES: Readonly<Record<number, ErrorCategory>> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  408: 'request_timeout',
  409: 'conflict',
  422: 'validation_error',
  429: 'rate_limit',
  500: 'server_error',
  502: 'bad_gateway',
  503: 'service_unavailable',
  504: 'gateway_timeout',
  // Anthropic's "overloaded" status
  529: 'service_unavailable',
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

const verdict = (
  category: ErrorCategory,
  retryable: boolean,
  fallback: boolean,
  strategy: RecoveryStrategy,
  retryAfterMs?: number,
): ErrorClassification =>
  retryAfterMs === undefined
    ? { retryable, fallback, category, strategy }
    : { retryable, fallback, category, strategy, retryAfterMs };

const UNKNOWN = verdict('unknown', false, true, 'fallback');

/** Reads a property without ever throwing (throwing getters, revoked proxies). */
function get(value: unknown, key: string): unknown {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return undefined;
  try {
    return (value as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function isInstance(value: unknown, ctor: abstract new (...args: never[]) => unknown): boolean {
  try {
    return value instanceof ctor;
  } catch {
    return false;
  }
}

/** `name` of an error, or of its class for realms where `name` was not set. */
function errorName(error: unknown): string | undefined {
  return str(get(error, 'name'));
}

function message(error: unknown): string {
  if (typeof error === 'string') return error;
  return str(get(error, 'message')) ?? '';
}

function readStatus(error: unknown): number | undefined {
  for (const candidate of [get(error, 'status'), get(error, 'statusCode'), get(get(error, 'response'), 'status')]) {
    const n = typeof candidate === 'string' && /^\d{3}$/.test(candidate) ? Number(candidate) : candidate;
    if (typeof n === 'number' && Number.isInteger(n) && n >= 400 && n <= 599) return n;
  }
  return undefined;
}

/**
 * Reads one header, case-insensitively, from a `Headers` object or a plain record. Never throws.
 *
 * @example
 * ```ts
 * readHeader({ 'Retry-After': '2' }, 'retry-after'); // '2'
 * readHeader(new Headers({ 'x-should-retry': 'false' }), 'X-Should-Retry'); // 'false'
 * ```
 */
export function readHeader(headers: unknown, name: string): string | undefined {
  if (headers === null || typeof headers !== 'object') return undefined;
  try {
    const getter = get(headers, 'get');
    if (typeof getter === 'function') {
      const v: unknown = getter.call(headers, name);
      return typeof v === 'string' ? v : undefined;
    }
    const lower = name.toLowerCase();
    for (const key of Object.keys(headers)) {
      if (key.toLowerCase() !== lower) continue;
      const v = get(headers, key);
      if (typeof v === 'string') return v;
      if (typeof v === 'number') return String(v);
      if (Array.isArray(v) && typeof v[0] === 'string') return v[0];
    }
  } catch {
    // a hostile headers object reads as "no header"
  }
  return undefined;
}

/**
 * Parses `retry-after-ms` (milliseconds) or `retry-after` (seconds, or an HTTP date) into a
 * non-negative delay in ms; `retry-after-ms` wins. `now` turns an HTTP date into a delay.
 *
 * @example
 * ```ts
 * parseRetryAfter({ 'retry-after': '1.5' }, 0); // 1500
 * parseRetryAfter({ 'retry-after': 'Thu, 01 Jan 1970 00:00:03 GMT' }, 1000); // 2000
 * parseRetryAfter({}, 0); // undefined
 * ```
 */
export function parseRetryAfter(headers: unknown, now: number): number | undefined {
  // always finite: "1e308" seconds is a (very) long wait, not Infinity
  const finite = (ms: number): number => Math.min(Math.ceil(ms), Number.MAX_SAFE_INTEGER);
  const ms = readHeader(headers, 'retry-after-ms');
  if (ms !== undefined && ms.trim() !== '') {
    const n = Number(ms);
    if (Number.isFinite(n) && n >= 0) return finite(n);
  }
  const ra = readHeader(headers, 'retry-after');
  if (ra === undefined || ra.trim() === '') return undefined;
  const seconds = Number(ra);
  if (Number.isFinite(seconds)) return seconds >= 0 ? finite(seconds * 1000) : undefined;
  const date = Date.parse(ra);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** An error's response headers (`headers`, or `response.headers`), if any. Never throws. */
export function headersOf(error: unknown): unknown {
  return get(error, 'headers') ?? get(get(error, 'response'), 'headers');
}

function classifyHttp(error: unknown, status: number, now: number): ErrorClassification {
  const category = HTTP_CATEGORIES[status] ?? (status >= 500 ? 'server_error' : 'client_error');
  const headers = headersOf(error);
  let retryable = status >= 500 || RETRYABLE_STATUS.has(status);
  const override = readHeader(headers, 'x-should-retry')?.trim().toLowerCase();
  if (override === 'true') retryable = true;
  else if (override === 'false') retryable = false;
  return verdict(
    category,
    retryable,
    true,
    retryable ? 'exponential_backoff' : 'fail_fast',
    parseRetryAfter(headers, now),
  );
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

function isProgramming(error: unknown, name: string | undefined): boolean {
  if (name !== undefined && PROGRAMMING.has(name)) return true;
  return (
    isInstance(error, TypeError) ||
    isInstance(error, RangeError) ||
    isInstance(error, ReferenceError) ||
    isInstance(error, SyntaxError)
  );
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
  const extra = (options.retryablePatterns ?? []).map((p) =>
    typeof p === 'string' ? new RegExp(p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'i') : p,
  );

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
    if (name === 'AbortError') return verdict('cancelled', false, false, 'abort');
    const code = codeOf(error);
    if (isProgramming(error, name)) return verdict('programming', false, false, 'fail_fast');
    if (isInstance(error, CircuitOpenError) || name === 'CircuitOpenError') {
      return verdict('circuit_open', false, true, 'fallback');
    }
    if (isInstance(error, RateLimitExceededError) || name === 'RateLimitExceededError') {
      const wait = get(error, 'retryAfterMs');
      return verdict('throttled', false, true, 'fallback', typeof wait === 'number' && wait >= 0 ? Math.ceil(wait) : undefined);
    }
    if (isInstance(error, BudgetExceededError) || name === 'BudgetExceededError') {
      return verdict('budget_exceeded', false, false, 'fail_fast');
    }
    const status = readStatus(error);
    if (status !== undefined) return classifyHttp(error, status, now);
    if (name === 'TimeoutError' || code === 'ETIMEDOUT' || code === 'ESOCKETTIMEDOUT') {
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
    if (isInstance(error, ToolError) || errorName(error) === 'ToolError') {
      if (get(error, 'phase') === 'validate') return verdict('validation_error', false, false, 'fail_fast');
      const inner = nested(get(error, 'cause'), now, depth, seen);
      if (get(error, 'idempotent') === true) return inner;
      // the tool ran: a side effect may have happened, so never run it again automatically
      return verdict(inner.category, false, inner.fallback, inner.fallback ? 'fallback' : 'fail_fast');
    }
    if (isFetchNetworkError(error, errorName(error))) {
      // fetch's network TypeError: its cause (ECONNRESET, UND_ERR_*, a timeout) says more, if any.
      const inner = nested(get(error, 'cause'), now, depth, seen);
      return inner.category === 'unknown' ? verdict('connection', true, true, 'exponential_backoff') : inner;
    }
    const mine = own(error, now);
    if (mine !== undefined) return mine;
    const cause = get(error, 'cause');
    if (cause !== undefined && cause !== null) return nested(cause, now, depth, seen);
    return UNKNOWN;
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
 * Rules, first match wins: cancellation (`AbortError`) → `cancelled`; programming errors
 * (`TypeError` other than fetch's network failure, `RangeError`, `ReferenceError`,
 * `SyntaxError`) → no retry, no fallback; `CircuitOpenError` → fallback only; HTTP status
 * (from `status`, `statusCode` or `response.status`; `x-should-retry` overrides;
 * `retry-after(-ms)` read); timeouts; network error codes; message patterns; the `cause` of
 * wrappers; otherwise `unknown` (no retry, fallback allowed). A `ToolError` is judged by its
 * cause, except that bad arguments are a `validation_error` and a non-idempotent tool that ran is
 * never retryable. Our give-up errors
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
