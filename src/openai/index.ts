/**
 * `rxheal/openai`: the official `openai` SDK's streaming chat completions ({@link fromOpenAI}) and
 * Responses API ({@link fromOpenAIResponses}) as rxheal {@link Model}s. `openai` (6.x or 7.x) is an optional peer dependency: only this subpath needs it.
 *
 * @example
 * ```ts
 * import OpenAI from 'openai';
 * import { fromOpenAI } from 'rxheal/openai';
 * const gpt = fromOpenAI(new OpenAI(), { model: 'gpt-4o-mini' });
 * ```
 *
 * @module
 */
import type OpenAI from 'openai';
import { InvalidOptionError } from '../core/errors/errors.js';
import type { Model } from '../core/model/model.js';
import { checkOneAnswer, openAIRequestBody, openAIStreamDecoder } from '../providers/openai.js';
import {
  openAIResponsesBody,
  PromptCacheCheck,
  requestPromptCache,
  responsesDeclaredTools,
  withPromptCache,
  type ResponsesPromptCache,
} from '../providers/responses.js';
import { checkProviderOptions } from '../providers/providerOptions.js';
import { openAIResponsesStreamDecoder } from '../providers/responsesDecoder.js';
import { sdkModel, sdkOptions, sdkParamsModel, type SdkModelOptions } from '../adapters/common.js';

export type { SdkModelOptions } from '../adapters/common.js';
export type { ResponsesPromptCache } from '../providers/responses.js';

/**
 * What {@link fromOpenAI} needs of a client: `chat.completions.create` with `stream: true`. An
 * `OpenAI` instance (or an `AzureOpenAI`, or any OpenAI-compatible client built on the SDK).
 *
 * @example
 * ```ts
 * const client: OpenAIChatClient = new OpenAI({ baseURL: 'http://127.0.0.1:8080/v1', apiKey: 'local' });
 * ```
 */
export interface OpenAIChatClient {
  readonly chat: {
    readonly completions: {
      create(body: OpenAI.ChatCompletionCreateParamsStreaming, options?: OpenAI.RequestOptions): PromiseLike<AsyncIterable<OpenAI.ChatCompletionChunk>>;
    };
  };
}

/**
 * The request parameters of every call — the model and its settings (`temperature`,
 * `max_completion_tokens`, `reasoning_effort`…). Messages, tools and streaming come from rxheal;
 * a request's `maxOutputTokens` (per request) wins over these: sent as `max_completion_tokens`,
 * with `max_tokens` left out; so does its `promptCacheKey`, sent as `prompt_cache_key`.
 *
 * @example
 * ```ts
 * const params: OpenAIChatParams = { model: 'gpt-4o-mini', temperature: 0 };
 * ```
 */
export type OpenAIChatParams = Omit<OpenAI.ChatCompletionCreateParamsStreaming, 'messages' | 'tools' | 'stream' | 'stream_options'>;

/**
 * Options of {@link fromOpenAI}.
 *
 * @example
 * ```ts
 * const options: FromOpenAIOptions = { id: 'primary' };
 * ```
 */
export type FromOpenAIOptions = SdkModelOptions;

/**
 * An rxheal {@link Model} over an `openai` client's streaming chat completions
 * (`client.chat.completions.create({ …params, messages, tools, stream: true, stream_options: {
 * include_usage: true } })`): the same events and errors as `openAICompatibleModel` (the same
 * decoder reads the chunks), with the client's auth, base URL, headers, timeouts and fetch.
 *
 * - Text deltas, tool calls (assembled, arguments parsed), one `finish` with reason and usage.
 * - Unsubscribing aborts the request (the context's signal goes to the SDK).
 * - **The SDK's `maxRetries` is set to 0 per request** (the SDK defaults to 2, before the stream
 *   only): retry with rxheal's `retryWithBackoff` instead, so retries don't double up. Pass
 *   `{ maxRetries }` to keep the SDK's.
 * - Errors: what the SDK throws for the request passes as is (`RateLimitError` with its status
 *   and `retry-after`, `APIConnectionError`, `APIUserAbortError`), all understood by
 *   `classifyError`. Mid-stream, the SDK's status-less `APIError` becomes an `HttpError` with the
 *   status its type implies (`server_error` → 500, `rate_limit_exceeded` → 429), and its
 *   `SyntaxError` on a malformed chunk a `MalformedStreamError` (502) — the SDK's error is the
 *   `cause`. A stream that ends without a `finish_reason` is an `IncompleteStreamError`. (The
 *   SDK hides whether `[DONE]` came: a stream cut after the `finish_reason` chunk finishes,
 *   possibly without usage.)
 *
 * @example
 * ```ts
 * import OpenAI from 'openai';
 * import { fallbackModel, runAgent } from 'rxheal';
 * import { fromOpenAI } from 'rxheal/openai';
 *
 * const gpt = fromOpenAI(new OpenAI(), { model: 'gpt-4o-mini', temperature: 0 });
 * const local = fromOpenAI(new OpenAI({ baseURL: 'http://127.0.0.1:11434/v1', apiKey: 'ollama' }), { model: 'llama3.2' }, { id: 'local' });
 * runAgent({ model: fallbackModel([gpt, local]), tools: [], messages: [{ role: 'user', content: 'Hi' }] }).subscribe(console.log);
 * ```
 * @throws {InvalidOptionError} at once, for a client without `chat.completions.create`, params
 * without a `model` or asking for more than one answer (`n` > 1), or an invalid option.
 */
export function fromOpenAI(client: OpenAIChatClient, params: OpenAIChatParams, options?: FromOpenAIOptions): Model {
  if (typeof client?.chat?.completions?.create !== 'function') {
    throw new InvalidOptionError('fromOpenAI', 'client', client, 'an openai client (with chat.completions.create)');
  }
  sdkParamsModel('fromOpenAI', params);
  checkOneAnswer('fromOpenAI', 'params', params as unknown as Record<string, unknown>);
  const { id = `openai:${params.model}`, maxRetries } = sdkOptions('fromOpenAI', options);
  const completions = client.chat.completions;
  return sdkModel({
    id,
    open: (request, signal) =>
      completions.create(openAIRequestBody(params.model, request, params) as unknown as OpenAI.ChatCompletionCreateParamsStreaming, { signal, maxRetries }),
    toEvent: (chunk) => ({ event: 'message', data: JSON.stringify(chunk) }),
    // the SDK ends its iteration at `data: [DONE]` and does not pass it on
    final: { event: 'message', data: '[DONE]' },
    decoder: openAIStreamDecoder,
  });
}

/**
 * What {@link fromOpenAIResponses} needs of a client: `responses.create` with `stream: true`. An
 * `OpenAI` instance (or an `AzureOpenAI`, or any client of a server that speaks the Responses API).
 *
 * @example
 * ```ts
 * const client: OpenAIResponsesClient = new OpenAI({ baseURL: 'http://127.0.0.1:11434/v1', apiKey: 'ollama' });
 * ```
 */
export interface OpenAIResponsesClient {
  readonly responses: {
    create(
      body: OpenAI.Responses.ResponseCreateParamsStreaming,
      options?: OpenAI.RequestOptions,
    ): PromiseLike<AsyncIterable<OpenAI.Responses.ResponseStreamEvent>>;
  };
}

/**
 * The request parameters of every call — the model and its settings (`reasoning`,
 * `max_output_tokens`, `store`, `include`, hosted `tools` such as `{ type: 'web_search' }`…).
 * Input, function tools and streaming come from rxheal; a request's `maxOutputTokens` (per
 * request) wins over `max_output_tokens`, and its `promptCacheKey` over `prompt_cache_key` (and
 * over `promptCache.key`).
 *
 * @example
 * ```ts
 * const params: OpenAIResponsesParams = { model: 'gpt-5-mini', reasoning: { effort: 'low', summary: 'auto' } };
 * ```
 */
export type OpenAIResponsesParams = Omit<OpenAI.Responses.ResponseCreateParamsStreaming, 'input' | 'stream'>;

/**
 * Options of {@link fromOpenAIResponses}: the common ones, and `promptCache` (key, retention,
 * explicit breakpoints, as `openAIResponsesModel` takes it). Server-side compaction is a request
 * parameter: `params.context_management`.
 *
 * @example
 * ```ts
 * const options: FromOpenAIResponsesOptions = { id: 'primary', promptCache: { key: 'conversation-42', retention: '24h' } };
 * ```
 */
export interface FromOpenAIResponsesOptions extends SdkModelOptions {
  readonly promptCache?: ResponsesPromptCache;
}

/**
 * An rxheal {@link Model} over an `openai` client's streaming Responses API
 * (`client.responses.create({ …params, input, tools, stream: true })`): the request and the events
 * of `openAIResponsesModel` (the same body builder, the same decoder on the SDK's events) — with
 * the client's auth, base URL, headers, timeouts and fetch. Stateless by default (`store: false`,
 * reasoning sent back with its encrypted content); `params.store: true` keeps responses on
 * OpenAI's side.
 *
 * - Text, reasoning (one `reasoning-end` per reasoning item, its id and encrypted content in
 *   `providerMetadata.openai`), tool calls (function calls, and the client-run items of the tools
 *   `params.tools` declares), one `finish` with usage (cached input as `cachedInputTokens`);
 *   a compaction item (`params.context_management: [{ type: 'compaction', compact_threshold }]`)
 *   kept opaque and sent back with the next request.
 * - Unsubscribing aborts the request. **The SDK's `maxRetries` is 0 per request** (pass
 *   `{ maxRetries }` to keep it): retry with rxheal.
 * - Errors: what the SDK throws for the request passes as is (`RateLimitError`…); mid-stream, the
 *   SDK's status-less `APIError` for an `error` event becomes an `HttpError` with the status its
 *   code implies, `response.failed` too (`server_error` 500, `rate_limit_exceeded` 429,
 *   `invalid_prompt` 400); a malformed event a `MalformedStreamError`; a stream that ends before
 *   `response.completed` an `IncompleteStreamError`.
 *
 * @example
 * ```ts
 * import OpenAI from 'openai';
 * import { runAgent } from 'rxheal';
 * import { fromOpenAIResponses } from 'rxheal/openai';
 *
 * const gpt = fromOpenAIResponses(new OpenAI(), { model: 'gpt-5-mini', reasoning: { effort: 'low', summary: 'auto' } });
 * runAgent({ model: gpt, tools: [], messages: [{ role: 'user', content: 'Hi' }] }).subscribe(console.log);
 * ```
 * @throws {InvalidOptionError} at once, for a client without `responses.create`, params without a
 * `model`, or an invalid option.
 */
export function fromOpenAIResponses(client: OpenAIResponsesClient, params: OpenAIResponsesParams, options?: FromOpenAIResponsesOptions): Model {
  if (typeof client?.responses?.create !== 'function') {
    throw new InvalidOptionError('fromOpenAIResponses', 'client', client, 'an openai client (with responses.create)');
  }
  sdkParamsModel('fromOpenAIResponses', params);
  const { promptCache, ...common } = options ?? {};
  checkProviderOptions('fromOpenAIResponses', { promptCache: PromptCacheCheck }, { promptCache }, []);
  const { id = `openai-responses:${params.model}`, maxRetries } = sdkOptions('fromOpenAIResponses', common);
  const responses = client.responses;
  const extra = params as unknown as Record<string, unknown>;
  // the client tools params declares (custom, shell…): what a client-run item may call
  const declared = responsesDeclaredTools(extra);
  return sdkModel({
    id,
    open: (request, signal) =>
      responses.create(
        withPromptCache(
          openAIResponsesBody(params.model as string, request, extra),
          requestPromptCache(request, promptCache),
        ) as unknown as OpenAI.Responses.ResponseCreateParamsStreaming,
        {
          signal,
          maxRetries,
        },
      ),
    toEvent: (event) => ({ event: 'message', data: JSON.stringify(event) }),
    decoder: (model) => openAIResponsesStreamDecoder(model, declared),
  });
}
