/**
 * {@link fromLangChain}: a LangChain chat model as an rxheal {@link Model} — its options, our
 * conversation as LangChain messages (Anthropic's thinking blocks for ChatAnthropic), our tool
 * choice in LangChain's words, and the model reading one `.stream()` (its chunks read by
 * `chunkReader.ts`).
 *
 * @module
 */
import type { BaseLanguageModelInput } from '@langchain/core/language_models/base';
import type { BaseChatModel, BindToolsInput } from '@langchain/core/language_models/chat_models';
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type AIMessageChunk, type BaseMessage, type ContentBlock } from '@langchain/core/messages';
import type { Runnable } from '@langchain/core/runnables';
import { endWith } from 'rxjs';
import { InvalidOptionError } from '../core/errors/errors.js';
import type { Message, ReasoningPart, ToolCall } from '../core/events/events.js';
import { fromAsyncIterable, type Model, type ModelRequest, type ToolChoice } from '../core/model/model.js';
import { requestMaxOutputTokens } from '../core/model/outputTokens.js';
import { requestPromptCacheKey } from '../core/model/promptCacheKey.js';
import { Bool, NonEmptyString, validateOptions } from '../core/errors/options.js';
import { argumentsText, openAITools } from '../providers/openai.js';
import { decodeEvents } from '../providers/sse.js';
import { isObject, iterate } from '../adapters/common.js';
import { ChunkReader, END } from './chunkReader.js';

/**
 * Our reasoning as the content blocks LangChain's Anthropic integration sends back: a signed
 * block as `{ type: 'thinking', thinking, signature }`, a redacted one as
 * `{ type: 'redacted_thinking', data }`; unsigned reasoning is not sent.
 */
function thinkingBlocks(reasoning: readonly ReasoningPart[] | undefined): ContentBlock[] {
  const blocks: ContentBlock[] = [];
  for (const part of reasoning ?? []) {
    if (part.signature !== undefined) blocks.push({ type: 'thinking', thinking: part.text, signature: part.signature });
    else if (part.redactedData !== undefined) blocks.push({ type: 'redacted_thinking', data: part.redactedData });
  }
  return blocks;
}

/**
 * Our conversation as LangChain messages. `thinking`: whether the chat model takes Anthropic's
 * thinking blocks back (ChatAnthropic): then an assistant message's signed and redacted reasoning
 * go first in its content.
 */
function toMessages(messages: readonly Message[], thinking: boolean): BaseMessage[] {
  return messages.map((message) => {
    switch (message.role) {
      case 'system':
        return new SystemMessage(message.content);
      case 'user':
        return new HumanMessage(message.content);
      case 'assistant': {
        const calls = message.toolCalls ?? [];
        const isArgs = (c: ToolCall): boolean => isObject(c.args) && !Array.isArray(c.args);
        const valid = calls.filter(isArgs);
        // arguments the model sent as text that is not a JSON object: kept, as invalid tool calls
        const invalid = calls.filter((c) => !isArgs(c));
        const blocks = thinking ? thinkingBlocks(message.reasoning) : [];
        return new AIMessage({
          content: blocks.length > 0 ? (message.content === '' ? blocks : [...blocks, { type: 'text', text: message.content }]) : message.content,
          tool_calls: valid.map((c) => ({ id: c.id, name: c.name, args: c.args as Record<string, unknown>, type: 'tool_call' as const })),
          invalid_tool_calls: invalid.map((c) => ({
            id: c.id,
            name: c.name,
            args: argumentsText(c.args),
            error: 'not a JSON object',
            type: 'invalid_tool_call' as const,
          })),
        });
      }
      case 'tool':
        return new ToolMessage({
          content: message.content,
          tool_call_id: message.toolCallId,
          name: message.toolName,
          status: message.isError ? 'error' : 'success',
        });
    }
  });
}

/**
 * Our tool choice as a LangChain `tool_choice`: `'auto'`, `'none'`, a tool's name, and for
 * `'required'` ChatAnthropic's `'any'` or everyone else's `'required'` (`anthropic`: the model is
 * ChatAnthropic).
 */
function toToolChoice(choice: ToolChoice, anthropic: boolean): string {
  if (typeof choice === 'object') return choice.tool;
  return choice === 'required' ? (anthropic ? 'any' : 'required') : choice;
}

/**
 * A chat model as {@link fromLangChain} uses it: `.stream()`, and `bindTools` for tools — any
 * `BaseChatModel`.
 *
 * @example
 * ```ts
 * const chat: LangChainChatModel = new ChatOpenAI({ model: 'gpt-4o', maxRetries: 0 });
 * ```
 */
export type LangChainChatModel = Pick<BaseChatModel, 'stream' | '_llmType'> & {
  bindTools?(tools: BindToolsInput[], kwargs?: Record<string, unknown>): Pick<Runnable<BaseLanguageModelInput, AIMessageChunk>, 'stream'>;
};

/**
 * Options of {@link fromLangChain}.
 *
 * @example
 * ```ts
 * const options: FromLangChainOptions = { id: 'gpt', requireFinishReason: true };
 * ```
 */
export interface FromLangChainOptions {
  /** The `Model.id` (breakers are named `model:<id>`). Defaults to `langchain:<model name>` (or `<_llmType()>`). */
  readonly id?: string;
  /**
   * Whether a stream that ends without a finish reason (`response_metadata.finish_reason` /
   * `stop_reason`) was cut short — an `IncompleteStreamError` — rather than finished. LangChain
   * streams have no end marker of their own. Defaults to `true` for OpenAI and Anthropic chat
   * models (their chunks say `model_provider: 'openai'` / `'anthropic'`, or `_llmType()` is
   * `'anthropic'`; both SDKs end a cut stream quietly, and ChatAnthropic's last chunk is the
   * `message_delta` with the `stop_reason`, in `additional_kwargs`), `false` otherwise (fake and
   * custom models often report none). On OpenAI's Responses API (`useResponsesApi`,
   * codex models, built-in tools…) the last chunk's `status` is the end marker: `'completed'`
   * finishes the answer, `'incomplete'` finishes it as `'length'` (`max_output_tokens`) or
   * `'content-filter'`, any other status is an `IncompleteStreamError` whatever this says.
   */
  readonly requireFinishReason?: boolean;
}

const fromProps = { id: NonEmptyString, requireFinishReason: Bool };

/**
 * Whether the chat model takes Anthropic's thinking blocks back in an assistant message's content
 * (ChatAnthropic: `_llmType()` `'anthropic'`). Others are sent no reasoning: ChatOpenAI drops
 * `thinking` blocks but passes `redacted_thinking` on, and a tool-call message whose content
 * became an empty list is refused.
 */
function takesThinkingBlocks(chatModel: LangChainChatModel): boolean {
  try {
    return typeof chatModel._llmType === 'function' && chatModel._llmType() === 'anthropic';
  } catch {
    return false; // a chat model whose _llmType throws: sent no reasoning
  }
}

/** The SDK's model name, when the chat model has one (`model`, `modelName`). */
function modelName(chatModel: object): string | undefined {
  for (const key of ['model', 'modelName']) {
    const value = (chatModel as Record<string, unknown>)[key];
    if (typeof value === 'string' && value !== '') return value;
  }
  return undefined;
}

/**
 * An rxheal {@link Model} over a LangChain.js chat model (`BaseChatModel`: `ChatOpenAI`,
 * `ChatAnthropic`, a fake model…), read with `.stream()`, so it can sit in a `fallbackModel`
 * with breakers, under `retryWithBackoff`, in `runAgent`, or back in LangChain through
 * {@link toLangChain}.
 *
 * Requests: our messages become `SystemMessage` / `HumanMessage` / `AIMessage` (with
 * `tool_calls`) / `ToolMessage` (`status: 'error'` for a failed tool); tools are bound per
 * request with `bindTools` (OpenAI-format definitions, which every LangChain chat model takes) —
 * a request with tools to a model without `bindTools` errors. The context's signal is the
 * call's `signal`: unsubscribing aborts the request. The request's `maxOutputTokens` is the
 * call option `maxTokens` (one that is not a positive integer errors the call, nothing sent): a
 * chat model that reads its limit per call takes it; **ChatOpenAI 1.x reads `maxTokens` from its
 * constructor only** (its `invocationParams` takes no per-call limit), so there set it on the
 * chat model itself. The request's `promptCacheKey` is the call option `promptCacheKey`, which
 * ChatOpenAI sends as `prompt_cache_key` (over the key it was constructed with); chat models
 * without such an option ignore it.
 *
 * Events: text content (a string, or text blocks) → `text-delta`; `tool_call_chunks` (joined by
 * `index` — a new id with a name at an index already taken starts another call —, or whole
 * `tool_calls`) → one `tool-call` each at the end, arguments parsed; then one
 * `finish`: the reason from `response_metadata` (`finish_reason` / `stop_reason`, or
 * ChatAnthropic's `additional_kwargs.stop_reason`: `stop`,
 * `end_turn` → `stop`; `tool_calls`, `tool_use` → `tool-calls`; `length`, `max_tokens` →
 * `length`…; OpenAI's Responses API: the response's `status`, `completed` or `incomplete`;
 * none: `tool-calls` after tool calls, else `stop`) and the summed `usage_metadata`.
 * See `requireFinishReason` for streams that end without a reason; a finish reason `error`
 * (OpenRouter's) is an `IncompleteStreamError`.
 *
 * Reasoning, both ways: reasoning content blocks (standard `reasoning`, Anthropic's `thinking`
 * and `redacted_thinking`, Bedrock's `reasoning_content`), or else `additional_kwargs`'
 * `reasoning_content` / `reasoning` (OpenAI-compatible servers, Groq, OpenAI's Responses API) →
 * `reasoning-delta`; a block's signature → its `reasoning-end` with it, a redacted block → a
 * `reasoning-end` with `redactedData`; a block of another `index`, text, a tool call or the end
 * ends a block unsigned. An assistant message's signed and redacted `reasoning` goes back first in
 * its content, as the `thinking` / `redacted_thinking` blocks ChatAnthropic sends — to a chat
 * model whose `_llmType()` is `'anthropic'` only (ChatOpenAI would pass `redacted_thinking` on,
 * and send a tool-call message's emptied content list); unsigned reasoning is not sent.
 *
 * Errors of the request pass as the chat model throws them (ChatOpenAI rethrows the `openai`
 * SDK's errors, which `classifyError` reads: status, `retry-after`); errors while streaming as the
 * SDK adapters read them (`providerStreamError`: a parse error is a `MalformedStreamError`, a
 * status-less error with a known type an `HttpError` of the status it implies).
 * **Construct the chat model with `maxRetries: 0`**: LangChain's own retries (6 by default for
 * ChatOpenAI) happen before the stream, and would double up with rxheal's.
 *
 * @example
 * ```ts
 * import { ChatOpenAI } from '@langchain/openai';
 * import { CircuitBreakerRegistry, fallbackModel, runAgent } from 'rxheal';
 * import { fromLangChain } from 'rxheal/langchain';
 *
 * const breakers = new CircuitBreakerRegistry({ failureThreshold: 3 });
 * const gpt4o = fromLangChain(new ChatOpenAI({ model: 'gpt-4o', maxRetries: 0 }));
 * const mini = fromLangChain(new ChatOpenAI({ model: 'gpt-4o-mini', maxRetries: 0 }));
 * const model = fallbackModel([gpt4o, mini], { breakers });
 * runAgent({ model, tools: [], messages: [{ role: 'user', content: 'Hi' }] }).subscribe(console.log);
 * ```
 * @throws {InvalidOptionError} at once, for something that is not a chat model (no `stream`), or
 * an invalid option.
 */
export function fromLangChain(chatModel: LangChainChatModel, options?: FromLangChainOptions): Model {
  if (!isObject(chatModel) || typeof chatModel.stream !== 'function') {
    throw new InvalidOptionError('fromLangChain', 'chatModel', chatModel, 'a LangChain chat model (with stream)');
  }
  const o = validateOptions('fromLangChain', fromProps, options);
  const id = o.id ?? `langchain:${modelName(chatModel) ?? (typeof chatModel._llmType === 'function' ? chatModel._llmType() : 'chat')}`;
  const thinking = takesThinkingBlocks(chatModel);
  // ChatAnthropic (its _llmType()): an end marker required even from versions whose chunks name no model_provider
  const requireFinishReason = o.requireFinishReason ?? (thinking ? true : undefined);
  const open = (request: ModelRequest, signal: AbortSignal): Promise<AsyncIterable<unknown>> => {
    let maxTokens: number | undefined;
    let promptCacheKey: string | undefined;
    try {
      maxTokens = requestMaxOutputTokens('fromLangChain', request);
      promptCacheKey = requestPromptCacheKey('fromLangChain', request);
    } catch (error) {
      return Promise.reject(error as Error); // a request it can't send: an error of the call
    }
    // `promptCacheKey`: ChatOpenAI's (and AzureChatOpenAI's) call option, sent as `prompt_cache_key`
    // on Chat Completions and Responses alike, over the one it was constructed with; other chat
    // models read the call options they know and ignore it
    const callOptions: { readonly signal: AbortSignal; readonly maxTokens?: number; readonly promptCacheKey?: string } = {
      signal,
      ...(maxTokens === undefined ? {} : { maxTokens }),
      ...(promptCacheKey === undefined ? {} : { promptCacheKey }),
    };
    const messages = toMessages(request.messages, thinking);
    if (request.tools.length === 0) return chatModel.stream(messages, callOptions);
    if (typeof chatModel.bindTools !== 'function') {
      return Promise.reject(
        new InvalidOptionError('fromLangChain', 'chatModel.bindTools', undefined, 'a function: the request has tools, and this chat model cannot bind them'),
      );
    }
    const choice = request.toolChoice === undefined ? undefined : toToolChoice(request.toolChoice, thinking);
    return chatModel.bindTools(openAITools(request.tools), choice === undefined ? undefined : { tool_choice: choice }).stream(messages, callOptions);
  };
  return {
    id,
    stream: (request, context) =>
      decodeEvents(
        fromAsyncIterable(() => iterate(id, () => open(request, context.signal))).pipe(endWith(END)),
        () => new ChunkReader(id, requireFinishReason),
      ),
  };
}
