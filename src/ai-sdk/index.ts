/**
 * `rxheal/ai-sdk`: the Vercel AI SDK both ways. {@link fromAiSdk} turns any AI SDK language
 * model (spec v2, v3, v4) into an rxheal {@link Model}; {@link toAiSdk} turns an rxheal model —
 * typically a `fallbackModel` of `fromAiSdk` models with breakers and retries — into a
 * `LanguageModelV3` for `streamText` / `generateText` of `ai` 6 and `ai` 7 alike. The AI SDK (`ai` 6
 * or 7, `@ai-sdk/provider` 3 or 4) is an optional peer dependency: only this subpath needs it, and
 * only its types.
 *
 * @example
 * ```ts
 * import { openai } from '@ai-sdk/openai';
 * import { anthropic } from '@ai-sdk/anthropic';
 * import { streamText } from 'ai';
 * import { CircuitBreakerRegistry, fallbackModel } from 'rxheal';
 * import { fromAiSdk, toAiSdk } from 'rxheal/ai-sdk';
 *
 * const breakers = new CircuitBreakerRegistry({ failureThreshold: 3 });
 * const model = toAiSdk(fallbackModel([fromAiSdk(openai('gpt-4o')), fromAiSdk(anthropic('claude-sonnet-4-5'))], { breakers, midStream: 'continue' }));
 * const result = streamText({ model, prompt: 'Hello', maxRetries: 0 });
 * ```
 *
 * @module
 */
// eslint-disable-next-line @typescript-eslint/no-unused-vars -- the Model the module's doc links to
import type { Model } from '../core/model/model.js';

export { fromAiSdk } from './from.js';
export type { AiSdkLanguageModel, FromAiSdkOptions, LanguageModelV4Like } from './from.js';
export { toAiSdk } from './to.js';
export type { ToAiSdkOptions } from './to.js';
export { toAiSdkAgent } from './agent.js';
export type { AiSdkAgentConfig, ToAiSdkAgentOptions } from './agent.js';
export { approvalsFrom } from './approvals.js';
export { providerToolApproval } from './providerApproval.js';
export type { ProviderToolApprovalOptions } from './providerApproval.js';
export { withRxhealRetryAdvice } from './retryAdvice.js';
export type { AgentsModelLike, RxhealRetryAdvice, WithRxhealRetryAdvice } from './retryAdvice.js';
export type { AiSdkCallSettings } from './settings.js';
export { StreamRestartError } from '../adapters/common.js';
