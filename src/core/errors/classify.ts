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
  /**
   * Why a retry is withheld although the error itself would be worth one (`retryable` is then
   * false): `'not_idempotent'` — a tool that is not idempotent ran and failed, so a side effect
   * may have happened. `retryWithBackoff` reports it as a `retry-withheld` event.
   */
  readonly withheld?: 'not_idempotent';
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
/** A response that could not be read: as `MalformedStreamError` (502). */
const MALFORMED = verdict('bad_gateway', true, true, 'exponential_backoff');

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

/** The name of an error's class: the SDKs' errors (`openai`) keep `name` at `'Error'`. */
function className(error: unknown): string | undefined {
  return str(get(get(error, 'constructor'), 'name'));
}

function readStatus(error: unknown): number | undefined {
  for (const candidate of [get(error, 'status'), get(error, 'statusCode'), get(get(error, 'response'), 'status')]) {
    const n = httpStatus(candidate);
    if (n !== undefined) return n;
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
  const c = classifyError(error, { now });
  if (c.category !== 'rate_limit' || c.retryAfterMs === undefined || !(c.retryAfterMs > 0)) return undefined;
  return Math.min(c.retryAfterMs, MAX_RETRY_AFTER_MS);
}

/** An error's response headers (`headers`, `responseHeaders` — the Vercel AI SDK's APICallError — or `response.headers`), if any. Never throws. */
export function headersOf(error: unknown): unknown {
  return get(error, 'headers') ?? get(error, 'responseHeaders') ?? get(get(error, 'response'), 'headers');
}

/**
 * The HTTP status each provider error type stands for: the `error.type` (or `code`) of OpenAI's
 * and Anthropic's error bodies, which is all a mid-stream error event carries.
 */
const ERROR_TYPE_STATUS: Readonly<Record<string, number>> = {
  invalid_request_error: 400,
  context_length_exceeded: 400,
  authentication_error: 401,
  invalid_api_key: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  model_not_found: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  rate_limit_exceeded: 429,
  insufficient_quota: 429,
  api_error: 500,
  server_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

/** Types that mean "your quota is spent": no retry helps, another provider may. */
const QUOTA_TYPES = new Set(['insufficient_quota', 'billing_error']);

/**
 * The HTTP status an API error type implies — OpenAI's (`server_error`, `rate_limit_exceeded`,
 * `insufficient_quota`, `invalid_request_error`…) and Anthropic's (`overloaded_error` → 529,
 * `rate_limit_error` → 429, `api_error` → 500, `timeout_error` → 504…) — or `undefined` for a
 * type it doesn't know.
 *
 * @example
 * ```ts
 * errorTypeStatus('overloaded_error'); // 529
 * errorTypeStatus('server_error'); // 500
 * errorTypeStatus('tokens'); // undefined
 * ```
 */
export function errorTypeStatus(type: unknown): number | undefined {
  return typeof type === 'string' && Object.hasOwn(ERROR_TYPE_STATUS, type) ? ERROR_TYPE_STATUS[type] : undefined;
}

/**
 * The API error type an SDK error or an error body carries, among those
 * {@link errorTypeStatus} knows: `type` (OpenAI's `APIError`, Anthropic's `APIError`, a raw
 * error object), `error.type` (OpenAI's body), `error.error.type` (Anthropic's body), then the
 * same `code` fields (OpenAI puts `rate_limit_exceeded` there when the type is `tokens`).
 *
 * @example
 * ```ts
 * apiErrorType({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }); // 'overloaded_error'
 * apiErrorType(new Error('boom')); // undefined
 * ```
 */
export function apiErrorType(error: unknown): string | undefined {
  const holders = bodyHolders(error);
  for (const field of ['type', 'code']) {
    for (const holder of holders) {
      const value = get(holder, field);
      if (errorTypeStatus(value) !== undefined) return value as string;
    }
  }
  return undefined;
}

/**
 * Where an error's API body may sit: the error itself (a raw error object), `error` (an SDK's
 * `APIError`), `error.error` (Anthropic's body), `body` (`HttpError`), `data` (the AI SDK's
 * `APICallError`, parsed), and the `error` inside those two.
 */
function bodyHolders(error: unknown): unknown[] {
  const body = get(error, 'body');
  const data = get(error, 'data');
  const holders = [error, get(error, 'error'), get(get(error, 'error'), 'error'), body, get(body, 'error'), data, get(data, 'error')];
  return holders.filter((h) => h !== undefined && h !== null);
}

/** A 3-digit HTTP error status (400–599), as a number or a numeric string; otherwise `undefined`. */
function httpStatus(value: unknown): number | undefined {
  const n = typeof value === 'string' && /^\d{3}$/.test(value) ? Number(value) : value;
  return typeof n === 'number' && Number.isInteger(n) && n >= 400 && n <= 599 ? n : undefined;
}

/**
 * The HTTP status an error *body* implies when the error itself has none — what a mid-stream
 * error event carries: a numeric `code` (or `status`) of 400–599 (OpenRouter's
 * `{"error":{"code":502,…}}`, vLLM's `{"object":"error","code":400,…}`), else the status of its
 * API error type (`server_error` → 500, `overloaded_error` → 529, `rate_limit_error` → 429…), read
 * wherever the SDKs keep the body (`error.error`, `HttpError.body`, the AI SDK's `data`);
 * `undefined` when neither is there.
 *
 * @example
 * ```ts
 * impliedStatus({ error: { code: 502, message: 'Provider returned error' } }); // 502
 * impliedStatus({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }); // 529
 * impliedStatus(new Error('boom')); // undefined
 * ```
 */
export function impliedStatus(error: unknown): number | undefined {
  for (const holder of bodyHolders(error)) {
    const status = httpStatus(get(holder, 'code')) ?? (holder === error ? undefined : httpStatus(get(holder, 'status')));
    if (status !== undefined) return status;
  }
  return errorTypeStatus(apiErrorType(error));
}

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

/**
 * The messages of `JSON.parse`'s `SyntaxError`: V8 (Node, Chrome, Deno: `… in JSON at position
 * 12`, `Unexpected end of JSON input`, `"…" is not valid JSON`), SpiderMonkey (Firefox:
 * `JSON.parse: …`) and JavaScriptCore (Safari, Bun: `JSON Parse error: …`).
 */
const JSON_PARSE_MESSAGE = /JSON at position \d|^Unexpected end of JSON input|is not valid JSON$|^JSON\.parse: |^JSON Parse error: /;

/** A stack frame of `JSON.parse` itself: V8's `at JSON.parse (<anonymous>)`, Safari's `parse@[native code]`. */
const JSON_PARSE_FRAME = /^at JSON\.parse \(|^(JSON\.)?parse@\[native code\]/;

/** A stack frame in a dependency or in the runtime (undici's `Response.json()`), not in the app. */
const DEPENDENCY_FRAME = /[\\/]node_modules[\\/]|\(node:|^at node:/;

/**
 * Whether a `SyntaxError` is a failure to parse JSON *data* that a dependency was reading — an
 * SDK reading a provider's stream, `fetch`'s `Response.json()` — rather than an error of the
 * app's own code. Both must hold:
 * - it came from `JSON.parse`: its message is one of the JSON parser's, or its top frame is
 *   `JSON.parse`;
 * - the frame that called `JSON.parse` is a dependency's (a path through `node_modules/`) or the
 *   runtime's (`node:`): the data came over the wire, not from the app's source.
 *
 * So the `SyntaxError` the `openai` and `@anthropic-ai/sdk` clients throw on a malformed chunk
 * is a malformed response, while `JSON.parse` of a bad literal, `new Function`, `new RegExp` or
 * `eval` in the app's own code stays a programming error. Bundled code has no `node_modules/`
 * frames: there, rxheal's adapters (`rxheal/openai`, `rxheal/anthropic`) already turn what the
 * SDK throws while reading its stream into a `MalformedStreamError`.
 */
/** The AI SDK's errors for a response it could not read: what `fromAiSdk` turns into a `MalformedStreamError`, and more. */
const AI_SDK_MALFORMED: ReadonlySet<string> = new Set(['AI_JSONParseError', 'AI_InvalidResponseDataError', 'AI_TypeValidationError']);

function isResponseParseError(error: unknown, name: string | undefined): boolean {
  if (name !== 'SyntaxError' && !isInstance(error, SyntaxError)) return false;
  const stack = str(get(error, 'stack'));
  if (stack === undefined) return false;
  const text = message(error);
  // the frames start after the message, which may span lines
  const at = text === '' ? -1 : stack.indexOf(text);
  let fromJsonParse = JSON_PARSE_MESSAGE.test(text);
  for (const raw of (at >= 0 ? stack.slice(at + text.length) : stack).split('\n', 16)) {
    const line = raw.trim();
    if (line === '' || (!line.startsWith('at ') && !line.includes('@'))) continue;
    if (JSON_PARSE_FRAME.test(line)) {
      fromJsonParse = true;
      continue;
    }
    return fromJsonParse && DEPENDENCY_FRAME.test(line);
  }
  return false;
}

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
    if (isInstance(error, BudgetExceededError) || name === 'BudgetExceededError') {
      return verdict('budget_exceeded', false, false, 'fail_fast');
    }
    const status = readStatus(error);
    if (status !== undefined) return classifyHttp(error, status, now);
    // no status (an error event mid-stream): the body's code or API error type says what it would have been
    const implied = impliedStatus(error);
    if (implied !== undefined) return classifyHttp(error, implied, now);
    if (name === 'TimeoutError' || name === 'APIConnectionTimeoutError' || cls === 'APIConnectionTimeoutError' || code === 'ETIMEDOUT' || code === 'ESOCKETTIMEDOUT') {
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
      const ran = verdict(inner.category, false, inner.fallback, inner.fallback ? 'fallback' : 'fail_fast');
      return inner.retryable ? { ...ran, withheld: 'not_idempotent' } : ran;
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
 * `Response.json()`) → `bad_gateway`, like `MalformedStreamError`; programming errors
 * (`TypeError` other than fetch's network failure, `RangeError`, `ReferenceError`,
 * `SyntaxError` from the app's own code, `JSON.parse` of its own literals included) → no retry,
 * no fallback; `CircuitOpenError` → fallback only; HTTP status (from `status`, `statusCode` or
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
