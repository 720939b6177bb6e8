/**
 * Server-Sent Events over `fetch`: one parser (bytes → events, as the WHATWG spec reads them) and
 * one transport (`fetchSse`: POST JSON, read the body with a reader, cancel at once on
 * unsubscribe) shared by every provider adapter, plus the two errors a broken stream ends with.
 * Browser-safe: no Node imports.
 *
 * @module
 */
import { Observable } from 'rxjs';
import { HttpError, IncompleteStreamError, InvalidOptionError, MalformedStreamError } from '../core/errors/errors.js';
import { check, NonEmptyString, PositiveInteger, validateOptions } from '../core/errors/options.js';
import { impliedStatus } from '../core/errors/readError.js';

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
// parser
// ---------------------------------------------------------------------------------------------

/**
 * One dispatched Server-Sent Event.
 *
 * @example
 * ```ts
 * const e: SseEvent = { event: 'content_block_delta', data: '{"type":"content_block_delta"}' };
 * ```
 */
export interface SseEvent {
  /** The `event:` field; `'message'` when the event had none. */
  readonly event: string;
  /** The `data:` lines, joined with `\n`. */
  readonly data: string;
  /** The last event ID seen so far (`id:`), when any. */
  readonly id?: string;
  /** The reconnection time (`retry:`) given with this event, in ms. */
  readonly retry?: number;
}

/**
 * The default cap on one Server-Sent Event's size (16 MiB, in characters): an event (its `data:`
 * lines, or any one line) larger than this ends the stream with a {@link MalformedStreamError}
 * instead of growing memory without bound.
 *
 * @example
 * ```ts
 * new SseParser({ maxEventSize: 4 * DEFAULT_MAX_EVENT_SIZE }); // a provider known to send huge events
 * ```
 */
export const DEFAULT_MAX_EVENT_SIZE = 16 * 1024 * 1024;

/**
 * Options of {@link SseParser}.
 *
 * @example
 * ```ts
 * const options: SseParserOptions = { maxEventSize: 1024 * 1024, model: 'openai:gpt-4o' };
 * ```
 */
export interface SseParserOptions {
  /**
   * Largest event accepted, in characters (UTF-16 code units; for the ASCII JSON providers send,
   * bytes): the event's `data:` and `event:` values plus the line being read. Past it, `push`
   * throws a {@link MalformedStreamError} (a provider fault: `bad_gateway`, retryable and
   * fallback-able). Defaults to {@link DEFAULT_MAX_EVENT_SIZE} (16 MiB).
   */
  readonly maxEventSize?: number;
  /** Whose stream this is, for errors (`MalformedStreamError.model`). Defaults to `'sse'`. */
  readonly model?: string;
}

const parserProps = { maxEventSize: PositiveInteger, model: NonEmptyString };

/**
 * An incremental Server-Sent Events parser, as the WHATWG HTML spec reads `text/event-stream`:
 * UTF-8 (split code points across chunks are fine), lines ending in LF, CR or CRLF (a CRLF may be
 * split across chunks), `field: value` with one optional space after the colon, `:` comments
 * ignored, several `data:` lines joined with `\n`, a blank line dispatches, an event without data
 * is dropped, a leading BOM skipped. Chunk boundaries may fall anywhere.
 *
 * Linear time: each chunk's characters are scanned once, however long a line grows across chunks
 * (an 8 MiB line in 16 KiB chunks costs what one 8 MiB chunk does). An event larger than
 * `maxEventSize` (default 16 MiB) throws a {@link MalformedStreamError}.
 *
 * At the end of the stream an unterminated last event is discarded (as the spec says);
 * {@link SseParser.end} reports whether that happened (`pending`), so a caller can tell a
 * truncated stream from a finished one.
 *
 * @example
 * ```ts
 * const parser = new SseParser();
 * parser.push('event: ping\r\ndata: {"type"');   // []
 * parser.push(':"ping"}\r\n\r\n');              // [{ event: 'ping', data: '{"type":"ping"}' }]
 * parser.end();                                 // { events: [], pending: false }
 * ```
 * @throws {InvalidOptionError} at construction, for a bad option.
 */
export class SseParser {
  private readonly decoder = new TextDecoder('utf-8');
  private readonly maxEventSize: number;
  private readonly model: string;
  /** The line being read: its pieces so far (joined once, when the line ends). */
  private pending: string[] = [];
  private pendingSize = 0;
  private started = false;
  /** The previous chunk ended with CR: a LF starting the next one belongs to that line break. */
  private skipLF = false;
  private eventType = '';
  private data: string[] | undefined;
  /** Characters the current event holds (data and event values). */
  private eventSize = 0;
  private lastId: string | undefined;
  private retry: number | undefined;
  /** Fields seen since the last dispatch (an event in progress). */
  private partial = false;
  /** An oversized event found after some events of the same chunk: thrown by the next call. */
  private failure: MalformedStreamError | undefined;

  constructor(options?: SseParserOptions) {
    const o = validateOptions('SseParser', parserProps, options);
    this.maxEventSize = o.maxEventSize ?? DEFAULT_MAX_EVENT_SIZE;
    this.model = o.model ?? 'sse';
  }

  /**
   * Parses one chunk (bytes or text); returns the events it completed, in order. An event past
   * `maxEventSize` throws — after the events completed before it: those are returned, and the
   * error is thrown by the next `push` (even of `''`) or `end`.
   */
  push(chunk: Uint8Array | string): SseEvent[] {
    if (this.failure !== undefined) throw this.failure;
    const out: SseEvent[] = [];
    try {
      this.parse(chunk, out);
    } catch (error) {
      if (out.length === 0 || !(error instanceof MalformedStreamError)) throw error;
      this.failure = error;
    }
    return out;
  }

  private parse(chunk: Uint8Array | string, out: SseEvent[]): void {
    let text = typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    if (!this.started && text !== '') {
      this.started = true;
      // TextDecoder drops a BOM itself; text chunks are checked here
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    if (this.skipLF && text !== '') {
      if (text.charCodeAt(0) === 10) text = text.slice(1);
      this.skipLF = false;
    }
    let start = 0;
    const length = text.length;
    // only the new text is scanned: the line's earlier pieces are never looked at again
    for (let i = 0; i < length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      let line = text.slice(start, i);
      if (this.pending.length > 0) {
        this.pending.push(line);
        line = this.pending.join('');
        this.pending = [];
        this.pendingSize = 0;
      }
      this.line(line, out);
      if (c === 13) {
        if (i + 1 < length) {
          if (text.charCodeAt(i + 1) === 10) i++;
        } else {
          this.skipLF = true;
        }
      }
      start = i + 1;
    }
    if (start < length) {
      const rest = start === 0 ? text : text.slice(start);
      this.pending.push(rest);
      this.pendingSize += rest.length;
      this.checkSize();
    }
  }

  /**
   * Ends the stream: flushes the decoder and parses what is left. `events` are any events the
   * flush completed; `pending` is true when an unterminated event (or line) was discarded.
   */
  end(): { events: SseEvent[]; pending: boolean } {
    const events = this.push(this.decoder.decode());
    const pending = this.partial || this.pendingSize > 0;
    this.pending = [];
    this.pendingSize = 0;
    this.reset();
    return { events, pending };
  }

  /** Throws once the event being read (and its unfinished line) outgrows `maxEventSize`. */
  private checkSize(): void {
    if (this.eventSize + this.pendingSize <= this.maxEventSize) return;
    const head = this.data?.[0] ?? this.pending[0] ?? '';
    throw new MalformedStreamError(
      this.model,
      `an event is larger than maxEventSize (${this.maxEventSize} characters); if the provider really sends events this large, raise maxEventSize`,
      head.slice(0, 500),
    );
  }

  private line(line: string, out: SseEvent[]): void {
    if (line === '') {
      this.dispatch(out);
      return;
    }
    this.partial = true;
    if (line.charCodeAt(0) === 58 /* ':' */) return; // comment
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    switch (field) {
      case 'event':
        this.eventSize += value.length - this.eventType.length;
        this.eventType = value;
        this.checkSize();
        break;
      case 'data':
        (this.data ??= []).push(value);
        this.eventSize += value.length + 1;
        this.checkSize();
        break;
      case 'id':
        if (!value.includes('\0')) this.lastId = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.retry = Number(value);
        break;
      default:
      // unknown fields are ignored
    }
  }

  private dispatch(out: SseEvent[]): void {
    if (this.data !== undefined) {
      const event: { event: string; data: string; id?: string; retry?: number } = {
        event: this.eventType === '' ? 'message' : this.eventType,
        data: this.data.join('\n'),
      };
      if (this.lastId !== undefined) event.id = this.lastId;
      if (this.retry !== undefined) event.retry = this.retry;
      out.push(event);
    }
    this.reset();
  }

  private reset(): void {
    this.eventType = '';
    this.data = undefined;
    this.eventSize = 0;
    this.retry = undefined;
    this.partial = false;
  }
}

/**
 * Parses a whole `text/event-stream` (a string, or chunks of bytes or text) into its events.
 *
 * @example
 * ```ts
 * parseSse('data: {"a":1}\n\ndata: [DONE]\n\n'); // [{ event: 'message', data: '{"a":1}' }, { event: 'message', data: '[DONE]' }]
 * ```
 */
export function parseSse(input: string | Iterable<Uint8Array | string>): SseEvent[] {
  const parser = new SseParser();
  const events: SseEvent[] = [];
  for (const chunk of typeof input === 'string' ? [input] : input) events.push(...parser.push(chunk));
  events.push(...parser.end().events);
  return events;
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
 * const request: SseRequest = { model: 'openai:gpt-4o', url: 'https://api.openai.com/v1/chat/completions', headers: { authorization: 'Bearer sk-…' }, body: { stream: true } };
 * ```
 */
export interface SseRequest {
  /** The `Model.id`, for error messages. */
  readonly model: string;
  readonly url: string;
  /** Request headers; `content-type: application/json` and `accept: text/event-stream` are added. */
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

/** An HTTP failure as an {@link HttpError}: status, headers, and the body (parsed when JSON). */
async function httpError(model: string, response: Response): Promise<HttpError> {
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
 * POSTs a JSON request and streams the response's Server-Sent Events. A cold observable: each
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
      const response = await fetchImpl(request.url, {
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
export function decodeEvents<T, E = SseEvent>(events: Observable<E>, decoder: () => { readonly done: boolean; push(event: E): readonly T[]; end(): void }): Observable<T> {
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

// ---------------------------------------------------------------------------------------------
// options shared by the adapters
// ---------------------------------------------------------------------------------------------

/**
 * Option codec: an object whose values are all strings (headers).
 *
 * @example
 * ```ts
 * StringRecord.is({ 'x-api-key': 'k' }); // true
 * ```
 */
export const StringRecord = check('an object of string values', (u): u is Record<string, string> =>
  typeof u === 'object' && u !== null && !Array.isArray(u) && Object.values(u).every((v) => typeof v === 'string'),
);
/**
 * Option codec: any non-array object.
 *
 * @example
 * ```ts
 * PlainObject.is({ temperature: 0 }); // true
 * ```
 */
export const PlainObject = check('a plain object', isObject);
/**
 * Option codec: an absolute `http:` or `https:` URL.
 *
 * @example
 * ```ts
 * HttpUrl.is('http://127.0.0.1:8787/v1'); // true
 * HttpUrl.is('/v1'); // false
 * ```
 */
export const HttpUrl = check('an absolute http(s) URL', (u): u is string => {
  if (typeof u !== 'string') return false;
  try {
    return /^https?:$/.test(new URL(u).protocol);
  } catch {
    return false;
  }
});
/**
 * A base URL without its trailing slashes (`http://x/v1//` → `http://x/v1`), in linear time
 * (`/\/+$/` rescans a run of slashes from each of its positions).
 *
 * @example
 * ```ts
 * withoutTrailingSlashes('https://api.example.test/v1/'); // 'https://api.example.test/v1'
 * ```
 */
export function withoutTrailingSlashes(url: string): string {
  let end = url.length;
  while (end > 0 && url.charCodeAt(end - 1) === 47 /* '/' */) end--;
  return url.slice(0, end);
}

/**
 * Option codec: any string (an empty API key is allowed: "none").
 *
 * @example
 * ```ts
 * AnyString.is(''); // true
 * ```
 */
export const AnyString = check('a string', (u): u is string => typeof u === 'string');

/**
 * Validates an adapter's options (`validateOptions`), and that each of `required` is present.
 *
 * @example
 * ```ts
 * checkProviderOptions('anthropicModel', { model: NonEmptyString }, options, ['model']);
 * ```
 * @throws {InvalidOptionError} for an unknown key, a bad value or a missing required one.
 */
export function checkProviderOptions(target: string, codecs: Parameters<typeof validateOptions>[1], options: unknown, required: readonly string[]): void {
  validateOptions(target, codecs, options);
  for (const key of required) {
    if ((options as Record<string, unknown> | undefined)?.[key] === undefined) {
      throw new InvalidOptionError(target, key, undefined, codecs[key]?.name ?? 'present');
    }
  }
}
