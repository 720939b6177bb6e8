/** Server-Sent Events over fetch (src/providers/sse.ts): fetchSse, decodeSse, the stream errors and helpers; the adapters' option check (providerOptions.ts). */
import { expect } from 'chai';
import { lastValueFrom, toArray } from 'rxjs';
import { classifyError } from '../../src/core/errors/classify.js';
import { HttpError, InvalidOptionError } from '../../src/core/errors/errors.js';
import { NonEmptyString } from '../../src/core/errors/options.js';
import type { SseEvent } from '../../src/providers/sseParser.js';
import {
  IncompleteStreamError,
  MalformedStreamError,
  decodeSse,
  fetchSse,
  parseEventJson,
  parseToolArguments,
  type StreamDecoder,
} from '../../src/providers/sse.js';
import { checkProviderOptions } from '../../src/providers/providerOptions.js';

const encoder = new TextEncoder();

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
      expect(() => checkProviderOptions('x', codecs, {}, ['model'])).to.throw(
        InvalidOptionError,
        'x: option "model" must be a non-empty string, got undefined',
      );
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
      const error = await new Promise((resolve) =>
        fetchSse({ ...request, fetch, maxEventSize: 8 }).subscribe({ next: (e) => seen.push(e.data), error: resolve }),
      );
      expect(seen).to.deep.equal(['a']);
      expect(error).to.be.instanceOf(MalformedStreamError);
      expect((error as Error).message).to.equal(
        "Malformed event in the stream of 'test-model': an event is larger than maxEventSize (8 characters); if the provider really sends events this large, raise maxEventSize",
      );
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
      const fetch = ((_url: string, init: RequestInit) =>
        init.signal?.aborted ? Promise.reject(init.signal.reason) : Promise.resolve(new Response(''))) as unknown as typeof globalThis.fetch;
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
      expect(await lastValueFrom(decodeSse({ ...request, fetch: bad.fetch }, () => new Upper())).catch((e: unknown) => e)).to.be.instanceOf(
        MalformedStreamError,
      );
      const short = fakeFetch(() => new Response(body(['data: a\n\n']).stream));
      expect(await lastValueFrom(decodeSse({ ...request, fetch: short.fetch }, () => new Upper())).catch((e: unknown) => e)).to.be.instanceOf(
        IncompleteStreamError,
      );
    });
  });
});
