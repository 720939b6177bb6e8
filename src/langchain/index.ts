/**
 * `rxheal/langchain`: LangChain.js chat models both ways. {@link fromLangChain} turns any
 * `BaseChatModel` (`ChatOpenAI`, `ChatAnthropic`…) into an rxheal {@link Model};
 * {@link toLangChain} turns an rxheal model — a `fallbackModel` with breakers and retries — into
 * a LangChain chat model, so chains and agents get mid-stream healing. `@langchain/core` (1.x) is
 * an optional peer dependency: only this subpath needs it.
 *
 * @example
 * ```ts
 * import { ChatOpenAI } from '@langchain/openai';
 * import { fallbackModel } from 'rxheal';
 * import { fromLangChain, toLangChain } from 'rxheal/langchain';
 *
 * const gpt4o = fromLangChain(new ChatOpenAI({ model: 'gpt-4o', maxRetries: 0 }));
 * const mini = fromLangChain(new ChatOpenAI({ model: 'gpt-4o-mini', maxRetries: 0 }));
 * const chat = toLangChain(fallbackModel([gpt4o, mini], { midStream: 'continue' }));
 * for await (const chunk of await chat.stream('Hello')) process.stdout.write(String(chunk.content));
 * ```
 *
 * @module
 */
// eslint-disable-next-line @typescript-eslint/no-unused-vars -- the Model the module's doc links to
import type { Model } from '../core/model/model.js';

export { fromLangChain } from './from.js';
export type { FromLangChainOptions, LangChainChatModel } from './from.js';
export { RxhealChatModel, toLangChain } from './to.js';
export type { RxhealChatModelCallOptions, RxhealChatModelFields } from './to.js';
export { StreamRestartError } from '../adapters/common.js';
