/**
 * What `rxheal/openai` and `rxheal/anthropic` share: an official SDK's stream, read as a
 * {@link Model} with the same decoders (and so the same events and errors) as rxheal's own
 * `fetch` providers. Internal: no framework import here.
 *
 * @module
 */
import { endWith, map, type Observable } from 'rxjs';
import { apiErrorType, impliedStatus } from '../core/errors/readError.js';
import { HttpError, InvalidOptionError, MalformedStreamError } from '../core/errors/errors.js';
import type { ResetEvent, TurnEvent } from '../core/events/events.js';
import { fromAsyncIterable, type Model, type ModelRequest } from '../core/model/model.js';
import { NonEmptyString, NonNegativeInteger, validateOptions } from '../core/errors/options.js';
import { decodeEvents, type StreamDecoder } from '../providers/sse.js';
import type { SseEvent } from '../providers/sseParser.js';

/**
 * Options every official-SDK adapter takes (`fromOpenAI`, `fromAnthropic`).
 *
 * @example
 * ```ts
 * const options: SdkModelOptions = { id: 'primary', maxRetries: 0 };
 * ```
 */
export interface SdkModelOptions {
  /** The `Model.id` (breakers are named `model:<id>`). Defaults to `openai:<model>` / `anthropic:<model>`. */
  readonly id?: string;
  /**
   * The SDK's own retries for each request (they happen before the stream starts, and the SDKs
   * default to 2). Defaults to **0**: rxheal's `retryWithBackoff` retries, so they don't double
   * up; set it only if you don't retry with rxheal.
   */
  readonly maxRetries?: number;
}

/** Whether `u` is an object (arrays included: the frameworks' values are read field by field). */
export const isObject = (u: unknown): u is Record<string, unknown> => typeof u === 'object' && u !== null;
/** A finite number, or `undefined`. */
export const num = (u: unknown): number | undefined => (typeof u === 'number' && Number.isFinite(u) ? u : undefined);

/** Calls `abort` when `signal` aborts (at once if it already has); returns what stops listening. */
export function onAbort(signal: AbortSignal | undefined, abort: () => void): () => void {
  if (signal === undefined) return () => undefined;
  if (signal.aborted) {
    abort();
    return () => undefined;
  }
  signal.addEventListener('abort', abort, { once: true });
  return () => signal.removeEventListener('abort', abort);
}

/** Why `signal` aborted: its reason, or an `AbortError`. */
export const abortReason = (signal: AbortSignal | undefined): unknown => signal?.reason ?? new DOMException('The operation was aborted', 'AbortError');

/** The SDK's message of an error body: `error.message`, `error.error.message`. */
function apiMessage(error: unknown): string {
  const body = isObject(error) ? error['error'] : undefined;
  const inner = isObject(body) ? body['error'] : undefined;
  for (const holder of [inner, body, error]) {
    const m = isObject(holder) ? holder['message'] : undefined;
    if (typeof m === 'string' && m !== '') return m;
  }
  return 'error event';
}

/**
 * An error a provider's stream carried — what an SDK threw while its stream was read, or an AI
 * SDK `error` part — as rxheal's own providers would have said it:
 * - a `SyntaxError` (an SDK's `JSON.parse` of a malformed chunk) → {@link MalformedStreamError};
 * - an AI SDK provider's `AI_TypeValidationError` (a chunk its schema rejects) or
 *   `AI_InvalidResponseDataError` (e.g. the stream ended without a finish reason) →
 *   {@link MalformedStreamError};
 * - an error without a status (an error event mid-stream) whose body implies one (`impliedStatus`:
 *   a numeric `code` such as OpenRouter's 502, or a known API error type) → {@link HttpError}
 *   with that status (`server_error` → 500, `overloaded_error` → 529, `rate_limit_error` → 429…);
 * - any other value that is not an `Error` (a raw error object) → an `Error` saying so;
 * - any other `Error` (an abort, a connection error, an `APICallError`) unchanged.
 * What the provider sent stays reachable as `cause`.
 *
 * @example
 * ```ts
 * providerStreamError('openai:gpt-4o', { message: 'The server had an error', type: 'server_error' }); // HttpError 500
 * providerStreamError('openai:gpt-4o', new SyntaxError('Unterminated string in JSON at position 9')); // MalformedStreamError
 * ```
 */
export function providerStreamError(model: string, error: unknown): unknown {
  if (error instanceof SyntaxError || (isObject(error) && error['name'] === 'SyntaxError')) {
    return new MalformedStreamError(model, `the SDK could not parse an event: ${String((error as Error).message)}`, '', { cause: error });
  }
  // an AI SDK provider's chunk its schema rejects (AI_TypeValidationError), or a response it
  // found invalid (AI_InvalidResponseDataError: "Response stream ended without a finish reason")
  if (isObject(error) && (error['name'] === 'AI_TypeValidationError' || error['name'] === 'AI_InvalidResponseDataError')) {
    return new MalformedStreamError(model, `the provider could not read the response: ${String(error['message']).slice(0, 200)}`, '', { cause: error });
  }
  if (isObject(error) && error['status'] === undefined && error['statusCode'] === undefined) {
    const status = impliedStatus(error);
    if (status !== undefined) {
      const type = apiErrorType(error);
      // an SDK's APIError keeps the body in `error`; a raw error object is the body
      const body = error instanceof Error ? error['error'] : error;
      return new HttpError(status, {}, body, { message: `'${model}' sent an error mid-stream: ${type ?? status}: ${apiMessage(error)}`, cause: error });
    }
  }
  if (error instanceof Error) return error;
  return new Error(`'${model}' sent an error mid-stream: ${typeof error === 'string' ? error : apiMessage(error)}`, { cause: error });
}

/** An SDK's or a framework's stream, opened lazily; its errors as {@link providerStreamError} says. */
export async function* iterate(model: string, open: () => PromiseLike<AsyncIterable<unknown>> | AsyncIterable<unknown>): AsyncGenerator<unknown> {
  // errors of the request itself (a status, a refused connection, an abort) pass as the SDK threw them
  const stream = await open();
  try {
    for await (const chunk of stream) yield chunk;
  } catch (error) {
    throw providerStreamError(model, error);
  }
}

/**
 * How one SDK's stream becomes a model (see {@link sdkModel}).
 *
 * @example
 * ```ts
 * const spec: SdkStreamSpec = {
 *   id: 'sdk',
 *   open: (req, signal) => client.stream(req, { signal }),
 *   toEvent: (c) => ({ event: 'message', data: JSON.stringify(c) }),
 *   decoder: openAIStreamDecoder,
 * };
 * ```
 */
export interface SdkStreamSpec {
  readonly id: string;
  /** Starts the request for a model request (with the signal and `maxRetries`). */
  readonly open: (request: ModelRequest, signal: AbortSignal) => PromiseLike<AsyncIterable<unknown>> | AsyncIterable<unknown>;
  /** One chunk the SDK parsed, as the SSE event it came in. */
  readonly toEvent: (chunk: unknown) => SseEvent;
  /** The event to push when the SDK's iteration ends (OpenAI's SDK swallows `[DONE]`). */
  readonly final?: SseEvent;
  readonly decoder: (model: string) => StreamDecoder<TurnEvent>;
}

/**
 * A {@link Model} over an SDK's stream: the request is made with the context's signal (so
 * unsubscribing aborts it) and the chunks go through the protocol's decoder.
 *
 * @example
 * ```ts
 * const model = sdkModel({
 *   id: 'anthropic:claude',
 *   open: (req, signal) => client.messages.create(body(req), { signal, maxRetries: 0 }),
 *   toEvent: (e) => ({ event: e.type, data: JSON.stringify(e) }),
 *   decoder: anthropicStreamDecoder,
 * });
 * ```
 */
export function sdkModel(spec: SdkStreamSpec): Model {
  const { id, open, toEvent, final, decoder } = spec;
  return {
    id,
    stream: (request, context): Observable<TurnEvent> => {
      const events = fromAsyncIterable(() => iterate(id, () => open(request, context.signal))).pipe(map(toEvent));
      return decodeEvents(final ? events.pipe(endWith(final)) : events, () => decoder(id));
    },
  };
}

/**
 * An SDK adapter's `params.model`: a non-empty string, or an `InvalidOptionError` naming the
 * adapter and `params.model`.
 *
 * @example
 * ```ts
 * sdkParamsModel('fromOpenAI', { model: 'gpt-4o' }); // 'gpt-4o'
 * ```
 * @throws {InvalidOptionError} for params that are not an object with a non-empty `model`.
 */
export function sdkParamsModel(adapter: string, params: unknown): string {
  const model = typeof params === 'object' && params !== null ? (params as { model?: unknown }).model : undefined;
  if (typeof model !== 'string' || model === '') throw new InvalidOptionError(adapter, 'params.model', model, 'a non-empty string');
  return model;
}

const optionProps = { id: NonEmptyString, maxRetries: NonNegativeInteger };

/**
 * Checks the common options, naming the adapter; returns the id (if given) and `maxRetries`
 * (default 0).
 *
 * @example
 * ```ts
 * sdkOptions('fromOpenAI', { id: 'primary' }); // { id: 'primary', maxRetries: 0 }
 * ```
 */
export function sdkOptions(adapter: string, options: SdkModelOptions | undefined): { id?: string; maxRetries: number } {
  const o = validateOptions(adapter, optionProps, options);
  return { ...(o.id === undefined ? {} : { id: o.id }), maxRetries: o.maxRetries ?? 0 };
}

/**
 * An adapter's consumer (the AI SDK's `streamText`, a LangChain chain) got part of an answer,
 * then the rxheal model started the answer over (a `reset`: a retry with `afterEmit:
 * 'restart'`, a `fallbackModel` with `midStream: 'restart'`). Those consumers can't take back
 * what they were given, and splicing the next attempt after it would corrupt the answer, so the
 * stream ends with this error instead (the restart is cancelled). Use `fallbackModel`'s
 * `midStream: 'continue'` (the continuation goes on in the same stream), or heal only before the
 * first part.
 *
 * @example
 * ```ts
 * streamText({ model, prompt, onError: ({ error }) => error instanceof StreamRestartError && console.warn(error.message) });
 * ```
 */
export class StreamRestartError extends Error {
  override readonly name = 'StreamRestartError';
  /** Why the model started over. */
  readonly reason: ResetEvent['reason'];
  /** What it started over with (`model:<id>`). */
  readonly target: string;

  constructor(model: string, reset: ResetEvent, consumer: string) {
    super(
      `'${model}' started its answer over (${reset.reason}: ${reset.target}) after part of it reached ${consumer}, which can't take it back: ` +
        "the stream ends here. Use fallbackModel's midStream: 'continue' to continue an answer in the same stream.",
    );
    this.reason = reset.reason;
    this.target = reset.target;
  }
}
