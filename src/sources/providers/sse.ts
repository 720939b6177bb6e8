/**
 * Server-Sent Events over `fetch`: one parser (bytes → events, as the WHATWG spec reads them) and
 * one transport (`fetchSse`: POST JSON, read the body with a reader, cancel at once on
 * unsubscribe) shared by every provider adapter, plus the two errors a broken stream ends with.
 * Browser-safe: no Node imports.
 *
 * @module
 */
import { Observable } from 'rxjs';
import { HttpError, IncompleteStreamError, InvalidOptionError, MalformedStreamError } from '../../core/errors.js';
import { check, validateOptions } from '../../core/options.js';

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
 * An incremental Server-Sent Events parser, as the WHATWG HTML spec reads `text/event-stream`:
 * UTF-8 (split code points across chunks are fine), lines ending in LF, CR or CRLF (a CRLF may be
 * split across chunks), `field: value` with one optional space after the colon, `:` comments
 * ignored, several `data:` lines joined with `\n`, a blank line dispatches, an event without data
 * is dropped, a leading BOM skipped. Chunk boundaries may fall anywhere.
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
 */
export class SseParser {
  private readonly decoder = new TextDecoder('utf-8');
  private buffer = '';
  private started = false;
  /** The previous chunk ended with CR: a LF starting the next one belongs to that line break. */
  private skipLF = false;
  private eventType = '';
  private data: string[] | undefined;
  private lastId: string | undefined;
  private retry: number | undefined;
  /** Fields seen since the last dispatch (an event in progress). */
  private partial = false;

  /** Parses one chunk (bytes or text); returns the events it completed, in order. */
  push(chunk: Uint8Array | string): SseEvent[] {
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
    const out: SseEvent[] = [];
    const buffer = this.buffer + text;
    let start = 0;
    const length = buffer.length;
    for (let i = start; i < length; i++) {
      const c = buffer.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      this.line(buffer.slice(start, i), out);
      if (c === 13) {
        if (i + 1 < length) {
          if (buffer.charCodeAt(i + 1) === 10) i++;
        } else {
          this.skipLF = true;
        }
      }
      start = i + 1;
    }
    this.buffer = start === 0 ? buffer : buffer.slice(start);
    return out;
  }

  /**
   * Ends the stream: flushes the decoder and parses what is left. `events` are any events the
   * flush completed; `pending` is true when an unterminated event (or line) was discarded.
   */
  end(): { events: SseEvent[]; pending: boolean } {
    const events = this.push(this.decoder.decode());
    const pending = this.partial || this.buffer !== '';
    this.buffer = '';
    this.reset();
    return { events, pending };
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
        this.eventType = value;
        break;
      case 'data':
        (this.data ??= []).push(value);
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

export { IncompleteStreamError, MalformedStreamError } from '../../core/errors.js';

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
 * {@link IncompleteStreamError} (cause: the read error); an abort → the `AbortError`. The
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
      const parser = new SseParser();
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
  return new Observable<T>((subscriber) => {
    const state = decoder();
    return fetchSse(request).subscribe({
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
export const PlainObject = check('a plain object', (u): u is Record<string, unknown> => typeof u === 'object' && u !== null && !Array.isArray(u));
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
