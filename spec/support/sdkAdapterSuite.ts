/**
 * The specs `rxheal/openai` and `rxheal/anthropic` share: the official SDK pointed at the local
 * provider (rxheal/server), every behaviour checked against rxheal's own `fetch` provider for the
 * same protocol.
 */
import { expect } from 'chai';
import { classifyError } from '../../src/core/errors/classify.js';
import { HttpError, InvalidOptionError, MalformedStreamError } from '../../src/core/errors/errors.js';
import type { TurnEvent } from '../../src/core/events/events.js';
import { streamModel, type Model } from '../../src/core/model/model.js';
import { fallbackModel } from '../../src/sources/fallbackModel.js';
import { startLocalProvider, type LocalProvider } from '../../src/server/index.js';
import {
  afterWeather,
  ask,
  cancelAfterFirstDelta,
  localProviders,
  RIVERS,
  RIVERS_ANSWER,
  textOf,
  turn,
  turnError,
  warmCacheTurns,
  WEATHER_TOOL,
} from './interop.js';

export interface SdkAdapterCase {
  /** The adapter over the SDK client pointed at `server`. */
  readonly make: (server: LocalProvider, options?: { id?: string; maxRetries?: number }) => Model;
  /** rxheal's own provider for the same protocol, pointed at `server`. */
  readonly reference: (server: LocalProvider) => Model;
  /** The adapter set to use the prompt cache, when `make`'s does not (Anthropic: with breakpoints). Defaults to `make`. */
  readonly cached?: (server: LocalProvider) => Model;
  /** The SDK's APIError class (the `cause` of a mid-stream error). */
  readonly apiError: abstract new (...args: never[]) => Error;
  /** The SDK's RateLimitError class. */
  readonly rateLimitError: abstract new (...args: never[]) => Error;
  /**
   * The error type the server sends mid-stream, and the status it implies; `sdkMayPassIt`: the SDK
   * may hand the error event on as an event (openai 6 does for the Responses API's `error` event,
   * 7.x throws an `APIError`), so the rxheal error need not have the SDK's as its cause.
   */
  readonly midStream: { readonly errorType: string; readonly status: number; readonly sdkMayPassIt?: boolean };
  /** What the adapter says for bad input. */
  readonly badInput: readonly (readonly [string, () => unknown])[];
}

/** Tool call ids differ per request (the server numbers them), and so do the item ids a protocol's call metadata carries: compare without them. */
const withoutIds = (events: readonly TurnEvent[]): unknown[] =>
  events.map((e) => {
    if (e.type !== 'tool-call') return e;
    // eslint-disable-next-line @typescript-eslint/no-unused-vars -- what differs per request
    const { providerMetadata: _metadata, ...call } = e;
    return { ...call, id: '<id>' };
  });

export function sdkAdapterSuite(c: SdkAdapterCase): void {
  const providers = localProviders();
  let server: LocalProvider;
  let backup: LocalProvider;
  let slow: LocalProvider;
  before(() => ({ server, backup, slow } = providers));

  describe('the prompt cache', () => {
    it("cached input: what the server's usage said, read into usage.cachedInputTokens (and cacheWriteTokens where written)", async () => {
      const { usages, records } = await warmCacheTurns((c.cached ?? c.make)(server), server);
      expect(records[1]!.cacheRead).to.be.greaterThan(0);
      expect(usages.map((u) => [u?.cachedInputTokens, u?.cacheWriteTokens])).to.deep.equal(records.map((r) => [r.cacheRead, r.cacheWrite]));
    });
  });

  describe('text, tool calls, usage, finish reasons: the events of rxheal’s own provider', () => {
    it('text: the same events (deltas, then finish stop with usage) as the fetch provider', async () => {
      const events = await turn(c.make(server), ask(RIVERS));
      expect(textOf(events)).to.equal(RIVERS_ANSWER);
      expect(events.at(-1)).to.deep.include({ type: 'finish', reason: 'stop' });
      expect(events.at(-1)).to.have.nested.property('usage.outputTokens', events.length - 1);
      expect(events).to.deep.equal(await turn(c.reference(server), ask(RIVERS)));
    });

    it('tool calls: one tool-call with parsed arguments, finish tool-calls, as the fetch provider', async () => {
      const events = await turn(c.make(server), ask("What's the weather in Paris?", [WEATHER_TOOL]));
      expect(withoutIds(events)).to.deep.equal([
        { type: 'tool-call', id: '<id>', name: 'get_weather', args: { city: 'Paris', units: 'celsius' } },
        { type: 'finish', reason: 'tool-calls', usage: (events.at(-1) as { usage: unknown }).usage },
      ]);
      expect(withoutIds(events)).to.deep.equal(withoutIds(await turn(c.reference(server), ask("What's the weather in Paris?", [WEATHER_TOOL]))));
      // the tool went out as the protocol's tool definition
      expect(JSON.stringify(server.requests.at(-2)?.body))
        .to.contain('get_weather')
        .and.contain('"city"');
    });

    it('a conversation with a system message, a tool call and its result reaches the model: it answers from the result', async () => {
      const events = await turn(c.make(server), afterWeather('call_1'));
      expect(textOf(events)).to.equal('It is 22 °C and sunny in Paris.');
      expect(events.at(-1)).to.deep.include({ type: 'finish', reason: 'stop' });
      expect(JSON.stringify(server.requests.at(-1)?.body))
        .to.contain('Be brief.')
        .and.contain('call_1');
    });

    it("finish reason 'length' (a model cut at its token limit)", async () => {
      const capped = await startLocalProvider({ tokenDelayMs: 0, assistant: () => ({ text: 'Rivers are', finishReason: 'length' }) });
      try {
        const events = await turn(c.make(capped), ask(RIVERS));
        expect(textOf(events)).to.equal('Rivers are');
        expect(events.at(-1)).to.deep.include({ type: 'finish', reason: 'length' });
      } finally {
        await capped.close();
      }
    });
  });

  describe("the SDK's own retries are off (maxRetries 0 per request)", () => {
    it('a 503 makes one request, not the SDK’s default three', async () => {
      server.faults.set({ kind: 'status', status: 503, times: 3 });
      const before = server.requests.length;
      const error = await turnError(c.make(server), ask(RIVERS));
      expect(classifyError(error)).to.deep.include({ category: 'service_unavailable', retryable: true });
      expect(server.requests.length - before).to.equal(1);
    });

    it('{ maxRetries: 1 } gives the SDK its retry back', async () => {
      server.faults.set({ kind: 'status', status: 503, retryAfterMs: 1, times: 1 });
      const before = server.requests.length;
      const events = await turn(c.make(server, { maxRetries: 1 }), ask(RIVERS));
      expect(textOf(events)).to.equal(RIVERS_ANSWER);
      expect(server.requests.length - before).to.equal(2);
    });
  });

  describe('errors', () => {
    it('a 429 with retry-after: the SDK’s RateLimitError as it threw it, retry-after read', async () => {
      server.faults.set({ kind: 'status', status: 429, retryAfter: 3, times: 1 });
      const error = await turnError(c.make(server), ask(RIVERS));
      expect(error).to.be.instanceOf(c.rateLimitError);
      expect(classifyError(error)).to.deep.include({ category: 'rate_limit', retryable: true, retryAfterMs: 3000 });
    });

    it('an error event mid-stream, after text was delivered: an HttpError with the status its type implies, the SDK’s APIError as cause', async () => {
      server.faults.set({ kind: 'stream-error', afterChunks: 3, errorType: c.midStream.errorType, message: 'Something went wrong', times: 1 });
      const seen: TurnEvent[] = [];
      const error = await new Promise<unknown>((resolve) => streamModel(c.make(server), ask(RIVERS)).subscribe({ next: (e) => seen.push(e), error: resolve }));
      expect(textOf(seen)).to.equal(RIVERS_ANSWER.split(' ').slice(0, 3).join(' '));
      expect(error).to.be.instanceOf(HttpError).and.have.property('status', c.midStream.status);
      const cause = (error as Error).cause;
      if (!(c.midStream.sdkMayPassIt === true && cause === undefined)) expect(cause).to.be.instanceOf(c.apiError).and.have.property('status', undefined);
      expect(classifyError(error)).to.deep.include({ retryable: true, fallback: true });
    });

    it('a malformed chunk: a MalformedStreamError (the SDK’s SyntaxError as cause), retryable', async () => {
      server.faults.set({ kind: 'malformed', afterChunks: 2, times: 1 });
      const error = await turnError(c.make(server), ask(RIVERS));
      expect(error).to.be.instanceOf(MalformedStreamError);
      expect((error as Error).cause).to.be.instanceOf(SyntaxError);
      expect(classifyError(error)).to.deep.include({ category: 'bad_gateway', retryable: true, fallback: true });
    });

    it('the connection reset mid-stream: an error classified connection (never a short answer)', async () => {
      server.faults.set({ kind: 'reset', afterChunks: 3, times: 1 });
      const error = await turnError(c.make(server), ask(RIVERS));
      expect(classifyError(error)).to.deep.include({ category: 'connection', retryable: true });
    });

    for (const [label, fn] of c.badInput) {
      it(`bad input at once: ${label}`, () => {
        expect(fn).to.throw(InvalidOptionError);
      });
    }
  });

  describe('cancellation', () => {
    it('unsubscribing mid-answer aborts the request: the server sees the client close it', async () => {
      const record = await cancelAfterFirstDelta(streamModel(c.make(slow), ask(RIVERS)), slow);
      expect(record.end).to.equal('client-closed');
      expect(record.chunks).to.be.below(RIVERS_ANSWER.split(' ').length);
    });
  });

  describe('healing', () => {
    it('a dead primary: fallbackModel hands the request to the backup, which answers in full', async () => {
      server.faults.set({ kind: 'down' });
      const model = fallbackModel([c.make(server, { id: 'primary' }), c.make(backup, { id: 'backup' })]);
      const events = await turn(model, ask(RIVERS));
      expect(textOf(events)).to.equal(RIVERS_ANSWER);
      expect(events.filter((e) => e.type === 'reset')).to.deep.equal([]);
    });

    it("a connection reset mid-answer with midStream 'continue': the backup continues it, nothing lost or doubled", async () => {
      server.faults.set({ kind: 'reset', afterChunks: 6, times: 1 });
      const model = fallbackModel([c.make(server, { id: 'primary' }), c.make(backup, { id: 'backup' })], { midStream: 'continue' });
      const events = await turn(model, ask(RIVERS));
      expect(textOf(events)).to.equal(RIVERS_ANSWER);
      expect(events.filter((e) => e.type === 'reset')).to.deep.equal([]);
      // the backup was asked to continue the partial answer
      expect(JSON.stringify(backup.requests.at(-1)?.body)).to.contain('was cut off');
    });
  });
}
