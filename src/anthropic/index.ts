/**
 * `rxheal/anthropic`: the official `@anthropic-ai/sdk` client's streaming messages as an rxheal
 * {@link Model}. `@anthropic-ai/sdk` (1.x) is an optional peer dependency: only this subpath
 * needs it.
 *
 * @example
 * ```ts
 * import Anthropic from '@anthropic-ai/sdk';
 * import { fromAnthropic } from 'rxheal/anthropic';
 * const claude = fromAnthropic(new Anthropic(), { model: 'claude-sonnet-4-5', max_tokens: 2048 });
 * ```
 *
 * @module
 */
import type Anthropic from '@anthropic-ai/sdk';
import { InvalidOptionError } from '../core/errors/errors.js';
import type { Model } from '../core/model/model.js';
import { anthropicBetas, anthropicBodyOptions, anthropicRequestBody, anthropicStreamDecoder, type AnthropicBodyOptions } from '../providers/anthropic.js';
import { sdkModel, sdkOptions, sdkParamsModel, type SdkModelOptions } from '../adapters/common.js';

export type { SdkModelOptions } from '../adapters/common.js';
export type { AnthropicBodyOptions, AnthropicCacheOptions } from '../providers/anthropic.js';

/**
 * What {@link fromAnthropic} needs of a client: `messages.create` with `stream: true`. An
 * `Anthropic` instance (or `AnthropicBedrock` / `AnthropicVertex`, which share it).
 *
 * @example
 * ```ts
 * const client: AnthropicMessagesClient = new Anthropic({ baseURL: 'http://127.0.0.1:8080', apiKey: 'local' });
 * ```
 */
export interface AnthropicMessagesClient {
  readonly messages: {
    create(body: Anthropic.MessageCreateParamsStreaming, options?: Anthropic.RequestOptions): PromiseLike<AsyncIterable<Anthropic.RawMessageStreamEvent>>;
  };
}

/**
 * The request parameters of every call: the model, `max_tokens` (required by the API) and its
 * settings (`stop_sequences`, `thinking`, `metadata`, a base `system`…). Messages, tools and streaming come from
 * rxheal; the request's system messages replace `system` when it has any, and its `maxOutputTokens`
 * (per request) replaces `max_tokens`.
 *
 * @example
 * ```ts
 * const params: AnthropicMessagesParams = { model: 'claude-sonnet-4-5', max_tokens: 2048, stop_sequences: ['###'] };
 * ```
 */
export type AnthropicMessagesParams = Omit<Anthropic.MessageCreateParamsStreaming, 'messages' | 'tools' | 'stream'>;

/**
 * Options of {@link fromAnthropic}: the common ones, and the request body's prompt-cache
 * breakpoints (`cache`) and fine-grained tool streaming (`eagerInputStreaming`), as
 * `anthropicModel` takes them. Server-side fallback and context editing are request
 * parameters: `params.fallbacks`, `params.context_management`.
 *
 * @example
 * ```ts
 * const options: FromAnthropicOptions = { id: 'secondary', cache: { ttl: '1h', breakpoints: 3 } };
 * ```
 */
export interface FromAnthropicOptions extends SdkModelOptions, AnthropicBodyOptions {}

/**
 * An rxheal {@link Model} over an `@anthropic-ai/sdk` client's streaming messages
 * (`client.messages.create({ …params, system, messages, tools, stream: true })`): the same events
 * and errors as `anthropicModel` (the same decoder reads the events), with the client's auth,
 * base URL, headers, timeouts and fetch.
 *
 * - Text deltas, tool calls (one per `tool_use` block, arguments parsed), one `finish` with
 *   reason and usage (cache tokens counted as input, and said apart as `cachedInputTokens` /
 *   `cacheWriteTokens`); a server-side fallback (`params.fallbacks`) as the finish's
 *   `providerFallbacks` (a `fallback` event marked `providerSide` on the run's hub); compaction
 *   blocks (`params.context_management`) kept opaque and sent back. The `anthropic-beta` header
 *   these need is added per request.
 * - Unsubscribing aborts the request (the context's signal goes to the SDK).
 * - **The SDK's `maxRetries` is set to 0 per request** (the SDK defaults to 2, before the stream
 *   only): retry with rxheal's `retryWithBackoff` instead, so retries don't double up. Pass
 *   `{ maxRetries }` to keep the SDK's.
 * - Errors: what the SDK throws for the request passes as is (`RateLimitError` with its status
 *   and `retry-after`, `APIConnectionError`, `APIUserAbortError`), all understood by
 *   `classifyError`. Mid-stream, the SDK's status-less `APIError` (an `event: error`) becomes an
 *   `HttpError` with the status its type implies (`overloaded_error` → 529, `api_error` → 500,
 *   `rate_limit_error` → 429, `invalid_request_error` → 400), and its `SyntaxError` on a
 *   malformed event a `MalformedStreamError` (502) — the SDK's error is the `cause`. A stream
 *   that ends before `message_stop` is an `IncompleteStreamError`.
 *
 * @example
 * ```ts
 * import Anthropic from '@anthropic-ai/sdk';
 * import { fallbackModel, runAgent } from 'rxheal';
 * import { fromAnthropic } from 'rxheal/anthropic';
 *
 * const claude = fromAnthropic(new Anthropic(), { model: 'claude-sonnet-4-5', max_tokens: 2048 });
 * const haiku = fromAnthropic(new Anthropic(), { model: 'claude-haiku-4-5', max_tokens: 2048 });
 * runAgent({ model: fallbackModel([claude, haiku]), tools: [], messages: [{ role: 'user', content: 'Hi' }] }).subscribe(console.log);
 * ```
 * @throws {InvalidOptionError} at once, for a client without `messages.create`, params without a
 * `model` or a positive integer `max_tokens`, or an invalid option.
 */
export function fromAnthropic(client: AnthropicMessagesClient, params: AnthropicMessagesParams, options?: FromAnthropicOptions): Model {
  if (typeof client?.messages?.create !== 'function') {
    throw new InvalidOptionError('fromAnthropic', 'client', client, 'an @anthropic-ai/sdk client (with messages.create)');
  }
  sdkParamsModel('fromAnthropic', params);
  if (!Number.isInteger(params.max_tokens) || params.max_tokens < 1) {
    throw new InvalidOptionError('fromAnthropic', 'params.max_tokens', params.max_tokens, 'a positive integer (the API requires it)');
  }
  const { cache, eagerInputStreaming, ...common } = options ?? {};
  const body = anthropicBodyOptions('fromAnthropic', { cache, eagerInputStreaming });
  const { id = `anthropic:${params.model}`, maxRetries } = sdkOptions('fromAnthropic', common);
  const messages = client.messages;
  return sdkModel({
    id,
    open: (request, signal) => {
      const payload = anthropicRequestBody(params.model, params.max_tokens, request, params, body);
      const betas = anthropicBetas(payload);
      return messages.create(payload as unknown as Anthropic.MessageCreateParamsStreaming, {
        signal,
        maxRetries,
        ...(betas === undefined ? {} : { headers: { 'anthropic-beta': betas } }),
      });
    },
    toEvent: (event) => ({ event: String((event as { type?: unknown }).type), data: JSON.stringify(event) }),
    decoder: anthropicStreamDecoder,
  });
}
