/**
 * `rxheal/providers`: the layer under {@link openAICompatibleModel}, {@link openAIResponsesModel}
 * and {@link anthropicModel} — SSE parsing, stream decoders, request bodies — and what a model or
 * a classifier of your own is built from: a call that aborts when unsubscribed ({@link abortable}),
 * async iterables both ways, a tool's JSON schema, the header and error helpers the classifier uses
 * ({@link readHeader}, {@link parseRetryAfter}, {@link impliedStatus}, {@link isServiceFailure},
 * {@link sanitizeText}, {@link errorText}), the backoff maths ({@link baseDelay}, {@link backoffDelay}),
 * and the texts rxheal sends a model by default (the reflection prompts, the continue instruction).
 * The three models themselves are the root's too.
 *
 * @example
 * ```ts
 * import { fetchSse, decodeSse, readHeader } from 'rxheal/providers';
 * const wait = readHeader(response.headers, 'retry-after');
 * ```
 *
 * @module
 */
export { openAICompatibleModel, openAIRequestBody, openAIStreamDecoder } from './openai.js';
export type { OpenAICompatibleModelOptions } from './openai.js';
export { openAIResponsesModel, openAIResponsesBody, responsesDeclaredTools, withPromptCache } from './responses.js';
export type { OpenAIResponsesModelOptions, ResponsesPromptCache } from './responses.js';
export { resumableResponses } from './responsesResume.js';
export type { ResponsesResumeOptions, ResumableDecoder, ResumeRules, ResumeSeams } from './responsesResume.js';
export { openAIResponsesStreamDecoder, ResponsesDecoder } from './responsesDecoder.js';
export { compactResponses } from './responsesCompact.js';
export type { CompactedConversation, CompactResponsesOptions } from './responsesCompact.js';
export type { DeclaredTools } from './responsesDecoder.js';
export { anthropicModel, anthropicRequestBody, anthropicErrorStatus, anthropicStreamDecoder, anthropicBetas, ANTHROPIC_VERSION } from './anthropic.js';
export type { AnthropicModelOptions, AnthropicBodyOptions, AnthropicCacheOptions, AnthropicFallbacks } from './anthropic.js';
export { SseParser, DEFAULT_MAX_EVENT_SIZE, parseSse } from './sseParser.js';
export { fetchSse, decodeSse, decodeEvents, parseToolArguments, IncompleteStreamError, MalformedStreamError } from './sse.js';
export type { SseEvent, SseParserOptions } from './sseParser.js';
export type { SseRequest, StreamDecoder } from './sse.js';
// building a model of your own: a call aborted on unsubscribe, async iterables both ways, a tool's JSON schema
export { abortable } from '../core/model/abortable.js';
export { fromAsyncIterable, eachValueFrom } from '../core/model/model.js';
export { toJsonSchema } from '../sources/tool.js';
// the header and error helpers the classifier reads errors with, and the backoff maths
export { impliedStatus, parseRetryAfter, readHeader } from '../core/errors/readError.js';
export { isServiceFailure } from '../core/errors/classify.js';
export { sanitizeText, errorText } from '../core/errors/sanitize.js';
export { backoffDelay, baseDelay } from '../core/rx/backoff.js';
// the texts rxheal sends a model by default: reflectOnError's prompts, fallbackModel's continue instruction
export { shouldReflectByDefault, DEFAULT_REFLECTION_TEMPLATE, DEFAULT_EXHAUSTED_TEMPLATE } from '../operators/reflectOnError.js';
export { DEFAULT_CONTINUE_INSTRUCTION } from '../sources/fallbackModel.js';
