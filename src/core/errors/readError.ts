/**
 * What an error says of itself, read without ever throwing (throwing getters, revoked proxies,
 * hostile headers objects): its HTTP status, its response headers and `retry-after`, the API error
 * type its body carries and the status that type implies, and whether it is a failure to parse a
 * response. Facts only: what they mean for healing is decided in classify.ts.
 *
 * @module
 */

/** Reads a property without ever throwing (throwing getters, revoked proxies). */
export function get(value: unknown, key: string): unknown {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return undefined;
  try {
    return (value as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}

/** `value` when it is a string. */
export function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** `value instanceof ctor`, false when the check throws (a hostile `Symbol.hasInstance`, a revoked proxy). */
export function isInstance(value: unknown, ctor: abstract new (...args: never[]) => unknown): boolean {
  try {
    return value instanceof ctor;
  } catch {
    return false;
  }
}

/** An error's message (a thrown string is its own); `''` for none. */
export function message(error: unknown): string {
  if (typeof error === 'string') return error;
  return str(get(error, 'message')) ?? '';
}

/** The HTTP error status an error carries: `status`, `statusCode` or `response.status` (400–599). */
export function readStatus(error: unknown): number | undefined {
  for (const candidate of [get(error, 'status'), get(error, 'statusCode'), get(get(error, 'response'), 'status')]) {
    const n = httpStatus(candidate);
    if (n !== undefined) return n;
  }
  return undefined;
}

/**
 * The HTTP error status an error or one of its causes carries ({@link readStatus}), the
 * outermost first: a `ToolError` whose cause is an `HttpError` carries the cause's status.
 *
 * @example
 * ```ts
 * readStatusAlong(new Error('tool failed', { cause: { status: 503 } })); // 503
 * ```
 */
export function readStatusAlong(error: unknown): number | undefined {
  const seen = new Set<unknown>();
  for (let e = error, depth = 0; e !== undefined && e !== null && depth < MAX_CAUSES && !seen.has(e); e = get(e, 'cause'), depth++) {
    seen.add(e);
    const status = readStatus(e);
    if (status !== undefined) return status;
  }
  return undefined;
}

/** Causes followed by {@link readStatusAlong} (as deep as the classifier follows them). */
const MAX_CAUSES = 8;

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
  invalid_prompt: 400,
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
  service_unavailable_error: 503,
  server_is_overloaded: 503,
  timeout_error: 504,
  overloaded_error: 529,
};

/**
 * The HTTP status an API error type implies — OpenAI's (`server_error`, `rate_limit_exceeded`,
 * `insufficient_quota`, `invalid_request_error`, the Responses API's `invalid_prompt`, and the
 * `service_unavailable_error` / `server_is_overloaded` it sends after a 200…) and Anthropic's (`overloaded_error` → 529,
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

/**
 * The messages of `JSON.parse`'s `SyntaxError`: V8 (Node, Chrome, Deno: `… in JSON at position
 * 12`, `Unexpected end of JSON input`, `"…" is not valid JSON`), SpiderMonkey (Firefox:
 * `JSON.parse: …`) and JavaScriptCore (Safari, Bun: `JSON Parse error: …`).
 */
const JSON_PARSE_MESSAGE = /JSON at position \d|^Unexpected end of JSON input|is not valid JSON$|^JSON\.parse: |^JSON Parse error: /;

/**
 * The messages of the `SyntaxError` an SDK throws in place of `JSON.parse`'s when the data it
 * read was not JSON: `openai` 7's `Error reading response: malformed server-sent event JSON.`
 * (also `… newline-delimited JSON.`, `… invalid structured output JSON.`).
 */
const RESPONSE_READ_MESSAGE = /^Error reading response: /;

/** A stack frame of `JSON.parse` itself: V8's `at JSON.parse (<anonymous>)`, Safari's `parse@[native code]`. */
const JSON_PARSE_FRAME = /^at JSON\.parse \(|^(JSON\.)?parse@\[native code\]/;

/** A stack frame in a dependency or in the runtime (undici's `Response.json()`), not in the app. */
const DEPENDENCY_FRAME = /[\\/]node_modules[\\/]|\(node:|^at node:/;

/**
 * Whether a `SyntaxError` is a failure to parse JSON *data* that a dependency was reading — an
 * SDK reading a provider's stream, `fetch`'s `Response.json()` — rather than an error of the
 * app's own code. Both must hold:
 * - it came from `JSON.parse`: its message is one of the JSON parser's, or its top frame is
 *   `JSON.parse` — or an SDK threw it in `JSON.parse`'s place, saying so (`openai` 7's
 *   `Error reading response: malformed server-sent event JSON.`);
 * - the frame that called `JSON.parse` is a dependency's (a path through `node_modules/`) or the
 *   runtime's (`node:`): the data came over the wire, not from the app's source.
 *
 * So the `SyntaxError` the `openai` and `@anthropic-ai/sdk` clients throw on a malformed chunk
 * is a malformed response, while `JSON.parse` of a bad literal, `new Function`, `new RegExp` or
 * `eval` in the app's own code stays a programming error. Bundled code has no `node_modules/`
 * frames: there, rxheal's adapters (`rxheal/openai`, `rxheal/anthropic`) already turn what the
 * SDK throws while reading its stream into a `MalformedStreamError`.
 */
export function isResponseParseError(error: unknown, name: string | undefined): boolean {
  if (name !== 'SyntaxError' && !isInstance(error, SyntaxError)) return false;
  const stack = str(get(error, 'stack'));
  if (stack === undefined) return false;
  const text = message(error);
  // the frames start after the message, which may span lines
  const at = text === '' ? -1 : stack.indexOf(text);
  let fromJsonParse = JSON_PARSE_MESSAGE.test(text) || RESPONSE_READ_MESSAGE.test(text);
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
