/**
 * `rxheal/providers`: the protocol layer under {@link openAICompatibleModel},
 * {@link openAIResponsesModel} and {@link anthropicModel} — SSE parsing, stream decoders, request bodies. Reach for it to speak a
 * protocol of your own or to test one; the two models themselves are also exported from the root.
 *
 * @example
 * ```ts
 * import { fetchSse, decodeSse } from 'rxheal/providers';
 * ```
 *
 * @module
 */
export { openAICompatibleModel, openAIRequestBody, openAIStreamDecoder } from './openai.js';
export type { OpenAICompatibleModelOptions } from './openai.js';
export { openAIResponsesModel, openAIResponsesBody, responsesDeclaredTools } from './responses.js';
export type { OpenAIResponsesModelOptions } from './responses.js';
export { resumableResponses } from './responsesResume.js';
export type { ResponsesResumeOptions, ResumableDecoder, ResumeRules, ResumeSeams } from './responsesResume.js';
export { openAIResponsesStreamDecoder, ResponsesDecoder } from './responsesDecoder.js';
export type { DeclaredTools } from './responsesDecoder.js';
export { anthropicModel, anthropicRequestBody, anthropicErrorStatus, anthropicStreamDecoder, ANTHROPIC_VERSION } from './anthropic.js';
export type { AnthropicModelOptions } from './anthropic.js';
export { SseParser, DEFAULT_MAX_EVENT_SIZE, parseSse } from './sseParser.js';
export { fetchSse, decodeSse, decodeEvents, parseToolArguments, IncompleteStreamError, MalformedStreamError } from './sse.js';
export type { SseEvent, SseParserOptions } from './sseParser.js';
export type { SseRequest, StreamDecoder } from './sse.js';
