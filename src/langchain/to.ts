/**
 * {@link toLangChain}: an rxheal {@link Model} as a LangChain chat model ({@link RxhealChatModel},
 * a `BaseChatModel`) — LangChain messages, bound tools and `tool_choice` as our request, the
 * model's events as chunks (`_streamResponseChunks`) or one message (`_generate`), and
 * `withStructuredOutput` forcing its tool.
 *
 * @module
 */
import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager';
import type { BaseLanguageModelInput } from '@langchain/core/language_models/base';
import { BaseChatModel, type BaseChatModelCallOptions, type BaseChatModelParams, type BindToolsInput } from '@langchain/core/language_models/chat_models';
import { AIMessageChunk, type AIMessage, type BaseMessage, type ContentBlock, type ToolMessage } from '@langchain/core/messages';
import { ChatGenerationChunk, type ChatResult } from '@langchain/core/outputs';
import type { Runnable } from '@langchain/core/runnables';
import { convertToOpenAITool } from '@langchain/core/utils/function_calling';
import { Observable, Subscription } from 'rxjs';
import { IncompleteStreamError, InvalidOptionError } from '../core/errors/errors.js';
import type { FinishReason, Message, ToolCall, Usage } from '../core/events/events.js';
import { eachValueFrom, isModel, streamModel, type Model, type ModelRequest, type ToolChoice, type ToolSpec } from '../core/model/model.js';
import { requestMaxOutputTokens } from '../core/model/outputTokens.js';
import { argumentsText } from '../providers/openai.js';
import { abortReason, isObject, onAbort, StreamRestartError } from '../adapters/common.js';
import { reasoningOf, textOf } from './content.js';

/** LangChain messages as our conversation. */
function fromMessages(messages: readonly BaseMessage[]): Message[] {
  const names = new Map<string, string>();
  return messages.map((message, i): Message => {
    const type = message.getType();
    const text = textOf(message.content);
    if (text === undefined) {
      throw new InvalidOptionError('toLangChain', `messages[${i}].content`, message.content, 'text (rxheal models take text, tool calls and tool results)');
    }
    switch (type) {
      case 'system':
      case 'developer':
        return { role: 'system', content: text };
      case 'human':
      case 'generic':
        return { role: 'user', content: text };
      case 'ai': {
        const ai = message as AIMessage;
        const toolCalls: ToolCall[] = [
          ...(ai.tool_calls ?? []).map((c, j) => ({ id: c.id ?? `call_${i}_${j}`, name: c.name, args: c.args as unknown })),
          ...(ai.invalid_tool_calls ?? []).map((c, j) => ({ id: c.id ?? `invalid_${i}_${j}`, name: c.name ?? '', args: c.args ?? '' })),
        ];
        for (const c of toolCalls) names.set(c.id, c.name);
        const answer: Message = toolCalls.length > 0 ? { role: 'assistant', content: text, toolCalls } : { role: 'assistant', content: text };
        // its reasoning, with what the model needs to accept it back (Anthropic's signature)
        const reasoning = reasoningOf(message.content, message.additional_kwargs);
        return reasoning.length > 0 ? { ...answer, reasoning } : answer;
      }
      case 'tool': {
        const tool = message as ToolMessage;
        const result: Message = { role: 'tool', toolCallId: tool.tool_call_id, toolName: tool.name ?? names.get(tool.tool_call_id) ?? '', content: text };
        return tool.status === 'error' ? { ...result, isError: true } : result;
      }
      default:
        throw new InvalidOptionError('toLangChain', `messages[${i}]`, type, 'a system, human, ai or tool message');
    }
  });
}

/** Bound tools (structured tools, OpenAI-format definitions…) as our tool specs. */
function toToolSpecs(tools: readonly BindToolsInput[]): ToolSpec[] {
  return tools.map((tool) => {
    const fn = convertToOpenAITool(tool as Parameters<typeof convertToOpenAITool>[0]).function;
    return { name: fn.name, description: fn.description ?? '', parameters: fn.parameters };
  });
}

/**
 * A LangChain `tool_choice` as ours: `'auto'` / `'none'`; `'any'` or `'required'` → `'required'`;
 * a tool's name, OpenAI's `{ type: 'function', function: { name } }` or Anthropic's
 * `{ type: 'tool', name }` → that tool; `{ type: 'auto' | 'any' | 'none' }` likewise. Anything else
 * is left to the model (undefined).
 */
function fromToolChoice(choice: unknown): ToolChoice | undefined {
  if (typeof choice === 'string') {
    if (choice === 'auto' || choice === 'none' || choice === 'required') return choice;
    if (choice === 'any') return 'required';
    return choice === '' ? undefined : { tool: choice };
  }
  if (!isObject(choice)) return undefined;
  const fn = choice['function'];
  if (isObject(fn) && typeof fn['name'] === 'string') return { tool: fn['name'] };
  if (choice['type'] === 'tool' && typeof choice['name'] === 'string') return { tool: choice['name'] };
  const kind = choice['type'];
  return kind === 'auto' || kind === 'none' || kind === 'any' || kind === 'required' ? fromToolChoice(kind) : undefined;
}

/**
 * Call options of {@link RxhealChatModel}: LangChain's, plus the tools `bindTools` bound.
 *
 * @example
 * ```ts
 * const options: RxhealChatModelCallOptions = { tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: {} } }] };
 * ```
 */
export interface RxhealChatModelCallOptions extends BaseChatModelCallOptions {
  readonly tools?: BindToolsInput[];
  /**
   * The most output tokens of the call (bound with `withConfig({ maxTokens })` or given per
   * call): the request's `maxOutputTokens`, which every rxheal model sends as its provider's field.
   * Not a positive integer: the call fails with an `InvalidOptionError`.
   */
  readonly maxTokens?: number;
  /**
   * The prompt cache key of the call (as ChatOpenAI's `promptCacheKey`): the request's
   * `promptCacheKey`, which every rxheal model sends (OpenAI's `prompt_cache_key`) and a
   * `modelPool` keeps the conversation on its member by.
   */
  readonly promptCacheKey?: string;
}

/**
 * Fields of {@link RxhealChatModel}: the rxheal model, and LangChain's chat model params
 * (callbacks, tags, metadata…).
 *
 * @example
 * ```ts
 * const fields: RxhealChatModelFields = { model: fallbackModel([gpt, claude]), tags: ['healed'] };
 * ```
 */
export interface RxhealChatModelFields extends BaseChatModelParams {
  readonly model: Model;
}

/** LangChain's (OpenAI's) finish reason for ours. */
const LANGCHAIN_FINISH: Readonly<Record<FinishReason, string>> = {
  stop: 'stop',
  'tool-calls': 'tool_calls',
  length: 'length',
  'content-filter': 'content_filter',
  error: 'error',
  other: 'other',
  // cut for money: short of its end, as at a length limit
  budget: 'length',
};

const usageMetadata = (usage: Usage) => ({
  input_tokens: usage.inputTokens,
  output_tokens: usage.outputTokens,
  total_tokens: usage.inputTokens + usage.outputTokens,
  ...(usage.cachedInputTokens !== undefined || usage.cacheWriteTokens !== undefined
    ? {
        input_token_details: {
          ...(usage.cachedInputTokens === undefined ? {} : { cache_read: usage.cachedInputTokens }),
          ...(usage.cacheWriteTokens === undefined ? {} : { cache_creation: usage.cacheWriteTokens }),
        },
      }
    : {}),
  ...(usage.reasoningTokens === undefined ? {} : { output_token_details: { reasoning: usage.reasoningTokens } }),
});

/** A chunk of one reasoning content block (no text). */
const reasoningChunk = (block: ContentBlock): ChatGenerationChunk => new ChatGenerationChunk({ text: '', message: new AIMessageChunk({ content: [block] }) });

/** An observable that errors with the signal's reason when it aborts (and unsubscribes the source). */
function untilAborted<T>(source: Observable<T>, signal: AbortSignal | undefined): Observable<T> {
  if (signal === undefined) return source;
  return new Observable<T>((subscriber) => {
    const stop = onAbort(signal, () => subscriber.error(abortReason(signal)));
    if (subscriber.closed) return undefined;
    const subscription = new Subscription(stop);
    subscription.add(source.subscribe(subscriber));
    return subscription;
  });
}

/**
 * A LangChain chat model over an rxheal {@link Model}: what {@link toLangChain} returns. Streams
 * (`.stream()`, `.streamEvents()`, agents) read `_streamResponseChunks`; `.invoke()` without
 * streaming callbacks reads `_generate`; `bindTools` binds tools for the model's requests.
 *
 * @example
 * ```ts
 * const chat = new RxhealChatModel({ model: fallbackModel([gpt, claude], { midStream: 'continue' }) });
 * const answer = await chat.invoke('Hello');
 * ```
 */
export class RxhealChatModel extends BaseChatModel<RxhealChatModelCallOptions> {
  /** The rxheal model answering. */
  readonly model: Model;

  static override lc_name(): string {
    return 'RxhealChatModel';
  }

  constructor(fields: RxhealChatModelFields) {
    super(fields);
    this.model = fields.model;
    // BaseChatModel's withStructuredOutput binds its one tool without a tool_choice: the model may
    // answer in text and the parse fails. Bound here, it forces that tool (as ChatOpenAI and
    // ChatAnthropic do); an overloaded method, so set per instance rather than overridden.
    const structured = BaseChatModel.prototype.withStructuredOutput;
    this.withStructuredOutput = ((schema: never, config?: never) => structured.call(forcingTheTool(this), schema, config)) as typeof this.withStructuredOutput;
  }

  _llmType(): string {
    return 'rxheal';
  }

  override bindTools(
    tools: BindToolsInput[],
    kwargs?: Partial<RxhealChatModelCallOptions>,
  ): Runnable<BaseLanguageModelInput, AIMessageChunk, RxhealChatModelCallOptions> {
    return this.withConfig({ ...kwargs, tools });
  }

  private request(messages: BaseMessage[], options: this['ParsedCallOptions']): ModelRequest {
    const tools = toToolSpecs(options.tools ?? []);
    const toolChoice = fromToolChoice(options.tool_choice);
    const { maxTokens, promptCacheKey } = options;
    const request: ModelRequest = {
      messages: fromMessages(messages),
      tools,
      ...(toolChoice === undefined ? {} : { toolChoice }),
      ...(maxTokens === undefined ? {} : { maxOutputTokens: maxTokens }),
      ...(promptCacheKey === undefined ? {} : { promptCacheKey }),
    };
    requestMaxOutputTokens('toLangChain', request); // a limit no model could send: the call fails
    return request;
  }

  /**
   * The model's events as chunks: text as content, reasoning as standard
   * `{ type: 'reasoning', reasoning, index }` content blocks (a signature as the block's
   * `signature`, a redacted block as `{ type: 'redacted_thinking', data }`: `contentBlocks` shows
   * them, `.text` leaves them out), each tool call as one complete `tool_call_chunks` entry, the
   * finish as `usage_metadata` and `response_metadata.finish_reason`. Text is a string until
   * reasoning came, then indexed text blocks (so chunks concatenate into one block each). A
   * `reset` before anything was yielded is invisible; after (reasoning included), a chain can't
   * take back what it got: the stream errors with {@link StreamRestartError} (use
   * `midStream: 'continue'`). Aborting `options.signal`, or the consumer stopping, unsubscribes
   * (the model's requests are aborted).
   */
  override async *_streamResponseChunks(
    messages: BaseMessage[],
    options: this['ParsedCallOptions'],
    runManager?: CallbackManagerForLLMRun,
  ): AsyncGenerator<ChatGenerationChunk> {
    const request = this.request(messages, options);
    let yielded = false;
    /** The next content block's index: text, reasoning and tool calls share them. */
    let next = 0;
    /** The index of the text block being streamed, and of the open reasoning block. */
    let textBlock: number | undefined;
    let reasoningBlock: number | undefined;
    /** Whether reasoning was streamed: text then goes in indexed blocks too. */
    let blocks = false;
    for await (const event of eachValueFrom(untilAborted(streamModel(this.model, request), options.signal))) {
      let chunk: ChatGenerationChunk;
      switch (event.type) {
        case 'reset':
          if (yielded) throw new StreamRestartError(this.model.id, event, 'LangChain');
          continue;
        case 'reasoning-delta':
          if (event.text === '') continue;
          reasoningBlock ??= next++;
          chunk = reasoningChunk({ type: 'reasoning', reasoning: event.text, index: reasoningBlock });
          break;
        case 'reasoning-end': {
          const open = reasoningBlock;
          reasoningBlock = undefined;
          if (event.redactedData !== undefined) chunk = reasoningChunk({ type: 'redacted_thinking', data: event.redactedData, index: next++ });
          else if (event.signature !== undefined)
            chunk = reasoningChunk({ type: 'reasoning', reasoning: '', signature: event.signature, index: open ?? next++ });
          else continue; // an unsigned end: the block just ends
          break;
        }
        case 'text-delta':
          if (event.text === '') continue;
          textBlock ??= next++;
          chunk = new ChatGenerationChunk({
            text: event.text,
            message: new AIMessageChunk({ content: blocks ? [{ type: 'text', text: event.text, index: textBlock }] : event.text }),
          });
          break;
        case 'tool-call':
          chunk = new ChatGenerationChunk({
            text: '',
            message: new AIMessageChunk({
              content: '',
              tool_call_chunks: [{ type: 'tool_call_chunk', id: event.id, name: event.name, args: argumentsText(event.args), index: next++ }],
            }),
          });
          break;
        case 'finish': {
          const finish_reason = LANGCHAIN_FINISH[event.reason];
          chunk = new ChatGenerationChunk({
            text: '',
            message: new AIMessageChunk({
              content: '',
              response_metadata: { finish_reason },
              ...(event.usage ? { usage_metadata: usageMetadata(event.usage) } : {}),
            }),
            generationInfo: { finish_reason },
          });
          break;
        }
      }
      if (event.type === 'reasoning-delta' || event.type === 'reasoning-end') {
        // text after reasoning is a block of its own
        blocks = true;
        textBlock = undefined;
      }
      yielded = true;
      yield chunk;
      // streaming callbacks (LangGraph's messages mode, streamEvents from .invoke) see text and reasoning
      if (event.type === 'text-delta') await runManager?.handleLLMNewToken(event.text, undefined, undefined, undefined, undefined, { chunk });
      else if (event.type === 'reasoning-delta' || event.type === 'reasoning-end')
        await runManager?.handleLLMNewToken('', undefined, undefined, undefined, undefined, { chunk });
    }
  }

  /**
   * The model's answer as one message: text content, or — with reasoning — content blocks in
   * their order (reasoning as in the stream: `{ type: 'reasoning', reasoning, signature? }`,
   * `{ type: 'redacted_thinking', data }`); a `reset` discards what was collected (nothing was
   * shown). An `AIMessageChunk`, as `BaseChatModel` expects (its `withStructuredOutput` parser
   * takes nothing else), with each tool call as a whole `tool_call_chunks` entry.
   */
  override async _generate(messages: BaseMessage[], options: this['ParsedCallOptions']): Promise<ChatResult> {
    const request = this.request(messages, options);
    let calls: ToolCall[] = [];
    /** The answer's blocks in order; the text block and the reasoning block still being added to. */
    let parts: AnswerPart[] = [];
    let textPart: Extract<AnswerPart, { type: 'text' }> | undefined;
    let thinking: Extract<AnswerPart, { type: 'reasoning' }> | undefined;
    for await (const event of eachValueFrom(untilAborted(streamModel(this.model, request), options.signal))) {
      switch (event.type) {
        case 'reset':
          calls = [];
          parts = [];
          textPart = thinking = undefined;
          break;
        case 'text-delta':
          if (event.text === '') break;
          if (textPart === undefined) parts.push((textPart = { type: 'text', text: '' }));
          textPart.text += event.text;
          break;
        case 'reasoning-delta':
          if (event.text === '') break;
          if (thinking === undefined) parts.push((thinking = { type: 'reasoning', reasoning: '' }));
          thinking.reasoning += event.text;
          textPart = undefined;
          break;
        case 'reasoning-end':
          if (event.redactedData !== undefined) parts.push({ type: 'redacted_thinking', data: event.redactedData });
          else if (event.signature !== undefined) {
            if (thinking === undefined) parts.push({ type: 'reasoning', reasoning: '', signature: event.signature });
            else thinking.signature = event.signature;
          }
          thinking = textPart = undefined;
          break;
        case 'tool-call':
          calls.push(event);
          break;
        case 'finish': {
          const finish_reason = LANGCHAIN_FINISH[event.reason];
          // the answer's text: its text blocks; content blocks only when it reasoned
          let text = '';
          for (const part of parts) if (part.type === 'text') text += part.text;
          const reasoned = parts.some((part) => part.type !== 'text');
          // an AIMessageChunk, as BaseChatModel's own code expects (withStructuredOutput's parser
          // refuses anything else); its tool calls from whole chunks: arguments that are not a
          // JSON object become invalid_tool_calls, as LangChain parses them
          const ai = new AIMessageChunk({
            content: reasoned ? parts : text,
            tool_call_chunks: calls.map((c, index) => ({ type: 'tool_call_chunk' as const, id: c.id, name: c.name, args: argumentsText(c.args), index })),
            response_metadata: { finish_reason },
            ...(event.usage ? { usage_metadata: usageMetadata(event.usage) } : {}),
          });
          return {
            generations: [{ text, message: ai, generationInfo: { finish_reason } }],
            llmOutput: event.usage
              ? {
                  tokenUsage: {
                    promptTokens: event.usage.inputTokens,
                    completionTokens: event.usage.outputTokens,
                    totalTokens: event.usage.inputTokens + event.usage.outputTokens,
                  },
                }
              : {},
          };
        }
      }
    }
    // streamModel errors a stream that ends without a finish: not reached
    throw new IncompleteStreamError(this.model.id, 'no finish event', 0);
  }
}

/** A block of an answer `_generate` collects: text, reasoning (signed or not), a redacted block. */
type AnswerPart = { type: 'text'; text: string } | { type: 'reasoning'; reasoning: string; signature?: string } | { type: 'redacted_thinking'; data: string };

/**
 * The chat model as `withStructuredOutput` sees it: its `bindTools` forces the one tool it binds
 * (`tool_choice` that tool's name) unless told otherwise.
 */
function forcingTheTool(chat: RxhealChatModel): RxhealChatModel {
  const forcing = Object.create(chat) as RxhealChatModel;
  forcing.bindTools = (tools, kwargs) => {
    const only = tools.length === 1 ? tools[0] : undefined;
    const fn = isObject(only) ? only['function'] : undefined;
    const name = isObject(fn) ? fn['name'] : isObject(only) ? only['name'] : undefined;
    return chat.bindTools(tools, kwargs?.tool_choice === undefined && typeof name === 'string' ? { ...kwargs, tool_choice: name } : kwargs);
  };
  return forcing;
}

/**
 * A LangChain chat model (a `BaseChatModel` subclass, {@link RxhealChatModel}) over an rxheal
 * {@link Model} — typically a `fallbackModel` of {@link fromLangChain} models with breakers and
 * retries — so LangChain chains, `createAgent` agents and LangGraph nodes get per-model retries,
 * shared breakers, fallback and mid-stream continuation, which `withFallbacks` (before the first
 * chunk only) and `withRetry` (never while streaming) don't give.
 *
 * Messages become our conversation (text content; image blocks are an error: rxheal models take
 * text; an AI message's reasoning blocks — `reasoning`, `thinking`, `redacted_thinking`, or
 * `additional_kwargs.reasoning_content` — its `reasoning`, signatures kept), tools bound with
 * `bindTools` our tools. Streaming follows the model: text chunks, reasoning as standard
 * `{ type: 'reasoning', reasoning }` content blocks (the signature as the block's `signature`, a
 * redacted block as `{ type: 'redacted_thinking', data }`: `contentBlocks` shows them, `.text`
 * and `StringOutputParser` leave them out; `.invoke()` puts them in the message likewise), each
 * tool call as one complete `tool_call_chunks` entry, a last chunk with `usage_metadata` and
 * `response_metadata.finish_reason`. **A LangChain stream can't take back what it delivered**:
 * with `fallbackModel`'s `midStream: 'continue'` a model dying mid-answer is continued in the
 * same stream; a `reset` after output, reasoning included (`midStream: 'restart'`), errors the
 * stream with {@link StreamRestartError} instead of splicing two attempts. `.invoke()` collects
 * the answer (a reset there just discards what was collected). `tool_choice` (bound with
 * `bindTools(tools, { tool_choice })` or given per call) becomes the request's `toolChoice`;
 * `withStructuredOutput` forces its tool with it, as ChatOpenAI and ChatAnthropic do. The call
 * option `maxTokens` becomes the request's `maxOutputTokens`.
 *
 * @example
 * ```ts
 * import { ChatOpenAI } from '@langchain/openai';
 * import { CircuitBreakerRegistry, fallbackModel } from 'rxheal';
 * import { fromLangChain, toLangChain } from 'rxheal/langchain';
 *
 * const breakers = new CircuitBreakerRegistry({ failureThreshold: 3, resetTimeoutMs: 60_000 });
 * const chat = toLangChain(
 *   fallbackModel(
 *     [fromLangChain(new ChatOpenAI({ model: 'gpt-4o', maxRetries: 0 })), fromLangChain(new ChatOpenAI({ model: 'gpt-4o-mini', maxRetries: 0 }))],
 *     { breakers, midStream: 'continue' },
 *   ),
 * );
 * const answer = await chat.bindTools([getWeather]).invoke("What's the weather in Paris?");
 * ```
 * @throws {InvalidOptionError} at once, for something that is not a Model.
 */
export function toLangChain(model: Model, fields: Omit<RxhealChatModelFields, 'model'> = {}): RxhealChatModel {
  if (!isModel(model)) {
    throw new InvalidOptionError('toLangChain', 'model', model, 'a Model ({ id: non-empty string, stream(request, context) })');
  }
  return new RxhealChatModel({ ...fields, model });
}
