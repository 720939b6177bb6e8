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
import { AIMessage, AIMessageChunk, HumanMessage, SystemMessage, ToolMessage, type BaseMessage, type ContentBlock } from '@langchain/core/messages';
import { ChatGenerationChunk, type ChatResult } from '@langchain/core/outputs';
import type { Runnable } from '@langchain/core/runnables';
import { convertToOpenAITool } from '@langchain/core/utils/function_calling';
import { endWith, Observable, Subscription } from 'rxjs';
import { IncompleteStreamError, InvalidOptionError } from '../core/errors/errors.js';
import type { FinishReason, Message, ReasoningPart, ToolCall, TurnEvent, Usage } from '../core/events/events.js';
import { eachValueFrom, fromAsyncIterable, isModel, streamModel, type Model, type ModelRequest, type ToolChoice, type ToolSpec } from '../core/model/model.js';
import { Bool, NonEmptyString, validateOptions } from '../core/errors/options.js';
import { argumentsText, openAITools } from '../providers/openai.js';
import { decodeEvents, parseToolArguments } from '../providers/sse.js';
import { abortReason, isObject, iterate, num, onAbort, StreamRestartError } from '../adapters/common.js';

export { StreamRestartError } from '../adapters/common.js';


// ---------------------------------------------------------------------------------------------
// messages and tools, both ways
// ---------------------------------------------------------------------------------------------

/** Content block types that carry no answer text (tool-use echoes, reasoning): skipped. */
const NON_TEXT_BLOCKS = new Set(['tool_use', 'tool_call', 'input_json_delta', 'thinking', 'redacted_thinking', 'reasoning', 'reasoning_content', 'server_tool_use']);

/** A non-empty string, or `undefined`. */
const nonEmpty = (u: unknown): string | undefined => (typeof u === 'string' && u !== '' ? u : undefined);

/**
 * Reasoning in a content block, as LangChain's integrations put it: the standard
 * `{ type: 'reasoning', reasoning, signature? }` (what the block translators give, and
 * `toLangChain` streams), Anthropic's `{ type: 'thinking', thinking, signature }` and
 * `{ type: 'redacted_thinking', data }` (ChatAnthropic; a stream's signature comes in a block of
 * its own), Bedrock Converse's `{ type: 'reasoning_content', reasoningText: { text, signature } }`,
 * a redacted block translated as `{ type: 'non_standard', value }`. `key`: the block's `index`
 * (which block of a stream it continues).
 */
interface ReasoningPiece {
  readonly key: unknown;
  readonly text?: string | undefined;
  readonly signature?: string | undefined;
  readonly redactedData?: string | undefined;
}

function reasoningPiece(block: unknown): ReasoningPiece | undefined {
  if (!isObject(block)) return undefined;
  const key = block['index'];
  switch (block['type']) {
    case 'reasoning':
      return { key, text: nonEmpty(block['reasoning']), signature: nonEmpty(block['signature']) };
    case 'thinking':
      return { key, text: nonEmpty(block['thinking']), signature: nonEmpty(block['signature']) };
    case 'redacted_thinking':
      return { key, redactedData: nonEmpty(block['data']) };
    case 'reasoning_content': {
      const reasoning = block['reasoningText'];
      return isObject(reasoning) ? { key, text: nonEmpty(reasoning['text']), signature: nonEmpty(reasoning['signature']) } : { key, text: nonEmpty(reasoning) };
    }
    case 'non_standard': {
      const value = block['value'];
      return isObject(value) && value['type'] === 'redacted_thinking' ? { key, redactedData: nonEmpty(value['data']) } : undefined;
    }
    default:
      return undefined;
  }
}

/**
 * Reasoning a message carries outside its content: `additional_kwargs.reasoning_content`
 * (ChatOpenAI over DeepSeek and other OpenAI-compatible servers, ChatDeepSeek, OpenRouter),
 * `additional_kwargs.reasoning` as a string (Groq) or a summary (OpenAI's Responses API).
 */
function kwargsReasoning(kwargs: unknown): string | undefined {
  if (!isObject(kwargs)) return undefined;
  const content = nonEmpty(kwargs['reasoning_content']);
  if (content !== undefined) return content;
  const reasoning = kwargs['reasoning'];
  if (typeof reasoning === 'string') return nonEmpty(reasoning);
  const summary = isObject(reasoning) ? reasoning['summary'] : undefined;
  if (!Array.isArray(summary)) return undefined;
  let text = '';
  for (const part of summary as unknown[]) if (isObject(part) && typeof part['text'] === 'string') text += part['text'];
  return nonEmpty(text);
}

/** A message's reasoning blocks: its content's reasoning blocks, or else what its `additional_kwargs` carry. */
function reasoningOf(content: unknown, kwargs: unknown): ReasoningPart[] {
  const parts: ReasoningPart[] = [];
  if (Array.isArray(content)) {
    for (const block of content as unknown[]) {
      const piece = reasoningPiece(block);
      if (piece === undefined || (piece.text === undefined && piece.signature === undefined && piece.redactedData === undefined)) continue;
      const part: ReasoningPart = { text: piece.text ?? '' };
      if (piece.signature !== undefined) part.signature = piece.signature;
      if (piece.redactedData !== undefined) part.redactedData = piece.redactedData;
      parts.push(part);
    }
  }
  if (parts.length > 0) return parts;
  const text = kwargsReasoning(kwargs);
  return text === undefined ? [] : [{ text }];
}

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

/** The text of a content block: a string, a text block's text; `undefined` for any other block. */
function blockText(block: unknown): string | undefined {
  if (typeof block === 'string') return block;
  if (isObject(block) && (block['type'] === 'text' || block['type'] === 'text_delta') && typeof block['text'] === 'string') return block['text'];
  return undefined;
}

/** The text of a message's content: a string, or its text blocks; `undefined` for media. */
function textOf(content: unknown): string | undefined {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return content === undefined || content === null ? '' : undefined;
  let text = '';
  for (const block of content as unknown[]) {
    const piece = blockText(block);
    if (piece !== undefined) text += piece;
    else if (!(isObject(block) && NON_TEXT_BLOCKS.has(String(block['type'])))) return undefined;
  }
  return text;
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
 * Our tool choice as a LangChain `tool_choice`: `'auto'`, `'none'`, a tool's name, and for
 * `'required'` ChatAnthropic's `'any'` or everyone else's `'required'` (`anthropic`: the model is
 * ChatAnthropic).
 */
function toToolChoice(choice: ToolChoice, anthropic: boolean): string {
  if (typeof choice === 'object') return choice.tool;
  return choice === 'required' ? (anthropic ? 'any' : 'required') : choice;
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
  // OpenAI's Responses API: the incomplete_details.reason of a response.incomplete
  max_output_tokens: 'length',
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

/**
 * Reads one `.stream()`'s chunks into model events; at {@link END}, the tool calls and the finish.
 * Reasoning, in the order the chunk's blocks give it: deltas of one block until a signature ends
 * it (`reasoning-end` with it), or a block of another `index`, a redacted block, text, a tool call
 * or the end (an unsigned `reasoning-end`).
 */
class ChunkReader {
  done = false;
  private chunks = 0;
  /** Whether a reasoning block is open (deltas handed on, no `reasoning-end` yet), and its `index`. */
  private thinking = false;
  private thinkingKey: unknown = undefined;
  private readonly calls: PendingCall[] = [];
  private readonly byIndex = new Map<number, PendingCall>();
  private finishReason: string | undefined;
  private provider: string | undefined;
  /** OpenAI's Responses API: the response's status on its last chunk (response.completed / .incomplete), and why an incomplete one stopped. */
  private status: string | undefined;
  private incompleteReason: string | undefined;
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
    const content = chunk['content'];
    // one pass over a list of blocks: its text runs and reasoning pieces in order, and whether
    // every other block is text (media makes the content unreadable as text)
    let items: (string | ReasoningPiece)[] | undefined;
    let run = '';
    let textual = true;
    if (Array.isArray(content)) {
      for (const block of content as unknown[]) {
        const piece = reasoningPiece(block);
        if (piece !== undefined) {
          items ??= [];
          if (run !== '') items.push(run);
          run = '';
          items.push(piece);
          continue;
        }
        const text = blockText(block);
        if (text !== undefined) run += text;
        else if (!(isObject(block) && NON_TEXT_BLOCKS.has(String(block['type'])))) textual = false;
      }
    }
    if (items === undefined) {
      // reasoning outside the content (reasoning_content…) only when the content has none:
      // OpenAI's Responses API gives the same summary in both
      const reasoning = kwargsReasoning(chunk['additional_kwargs']);
      if (reasoning !== undefined) this.reason({ key: undefined, text: reasoning }, out);
      const text = Array.isArray(content) ? (textual ? run : undefined) : textOf(content);
      if (text !== undefined && text !== '') this.text(text, out);
    } else {
      // text and reasoning in the order of their blocks; text only when the content is text
      if (run !== '') items.push(run);
      for (const item of items) {
        if (typeof item !== 'string') this.reason(item, out);
        else if (textual) this.text(item, out);
      }
    }
    const pieces = chunk['tool_call_chunks'];
    const whole = chunk['tool_calls'];
    if (Array.isArray(pieces) && pieces.length > 0) for (const piece of pieces as unknown[]) this.addPiece(piece);
    else if (Array.isArray(whole)) for (const call of whole as unknown[]) this.addWhole(call);
    // a tool call ends the reasoning before it
    if ((Array.isArray(pieces) && pieces.length > 0) || (Array.isArray(whole) && whole.length > 0)) this.endReasoning(out);
    // ChatAnthropic's message_delta carries its stop_reason in additional_kwargs (the delta)
    const stopped = isObject(chunk['additional_kwargs']) ? chunk['additional_kwargs']['stop_reason'] : undefined;
    if (typeof stopped === 'string' && stopped !== '') this.finishReason = stopped;
    const meta = chunk['response_metadata'];
    if (isObject(meta)) {
      const reason = meta['finish_reason'] ?? meta['stop_reason'] ?? meta['finishReason'] ?? meta['done_reason'];
      if (typeof reason === 'string' && reason !== '') this.finishReason = reason;
      if (typeof meta['model_provider'] === 'string') this.provider = meta['model_provider'];
      // the Responses API's last chunk carries the response itself (object 'response'), with its status
      if (meta['object'] === 'response' && typeof meta['status'] === 'string') {
        this.status = meta['status'];
        const details = meta['incomplete_details'];
        this.incompleteReason = isObject(details) && typeof details['reason'] === 'string' ? details['reason'] : undefined;
      }
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

  /** Answer text: it ends the reasoning before it. */
  private text(text: string, out: TurnEvent[]): void {
    this.endReasoning(out);
    out.push({ type: 'text-delta', text });
  }

  /** A piece of reasoning: text of the open block (or of a new one), a signature, a redacted block. */
  private reason(piece: ReasoningPiece, out: TurnEvent[]): void {
    if (piece.redactedData !== undefined) {
      this.endReasoning(out);
      out.push({ type: 'reasoning-end', redactedData: piece.redactedData });
      return;
    }
    // another block (its index differs): the open one ends
    if (this.thinking && piece.key !== undefined && this.thinkingKey !== undefined && piece.key !== this.thinkingKey) this.endReasoning(out);
    if (piece.text !== undefined) {
      out.push({ type: 'reasoning-delta', text: piece.text });
      this.thinking = true;
      this.thinkingKey = piece.key;
    }
    // Anthropic's signature is its block's last piece
    if (piece.signature !== undefined) {
      out.push({ type: 'reasoning-end', signature: piece.signature });
      this.thinking = false;
    }
  }

  private endReasoning(out: TurnEvent[]): void {
    if (this.thinking) out.push({ type: 'reasoning-end' });
    this.thinking = false;
  }

  /** The stream ended: its tool calls, then the finish. */
  private finish(): TurnEvent[] {
    this.done = true;
    // OpenAI's Responses API ends a whole answer with its status instead of a finish reason:
    // 'completed', or 'incomplete' — stopped by max_output_tokens or the content filter, as
    // Chat Completions' 'length' / 'content_filter' — and anything else is no answer
    if (this.status !== undefined && this.status !== 'completed') {
      if (this.status !== 'incomplete') throw new IncompleteStreamError(this.model, `response status '${this.status}'`, this.chunks);
      this.finishReason ??= this.incompleteReason ?? 'incomplete';
    }
    // OpenAI's and Anthropic's chat models always end with a finish reason (or a status): without
    // one the stream was cut (both SDKs end a cut stream quietly)
    const required = this.requireFinishReason ?? (this.provider === 'openai' || this.provider === 'anthropic');
    if (required && this.finishReason === undefined && this.status === undefined) throw new IncompleteStreamError(this.model, 'no finish reason', this.chunks);
    // OpenRouter's finish_reason for an answer the provider gave up on
    if (this.finishReason === 'error') throw new IncompleteStreamError(this.model, "finish reason 'error'", this.chunks);
    const out: TurnEvent[] = [];
    this.endReasoning(out);
    this.calls.forEach((call, i) => out.push({ type: 'tool-call', id: call.id || `call_${i}`, name: call.name, args: 'parsed' in call ? call.parsed : parseToolArguments(call.args) }));
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
 * call's `signal`: unsubscribing aborts the request.
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
  const thinking = takesThinkingBlocks(chatModel);
  // ChatAnthropic (its _llmType()): an end marker required even from versions whose chunks name no model_provider
  const requireFinishReason = o.requireFinishReason ?? (thinking ? true : undefined);
  const open = (request: ModelRequest, signal: AbortSignal): Promise<AsyncIterable<unknown>> => {
    const messages = toMessages(request.messages, thinking);
    if (request.tools.length === 0) return chatModel.stream(messages, { signal });
    if (typeof chatModel.bindTools !== 'function') {
      return Promise.reject(new InvalidOptionError('fromLangChain', 'chatModel.bindTools', undefined, 'a function: the request has tools, and this chat model cannot bind them'));
    }
    const choice = request.toolChoice === undefined ? undefined : toToolChoice(request.toolChoice, thinking);
    return chatModel.bindTools(openAITools(request.tools), choice === undefined ? undefined : { tool_choice: choice }).stream(messages, { signal });
  };
  return {
    id,
    stream: (request, context) =>
      decodeEvents(fromAsyncIterable(() => iterate(id, () => open(request, context.signal))).pipe(endWith(END)), () => new ChunkReader(id, requireFinishReason)),
  };
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

  override bindTools(tools: BindToolsInput[], kwargs?: Partial<RxhealChatModelCallOptions>): Runnable<BaseLanguageModelInput, AIMessageChunk, RxhealChatModelCallOptions> {
    return this.withConfig({ ...kwargs, tools });
  }

  private request(messages: BaseMessage[], options: this['ParsedCallOptions']): ModelRequest {
    const tools = toToolSpecs(options.tools ?? []);
    const toolChoice = fromToolChoice(options.tool_choice);
    return toolChoice === undefined ? { messages: fromMessages(messages), tools } : { messages: fromMessages(messages), tools, toolChoice };
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
  override async *_streamResponseChunks(messages: BaseMessage[], options: this['ParsedCallOptions'], runManager?: CallbackManagerForLLMRun): AsyncGenerator<ChatGenerationChunk> {
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
          else if (event.signature !== undefined) chunk = reasoningChunk({ type: 'reasoning', reasoning: '', signature: event.signature, index: open ?? next++ });
          else continue; // an unsigned end: the block just ends
          break;
        }
        case 'text-delta':
          if (event.text === '') continue;
          textBlock ??= next++;
          chunk = new ChatGenerationChunk({ text: event.text, message: new AIMessageChunk({ content: blocks ? [{ type: 'text', text: event.text, index: textBlock }] : event.text }) });
          break;
        case 'tool-call':
          chunk = new ChatGenerationChunk({
            text: '',
            message: new AIMessageChunk({ content: '', tool_call_chunks: [{ type: 'tool_call_chunk', id: event.id, name: event.name, args: argumentsText(event.args), index: next++ }] }),
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
      if (event.type === 'reasoning-delta' || event.type === 'reasoning-end') {
        // text after reasoning is a block of its own
        blocks = true;
        textBlock = undefined;
      }
      yielded = true;
      yield chunk;
      // streaming callbacks (LangGraph's messages mode, streamEvents from .invoke) see text and reasoning
      if (event.type === 'text-delta') await runManager?.handleLLMNewToken(event.text, undefined, undefined, undefined, undefined, { chunk });
      else if (event.type === 'reasoning-delta' || event.type === 'reasoning-end') await runManager?.handleLLMNewToken('', undefined, undefined, undefined, undefined, { chunk });
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
            llmOutput: event.usage ? { tokenUsage: { promptTokens: event.usage.inputTokens, completionTokens: event.usage.outputTokens, totalTokens: event.usage.inputTokens + event.usage.outputTokens } } : {},
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
 * `withStructuredOutput` forces its tool with it, as ChatOpenAI and ChatAnthropic do.
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
  if (!isModel(model)) {
    throw new InvalidOptionError('toLangChain', 'model', model, 'a Model ({ id: non-empty string, stream(request, context) })');
  }
  return new RxhealChatModel({ ...fields, model });
}
