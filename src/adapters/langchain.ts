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
 * const chat = toLangChain(fallbackModel([fromLangChain(new ChatOpenAI({ model: 'gpt-4o', maxRetries: 0 })), fromLangChain(new ChatOpenAI({ model: 'gpt-4o-mini', maxRetries: 0 }))], { midStream: 'continue' }));
 * for await (const chunk of await chat.stream('Hello')) process.stdout.write(String(chunk.content));
 * ```
 *
 * @module
 */
import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager';
import type { BaseLanguageModelInput } from '@langchain/core/language_models/base';
import { BaseChatModel, type BaseChatModelCallOptions, type BaseChatModelParams, type BindToolsInput } from '@langchain/core/language_models/chat_models';
import { AIMessage, AIMessageChunk, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { ChatGenerationChunk, type ChatResult } from '@langchain/core/outputs';
import type { Runnable } from '@langchain/core/runnables';
import { convertToOpenAITool } from '@langchain/core/utils/function_calling';
import { endWith, Observable, Subscription } from 'rxjs';
import { IncompleteStreamError, InvalidOptionError } from '../core/errors.js';
import type { FinishReason, Message, ToolCall, TurnEvent, Usage } from '../core/events.js';
import { eachValueFrom, fromAsyncIterable, streamModel, type Model, type ModelRequest, type ToolSpec } from '../core/model.js';
import { Bool, NonEmptyString, validateOptions } from '../core/options.js';
import { argumentsText } from '../sources/providers/openai.js';
import { decodeEvents, parseToolArguments } from '../sources/providers/sse.js';
import { StreamRestartError } from './common.js';

export { StreamRestartError } from './common.js';

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === 'object' && u !== null;
const num = (u: unknown): number | undefined => (typeof u === 'number' && Number.isFinite(u) ? u : undefined);

// ---------------------------------------------------------------------------------------------
// messages and tools, both ways
// ---------------------------------------------------------------------------------------------

/** Content block types that carry no answer text (tool-use echoes, reasoning): skipped. */
const NON_TEXT_BLOCKS = new Set(['tool_use', 'tool_call', 'input_json_delta', 'thinking', 'redacted_thinking', 'reasoning', 'server_tool_use']);

/** The text of a message's content: a string, or its text blocks; `undefined` for media. */
function textOf(content: unknown): string | undefined {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return content === undefined || content === null ? '' : undefined;
  let text = '';
  for (const block of content as unknown[]) {
    if (typeof block === 'string') text += block;
    else if (isObject(block) && (block['type'] === 'text' || block['type'] === 'text_delta') && typeof block['text'] === 'string') text += block['text'];
    else if (!(isObject(block) && NON_TEXT_BLOCKS.has(String(block['type'])))) return undefined;
  }
  return text;
}

/** Our conversation as LangChain messages. */
function toMessages(messages: readonly Message[]): BaseMessage[] {
  return messages.map((message) => {
    switch (message.role) {
      case 'system':
        return new SystemMessage(message.content);
      case 'user':
        return new HumanMessage(message.content);
      case 'assistant': {
        const calls = message.toolCalls ?? [];
        const valid = calls.filter((c) => isObject(c.args) && !Array.isArray(c.args));
        // arguments the model sent as text that is not a JSON object: kept, as invalid tool calls
        const invalid = calls.filter((c) => !valid.includes(c));
        return new AIMessage({
          content: message.content,
          tool_calls: valid.map((c) => ({ id: c.id, name: c.name, args: c.args as Record<string, unknown>, type: 'tool_call' as const })),
          invalid_tool_calls: invalid.map((c) => ({ id: c.id, name: c.name, args: argumentsText(c.args), error: 'not a JSON object', type: 'invalid_tool_call' as const })),
        });
      }
      case 'tool':
        return new ToolMessage({ content: message.content, tool_call_id: message.toolCallId, name: message.toolName, status: message.isError ? 'error' : 'success' });
    }
  });
}

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
        return toolCalls.length > 0 ? { role: 'assistant', content: text, toolCalls } : { role: 'assistant', content: text };
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

/** Our tool specs in OpenAI's format, which every LangChain chat model's `bindTools` takes. */
function toOpenAITools(tools: readonly ToolSpec[]): Record<string, unknown>[] {
  return tools.map((tool) => ({ type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.parameters ?? { type: 'object', properties: {} } } }));
}

// ---------------------------------------------------------------------------------------------
// fromLangChain: BaseChatModel → rxheal Model
// ---------------------------------------------------------------------------------------------

const FINISH_REASONS: Readonly<Record<string, FinishReason>> = {
  stop: 'stop',
  end_turn: 'stop',
  stop_sequence: 'stop',
  STOP: 'stop',
  tool_calls: 'tool-calls',
  tool_use: 'tool-calls',
  function_call: 'tool-calls',
  length: 'length',
  max_tokens: 'length',
  MAX_TOKENS: 'length',
  model_context_window_exceeded: 'length',
  content_filter: 'content-filter',
  refusal: 'content-filter',
  SAFETY: 'content-filter',
};

interface PendingCall {
  id: string;
  name: string;
  args: string;
  /** A whole call (from `tool_calls`): its arguments, already parsed. */
  parsed?: unknown;
}

/** Pushed after a `.stream()`'s last chunk: the stream ended. */
const END: unique symbol = Symbol('end of stream');

/** Reads one `.stream()`'s chunks into model events; at {@link END}, the tool calls and the finish. */
class ChunkReader {
  done = false;
  private chunks = 0;
  private readonly calls: PendingCall[] = [];
  private readonly byIndex = new Map<number, PendingCall>();
  private finishReason: string | undefined;
  private provider: string | undefined;
  private input: number | undefined;
  private output: number | undefined;

  constructor(
    private readonly model: string,
    private readonly requireFinishReason: boolean | undefined,
  ) {}

  push(chunk: unknown): TurnEvent[] {
    if (chunk === END) return this.finish();
    this.chunks++;
    if (!isObject(chunk)) return [];
    const out: TurnEvent[] = [];
    const text = textOf(chunk['content']);
    if (text !== undefined && text !== '') out.push({ type: 'text-delta', text });
    const pieces = chunk['tool_call_chunks'];
    const whole = chunk['tool_calls'];
    if (Array.isArray(pieces) && pieces.length > 0) for (const piece of pieces as unknown[]) this.addPiece(piece);
    else if (Array.isArray(whole)) for (const call of whole as unknown[]) this.addWhole(call);
    const meta = chunk['response_metadata'];
    if (isObject(meta)) {
      const reason = meta['finish_reason'] ?? meta['stop_reason'] ?? meta['finishReason'] ?? meta['done_reason'];
      if (typeof reason === 'string' && reason !== '') this.finishReason = reason;
      if (typeof meta['model_provider'] === 'string') this.provider = meta['model_provider'];
    }
    const usage = chunk['usage_metadata'];
    if (isObject(usage)) {
      // a stream's usage may come in pieces (input first, output later): LangChain sums them
      const input = num(usage['input_tokens']);
      const output = num(usage['output_tokens']);
      if (input !== undefined) this.input = (this.input ?? 0) + input;
      if (output !== undefined) this.output = (this.output ?? 0) + output;
    }
    return out;
  }

  /** {@link END} always comes: nothing to check when the events end. */
  end(): void {}

  /** The stream ended: its tool calls, then the finish. */
  private finish(): TurnEvent[] {
    this.done = true;
    // OpenAI's chat models always end with a finish reason: without one the stream was cut
    const required = this.requireFinishReason ?? this.provider === 'openai';
    if (required && this.finishReason === undefined) throw new IncompleteStreamError(this.model, 'no finish reason', this.chunks);
    // OpenRouter's finish_reason for an answer the provider gave up on
    if (this.finishReason === 'error') throw new IncompleteStreamError(this.model, "finish reason 'error'", this.chunks);
    const out: TurnEvent[] = this.calls.map((call, i) => ({
      type: 'tool-call',
      id: call.id || `call_${i}`,
      name: call.name,
      args: 'parsed' in call ? call.parsed : parseToolArguments(call.args),
    }));
    const reason: FinishReason =
      this.finishReason === undefined ? (this.calls.length > 0 ? 'tool-calls' : 'stop') : (FINISH_REASONS[this.finishReason] ?? 'other');
    const usage: Usage | undefined = this.input === undefined && this.output === undefined ? undefined : { inputTokens: this.input ?? 0, outputTokens: this.output ?? 0 };
    out.push(usage ? { type: 'finish', reason, usage } : { type: 'finish', reason });
    return out;
  }

  private addPiece(piece: unknown): void {
    if (!isObject(piece)) return;
    const index = num(piece['index']);
    const id = typeof piece['id'] === 'string' ? piece['id'] : undefined;
    // by index; without one, a piece with a new id starts a call, others continue the last one
    let call = index !== undefined ? this.byIndex.get(index) : id === undefined || id === this.calls[this.calls.length - 1]?.id ? this.calls[this.calls.length - 1] : undefined;
    // another call's start (its id and name) at an index already taken (Ollama gives every
    // parallel call index 0): a new call, not more of that one
    const starts = id !== undefined && id !== '' && typeof piece['name'] === 'string' && piece['name'] !== '';
    if (call !== undefined && starts && call.id !== '' && call.id !== id) call = undefined;
    if (call === undefined) {
      call = { id: '', name: '', args: '' };
      this.calls.push(call);
      if (index !== undefined) this.byIndex.set(index, call);
    }
    if (id !== undefined && id !== '') call.id = id;
    if (typeof piece['name'] === 'string' && piece['name'] !== '' && call.name === '') call.name = piece['name'];
    if (typeof piece['args'] === 'string') call.args += piece['args'];
  }

  private addWhole(call: unknown): void {
    if (!isObject(call)) return;
    this.calls.push({ id: typeof call['id'] === 'string' ? call['id'] : '', name: String(call['name'] ?? ''), args: '', parsed: call['args'] ?? {} });
  }
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
   * streams have no end marker of their own. Defaults to `true` for OpenAI chat models (their
   * chunks say `model_provider: 'openai'`; the SDK ends a cut stream quietly), `false` otherwise
   * (fake and custom models often report none).
   */
  readonly requireFinishReason?: boolean;
}

const fromProps = { id: NonEmptyString, requireFinishReason: Bool };

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
 * call's `signal`: unsubscribing aborts the request.
 *
 * Events: text content (a string, or text blocks) → `text-delta`; `tool_call_chunks` (joined by
 * `index` — a new id with a name at an index already taken starts another call —, or whole
 * `tool_calls`) → one `tool-call` each at the end, arguments parsed; then one
 * `finish`: the reason from `response_metadata` (`finish_reason` / `stop_reason`: `stop`,
 * `end_turn` → `stop`; `tool_calls`, `tool_use` → `tool-calls`; `length`, `max_tokens` →
 * `length`…; none: `tool-calls` after tool calls, else `stop`) and the summed `usage_metadata`.
 * See `requireFinishReason` for streams that end without a reason; a finish reason `error`
 * (OpenRouter's) is an `IncompleteStreamError`.
 *
 * Errors pass as the chat model throws them (ChatOpenAI rethrows the `openai` SDK's errors,
 * which `classifyError` reads: status, `retry-after`, the type of a mid-stream error).
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
 * const model = fallbackModel([fromLangChain(new ChatOpenAI({ model: 'gpt-4o', maxRetries: 0 })), fromLangChain(new ChatOpenAI({ model: 'gpt-4o-mini', maxRetries: 0 }))], { breakers });
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
  const open = (request: ModelRequest, signal: AbortSignal): Promise<AsyncIterable<unknown>> => {
    const messages = toMessages(request.messages);
    if (request.tools.length === 0) return chatModel.stream(messages, { signal });
    if (typeof chatModel.bindTools !== 'function') {
      return Promise.reject(new InvalidOptionError('fromLangChain', 'chatModel.bindTools', undefined, 'a function: the request has tools, and this chat model cannot bind them'));
    }
    return chatModel.bindTools(toOpenAITools(request.tools)).stream(messages, { signal });
  };
  return {
    id,
    stream: (request, context) =>
      decodeEvents(fromAsyncIterable(() => chunksOf(() => open(request, context.signal))).pipe(endWith(END)), () => new ChunkReader(id, o.requireFinishReason)),
  };
}

async function* chunksOf(open: () => Promise<AsyncIterable<unknown>>): AsyncGenerator<unknown> {
  yield* await open();
}

// ---------------------------------------------------------------------------------------------
// toLangChain: rxheal Model → BaseChatModel
// ---------------------------------------------------------------------------------------------

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
};

const usageMetadata = (usage: Usage) => ({ input_tokens: usage.inputTokens, output_tokens: usage.outputTokens, total_tokens: usage.inputTokens + usage.outputTokens });

/** An observable that errors with the signal's reason when it aborts (and unsubscribes the source). */
function untilAborted<T>(source: Observable<T>, signal: AbortSignal | undefined): Observable<T> {
  if (signal === undefined) return source;
  return new Observable<T>((subscriber) => {
    const abort = (): void => subscriber.error(signal.reason ?? new DOMException('The operation was aborted', 'AbortError'));
    if (signal.aborted) {
      abort();
      return undefined;
    }
    signal.addEventListener('abort', abort, { once: true });
    const subscription = new Subscription(() => signal.removeEventListener('abort', abort));
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
  }

  _llmType(): string {
    return 'rxheal';
  }

  override bindTools(tools: BindToolsInput[], kwargs?: Partial<RxhealChatModelCallOptions>): Runnable<BaseLanguageModelInput, AIMessageChunk, RxhealChatModelCallOptions> {
    return this.withConfig({ ...kwargs, tools });
  }

  private request(messages: BaseMessage[], options: this['ParsedCallOptions']): ModelRequest {
    return { messages: fromMessages(messages), tools: toToolSpecs(options.tools ?? []) };
  }

  /**
   * The model's events as chunks: text as content, each tool call as one complete
   * `tool_call_chunks` entry, the finish as `usage_metadata` and
   * `response_metadata.finish_reason`. A `reset` before anything was yielded is invisible; after,
   * a chain can't take back what it got: the stream errors with {@link StreamRestartError} (use
   * `midStream: 'continue'`). Aborting `options.signal`, or the consumer stopping, unsubscribes
   * (the model's requests are aborted).
   */
  override async *_streamResponseChunks(messages: BaseMessage[], options: this['ParsedCallOptions'], runManager?: CallbackManagerForLLMRun): AsyncGenerator<ChatGenerationChunk> {
    const request = this.request(messages, options);
    let yielded = false;
    let calls = 0;
    for await (const event of eachValueFrom(untilAborted(streamModel(this.model, request), options.signal))) {
      let chunk: ChatGenerationChunk;
      switch (event.type) {
        case 'reset':
          if (yielded) throw new StreamRestartError(this.model.id, event, 'LangChain');
          continue;
        case 'reasoning-delta':
        case 'reasoning-end':
          continue;
        case 'text-delta':
          if (event.text === '') continue;
          chunk = new ChatGenerationChunk({ text: event.text, message: new AIMessageChunk({ content: event.text }) });
          break;
        case 'tool-call':
          chunk = new ChatGenerationChunk({
            text: '',
            message: new AIMessageChunk({ content: '', tool_call_chunks: [{ type: 'tool_call_chunk', id: event.id, name: event.name, args: argumentsText(event.args), index: calls++ }] }),
          });
          break;
        case 'finish': {
          const finish_reason = LANGCHAIN_FINISH[event.reason];
          chunk = new ChatGenerationChunk({
            text: '',
            message: new AIMessageChunk({ content: '', response_metadata: { finish_reason }, ...(event.usage ? { usage_metadata: usageMetadata(event.usage) } : {}) }),
            generationInfo: { finish_reason },
          });
          break;
        }
      }
      yielded = true;
      yield chunk;
      if (event.type === 'text-delta') await runManager?.handleLLMNewToken(event.text, undefined, undefined, undefined, undefined, { chunk });
    }
  }

  /** The model's answer as one message; a `reset` discards what was collected (nothing was shown). */
  override async _generate(messages: BaseMessage[], options: this['ParsedCallOptions']): Promise<ChatResult> {
    const request = this.request(messages, options);
    let text = '';
    let calls: ToolCall[] = [];
    for await (const event of eachValueFrom(untilAborted(streamModel(this.model, request), options.signal))) {
      switch (event.type) {
        case 'reset':
          text = '';
          calls = [];
          break;
        case 'text-delta':
          text += event.text;
          break;
        case 'tool-call':
          calls.push(event);
          break;
        case 'finish': {
          const finish_reason = LANGCHAIN_FINISH[event.reason];
          const ai = new AIMessage({
            content: text,
            tool_calls: calls.filter((c) => isObject(c.args) && !Array.isArray(c.args)).map((c) => ({ id: c.id, name: c.name, args: c.args as Record<string, unknown>, type: 'tool_call' as const })),
            invalid_tool_calls: calls
              .filter((c) => !(isObject(c.args) && !Array.isArray(c.args)))
              .map((c) => ({ id: c.id, name: c.name, args: argumentsText(c.args), error: 'not a JSON object', type: 'invalid_tool_call' as const })),
            response_metadata: { finish_reason },
            ...(event.usage ? { usage_metadata: usageMetadata(event.usage) } : {}),
          });
          return {
            generations: [{ text, message: ai, generationInfo: { finish_reason } }],
            llmOutput: event.usage ? { tokenUsage: { promptTokens: event.usage.inputTokens, completionTokens: event.usage.outputTokens, totalTokens: event.usage.inputTokens + event.usage.outputTokens } } : {},
          };
        }
      }
    }
    // streamModel errors a stream that ends without a finish: not reached
    throw new IncompleteStreamError(this.model.id, 'no finish event', 0);
  }
}

/**
 * A LangChain chat model (a `BaseChatModel` subclass, {@link RxhealChatModel}) over an rxheal
 * {@link Model} — typically a `fallbackModel` of {@link fromLangChain} models with breakers and
 * retries — so LangChain chains, `createAgent` agents and LangGraph nodes get per-model retries,
 * shared breakers, fallback and mid-stream continuation, which `withFallbacks` (before the first
 * chunk only) and `withRetry` (never while streaming) don't give.
 *
 * Messages become our conversation (text content; image blocks are an error: rxheal models take
 * text), tools bound with `bindTools` our tools. Streaming follows the model: text chunks, each
 * tool call as one complete `tool_call_chunks` entry, a last chunk with `usage_metadata` and
 * `response_metadata.finish_reason`. **A LangChain stream can't take back what it delivered**:
 * with `fallbackModel`'s `midStream: 'continue'` a model dying mid-answer is continued in the
 * same stream; a `reset` after output (`midStream: 'restart'`) errors the stream with
 * {@link StreamRestartError} instead of splicing two attempts. `.invoke()` collects the answer (a
 * reset there just discards what was collected). `tool_choice` is not passed on.
 *
 * @example
 * ```ts
 * import { ChatOpenAI } from '@langchain/openai';
 * import { CircuitBreakerRegistry, fallbackModel } from 'rxheal';
 * import { fromLangChain, toLangChain } from 'rxheal/langchain';
 *
 * const breakers = new CircuitBreakerRegistry({ failureThreshold: 3, resetTimeoutMs: 60_000 });
 * const chat = toLangChain(
 *   fallbackModel([fromLangChain(new ChatOpenAI({ model: 'gpt-4o', maxRetries: 0 })), fromLangChain(new ChatOpenAI({ model: 'gpt-4o-mini', maxRetries: 0 }))], { breakers, midStream: 'continue' }),
 * );
 * const answer = await chat.bindTools([getWeather]).invoke("What's the weather in Paris?");
 * ```
 * @throws {InvalidOptionError} at once, for something that is not a Model.
 */
export function toLangChain(model: Model, fields: Omit<RxhealChatModelFields, 'model'> = {}): RxhealChatModel {
  if (!isObject(model) || typeof model.id !== 'string' || model.id === '' || typeof model.stream !== 'function') {
    throw new InvalidOptionError('toLangChain', 'model', model, 'a Model ({ id: non-empty string, stream(request, context) })');
  }
  return new RxhealChatModel({ ...fields, model });
}
