/**
 * Server-Sent Events over `fetch`: one transport (`fetchSse`: POST JSON, read the body with a
 * reader, cancel at once on unsubscribe) and the decoding of a stream's events by a protocol's
 * decoder, shared by every provider adapter, plus the two errors a broken stream ends with. The
 * parser (bytes → events) is in sseParser.ts, the adapters' option codecs in providerOptions.ts.
 * Browser-safe: no Node imports.
 *
 * @module
 */
import { Observable } from 'rxjs';
import { HttpError, IncompleteStreamError, MalformedStreamError } from '../core/errors/errors.js';
import { impliedStatus } from '../core/errors/readError.js';
import { SseParser, type SseEvent } from './sseParser.js';

/**
 * Whether `u` is an object and not an array: what every field of a provider's JSON is checked
 * with before it is read.
 *
 * @example
 * ```ts
 * isObject({ delta: {} }); // true
 * isObject([1]); // false
 * ```
 */
export function isObject(u: unknown): u is Record<string, unknown> {
  return typeof u === 'object' && u !== null && !Array.isArray(u);
}

/**
 * An error the provider sent mid-stream, after its `200` (an OpenAI-style `{ error }` chunk,
 * vLLM's `{ object: 'error' }`, Anthropic's `event: error`): an `HttpError` with the status the
 * body implies — a numeric `code`, else the error's type (`overloaded_error` → 529…), else 500 —
 * and the whole body, so the classifier reads it as it reads the same error before the stream.
 *
 * @example
 * ```ts
 * throw midStreamError('gpt', { error: { type: 'server_error', message: 'boom' } }, 'boom'); // HttpError 500
 * ```
 */
export function midStreamError(model: string, body: Record<string, unknown>, detail: string): HttpError {
  return new HttpError(impliedStatus(body) ?? 500, {}, body, { message: `'${model}' sent an error mid-stream: ${detail}` });
}

// ---------------------------------------------------------------------------------------------
// errors
// ---------------------------------------------------------------------------------------------

export { IncompleteStreamError, MalformedStreamError } from '../core/errors/errors.js';

/**
 * Parses one event's JSON data; bad JSON or a non-object becomes a {@link MalformedStreamError}.
 *
 * @example
 * ```ts
 * parseEventJson('openai:gpt-4o', '{"choices":[]}'); // { choices: [] }
 * ```
 */
export function parseEventJson(model: string, data: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch (cause) {
    throw new MalformedStreamError(model, 'invalid JSON', data, { cause });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new MalformedStreamError(model, 'expected a JSON object', data);
  }
  return value as Record<string, unknown>;
}

// ---------------------------------------------------------------------------------------------
// transport
// ---------------------------------------------------------------------------------------------

/**
 * What {@link fetchSse} sends.
 *
 * @example
 * ```ts
 * const request: SseRequest = {
 *   model: 'openai:gpt-4o',
 *   url: 'https://api.openai.com/v1/chat/completions',
 *   headers: { authorization: 'Bearer sk-…' },
 *   body: { stream: true },
 * };
 * ```
 */
export interface SseRequest {
  /** The `Model.id`, for error messages. */
  readonly model: string;
  readonly url: string;
  /** `'POST'` (the default) sends `body` as JSON; `'GET'` sends no body (a stream picked up again: `GET /responses/{id}?stream=true`). */
  readonly method?: 'POST' | 'GET';
  /** Request headers; `accept: text/event-stream` is added, and `content-type: application/json` for a POST. */
  readonly headers: Readonly<Record<string, string>>;
  /** The JSON body. */
  readonly body: unknown;
  /** The `fetch` to use. Defaults to the global `fetch`, looked up per call. */
  readonly fetch?: typeof fetch;
  /** An outside signal that also aborts the request (e.g. `Model.stream`'s context signal). */
  readonly signal?: AbortSignal;
  /** The largest event accepted, in characters (see {@link SseParserOptions}). Defaults to {@link DEFAULT_MAX_EVENT_SIZE} (16 MiB). */
  readonly maxEventSize?: number;
}

/**
 * An HTTP failure as an {@link HttpError}: status, headers, and the body (parsed when JSON).
 *
 * @example
 * ```ts
 * if (!response.ok) throw await httpError('gpt', response);
 * ```
 */
export async function httpError(model: string, response: Response): Promise<HttpError> {
  let text = '';
  try {
    text = await response.text();
  } catch {
    // the body could not be read: status and headers still say what happened
  }
  let body: unknown = text === '' ? undefined : text;
  let detail = text.length > 200 ? text.slice(0, 200) + '…' : text;
  try {
    body = JSON.parse(text) as unknown;
    const error = (body as { error?: unknown }).error;
    const message = typeof error === 'string' ? error : (error as { message?: unknown } | undefined)?.message;
    if (typeof message === 'string') detail = message;
  } catch {
    // not JSON: keep the text
  }
  return new HttpError(response.status, response.headers, body, {
    message: `'${model}' answered HTTP ${response.status}${detail ? `: ${detail}` : ''}`,
  });
}

/**
 * POSTs a JSON request (or GETs a stream, `method: 'GET'`) and streams the response's Server-Sent Events. A cold observable: each
 * subscription makes one request; unsubscribing aborts the request and cancels the body reader
 * at once (not at the next chunk), so the server sees the connection close.
 *
 * Errors: a non-2xx response → {@link HttpError} (status, headers, body parsed when JSON, so
 * `retry-after` and `x-should-retry` reach the classifier); a network failure before the
 * response → `fetch`'s own error, as is; a failure while reading the body →
 * {@link IncompleteStreamError} (cause: the read error); an event larger than `maxEventSize`
 * (default 16 MiB) → {@link MalformedStreamError}; an abort → the `AbortError`. The
 * observable completes when the body ends, even if the last event was unterminated: the
 * protocol decides whether the stream was complete (`pending` is not surfaced here).
 *
 * @example
 * ```ts
 * fetchSse({ model: 'local', url: 'http://127.0.0.1:8787/v1/chat/completions', headers: {}, body: { model: 'local', stream: true, messages } })
 *   .subscribe((e) => console.log(e.event, e.data));
 * ```
 */
export function fetchSse(request: SseRequest): Observable<SseEvent> {
  return new Observable<SseEvent>((subscriber) => {
    const controller = new AbortController();
    const outer = request.signal;
    let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
    let received = 0;
    const onAbort = (): void => {
      controller.abort(outer?.reason);
      // a custom fetch may ignore the signal: cancelling the reader ends a pending read anyway
      reader?.cancel().catch(() => undefined);
    };
    if (outer?.aborted) onAbort();
    else outer?.addEventListener('abort', onAbort, { once: true });

    const run = async (): Promise<void> => {
      const fetchImpl = request.fetch ?? globalThis.fetch;
      const response =
        request.method === 'GET'
          ? await fetchImpl(request.url, { method: 'GET', headers: { accept: 'text/event-stream', ...request.headers }, signal: controller.signal })
          : await fetchImpl(request.url, {
              method: 'POST',
              headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...request.headers },
              body: JSON.stringify(request.body),
              signal: controller.signal,
            });
      if (!response.ok) throw await httpError(request.model, response);
      if (response.body === null) throw new IncompleteStreamError(request.model, 'the response has no body', 0);
      reader = response.body.getReader();
      if (controller.signal.aborted) {
        reader.cancel().catch(() => undefined);
        throw controller.signal.reason;
      }
      const parser = new SseParser({ model: request.model, maxEventSize: request.maxEventSize });
      for (;;) {
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (cause) {
          if (controller.signal.aborted) throw cause;
          throw new IncompleteStreamError(request.model, `reading failed: ${(cause as Error | undefined)?.message ?? String(cause)}`, received, { cause });
        }
        if (subscriber.closed) return;
        if (controller.signal.aborted) throw controller.signal.reason;
        const events = chunk.done ? parser.end().events : parser.push(chunk.value);
        for (const event of events) {
          if (subscriber.closed) return;
          received++;
          subscriber.next(event);
        }
        // an oversized event after those: the parser throws it now
        if (!chunk.done) parser.push('');
        if (chunk.done) {
          subscriber.complete();
          return;
        }
      }
    };
    run().catch((error: unknown) => {
      if (!subscriber.closed) subscriber.error(error);
    });

    return () => {
      outer?.removeEventListener('abort', onAbort);
      if (!controller.signal.aborted) controller.abort(new DOMException('The consumer unsubscribed', 'AbortError'));
      // cancel() rejects if the stream already errored; nothing to do about it here
      reader?.cancel().catch(() => undefined);
    };
  });
}

/**
 * A tool call's assembled argument text, parsed; `{}` for empty text; the raw text itself when
 * it is not valid JSON (the tool's codec then rejects it, and reflection can ask the model to
 * correct it).
 *
 * @example
 * ```ts
 * parseToolArguments('{"city":"NYC"}'); // { city: 'NYC' }
 * parseToolArguments('{"city":"NY');    // '{"city":"NY'
 * ```
 */
export function parseToolArguments(text: string): unknown {
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/**
 * A token count under `holder` (a usage's `…_details` object), when it says something: a finite
 * number above zero; `undefined` otherwise (absent, zero, not a number).
 *
 * @example
 * ```ts
 * tokenDetail({ cached_tokens: 1024 }, 'cached_tokens'); // 1024
 * tokenDetail({ cached_tokens: 0 }, 'cached_tokens'); // undefined
 * ```
 */
export function tokenDetail(holder: unknown, key: string): number | undefined {
  const value = isObject(holder) ? holder[key] : undefined;
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : undefined;
}

/**
 * Turns one protocol's events into values (model events), stream by stream: `push` returns what
 * an event completes and sets `done` at the protocol's final event; `end` is called when the body
 * ended without it and throws the error that says so.
 *
 * @example
 * ```ts
 * class Lines implements StreamDecoder<string> {
 *   done = false;
 *   push(e: SseEvent) { if (e.data === 'END') { this.done = true; return []; } return [e.data]; }
 *   end() { if (!this.done) throw new IncompleteStreamError('lines', 'no END', 0); }
 * }
 * ```
 */
export interface StreamDecoder<T> {
  readonly done: boolean;
  push(event: SseEvent): readonly T[];
  end(): void;
}

/**
 * {@link fetchSse} decoded by a fresh {@link StreamDecoder} per subscription: completes at the
 * decoder's final event (cancelling the rest of the body), errors with what `push` or `end`
 * throws.
 *
 * @example
 * ```ts
 * const turn$ = decodeSse(request, () => new MyProtocolDecoder());
 * ```
 */
export function decodeSse<T>(request: SseRequest, decoder: () => StreamDecoder<T>): Observable<T> {
  return decodeEvents(fetchSse(request), decoder);
}

/**
 * Any stream of events decoded by a fresh decoder per subscription — the events of
 * {@link fetchSse}, those an SDK parsed itself (`rxheal/openai`, `rxheal/anthropic`), a chat
 * model's chunks (`rxheal/langchain`): completes at the decoder's final event (unsubscribing from
 * the rest), errors with what `push` or `end` throws. The decoder is a {@link StreamDecoder}, or
 * the same shape over another kind of event.
 *
 * @example
 * ```ts
 * const turn$ = decodeEvents(sdkChunks$.pipe(map((c) => ({ event: 'message', data: JSON.stringify(c) }))), () => openAIStreamDecoder('sdk'));
 * ```
 */
export function decodeEvents<T, E = SseEvent>(
  events: Observable<E>,
  decoder: () => { readonly done: boolean; push(event: E): readonly T[]; end(): void },
): Observable<T> {
  return new Observable<T>((subscriber) => {
    const state = decoder();
    return events.subscribe({
      next: (event) => {
        let out: readonly T[];
        try {
          out = state.push(event);
        } catch (error) {
          subscriber.error(error);
          return;
        }
        for (const value of out) subscriber.next(value);
        if (state.done) subscriber.complete();
      },
      error: (error: unknown) => subscriber.error(error),
      complete: () => {
        try {
          state.end();
        } catch (error) {
          subscriber.error(error);
          return;
        }
        subscriber.complete();
      },
    });
  });
}
