/**
 * The classifier on errors as each real client throws them (not as a test imagines them): the official
 * `openai` (6.x and 7.x) and `@anthropic-ai/sdk` (1.x) clients, and the AI SDK 6 and 7 providers
 * (`@ai-sdk/openai-compatible`, `@ai-sdk/openai`, `@ai-sdk/anthropic`, `generateText`), pointed at
 * the local provider of `rxheal/server` with its faults (malformed chunk, mid-stream error event,
 * 429 with retry-after, 503, a dead port, a reset, a slow first byte) or aborted. Each row makes
 * the client throw for real; the few rows marked "hand-built" construct the client's own error
 * class for a shape the server can't produce. The rows of the `openai` SDK and of the AI SDK run
 * once per major (spec/support/kits.ts: the 7.x lines on Node ≥ 22); the others once.
 */
import type { LanguageModelV3 } from '@ai-sdk/provider';
import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import { classifyError, type ErrorCategory } from '../../../src/core/errors/classify.js';
import { startLocalProvider, type Fault, type LocalProvider } from '../../../src/server/index.js';
import { ChatOpenAI } from '@langchain/openai';
import { lastValueFrom } from 'rxjs';
import { streamModel } from '../../../src/core/model/model.js';
import { openAICompatibleModel } from '../../../src/providers/openai.js';
import { AI_SDK_KITS, OPENAI_KITS, reportSkippedMajors, type AiSdkKit, type OpenAIKit } from '../../support/kits.js';
import { chatChunk, fixtureFetch, OPENROUTER_ERROR_502, sseBody } from '../../support/providerFakes.js';

interface Expected {
  readonly category: ErrorCategory;
  readonly retryable: boolean;
  readonly fallback: boolean;
  readonly retryAfterMs?: number;
}

const BAD_GATEWAY: Expected = { category: 'bad_gateway', retryable: true, fallback: true };
const PROGRAMMING: Expected = { category: 'programming', retryable: false, fallback: false };
const CANCELLED: Expected = { category: 'cancelled', retryable: false, fallback: false };
const CONNECTION: Expected = { category: 'connection', retryable: true, fallback: true };
const SERVER_ERROR: Expected = { category: 'server_error', retryable: true, fallback: true };
const UNAVAILABLE: Expected = { category: 'service_unavailable', retryable: true, fallback: true };

/** OpenAI's own text for a mid-stream `server_error` (no status on the error). */
const OPENAI_SERVER_ERROR =
  'The server had an error processing your request. Sorry about that! You can retry your request, or contact us through our help center at help.openai.com if the error persists.';

/** What `fn` throws (or rejects with); fails the test when it doesn't. */
async function thrown(fn: () => Promise<unknown>): Promise<unknown> {
  try {
    await fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected the client to throw');
}

/** Verdict fields to compare (retryAfterMs only when expected). */
function verdictOf(error: unknown, expected: Expected): Expected {
  const v = classifyError(error);
  return expected.retryAfterMs === undefined
    ? { category: v.category, retryable: v.retryable, fallback: v.fallback }
    : { category: v.category, retryable: v.retryable, fallback: v.fallback, retryAfterMs: v.retryAfterMs! };
}

describe('classifyError on errors as real clients throw them', function () {
  this.timeout(20_000);
  let server: LocalProvider;

  before(async () => {
    server = await startLocalProvider({ tokenDelayMs: 0 });
  });
  after(() => server.close());
  afterEach(() => server.faults.clear());

  const anthropic = () => new Anthropic({ baseURL: server.anthropicBaseURL, apiKey: 'test', maxRetries: 0, logLevel: 'off' });
  const messages = [{ role: 'user' as const, content: 'Tell me something nice about rivers' }];

  /** Streams one message with the official Anthropic SDK, to the end. */
  const anthropicStream = (signal?: AbortSignal) => async () => {
    const stream = await anthropic().messages.create({ model: 'local', max_tokens: 256, messages, stream: true }, signal ? { signal } : {});
    for await (const event of stream) void event;
  };
  const aborted = (): AbortSignal => {
    const controller = new AbortController();
    controller.abort();
    return controller.signal;
  };

  interface Row {
    readonly item: 6 | 7 | 8 | 9;
    readonly label: string;
    readonly fault?: Fault;
    readonly produce: () => () => Promise<unknown>;
    readonly expected: Expected;
    /** The row needs neither the openai SDK nor the AI SDK: it runs once. */
    readonly kitFree?: true;
  }

  /**
   * The rows for one major of the openai SDK and of the AI SDK; `first`: with the rows that need
   * neither (the Anthropic SDK's, fetch's), once.
   */
  const rowsOf = (oa: OpenAIKit, ai: AiSdkKit, first: boolean): Row[] => {
    const openai = (options: { timeout?: number } = {}) =>
      new oa.OpenAI({ baseURL: server.openAIBaseURL, apiKey: 'test', maxRetries: 0, logLevel: 'off', ...options });
    /** Streams one chat completion with the official OpenAI SDK, to the end. */
    const openaiStream =
      (signal?: AbortSignal, options: { timeout?: number } = {}) =>
      async () => {
        const stream = await openai(options).chat.completions.create({ model: 'local', messages, stream: true }, signal ? { signal } : {});
        for await (const chunk of stream) void chunk;
      };
    const aiModels: Record<string, () => LanguageModelV3> = {
      '@ai-sdk/openai-compatible': () => ai.createOpenAICompatible({ name: 'local', baseURL: server.openAIBaseURL, includeUsage: true })('local'),
      '@ai-sdk/openai (chat)': () => ai.createOpenAI({ baseURL: server.openAIBaseURL, apiKey: 'test' }).chat('local'),
      '@ai-sdk/anthropic': () => ai.createAnthropic({ baseURL: `${server.anthropicBaseURL}/v1`, apiKey: 'test' })('local'),
    };
    /** A provider's `doStream`: the first `error` part's error, or what the call or the stream threw. */
    const aiStream = (model: () => LanguageModelV3, signal?: AbortSignal) => async () => {
      const { stream } = await model().doStream({
        prompt: [{ role: 'user', content: [{ type: 'text', text: messages[0]!.content }] }],
        ...(signal ? { abortSignal: signal } : {}),
      });
      const reader = stream.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        if (value.type === 'error') {
          await reader.cancel();
          throw value.error;
        }
      }
    };

    const malformed: Fault = { kind: 'malformed', afterChunks: 2, times: 1 };
    const rows: Row[] = [
      // 6. a malformed chunk: a provider fault, not a bug in the caller
      { item: 6, label: 'openai SDK, malformed chunk → SyntaxError from the SDK', fault: malformed, produce: () => openaiStream(), expected: BAD_GATEWAY },
      {
        item: 6,
        kitFree: true,
        label: 'anthropic SDK, malformed chunk → SyntaxError from the SDK',
        fault: malformed,
        produce: () => anthropicStream(),
        expected: BAD_GATEWAY,
      },
      ...Object.entries(aiModels).map(([name, model]): Row => ({
        item: 6,
        label: `${name}, malformed chunk → error part AI_JSONParseError`,
        fault: malformed,
        produce: () => aiStream(model),
        expected: BAD_GATEWAY,
      })),
      {
        item: 6,
        kitFree: true,
        label: "fetch's Response.json() on a malformed body → SyntaxError from undici",
        produce: () => () =>
          fetch(`${server.url}/v1/chat/completions`, { method: 'POST', body: '{}' }).then(async () => new Response('{"answer": "Hel').json()),
        expected: BAD_GATEWAY,
      },
      // 7. mid-stream error events: no status, the type says what it is
      {
        item: 7,
        label: "openai SDK, mid-stream error { type: 'server_error' } (OpenAI's message) → APIError without status",
        fault: { kind: 'stream-error', afterChunks: 2, errorType: 'server_error', message: OPENAI_SERVER_ERROR, times: 1 },
        produce: () => openaiStream(),
        expected: SERVER_ERROR,
      },
      {
        item: 7,
        label: "openai SDK, mid-stream error { type: 'rate_limit_exceeded' } → APIError without status",
        fault: {
          kind: 'stream-error',
          afterChunks: 2,
          errorType: 'rate_limit_error',
          message: 'Request limit reached for gpt-4o on requests per min',
          times: 1,
        },
        produce: () => openaiStream(),
        expected: { category: 'rate_limit', retryable: true, fallback: true },
      },
      {
        item: 7,
        kitFree: true,
        label: "anthropic SDK, mid-stream event: error { type: 'overloaded_error' } → APIError without status",
        fault: { kind: 'stream-error', afterChunks: 2, errorType: 'overloaded_error', message: 'Overloaded', times: 1 },
        produce: () => anthropicStream(),
        expected: UNAVAILABLE,
      },
      {
        item: 7,
        kitFree: true,
        label: "anthropic SDK, mid-stream event: error { type: 'api_error' } → APIError without status",
        fault: { kind: 'stream-error', afterChunks: 2, errorType: 'api_error', message: 'Something went wrong on our side', times: 1 },
        produce: () => anthropicStream(),
        expected: SERVER_ERROR,
      },
      {
        item: 7,
        kitFree: true,
        label: "anthropic SDK, mid-stream event: error { type: 'invalid_request_error' } → not retryable",
        fault: {
          kind: 'stream-error',
          afterChunks: 2,
          errorType: 'invalid_request_error',
          message: 'prompt is too long: 210000 tokens > 200000 maximum',
          times: 1,
        },
        produce: () => anthropicStream(),
        expected: { category: 'bad_request', retryable: false, fallback: true },
      },
      ...['@ai-sdk/openai-compatible', '@ai-sdk/openai (chat)'].map((name): Row => ({
        item: 7,
        label: `${name}, mid-stream error → error part { type: 'server_error' } (a plain object)`,
        fault: { kind: 'stream-error', afterChunks: 2, errorType: 'server_error', message: OPENAI_SERVER_ERROR, times: 1 },
        produce: () => aiStream(aiModels[name]!),
        expected: SERVER_ERROR,
      })),
      {
        item: 7,
        label: "@ai-sdk/anthropic, mid-stream error → error part { type: 'api_error' } (a plain object)",
        fault: { kind: 'stream-error', afterChunks: 2, errorType: 'api_error', message: 'Something went wrong on our side', times: 1 },
        produce: () => aiStream(aiModels['@ai-sdk/anthropic']!),
        expected: SERVER_ERROR,
      },
      {
        item: 7,
        label: "openai SDK RateLimitError { type: 'insufficient_quota' } (hand-built: the server can't send that type) → no retry, fallback",
        produce: () => async () => {
          throw new oa.OpenAI.RateLimitError(
            429,
            { message: 'You exceeded your current quota', type: 'insufficient_quota', code: 'insufficient_quota' },
            undefined,
            new Headers(),
          );
        },
        expected: { category: 'rate_limit', retryable: false, fallback: true },
      },
      // 8. the user aborted
      { item: 8, label: 'openai SDK, aborted request → APIUserAbortError', produce: () => openaiStream(aborted()), expected: CANCELLED },
      { item: 8, kitFree: true, label: 'anthropic SDK, aborted request → APIUserAbortError', produce: () => anthropicStream(aborted()), expected: CANCELLED },
      {
        item: 8,
        label: '@ai-sdk/openai-compatible, aborted request → AbortError',
        produce: () => aiStream(aiModels['@ai-sdk/openai-compatible']!, aborted()),
        expected: CANCELLED,
      },
      // the same status errors from every client (the SDKs' own classes, the AI SDK's APICallError)
      {
        item: 9,
        label: 'openai SDK, 429 with retry-after: 2 → RateLimitError',
        fault: { kind: 'status', status: 429, retryAfter: 2, times: 1 },
        produce: () => openaiStream(),
        expected: { category: 'rate_limit', retryable: true, fallback: true, retryAfterMs: 2000 },
      },
      {
        item: 9,
        kitFree: true,
        label: 'anthropic SDK, 429 with retry-after: 2 → RateLimitError',
        fault: { kind: 'status', status: 429, retryAfter: 2, times: 1 },
        produce: () => anthropicStream(),
        expected: { category: 'rate_limit', retryable: true, fallback: true, retryAfterMs: 2000 },
      },
      {
        item: 9,
        label: 'openai SDK, 503 → InternalServerError',
        fault: { kind: 'status', status: 503, times: 1 },
        produce: () => openaiStream(),
        expected: UNAVAILABLE,
      },
      {
        item: 9,
        kitFree: true,
        label: 'anthropic SDK, 503 → ServiceUnavailableError',
        fault: { kind: 'status', status: 503, times: 1 },
        produce: () => anthropicStream(),
        expected: UNAVAILABLE,
      },
      { item: 9, label: 'openai SDK, dead port → APIConnectionError', fault: { kind: 'down', times: 1 }, produce: () => openaiStream(), expected: CONNECTION },
      {
        item: 9,
        kitFree: true,
        label: 'anthropic SDK, dead port → APIConnectionError',
        fault: { kind: 'down', times: 1 },
        produce: () => anthropicStream(),
        expected: CONNECTION,
      },
      {
        item: 9,
        label: 'openai SDK, slow first byte past its timeout → APIConnectionTimeoutError',
        fault: { kind: 'slow-first-byte', delayMs: 2000, times: 1 },
        produce: () => openaiStream(undefined, { timeout: 50 }),
        expected: { category: 'timeout', retryable: true, fallback: true },
      },
      ...Object.entries(aiModels).flatMap(([name, model]): Row[] => [
        {
          item: 9,
          label: `${name}, 429 with retry-after: 2 → APICallError (statusCode, responseHeaders)`,
          fault: { kind: 'status', status: 429, retryAfter: 2, times: 1 },
          produce: () => aiStream(model),
          expected: { category: 'rate_limit', retryable: true, fallback: true, retryAfterMs: 2000 },
        },
        {
          item: 9,
          label: `${name}, 503 → APICallError`,
          fault: { kind: 'status', status: 503, times: 1 },
          produce: () => aiStream(model),
          expected: UNAVAILABLE,
        },
        {
          item: 9,
          label: `${name}, 400 → APICallError (not retryable)`,
          fault: { kind: 'status', status: 400, times: 1 },
          produce: () => aiStream(model),
          expected: { category: 'bad_request', retryable: false, fallback: true },
        },
        {
          item: 9,
          label: `${name}, dead port → APICallError without status`,
          fault: { kind: 'down', times: 1 },
          produce: () => aiStream(model),
          expected: CONNECTION,
        },
        {
          item: 9,
          label: `${name}, connection reset mid-stream → APICallError with statusCode 200`,
          fault: { kind: 'reset', afterChunks: 2, times: 1 },
          produce: () => aiStream(model),
          expected: CONNECTION,
        },
      ]),
      {
        item: 9,
        label: "generateText's RetryError (429 twice, maxRetries: 1) → classified by its lastError",
        fault: { kind: 'status', status: 429, retryAfterMs: 1, times: 2 },
        produce: () => () => ai.generateText({ model: aiModels['@ai-sdk/openai-compatible']!(), prompt: 'Hi', maxRetries: 1 }),
        expected: { category: 'rate_limit', retryable: true, fallback: true, retryAfterMs: 1 },
      },
      {
        item: 9,
        label: 'APICallError with isRetryable: false on a 503 (hand-built: a provider that says so) → not retryable',
        produce: () => async () => {
          throw new ai.APICallError({ message: 'no', url: 'http://x', requestBodyValues: {}, statusCode: 503, responseHeaders: {}, isRetryable: false });
        },
        expected: { category: 'service_unavailable', retryable: false, fallback: true },
      },
      {
        item: 9,
        label: 'APICallError without status or cause, isRetryable: true (hand-built) → transient, retryable',
        produce: () => async () => {
          throw new ai.APICallError({ message: 'upstream hiccup', url: 'http://x', requestBodyValues: {}, isRetryable: true });
        },
        expected: { category: 'transient', retryable: true, fallback: true },
      },
    ];
    return rows.filter((row) => first || row.kitFree !== true);
  };

  AI_SDK_KITS.forEach((ai, i) =>
    describe(`with ${OPENAI_KITS[i]!.label} and ${ai.label}`, () => {
      for (const row of rowsOf(OPENAI_KITS[i]!, ai, i === 0)) {
        it(`item ${row.item}: ${row.label} → ${row.expected.category}${row.expected.retryable ? ', retryable' : ''}`, async () => {
          if (row.fault) server.faults.set(row.fault);
          const error = await thrown(row.produce());
          expect(verdictOf(error, row.expected)).to.deep.equal(row.expected);
        });
      }
    }),
  );
  reportSkippedMajors('the openai SDK and AI SDK rows');

  describe("a SyntaxError from the user's own code stays programming", () => {
    const cases: readonly (readonly [string, () => unknown])[] = [
      ['JSON.parse of a bad literal in your code', () => JSON.parse('{')],
      ["new Function('{')", () => new Function('{')],
      ["new RegExp('(') (a pattern built at run time)", () => new RegExp(['('].join(''))],
      [
        "a hand-thrown SyntaxError('Unexpected token')",
        () => {
          throw new SyntaxError('Unexpected token');
        },
      ],
    ];
    for (const [label, fn] of cases) {
      it(`${label} → programming`, async () => {
        const error = await thrown(async () => fn());
        expect(verdictOf(error, PROGRAMMING)).to.deep.equal(PROGRAMMING);
      });
    }

    it('a JSON SyntaxError whose parse was called from a dependency (a path under node_modules/) is a malformed response; from your file, programming', () => {
      const message = 'Unterminated string in JSON at position 12';
      const fromSdk = Object.assign(new SyntaxError(message), {
        stack: `SyntaxError: ${message}\n    at JSON.parse (<anonymous>)\n    at Stream.iterator (/app/node_modules/some-sdk/core/streaming.js:62:27)\n    at main (/app/src/index.js:3:1)`,
      });
      const fromApp = Object.assign(new SyntaxError(message), {
        stack: `SyntaxError: ${message}\n    at JSON.parse (<anonymous>)\n    at loadConfig (/app/src/config.js:8:20)\n    at /app/node_modules/x/index.js:1:1`,
      });
      expect(verdictOf(fromSdk, BAD_GATEWAY)).to.deep.equal(BAD_GATEWAY);
      expect(verdictOf(fromApp, PROGRAMMING)).to.deep.equal(PROGRAMMING);
    });

    it('a SyntaxError thrown inside a dependency that is not a JSON parse (a template compiled with new Function) stays programming', () => {
      const fromLib = Object.assign(new SyntaxError("Unexpected token '}'"), {
        stack: "SyntaxError: Unexpected token '}'\n    at new Function (<anonymous>)\n    at compile (/app/node_modules/templating/index.js:10:5)",
      });
      expect(verdictOf(fromLib, PROGRAMMING)).to.deep.equal(PROGRAMMING);
    });

    it("openai 7's own SyntaxError in JSON.parse's place ('Error reading response: malformed server-sent event JSON.') is a malformed response when a dependency threw it; thrown from the app's file, programming", () => {
      const message = 'Error reading response: malformed server-sent event JSON.';
      const fromSdk = Object.assign(new SyntaxError(message), {
        stack: `SyntaxError: ${message}\n    at Stream.iterator (/app/node_modules/openai/core/streaming.js:148:19)\n    at main (/app/src/index.js:3:1)`,
      });
      const fromApp = Object.assign(new SyntaxError(message), {
        stack: `SyntaxError: ${message}\n    at readAll (/app/src/read.js:8:20)\n    at /app/node_modules/x/index.js:1:1`,
      });
      expect(verdictOf(fromSdk, BAD_GATEWAY)).to.deep.equal(BAD_GATEWAY);
      expect(verdictOf(fromApp, PROGRAMMING)).to.deep.equal(PROGRAMMING);
    });

    it("Firefox's and Safari's JSON.parse messages and frames are read too", () => {
      const firefox = Object.assign(new SyntaxError('JSON.parse: unterminated string at line 1 column 12 of the JSON data'), {
        stack: 'iterator@https://app.example/node_modules/.vite/deps/openai.js:812:20\nmain@https://app.example/src/main.ts:4:1\n',
      });
      const safari = Object.assign(new SyntaxError('JSON Parse error: Unterminated string'), {
        stack: 'parse@[native code]\niterator@https://app.example/node_modules/.vite/deps/openai.js:812:20\n',
      });
      expect(verdictOf(firefox, BAD_GATEWAY)).to.deep.equal(BAD_GATEWAY);
      expect(verdictOf(safari, BAD_GATEWAY)).to.deep.equal(BAD_GATEWAY);
    });
  });

  AI_SDK_KITS.forEach((ai, i) =>
    describe(`recorded responses the local provider cannot send, served to the real clients by their fetch — with ${OPENAI_KITS[i]!.label} and ${ai.label}`, () => {
      const OpenAI = OPENAI_KITS[i]!.OpenAI;
      const { createOpenAICompatible, createOpenAI } = ai;
      /** OpenRouter's mid-stream error: a chunk with an error whose code is a number, and finish_reason 'error'. */
      /** OpenAI's 429 for a spent quota: retrying never helps. */
      const quota = JSON.stringify({
        error: {
          message: 'You exceeded your current quota, please check your plan and billing details.',
          type: 'insufficient_quota',
          param: null,
          code: 'insufficient_quota',
        },
      });
      const quotaFetch = () => fixtureFetch(quota, { status: 429, headers: { 'content-type': 'application/json' } }).fetch;
      const prompt = [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'Hi' }] }];
      /** A provider's doStream: the first error part's error, or what the call threw. */
      const firstErrorPart = (model: LanguageModelV3) => async () => {
        const { stream } = await model.doStream({ prompt });
        const reader = stream.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          if (value.type === 'error') throw value.error;
        }
      };
      const rows: readonly { label: string; produce: () => () => Promise<unknown>; expected: Expected; kitFree?: true }[] = [
        {
          label: "openai SDK, OpenRouter's mid-stream error { code: 502 } → APIError without status → bad_gateway, retryable",
          produce: () => async () => {
            const client = new OpenAI({
              baseURL: 'http://x.test/v1',
              apiKey: 'k',
              maxRetries: 0,
              logLevel: 'off',
              fetch: fixtureFetch(OPENROUTER_ERROR_502).fetch,
            });
            for await (const c of await client.chat.completions.create({ model: 'm', messages, stream: true })) void c;
          },
          expected: { category: 'bad_gateway', retryable: true, fallback: true },
        },
        {
          kitFree: true,
          label: "LangChain ChatOpenAI, OpenRouter's mid-stream error { code: 502 } → bad_gateway, retryable",
          produce: () => async () => {
            const chat = new ChatOpenAI({
              model: 'm',
              apiKey: 'k',
              maxRetries: 0,
              configuration: { baseURL: 'http://x.test/v1', fetch: fixtureFetch(OPENROUTER_ERROR_502).fetch },
            });
            for await (const c of await chat.stream('Hi')) void c;
          },
          expected: { category: 'bad_gateway', retryable: true, fallback: true },
        },
        {
          label: "@ai-sdk/openai-compatible, OpenRouter's mid-stream error → error part { code: 502 } → bad_gateway, retryable",
          produce: () =>
            firstErrorPart(createOpenAICompatible({ name: 'or', baseURL: 'http://x.test/v1', fetch: fixtureFetch(OPENROUTER_ERROR_502).fetch })('m')),
          expected: { category: 'bad_gateway', retryable: true, fallback: true },
        },
        {
          label: '@ai-sdk/openai-compatible, a stream cut before any finish_reason → error part AI_InvalidResponseDataError → bad_gateway, retryable',
          produce: () =>
            firstErrorPart(
              createOpenAICompatible({
                name: 'c',
                baseURL: 'http://x.test/v1',
                fetch: fixtureFetch(sseBody(chatChunk({ role: 'assistant', content: 'It is' }))).fetch,
              })('m'),
            ),
          expected: BAD_GATEWAY,
        },
        {
          kitFree: true,
          label: 'openAICompatibleModel, 429 insufficient_quota → HttpError (the type is in its body) → not retryable, fallback',
          produce: () => () =>
            lastValueFrom(
              streamModel(openAICompatibleModel({ baseURL: 'http://x.test/v1', model: 'm', fetch: quotaFetch() }), {
                messages: [{ role: 'user', content: 'Hi' }],
                tools: [],
              }),
            ),
          expected: { category: 'rate_limit', retryable: false, fallback: true },
        },
        {
          label: '@ai-sdk/openai-compatible, 429 insufficient_quota → APICallError (the type is in its data) → not retryable, fallback',
          produce: () => firstErrorPart(createOpenAICompatible({ name: 'c', baseURL: 'http://x.test/v1', fetch: quotaFetch() })('m')),
          expected: { category: 'rate_limit', retryable: false, fallback: true },
        },
        {
          label: '@ai-sdk/openai (chat), 429 insufficient_quota → APICallError → not retryable, fallback',
          produce: () => firstErrorPart(createOpenAI({ baseURL: 'http://x.test/v1', apiKey: 'k', fetch: quotaFetch() }).chat('m')),
          expected: { category: 'rate_limit', retryable: false, fallback: true },
        },
      ];
      for (const row of rows.filter((r) => i === 0 || r.kitFree !== true)) {
        it(row.label, async () => {
          const error = await thrown(row.produce());
          expect(verdictOf(error, row.expected)).to.deep.equal(row.expected);
        });
      }
    }),
  );
});
