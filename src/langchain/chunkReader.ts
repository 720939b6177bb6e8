/**
 * The chunks of one LangChain `.stream()` read into rxheal model events, for {@link fromLangChain}:
 * one state machine ({@link ChunkReader}: text, reasoning blocks, tool-call chunks joined by index,
 * finish reason, status and usage, and the end of the stream), with the finish reasons it knows.
 *
 * @module
 */
import { IncompleteStreamError } from '../core/errors/errors.js';
import type { FinishReason, TurnEvent, Usage } from '../core/events/events.js';
import { parseToolArguments } from '../providers/sse.js';
import { isObject, num } from '../adapters/common.js';
import { blockText, kwargsReasoning, NON_TEXT_BLOCKS, reasoningPiece, textOf, type ReasoningPiece } from './content.js';

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
export const END: unique symbol = Symbol('end of stream');

/**
 * Reads one `.stream()`'s chunks into model events; at {@link END}, the tool calls and the finish.
 * Reasoning, in the order the chunk's blocks give it: deltas of one block until a signature ends
 * it (`reasoning-end` with it), or a block of another `index`, a redacted block, text, a tool call
 * or the end (an unsigned `reasoning-end`).
 */
export class ChunkReader {
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
  private readonly shares: { cacheRead?: number; cacheWrite?: number; reasoning?: number } = {};

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
      // the shares LangChain reports: cache reads and writes, reasoning (summed as the totals are)
      const add = (holder: unknown, key: string, to: 'cacheRead' | 'cacheWrite' | 'reasoning'): void => {
        const value = isObject(holder) ? num(holder[key]) : undefined;
        if (value !== undefined && value > 0) this.shares[to] = (this.shares[to] ?? 0) + value;
      };
      add(usage['input_token_details'], 'cache_read', 'cacheRead');
      add(usage['input_token_details'], 'cache_creation', 'cacheWrite');
      add(usage['output_token_details'], 'reasoning', 'reasoning');
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
    this.calls.forEach((call, i) =>
      out.push({ type: 'tool-call', id: call.id || `call_${i}`, name: call.name, args: 'parsed' in call ? call.parsed : parseToolArguments(call.args) }),
    );
    const reason: FinishReason =
      this.finishReason === undefined ? (this.calls.length > 0 ? 'tool-calls' : 'stop') : (FINISH_REASONS[this.finishReason] ?? 'other');
    const { cacheRead, cacheWrite, reasoning } = this.shares;
    const usage: Usage | undefined =
      this.input === undefined && this.output === undefined
        ? undefined
        : {
            inputTokens: this.input ?? 0,
            outputTokens: this.output ?? 0,
            ...(cacheRead === undefined ? {} : { cachedInputTokens: cacheRead }),
            ...(cacheWrite === undefined ? {} : { cacheWriteTokens: cacheWrite }),
            ...(reasoning === undefined ? {} : { reasoningTokens: reasoning }),
          };
    out.push(usage ? { type: 'finish', reason, usage } : { type: 'finish', reason });
    return out;
  }

  private addPiece(piece: unknown): void {
    if (!isObject(piece)) return;
    const index = num(piece['index']);
    const id = typeof piece['id'] === 'string' ? piece['id'] : undefined;
    // by index; without one, a piece with a new id starts a call, others continue the last one
    let call =
      index !== undefined
        ? this.byIndex.get(index)
        : id === undefined || id === this.calls[this.calls.length - 1]?.id
          ? this.calls[this.calls.length - 1]
          : undefined;
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
