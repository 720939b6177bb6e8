/**
 * The error classes every rxheal operator throws. Each sets `name` (so it survives
 * serialisation and cross-realm checks) and uses the standard ES2022 `cause`.
 *
 * @module
 */

/** Headers as they arrive from `fetch` (`Headers`) or from an SDK (a plain record, any case). */
export type HeadersLike = { get(name: string): string | null } | Readonly<Record<string, string | readonly string[] | number | undefined>>;

/**
 * A call was rejected because its circuit breaker is open (or half-open with every probe slot
 * taken, or isolated by hand). The source was never subscribed.
 *
 * @example
 * ```ts
 * breakerCall$.subscribe({
 *   error: (e) => {
 *     if (e instanceof CircuitOpenError) console.log(`${e.breaker} open, probe in ${e.retryAfterMs} ms`);
 *   },
 * });
 * ```
 */
export class CircuitOpenError extends Error {
  override readonly name = 'CircuitOpenError';
  /** Name of the breaker that rejected the call. */
  readonly breaker: string;
  /**
   * Milliseconds until the breaker admits a probe: 0 when it is half-open with every probe slot
   * busy, `Infinity` while it is isolated by hand.
   */
  readonly retryAfterMs: number;

  constructor(breaker: string, retryAfterMs: number, options?: { cause?: unknown }) {
    super(`Circuit '${breaker}' is open` + (Number.isFinite(retryAfterMs) ? `; next probe in ${retryAfterMs} ms` : ' (isolated)'), options);
    this.breaker = breaker;
    this.retryAfterMs = retryAfterMs;
  }
}

/** Why `retryWithBackoff` gave up. */
export type GiveUpReason =
  /** `maxRetries` retries were made and the last one failed too. */
  | 'max_retries'
  /** The error asked for a wait (`retry-after`) longer than `maxRetryAfterMs`. */
  | 'retry_after_too_long';

/**
 * `retryWithBackoff` gave up: every attempt failed, or the error asked for a wait longer than
 * `maxRetryAfterMs`. `cause` is the last error; `errors` lists every attempt's error in order.
 *
 * @example
 * ```ts
 * if (e instanceof RetriesExhaustedError) console.log(e.attempts, e.errors.length, e.cause);
 * ```
 */
export class RetriesExhaustedError extends Error {
  override readonly name = 'RetriesExhaustedError';
  /** Subscriptions made to the source, the first one included. */
  readonly attempts: number;
  /** Each attempt's error, oldest first. */
  readonly errors: readonly unknown[];
  /** Why the operator stopped retrying. */
  readonly reason: GiveUpReason;

  constructor(attempts: number, errors: readonly unknown[], reason: GiveUpReason = 'max_retries') {
    const last = errors[errors.length - 1];
    super(
      reason === 'max_retries'
        ? `Gave up after ${attempts} attempt${attempts === 1 ? '' : 's'}: ${describe(last)}`
        : `Gave up after ${attempts} attempt${attempts === 1 ? '' : 's'}: retry-after exceeds maxRetryAfterMs: ${describe(last)}`,
      { cause: last },
    );
    this.attempts = attempts;
    this.errors = errors;
    this.reason = reason;
  }
}

/**
 * Every alternative of a fallback chain failed. `errors` holds each alternative's error in the
 * order they were tried; `cause` is the last one. The message names each (numbered, each cut at
 * 200 characters), so a log line says why every alternative failed.
 *
 * @example
 * ```ts
 * if (e instanceof AllFallbacksFailedError) e.errors.forEach((x, i) => console.log(i, x));
 * ```
 */
export class AllFallbacksFailedError extends Error {
  override readonly name = 'AllFallbacksFailedError';
  /** Each alternative's error, in the order tried. */
  readonly errors: readonly unknown[];

  constructor(errors: readonly unknown[]) {
    const each = errors.length === 1 ? describe(errors[0]) : errors.map((error, i) => `[${i + 1}] ${cut(describe(error), 200)}`).join('; ');
    super(`All ${errors.length} alternative${errors.length === 1 ? '' : 's'} failed: ${each}`, { cause: errors[errors.length - 1] });
    this.errors = errors;
  }
}

/**
 * An operation crossed its total time budget (`totalTimeoutMs`), waits between retries included.
 * `cause` is the last attempt's error, when there was one. `retryWithBackoff` raises it at one of
 * two moments: exactly at the budget when an attempt is still in flight then (the attempt is
 * cancelled; `elapsedMs === timeoutMs`), or early — as soon as an attempt fails — when the wait
 * before the next attempt would end at or past the budget (`elapsedMs` is the time of that
 * failure, less than `timeoutMs`), so a fallback can start at once.
 *
 * @example
 * ```ts
 * if (e instanceof TotalTimeoutError) console.log(`gave up after ${e.elapsedMs} of ${e.timeoutMs} ms`);
 * ```
 */
export class TotalTimeoutError extends Error {
  override readonly name = 'TotalTimeoutError';
  /** The budget, in milliseconds. */
  readonly timeoutMs: number;
  /** Milliseconds elapsed (scheduler time) when the operator gave up. */
  readonly elapsedMs: number;

  constructor(timeoutMs: number, elapsedMs: number, options?: { cause?: unknown }) {
    super(`Total timeout of ${timeoutMs} ms exceeded after ${elapsedMs} ms`, options);
    this.timeoutMs = timeoutMs;
    this.elapsedMs = elapsedMs;
  }
}

/**
 * A run spent more than its budget. Never retried and never handed to a fallback: another
 * provider would spend more. `runAgent` raises it with `resource`:
 * - `'modelCalls'` — `budget.maxModelCalls`: provider attempts (every retry and every model a
 *   fallback tries counts; the attempt that would cross the limit is not made);
 * - `'tokens'` — `budget.maxTokens`: input + output tokens of each attempt's `finish.usage`;
 * - `'toolCalls'` — `budget.maxToolCalls`: tool executions, retries included;
 * - `'steps'` — `maxSteps`: model turns.
 *
 * @example
 * ```ts
 * throw new BudgetExceededError('tokens', 10_000, 10_412);
 * ```
 */
export class BudgetExceededError extends Error {
  override readonly name = 'BudgetExceededError';
  /** What was counted: from `runAgent`, `'modelCalls'`, `'tokens'`, `'toolCalls'` or `'steps'`; your own code may use others (e.g. `'usd'`). */
  readonly resource: string;
  /** The allowed amount. */
  readonly limit: number;
  /** The amount used when the budget was found exceeded. */
  readonly used: number;

  constructor(resource: string, limit: number, used: number, options?: { cause?: unknown }) {
    super(`Budget exceeded: ${used} ${resource} used, limit ${limit}`, options);
    this.resource = resource;
    this.limit = limit;
    this.used = used;
  }
}

/**
 * An HTTP response with a failure status. The classifier reads `status` and `headers`
 * (`retry-after`, `retry-after-ms`, `x-should-retry`).
 *
 * @example
 * ```ts
 * const res = await fetch(url, { signal });
 * if (!res.ok) throw new HttpError(res.status, res.headers, await res.text());
 * ```
 */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  /** The HTTP status code. */
  readonly status: number;
  /** Response headers, a `Headers` object or a plain record. */
  readonly headers: HeadersLike;
  /** The response body, when it was read. */
  readonly body?: unknown;

  constructor(status: number, headers: HeadersLike = {}, body?: unknown, options?: { message?: string; cause?: unknown }) {
    super(options?.message ?? `HTTP ${status}${bodySnippet(body)}`, { cause: options?.cause });
    this.status = status;
    this.headers = headers;
    if (body !== undefined) this.body = body;
  }
}

/** Where a tool call failed: decoding its arguments, or running it. */
export type ToolPhase = 'validate' | 'execute';

/**
 * A tool call failed. `phase: 'validate'` means the model's arguments did not decode (the tool
 * never ran; `message` names each bad field); `'execute'` means the tool ran and failed (`cause`
 * is what it threw). An execute-phase error of a non-idempotent tool is never retryable: a side
 * effect may have happened.
 *
 * @example
 * ```ts
 * callTool(getWeather, { id: 'c1', name: 'get_weather', args: { city: 'nyc', units: 'kelvin' } }).subscribe({
 *   error: (e: ToolError) => console.log(e.phase, e.message), // validate units: expected "celsius" | "fahrenheit", got "kelvin"
 * });
 * ```
 */
export class ToolError extends Error {
  override readonly name = 'ToolError';
  readonly toolName: string;
  readonly callId: string;
  /** The arguments as the model sent them. */
  readonly args: unknown;
  readonly phase: ToolPhase;
  /** Whether the tool is safe to run twice. */
  readonly idempotent: boolean;

  constructor(fields: { toolName: string; callId: string; args: unknown; phase: ToolPhase; idempotent: boolean; message: string; cause?: unknown }) {
    super(fields.message, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.toolName = fields.toolName;
    this.callId = fields.callId;
    this.args = fields.args;
    this.phase = fields.phase;
    this.idempotent = fields.idempotent;
  }
}

/**
 * A public option had a bad value. Thrown synchronously when an operator or breaker is created,
 * never at subscription time. Extends `TypeError`: it is a programming error, so the classifier
 * never retries it or falls back from it.
 *
 * @example
 * ```ts
 * try { retryWithBackoff({ maxRetries: -1 }); } catch (e) {
 *   // e.message: 'retryWithBackoff: option "maxRetries" must be a non-negative integer, got -1'
 * }
 * ```
 */
export class InvalidOptionError extends TypeError {
  override readonly name = 'InvalidOptionError';
  /** What was being configured, e.g. `'retryWithBackoff'`. */
  readonly target: string;
  /** Dotted path of the bad option, e.g. `'window.minimumCalls'`. */
  readonly option: string;
  /** The value that was given. */
  readonly value: unknown;
  /** What the option must be, e.g. `'a non-negative integer'`. */
  readonly expected: string;

  constructor(target: string, option: string, value: unknown, expected: string) {
    super(`${target}: option "${option}" must be ${expected}, got ${showValue(value)}`);
    this.target = target;
    this.option = option;
    this.value = value;
    this.expected = expected;
  }
}

/** `text`, cut at `max` characters (an ellipsis marks the cut). */
const cut = (text: string, max: number): string => (text.length > max ? text.slice(0, max) + '…' : text);

/** A short, never-throwing rendering of a value for error messages. */
export function showValue(value: unknown): string {
  try {
    if (typeof value === 'function') return `function ${value.name || '(anonymous)'}`;
    if (typeof value === 'string') return JSON.stringify(cut(value, 80));
    if (typeof value === 'bigint') return `${value}n`;
    if (typeof value === 'symbol') return value.toString();
    if (value === undefined) return 'undefined';
    if (typeof value === 'number') return String(value);
    const json = JSON.stringify(value);
    if (json === undefined) return String(value);
    return cut(json, 80);
  } catch {
    try {
      return Object.prototype.toString.call(value);
    } catch {
      return '[unprintable value]';
    }
  }
}

function describe(error: unknown): string {
  try {
    if (error instanceof Error) return `${error.name}: ${error.message}`;
    return showValue(error);
  } catch {
    return 'unknown error';
  }
}

function bodySnippet(body: unknown): string {
  if (body === undefined || body === null || body === '') return '';
  const text = typeof body === 'string' ? body : showValue(body);
  return `: ${cut(text, 200)}`;
}

/**
 * A model's stream ended before its final event — a provider's (`data: [DONE]` for Chat
 * Completions, `message_stop` for Messages) or any model's `finish` event (`streamModel` checks) —
 * or reading it failed mid-way (the connection dropped): the answer is cut short, never to be
 * taken as complete. `code` is `'ECONNRESET'`, so `classifyError` says
 * `connection`: retryable, fallback-able, and counted by breakers. `cause` is the read error, if
 * any.
 *
 * @example
 * ```ts
 * classifyError(new IncompleteStreamError('openai:gpt-4o', 'no [DONE]', 3));
 * // { retryable: true, fallback: true, category: 'connection', strategy: 'exponential_backoff' }
 * ```
 */
export class IncompleteStreamError extends Error {
  override readonly name = 'IncompleteStreamError';
  /** `'ECONNRESET'`: what the classifier reads as a dropped connection. */
  readonly code = 'ECONNRESET';
  /** Which model's stream (`Model.id`). */
  readonly model: string;
  /** Events the stream had delivered before it ended. */
  readonly eventsReceived: number;

  constructor(model: string, detail: string, eventsReceived: number, options?: { cause?: unknown }) {
    super(`Connection closed before the stream of '${model}' finished (${detail}) after ${eventsReceived} event${eventsReceived === 1 ? '' : 's'}`, options);
    this.model = model;
    this.eventsReceived = eventsReceived;
  }
}

/**
 * A provider sent an event that cannot be read (bad JSON, an unexpected shape). `status` is 502
 * (what a gateway answers for an invalid upstream response), so `classifyError` says
 * `bad_gateway`: retryable, fallback-able, counted by breakers. `data` is the offending event's
 * data (at most 500 characters); `cause` is the parse error, if any.
 *
 * @example
 * ```ts
 * classifyError(new MalformedStreamError('anthropic:claude', 'bad JSON', '{"type":"content_blo'));
 * // { retryable: true, fallback: true, category: 'bad_gateway', strategy: 'exponential_backoff' }
 * ```
 */
export class MalformedStreamError extends Error {
  override readonly name = 'MalformedStreamError';
  /** 502: read by the classifier as `bad_gateway`. */
  readonly status = 502;
  /** Which model's stream (`Model.id`). */
  readonly model: string;
  /** The event data that could not be read, truncated to 500 characters. */
  readonly data: string;

  constructor(model: string, detail: string, data: string, options?: { cause?: unknown }) {
    super(`Malformed event in the stream of '${model}': ${detail}`, options);
    this.model = model;
    this.data = cut(data, 500);
  }
}

/**
 * A rate limiter (`rateLimit`) refused a call: even after waiting up to its `maxWaitMs`, the
 * shared limit would not have let it start. The call was never sent. `classifyError` says
 * `throttled` (not a provider failure, so breakers don't count it; not retryable here, an
 * alternative with its own key may still help), with `retryAfterMs` = the wait it needed.
 *
 * @example
 * ```ts
 * classifyError(new RateLimitExceededError('openai:prod', 42_000, 30_000));
 * // { retryable: false, fallback: true, category: 'throttled', strategy: 'fallback', retryAfterMs: 42000 }
 * ```
 */
export class RateLimitExceededError extends Error {
  override readonly name = 'RateLimitExceededError';
  /** The limiter's name (its shared key). */
  readonly limiter: string;
  /** How long the call would have had to wait, in ms. */
  readonly retryAfterMs: number;
  /** The longest wait the limiter accepts. */
  readonly maxWaitMs: number;

  constructor(limiter: string, retryAfterMs: number, maxWaitMs: number, options?: { cause?: unknown }) {
    super(`Rate limit '${limiter}': the call would wait ${Math.ceil(retryAfterMs)} ms, more than ${maxWaitMs} ms`, options);
    this.limiter = limiter;
    this.retryAfterMs = retryAfterMs;
    this.maxWaitMs = maxWaitMs;
  }
}

/** Why a bulkhead refused a call: every slot and queue place was taken (`'full'`), or it waited its `queueTimeoutMs` in the queue (`'queue_timeout'`). */
export type BulkheadRejection = 'full' | 'queue_timeout';

/**
 * A bulkhead refused the call: it had `maxConcurrent` calls running and `maxQueue` waiting
 * (`reason: 'full'`), or the call waited `queueTimeoutMs` for a slot (`'queue_timeout'`). The
 * source was never subscribed. Classified `bulkhead_full`: never retried (a retry would only queue
 * again), worth a fallback (another model or tool has its own bulkhead), not counted by breakers
 * (the service did not fail).
 *
 * @example
 * ```ts
 * classifyError(new BulkheadRejectedError('model:gpt', 'full', 25, 0, 0));
 * // { retryable: false, fallback: true, category: 'bulkhead_full', strategy: 'fallback' }
 * ```
 */
export class BulkheadRejectedError extends Error {
  override readonly name = 'BulkheadRejectedError';
  /** The bulkhead's name. */
  readonly bulkhead: string;
  /** Why the call was refused. */
  readonly reason: BulkheadRejection;
  /** Calls the bulkhead runs at once. */
  readonly maxConcurrent: number;
  /** Calls it lets wait. */
  readonly maxQueue: number;
  /** How long the call waited in the queue, in ms (0 when refused at once). */
  readonly waitedMs: number;

  constructor(bulkhead: string, reason: BulkheadRejection, maxConcurrent: number, maxQueue: number, waitedMs: number) {
    super(
      reason === 'full'
        ? `Bulkhead '${bulkhead}' is full: ${maxConcurrent} call${maxConcurrent === 1 ? '' : 's'} running and ${maxQueue} waiting`
        : `Bulkhead '${bulkhead}': no slot within ${waitedMs} ms in the queue`,
    );
    this.bulkhead = bulkhead;
    this.reason = reason;
    this.maxConcurrent = maxConcurrent;
    this.maxQueue = maxQueue;
    this.waitedMs = waitedMs;
  }
}
