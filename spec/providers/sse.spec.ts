import { expect } from 'chai';
import { lastValueFrom, toArray } from 'rxjs';
import { classifyError } from '../../src/core/errors/classify.js';
import { HttpError, InvalidOptionError } from '../../src/core/errors/errors.js';
import { NonEmptyString } from '../../src/core/errors/options.js';
import {
  DEFAULT_MAX_EVENT_SIZE,
  IncompleteStreamError,
  MalformedStreamError,
  SseParser,
  checkProviderOptions,
  decodeSse,
  fetchSse,
  parseEventJson,
  parseSse,
  parseToolArguments,
  type SseEvent,
  type StreamDecoder,
} from '../../src/providers/sse.js';

const encoder = new TextEncoder();

/** Feeds `text` to a parser cut at the given offsets (in bytes); returns every event. */
function parseCut(text: string | Uint8Array, cuts: readonly number[]): SseEvent[] {
  const bytes = typeof text === 'string' ? encoder.encode(text) : text;
  const parser = new SseParser();
  const events: SseEvent[] = [];
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    events.push(...parser.push(bytes.subarray(from, cut)));
    from = cut;
  }
  events.push(...parser.end().events);
  return events;
}

function parseSseCapped(text: string, maxEventSize: number): SseEvent[] {
  const parser = new SseParser({ maxEventSize });
  return [...parser.push(text), ...parser.end().events];
}

function parseCutCapped(text: string, cut: number, maxEventSize: number): SseEvent[] {
  const parser = new SseParser({ maxEventSize });
  return [...parser.push(text.slice(0, cut)), ...parser.push(text.slice(cut)), ...parser.end().events];
}

/** A body that yields `chunks`, then stays open (or ends, with `end`); records cancellation. */
function body(chunks: readonly string[], options: { end?: boolean; failAfter?: Error } = {}) {
  const state = { cancelled: false, pulls: 0 };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      const chunk = chunks[state.pulls++];
      if (chunk !== undefined) return controller.enqueue(encoder.encode(chunk));
      if (options.failAfter) return controller.error(options.failAfter);
      if (options.end ?? true) return controller.close();
      return new Promise<void>(() => undefined); // never resolves: a stalled stream
    },
    cancel() {
      state.cancelled = true;
    },
  });
  return { stream, state };
}

function fakeFetch(response: () => Response) {
  const calls: { url: string; init: RequestInit }[] = [];
  const fetch = ((url: string, init: RequestInit) => {
    calls.push({ url, init });
    return Promise.resolve(response());
  }) as unknown as typeof globalThis.fetch;
  return { fetch, calls };
}

const request = { model: 'test-model', url: 'http://provider.test/v1/x', headers: { 'x-extra': '1' }, body: { hello: 'world' } };
const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('SSE', () => {
  describe('SseParser', () => {
    it('dispatches an event at a blank line: event type, data, default type "message"', () => {
      expect(parseSse('event: ping\ndata: {"type":"ping"}\n\ndata: [DONE]\n\n')).to.deep.equal([
        { event: 'ping', data: '{"type":"ping"}' },
        { event: 'message', data: '[DONE]' },
      ]);
    });

    it('joins several data lines with \\n and ignores comments', () => {
      expect(parseSse(': hello\ndata: a\n: between\ndata:b\ndata:  c\n\n')).to.deep.equal([{ event: 'message', data: 'a\nb\n c' }]);
    });

    it('accepts LF, CR and CRLF line endings, mixed', () => {
      expect(parseSse('data: a\r\n\r\ndata: b\r\rdata: c\n\nevent: x\r\ndata: d\n\r\n')).to.deep.equal([
        { event: 'message', data: 'a' },
        { event: 'message', data: 'b' },
        { event: 'message', data: 'c' },
        { event: 'x', data: 'd' },
      ]);
    });

    it('treats a CR at the end of a chunk and a LF at the start of the next as one line break', () => {
      const parser = new SseParser();
      expect(parser.push('data: a\r')).to.deep.equal([]);
      expect(parser.push('\ndata: b\r')).to.deep.equal([]);
      expect(parser.push('\n\r')).to.deep.equal([{ event: 'message', data: 'a\nb' }]);
      expect(parser.push('\n')).to.deep.equal([]);
    });

    it('gives the same events wherever the chunks are cut (every single and double cut, CRLF and UTF-8)', () => {
      const text = 'event: delta\r\ndata: {"text":"22 °C 🌞"}\r\n\r\n: c\r\ndata: x\r\ndata: y\r\n\r\ndata: [DONE]\r\n\r\n';
      const bytes = encoder.encode(text);
      const whole = parseSse(text);
      expect(whole).to.have.length(3);
      expect(whole[0]).to.deep.equal({ event: 'delta', data: '{"text":"22 °C 🌞"}' });
      for (let i = 0; i <= bytes.length; i++) {
        expect(parseCut(bytes, [i]), `cut at ${i}`).to.deep.equal(whole);
        for (let j = i; j <= bytes.length; j += 3) expect(parseCut(bytes, [i, j]), `cuts at ${i}, ${j}`).to.deep.equal(whole);
      }
      expect(parseCut(bytes, [...bytes.keys()].slice(1)), 'byte by byte').to.deep.equal(whole);
    });

    it('decodes multi-byte UTF-8 split across chunks', () => {
      const bytes = encoder.encode('data: 🌞é\n\n');
      expect(parseCut(bytes, [7, 8, 9, 11])).to.deep.equal([{ event: 'message', data: '🌞é' }]);
    });

    it('skips a leading BOM (bytes or text), only at the start', () => {
      expect(parseCut(new Uint8Array([0xef, 0xbb, 0xbf, ...encoder.encode('data: a\n\n')]), [1, 2])).to.deep.equal([{ event: 'message', data: 'a' }]);
      expect(parseSse('\ufeffdata: a\n\n')).to.deep.equal([{ event: 'message', data: 'a' }]);
    });

    it('strips one space after the colon; a field without a colon has an empty value', () => {
      expect(parseSse('data:  two\n\ndata\n\n')).to.deep.equal([
        { event: 'message', data: ' two' },
        { event: 'message', data: '' },
      ]);
    });

    it('drops an event without data, and resets the event type after each blank line', () => {
      expect(parseSse('event: lonely\n\ndata: x\n\n')).to.deep.equal([{ event: 'message', data: 'x' }]);
    });

    it('keeps the last event id and reads retry; ignores unknown fields', () => {
      expect(parseSse('id: 7\nretry: 1500\nfoo: bar\ndata: a\n\ndata: b\n\nretry: soon\nid\ndata: c\n\n')).to.deep.equal([
        { event: 'message', data: 'a', id: '7', retry: 1500 },
        { event: 'message', data: 'b', id: '7' },
        { event: 'message', data: 'c', id: '' },
      ]);
    });

    it('discards an unterminated last event at the end, and says so (pending)', () => {
      const parser = new SseParser();
      expect(parser.push('data: a\n\ndata: {"cut')).to.deep.equal([{ event: 'message', data: 'a' }]);
      expect(parser.end()).to.deep.equal({ events: [], pending: true });
      const clean = new SseParser();
      clean.push('data: a\n\n');
      expect(clean.end()).to.deep.equal({ events: [], pending: false });
      const fieldsOnly = new SseParser();
      fieldsOnly.push('data: a\n');
      expect(fieldsOnly.end().pending, 'a complete line but no blank line').to.equal(true);
    });
  });

  describe('SseParser on long lines and large events', () => {
    it('is linear on long lines: an 8 MiB line in 16 KiB chunks is scanned once (it took 144 s)', () => {
      const parser = new SseParser();
      const chunk = encoder.encode('x'.repeat(16 * 1024));
      expect(parser.push('data: ')).to.deep.equal([]);
      for (let i = 0; i < 512; i++) expect(parser.push(chunk)).to.deep.equal([]);
      const [event] = parser.push('\n\n');
      expect(event?.data.length).to.equal(8 * 1024 * 1024);
    });

    it('caps an event at 16 MiB by default (DEFAULT_MAX_EVENT_SIZE): past it, a MalformedStreamError naming maxEventSize (a provider fault: bad_gateway)', () => {
      expect(DEFAULT_MAX_EVENT_SIZE).to.equal(16 * 1024 * 1024);
      const parser = new SseParser({ model: 'openai:gpt' });
      const mib = 'y'.repeat(1024 * 1024);
      parser.push('data: ');
      for (let i = 0; i < 15; i++) parser.push(mib);
      let error: unknown;
      try {
        parser.push(mib);
      } catch (e) {
        error = e;
      }
      expect(error).to.be.instanceOf(MalformedStreamError);
      expect((error as MalformedStreamError).model).to.equal('openai:gpt');
      expect((error as Error).message).to.contain(`larger than maxEventSize (${16 * 1024 * 1024} characters)`);
      expect((error as MalformedStreamError).data).to.have.length.at.most(501);
      expect(classifyError(error)).to.deep.equal({ retryable: true, fallback: true, category: 'bad_gateway', strategy: 'exponential_backoff' });
    });

    it('counts the whole event: data lines, the event type and the line being read, whether chunks cut it or not', () => {
      expect(parseSseCapped('data: 12345\n\n', 6)).to.deep.equal([{ event: 'message', data: '12345' }]);
      expect(() => parseSseCapped('data: 123456\n\n', 6)).to.throw(MalformedStreamError, 'maxEventSize (6 characters)');
      expect(() => parseSseCapped('data: 12\ndata: 34\ndata: 5\n\n', 6)).to.throw(MalformedStreamError);
      expect(() => parseSseCapped('event: 1234567\ndata: x\n\n', 6)).to.throw(MalformedStreamError);
      for (let cut = 0; cut < 14; cut++) expect(() => parseCutCapped('data: 1234567\n\n', cut, 6), `cut at ${cut}`).to.throw(MalformedStreamError);
      // each event is counted on its own
      expect(parseSseCapped('data: 123\n\ndata: 456\n\n', 6)).to.have.length(2);
      // the events completed before an oversized one are returned; the next call throws
      const parser = new SseParser({ maxEventSize: 6 });
      expect(parser.push('data: a\n\ndata: 1234567')).to.deep.equal([{ event: 'message', data: 'a' }]);
      expect(() => parser.push('')).to.throw(MalformedStreamError);
      expect(() => parser.end()).to.throw(MalformedStreamError);
      // comments are not kept: they do not count
      expect(parseSseCapped(': a long comment\ndata: 1\n\n', 6)).to.deep.equal([{ event: 'message', data: '1' }]);
    });

    it('validates its options', () => {
      expect(() => new SseParser({ maxEventSize: 0 })).to.throw(InvalidOptionError, 'maxEventSize');
      expect(() => new SseParser({ maxEventSize: 1.5 })).to.throw(InvalidOptionError, 'maxEventSize');
      expect(() => new SseParser({ maxSize: 1 } as never)).to.throw(InvalidOptionError, 'maxSize');
    });
  });

  describe('helpers', () => {
    it('parseEventJson: an object, or a MalformedStreamError', () => {
      expect(parseEventJson('m', '{"a":1}')).to.deep.equal({ a: 1 });
      expect(() => parseEventJson('m', '{"a":')).to.throw(MalformedStreamError, 'invalid JSON');
      expect(() => parseEventJson('m', '[1]')).to.throw(MalformedStreamError, 'expected a JSON object');
      expect(() => parseEventJson('m', 'null')).to.throw(MalformedStreamError);
    });

    it('parseToolArguments: parsed JSON, {} for empty text, the raw text when not JSON', () => {
      expect(parseToolArguments('{"city":"NYC"}')).to.deep.equal({ city: 'NYC' });
      expect(parseToolArguments('  ')).to.deep.equal({});
      expect(parseToolArguments('{"city":"NY')).to.equal('{"city":"NY');
    });

    it('checkProviderOptions: unknown keys, bad values and missing required options throw InvalidOptionError', () => {
      const codecs = { model: NonEmptyString };
      expect(() => checkProviderOptions('x', codecs, { model: 'm' }, ['model'])).not.to.throw();
      expect(() => checkProviderOptions('x', codecs, {}, ['model'])).to.throw(InvalidOptionError, 'x: option "model" must be a non-empty string, got undefined');
      expect(() => checkProviderOptions('x', codecs, undefined, ['model'])).to.throw(InvalidOptionError);
      expect(() => checkProviderOptions('x', codecs, { model: '' }, [])).to.throw(InvalidOptionError);
      expect(() => checkProviderOptions('x', codecs, { modle: 'm' }, [])).to.throw(InvalidOptionError, 'modle');
    });
  });

  describe('stream errors, as the classifier sees them', () => {
    it('IncompleteStreamError: connection, retryable, fallback-able', () => {
      const error = new IncompleteStreamError('openai:gpt', 'no [DONE]', 3, { cause: new TypeError('terminated') });
      expect(error.name).to.equal('IncompleteStreamError');
      expect(error.message).to.equal("Connection closed before the stream of 'openai:gpt' finished (no [DONE]) after 3 events");
      expect(error.eventsReceived).to.equal(3);
      expect(classifyError(error)).to.deep.equal({ retryable: true, fallback: true, category: 'connection', strategy: 'exponential_backoff' });
    });

    it('MalformedStreamError: bad_gateway, retryable, fallback-able (not a programming error, though its cause is a SyntaxError)', () => {
      let cause: unknown;
      try {
        JSON.parse('{');
      } catch (e) {
        cause = e;
      }
      const error = new MalformedStreamError('m', 'invalid JSON', 'x'.repeat(600), { cause });
      expect(error.data).to.have.length(501);
      expect(classifyError(error)).to.deep.equal({ retryable: true, fallback: true, category: 'bad_gateway', strategy: 'exponential_backoff' });
    });
  });

  describe('fetchSse', () => {
    it('POSTs JSON with the SSE headers, and streams the events of the body', async () => {
      const { stream } = body(['data: a\n', '\ndata: ', 'b\n\n']);
      const { fetch, calls } = fakeFetch(() => new Response(stream, { headers: { 'content-type': 'text/event-stream' } }));
      const events = await lastValueFrom(fetchSse({ ...request, fetch }).pipe(toArray()));
      expect(events.map((e) => e.data)).to.deep.equal(['a', 'b']);
      expect(calls).to.have.length(1);
      expect(calls[0]?.url).to.equal(request.url);
      expect(calls[0]?.init.method).to.equal('POST');
      expect(calls[0]?.init.headers).to.deep.equal({ 'content-type': 'application/json', accept: 'text/event-stream', 'x-extra': '1' });
      expect(calls[0]?.init.body).to.equal('{"hello":"world"}');
    });

    it('turns a non-2xx response into an HttpError with status, headers and the body parsed from JSON', async () => {
      const { fetch } = fakeFetch(
        () =>
          new Response('{"error":{"message":"Rate limit reached","type":"requests"}}', {
            status: 429,
            headers: { 'retry-after': '2', 'content-type': 'application/json' },
          }),
      );
      const error = await lastValueFrom(fetchSse({ ...request, fetch })).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(HttpError);
      const http = error as HttpError;
      expect(http.status).to.equal(429);
      expect(http.body).to.deep.equal({ error: { message: 'Rate limit reached', type: 'requests' } });
      expect(http.message).to.equal("'test-model' answered HTTP 429: Rate limit reached");
      expect(classifyError(http, { now: 0 })).to.include({ category: 'rate_limit', retryable: true, retryAfterMs: 2000 });
    });

    it('keeps a text body as text', async () => {
      const { fetch } = fakeFetch(() => new Response('<html>Bad gateway</html>', { status: 502 }));
      const error = (await lastValueFrom(fetchSse({ ...request, fetch })).catch((e: unknown) => e)) as HttpError;
      expect(error.status).to.equal(502);
      expect(error.body).to.equal('<html>Bad gateway</html>');
      expect(error.message).to.equal("'test-model' answered HTTP 502: <html>Bad gateway</html>");
    });

    it('passes a network failure before the response on as is', async () => {
      const failure = new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
      const fetch = (() => Promise.reject(failure)) as unknown as typeof globalThis.fetch;
      const error = await lastValueFrom(fetchSse({ ...request, fetch })).catch((e: unknown) => e);
      expect(error).to.equal(failure);
      expect(classifyError(error).category).to.equal('connection');
    });

    it('turns a failure while reading the body into an IncompleteStreamError (cause: the read error)', async () => {
      const cause = new TypeError('terminated');
      const { stream } = body(['data: a\n\n'], { failAfter: cause });
      const { fetch } = fakeFetch(() => new Response(stream));
      const seen: string[] = [];
      const error = await new Promise((resolve) => fetchSse({ ...request, fetch }).subscribe({ next: (e) => seen.push(e.data), error: resolve }));
      expect(seen).to.deep.equal(['a']);
      expect(error).to.be.instanceOf(IncompleteStreamError);
      expect((error as IncompleteStreamError).cause).to.equal(cause);
      expect((error as IncompleteStreamError).eventsReceived).to.equal(1);
    });

    it('an event larger than maxEventSize → MalformedStreamError naming the model, and the body is cancelled', async () => {
      const { stream, state } = body(['data: a\n\ndata: 0123', '456789', 'abc'], { end: false });
      const { fetch } = fakeFetch(() => new Response(stream));
      const seen: string[] = [];
      const error = await new Promise((resolve) => fetchSse({ ...request, fetch, maxEventSize: 8 }).subscribe({ next: (e) => seen.push(e.data), error: resolve }));
      expect(seen).to.deep.equal(['a']);
      expect(error).to.be.instanceOf(MalformedStreamError);
      expect((error as Error).message).to.equal("Malformed event in the stream of 'test-model': an event is larger than maxEventSize (8 characters); if the provider really sends events this large, raise maxEventSize");
      await tick();
      expect(state.cancelled).to.equal(true);
    });

    it('completes when the body ends, even mid-event (the protocol decides whether that is complete)', async () => {
      const { stream } = body(['data: a\n\ndata: {"cut']);
      const { fetch } = fakeFetch(() => new Response(stream));
      expect((await lastValueFrom(fetchSse({ ...request, fetch }).pipe(toArray()))).map((e) => e.data)).to.deep.equal(['a']);
    });

    it('unsubscribing aborts the request and cancels the body reader at once', async () => {
      const { stream, state } = body(['data: a\n\n'], { end: false });
      const { fetch, calls } = fakeFetch(() => new Response(stream));
      const seen: string[] = [];
      const subscription = fetchSse({ ...request, fetch }).subscribe((e) => seen.push(e.data));
      for (let i = 0; i < 5 && seen.length === 0; i++) await tick();
      expect(seen).to.deep.equal(['a']);
      const signal = calls[0]?.init.signal as AbortSignal;
      expect(signal.aborted).to.equal(false);
      subscription.unsubscribe();
      expect(signal.aborted).to.equal(true);
      expect((signal.reason as DOMException).name).to.equal('AbortError');
      await tick();
      expect(state.cancelled).to.equal(true);
    });

    it('an outside signal aborts the request too (and errors with the AbortError)', async () => {
      const { stream } = body(['data: a\n\n'], { end: false });
      const fetch = ((_url: string, init: RequestInit) =>
        new Promise<Response>((resolve, reject) => {
          init.signal?.addEventListener('abort', () => reject(init.signal?.reason));
          setImmediate(() => resolve(new Response(stream)));
        })) as unknown as typeof globalThis.fetch;
      const outside = new AbortController();
      const result = lastValueFrom(fetchSse({ ...request, fetch, signal: outside.signal })).catch((e: unknown) => e);
      outside.abort(new DOMException('stop', 'AbortError'));
      const error = await result;
      expect((error as DOMException).name).to.equal('AbortError');
      expect(classifyError(error).category).to.equal('cancelled');
    });

    it('an outside signal already aborted: the request never starts', async () => {
      const fetch = ((_url: string, init: RequestInit) => (init.signal?.aborted ? Promise.reject(init.signal.reason) : Promise.resolve(new Response('')))) as unknown as typeof globalThis.fetch;
      const outside = new AbortController();
      outside.abort(new DOMException('gone', 'AbortError'));
      const error = await lastValueFrom(fetchSse({ ...request, fetch, signal: outside.signal })).catch((e: unknown) => e);
      expect((error as DOMException).message).to.equal('gone');
    });
  });

  describe('decodeSse', () => {
    class Upper implements StreamDecoder<string> {
      done = false;
      push(event: SseEvent): string[] {
        if (event.data === 'END') {
          this.done = true;
          return [];
        }
        if (event.data === 'BAD') throw new MalformedStreamError('m', 'bad', event.data);
        return [event.data.toUpperCase()];
      }
      end(): void {
        if (!this.done) throw new IncompleteStreamError('m', 'no END', 0);
      }
    }

    it("completes at the decoder's final event and cancels the rest of the body", async () => {
      const { stream, state } = body(['data: a\n\ndata: END\n\n'], { end: false });
      const { fetch } = fakeFetch(() => new Response(stream));
      expect(await lastValueFrom(decodeSse({ ...request, fetch }, () => new Upper()).pipe(toArray()))).to.deep.equal(['A']);
      await tick();
      expect(state.cancelled).to.equal(true);
    });

    it('errors with what push throws, and with what end throws when the body ends early', async () => {
      const bad = fakeFetch(() => new Response(body(['data: a\n\ndata: BAD\n\n']).stream));
      expect(await lastValueFrom(decodeSse({ ...request, fetch: bad.fetch }, () => new Upper())).catch((e: unknown) => e)).to.be.instanceOf(MalformedStreamError);
      const short = fakeFetch(() => new Response(body(['data: a\n\n']).stream));
      expect(await lastValueFrom(decodeSse({ ...request, fetch: short.fetch }, () => new Upper())).catch((e: unknown) => e)).to.be.instanceOf(IncompleteStreamError);
    });
  });
});
