/**
 * OpenAI's Responses API stream read into rxheal model events: one state machine
 * ({@link ResponsesDecoder}) over the stream's events, by output item. Shared by
 * `openAIResponsesModel` (Server-Sent Events over `fetch`) and `fromOpenAIResponses` (the `openai`
 * SDK's parsed events). The state table is in spec/providers/responses.spec.ts.
 *
 * @module
 */
import type { HttpError } from '../core/errors/errors.js';
import type { FinishReason, ReasoningEnd, TurnEvent, Usage } from '../core/events/events.js';
import {
  IncompleteStreamError,
  MalformedStreamError,
  isObject,
  midStreamError,
  parseEventJson,
  parseToolArguments,
  tokenDetail,
  type StreamDecoder,
} from './sse.js';
import type { SseEvent } from './sseParser.js';

/**
 * Output items the client runs — they wait for a result — other than `function_call`: the
 * tool each stands for (`custom_tool_call`: the item's own `name`).
 */
const CLIENT_ITEMS: Readonly<Record<string, string>> = {
  custom_tool_call: '',
  shell_call: 'shell',
  local_shell_call: 'local_shell',
  apply_patch_call: 'apply_patch',
  computer_call: 'computer',
  mcp_approval_request: 'mcp_approval_request',
};

/**
 * What the request declared that a client-run item may be called by: `tool` (the tool's name, or
 * `shell`, `apply_patch`… for the built-in client tools) → whether it was declared.
 */
export type DeclaredTools = (tool: string) => boolean;

/** One output item, by its `output_index` (item ids may change from one event to the next). */
interface OutputItem {
  readonly type: string;
  /** Arguments (or a custom tool's input) from the deltas, until the item's `done` gives them whole. */
  input: string;
  /** Reasoning: text handed on or waiting; the summary part the last delta belonged to. */
  said: boolean;
  pending: string;
  part: number | undefined;
}

/**
 * Decodes one Responses stream. The JSON `type` of each event decides (the SSE `event:` line, when
 * there is one, is not needed: both framings read alike):
 *
 * - `response.output_text.delta`, `response.refusal.delta` → `text-delta`;
 * - `response.reasoning_summary_text.delta`, `response.reasoning_text.delta` → `reasoning-delta`
 *   (a new summary part of the same item starts after a blank line); at the reasoning item's
 *   `output_item.done`, one `reasoning-end` with `providerMetadata.openai` `{ itemId,
 *   reasoningEncryptedContent }` from that done item (the blob at `added` may be partial). Items
 *   stream one at a time; should two reasoning items overlap, the second's text waits for the
 *   first to end (blocks never interleave);
 * - a `function_call` item → at its `output_item.done`, one `tool-call` (the done item's
 *   `call_id`, `name` and `arguments`, parsed; the deltas' text when the done item has none), with
 *   `providerMetadata.openai.itemId`;
 * - an item the client must run (`custom_tool_call`, `shell_call`, `local_shell_call`,
 *   `apply_patch_call`, `computer_call`, `mcp_approval_request`, a `tool_search_call` with
 *   `execution: 'client'`) → a `tool-call` with its raw input (a custom tool's `input` text, the
 *   item's `action` / `operation` / `arguments`) and the whole item in
 *   `providerMetadata.openai.item`, when the request declared that tool; a
 *   {@link MalformedStreamError} naming the item type otherwise — never dropped (the model would
 *   wait for a result that never comes);
 * - items the provider runs itself (web and file search, code interpreter, hosted MCP, image
 *   generation…) and their progress events, annotations, content parts: skipped;
 * - a `compaction` item (server-side compaction, `context_management`) → at its done, a
 *   `reasoning-end` without text whose `providerMetadata.openai` holds the whole item (`itemType:
 *   'compaction'`, `item`): opaque, never shown, sent back as it came;
 * - `response.completed` → `finish` (`'tool-calls'` when calls were emitted, else `'stop'`) with
 *   `usage` from `response.usage` (`input_tokens_details.cached_tokens` as `cachedInputTokens`,
 *   `output_tokens_details.reasoning_tokens` as `reasoningTokens`); `response.incomplete` → `finish` `'length'`
 *   (`max_output_tokens`), `'content-filter'` (`content_filter`) or `'other'`;
 * - `response.failed` and the top-level `error` event → an `HttpError` with the status the error's
 *   `code` / `type` implies (`server_error` 500, `rate_limit_exceeded` 429, `invalid_prompt` 400…):
 *   no `finish` after them;
 * - a `sequence_number` that repeats or goes back, an event that is not a JSON object, a field of
 *   the wrong type, a call still open at the completion → {@link MalformedStreamError}; the body
 *   ending before a terminal event → {@link IncompleteStreamError}.
 */
export class ResponsesDecoder implements StreamDecoder<TurnEvent> {
  done = false;
  private events = 0;
  private lastSequence = -1;
  private calls = 0;
  private readonly items = new Map<number, OutputItem>();
  /** The output index of the reasoning item whose text passes at once (the first still open). */
  private streaming: number | undefined = undefined;

  constructor(
    private readonly model: string,
    private readonly declared: DeclaredTools = () => false,
  ) {}

  /** One Server-Sent Event of the stream. */
  push(sse: SseEvent): TurnEvent[] {
    return this.pushEvent(parseEventJson(this.model, sse.data), sse.data);
  }

  /** One event, parsed (what the `openai` SDK yields); `data`: its text, for error messages. */
  pushEvent(event: Record<string, unknown>, data?: string): TurnEvent[] {
    this.events++;
    if (this.done) return [];
    const raw = (): string => data ?? safeJson(event);
    const sequence = event['sequence_number'];
    if (typeof sequence === 'number') {
      if (sequence <= this.lastSequence)
        throw new MalformedStreamError(this.model, `sequence_number ${sequence} after ${this.lastSequence} (an event repeated or out of order)`, raw());
      this.lastSequence = sequence;
    }
    const type = event['type'];
    switch (type) {
      case 'response.output_item.added': {
        const item = this.itemField(event, raw);
        this.items.set(this.index(event, raw), { type: String(item['type']), input: '', said: false, pending: '', part: undefined });
        return [];
      }
      case 'response.output_text.delta':
      case 'response.refusal.delta': {
        const text = this.text(event, 'delta', raw);
        return text === '' ? [] : [{ type: 'text-delta', text }];
      }
      case 'response.reasoning_summary_text.delta':
      case 'response.reasoning_text.delta':
        return this.reasoningDelta(event, raw);
      case 'response.function_call_arguments.delta':
      case 'response.custom_tool_call_input.delta': {
        const item = this.items.get(this.index(event, raw));
        if (item === undefined) throw new MalformedStreamError(this.model, `${type} for an output item never added`, raw());
        item.input += this.text(event, 'delta', raw);
        return [];
      }
      case 'response.output_item.done':
        return this.itemDone(event, raw);
      case 'response.completed':
      case 'response.incomplete':
        return this.finish(event, raw);
      case 'response.failed': {
        const response = isObject(event['response']) ? event['response'] : {};
        const error = isObject(response['error']) ? response['error'] : {};
        throw this.streamError(error, 'response.failed');
      }
      case 'error':
        // the top-level error event: its code and message on the event, or under `error`
        throw this.streamError(isObject(event['error']) ? event['error'] : event, 'error event');
      default:
        if (typeof type !== 'string') throw new MalformedStreamError(this.model, 'an event without a "type"', raw());
        // created, in_progress, queued; content parts, text done, annotations; the progress of
        // the tools the provider runs itself: not part of an rxheal turn
        return [];
    }
  }

  /** The body ended: fine only after a terminal event. */
  end(): void {
    if (!this.done) throw new IncompleteStreamError(this.model, 'no response.completed, response.incomplete or response.failed', this.events);
  }

  private reasoningDelta(event: Record<string, unknown>, raw: () => string): TurnEvent[] {
    const index = this.index(event, raw);
    const item = this.items.get(index);
    if (item === undefined) throw new MalformedStreamError(this.model, `${String(event['type'])} for an output item never added`, raw());
    let text = this.text(event, 'delta', raw);
    if (text === '') return [];
    // a second summary part of the item: after a blank line, as its own paragraph
    const part = typeof event['summary_index'] === 'number' ? event['summary_index'] : typeof event['content_index'] === 'number' ? event['content_index'] : 0;
    if (item.said && item.part !== undefined && part !== item.part) text = `\n\n${text}`;
    item.part = part;
    item.said = true;
    this.streaming ??= index;
    if (this.streaming !== index) {
      item.pending += text;
      return [];
    }
    return [{ type: 'reasoning-delta', text }];
  }

  private itemDone(event: Record<string, unknown>, raw: () => string): TurnEvent[] {
    const index = this.index(event, raw);
    const done = this.itemField(event, raw);
    const item = this.items.get(index) ?? { type: String(done['type']), input: '', said: false, pending: '', part: undefined };
    this.items.delete(index);
    const type = String(done['type']);
    if (type === 'reasoning') return this.reasoningEnd(index, item, done);
    // server-side compaction: the encrypted summary of what came before, opaque, sent back as it came
    if (type === 'compaction') {
      if (typeof done['encrypted_content'] !== 'string') throw new MalformedStreamError(this.model, 'a compaction item without its "encrypted_content"', raw());
      return [{ type: 'reasoning-end', providerMetadata: { openai: { itemId: done['id'] ?? null, itemType: 'compaction', item: done } } }];
    }
    if (type === 'function_call')
      return [
        this.call(
          this.str(done, 'call_id', raw),
          this.str(done, 'name', raw),
          parseToolArguments(typeof done['arguments'] === 'string' ? done['arguments'] : item.input),
          { openai: { itemId: done['id'] } },
        ),
      ];
    const tool =
      type === 'custom_tool_call'
        ? this.str(done, 'name', raw)
        : type === 'tool_search_call' && done['execution'] === 'client'
          ? 'tool_search'
          : CLIENT_ITEMS[type];
    if (tool === undefined) return []; // a message, or an item the provider ran itself
    if (!this.declared(tool)) {
      throw new MalformedStreamError(
        this.model,
        `a ${type} item for tool '${tool}', which the request did not declare (it waits for a result rxheal can't give)`,
        raw(),
      );
    }
    const input =
      type === 'custom_tool_call'
        ? typeof done['input'] === 'string'
          ? done['input']
          : item.input
        : (done['action'] ?? done['operation'] ?? done['arguments'] ?? {});
    const id = typeof done['call_id'] === 'string' ? done['call_id'] : this.str(done, 'id', raw);
    return [this.call(id, tool, input, { openai: { itemId: done['id'], itemType: type, item: done } })];
  }

  private call(id: string, name: string, args: unknown, providerMetadata: Record<string, unknown>): TurnEvent {
    this.calls++;
    return { type: 'tool-call', id, name, args, providerMetadata };
  }

  /** A reasoning item ends: its waiting text (when it was not the one streaming), then its end; the next open item streams. */
  private reasoningEnd(index: number, item: OutputItem, done: Record<string, unknown>): TurnEvent[] {
    const out: TurnEvent[] = [];
    if (item.pending !== '') out.push({ type: 'reasoning-delta', text: item.pending });
    const encrypted = done['encrypted_content'];
    const end: ReasoningEnd = {
      type: 'reasoning-end',
      providerMetadata: { openai: { itemId: done['id'] ?? null, reasoningEncryptedContent: typeof encrypted === 'string' ? encrypted : null } },
    };
    out.push(end);
    if (this.streaming === index) {
      this.streaming = undefined;
      // the next reasoning item still open streams now, its waiting text first
      for (const [next, other] of this.items) {
        if (other.type !== 'reasoning') continue;
        this.streaming = next;
        if (other.pending !== '') out.push({ type: 'reasoning-delta', text: other.pending });
        other.pending = '';
        break;
      }
    }
    return out;
  }

  private finish(event: Record<string, unknown>, raw: () => string): TurnEvent[] {
    const response = event['response'];
    if (!isObject(response)) throw new MalformedStreamError(this.model, `${String(event['type'])} without its "response"`, raw());
    for (const item of this.items.values()) {
      if (item.type === 'function_call' || Object.hasOwn(CLIENT_ITEMS, item.type))
        throw new MalformedStreamError(this.model, `a ${item.type} item was still open at the end of the response`, raw());
    }
    const out: TurnEvent[] = [];
    // reasoning never done: its waiting text, unsigned (no item to send back)
    for (const item of this.items.values()) if (item.type === 'reasoning' && item.pending !== '') out.push({ type: 'reasoning-delta', text: item.pending });
    this.items.clear();
    this.done = true;
    let reason: FinishReason = this.calls > 0 ? 'tool-calls' : 'stop';
    if (event['type'] === 'response.incomplete') {
      const details = response['incomplete_details'];
      const why = isObject(details) ? details['reason'] : undefined;
      reason = why === 'max_output_tokens' ? 'length' : why === 'content_filter' ? 'content-filter' : 'other';
    }
    const usage = this.usageOf(response['usage'], raw);
    out.push(usage ? { type: 'finish', reason, usage } : { type: 'finish', reason });
    return out;
  }

  private usageOf(u: unknown, raw: () => string): Usage | undefined {
    return responsesUsage(this.model, u, raw);
  }

  private streamError(error: Record<string, unknown>, what: string): HttpError {
    const message = typeof error['message'] === 'string' ? error['message'] : what;
    return midStreamError(this.model, { error }, message);
  }

  private index(event: Record<string, unknown>, raw: () => string): number {
    const index = event['output_index'];
    if (typeof index !== 'number') throw new MalformedStreamError(this.model, `${String(event['type'])} without a numeric "output_index"`, raw());
    return index;
  }

  private itemField(event: Record<string, unknown>, raw: () => string): Record<string, unknown> {
    const item = event['item'];
    if (!isObject(item) || typeof item['type'] !== 'string')
      throw new MalformedStreamError(this.model, `${String(event['type'])} without an "item" of a type`, raw());
    return item;
  }

  private text(event: Record<string, unknown>, field: string, raw: () => string): string {
    const value = event[field];
    if (typeof value !== 'string') throw new MalformedStreamError(this.model, `${String(event['type'])}: "${field}" is not text`, raw());
    return value;
  }

  private str(item: Record<string, unknown>, field: string, raw: () => string): string {
    const value = item[field];
    if (typeof value !== 'string' || value === '') throw new MalformedStreamError(this.model, `a ${String(item['type'])} item without its "${field}"`, raw());
    return value;
  }
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return '';
  }
}

/**
 * A fresh decoder of one Responses stream into model events (what `openAIResponsesModel` uses per
 * request): feed it parsed Server-Sent Events (`push`) or parsed events (`pushEvent`); `done` at a
 * terminal event; `end` throws when the body ended before one. `declared`: which client-run tools
 * the request declared (`responsesDeclaredTools(body)`); none by default.
 *
 * @example
 * ```ts
 * const decoder = openAIResponsesStreamDecoder('recorded');
 * const events = parseSse(recorded).flatMap((e) => decoder.push(e));
 * decoder.end(); // throws IncompleteStreamError if the recording was cut short
 * ```
 */
export function openAIResponsesStreamDecoder(modelId: string, declared?: DeclaredTools): ResponsesDecoder {
  return new ResponsesDecoder(modelId, declared);
}

/**
 * A Responses `usage` object as rxheal's {@link Usage} (`input_tokens_details.cached_tokens` as
 * `cachedInputTokens`, `output_tokens_details.reasoning_tokens` as `reasoningTokens`, a zero left
 * out); `undefined` for none.
 *
 * @example
 * ```ts
 * responsesUsage('gpt', { input_tokens: 9, output_tokens: 3 }, () => raw); // { inputTokens: 9, outputTokens: 3 }
 * ```
 * @throws {MalformedStreamError} for a usage that is not an object of numbers.
 */
export function responsesUsage(model: string, u: unknown, raw: () => string): Usage | undefined {
  if (u === undefined || u === null) return undefined;
  if (!isObject(u)) throw new MalformedStreamError(model, '"usage" is not an object', raw());
  const input = u['input_tokens'] ?? 0;
  const output = u['output_tokens'] ?? 0;
  if (typeof input !== 'number' || typeof output !== 'number') throw new MalformedStreamError(model, 'usage tokens are not numbers', raw());
  const usage: { -readonly [K in keyof Usage]: Usage[K] } = { inputTokens: input, outputTokens: output };
  // the shares the API reports, when they say something (a zero is left out)
  const cached = tokenDetail(u['input_tokens_details'], 'cached_tokens');
  const reasoning = tokenDetail(u['output_tokens_details'], 'reasoning_tokens');
  if (cached !== undefined) usage.cachedInputTokens = cached;
  if (reasoning !== undefined) usage.reasoningTokens = reasoning;
  return usage;
}
