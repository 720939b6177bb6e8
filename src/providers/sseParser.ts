/**
 * The Server-Sent Events parser every provider adapter shares: bytes or text → events, as the
 * WHATWG spec reads `text/event-stream`. One state machine ({@link SseParser}: the line being
 * read, the event being built, a CR that may pair with the next chunk's LF, the size cap), with
 * {@link parseSse} for a whole stream. Browser-safe: no Node imports.
 *
 * @module
 */
import { MalformedStreamError } from '../core/errors/errors.js';
import { NonEmptyString, PositiveInteger, validateOptions } from '../core/errors/options.js';

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
