/**
 * Anthropic's Messages API over Server-Sent Events, spoken with `fetch` (Node 20 and browsers;
 * no SDK).
 *
 * @module
 */
import { errorTypeStatus } from '../core/errors/readError.js';
import type { FinishReason, Message, TurnEvent, Usage } from '../core/events/events.js';
import { Func, NonEmptyString, PositiveInteger } from '../core/errors/options.js';
import { toolParameters, type Model, type ModelRequest } from '../core/model/model.js';
import { AnyString, HttpUrl, PlainObject, StringRecord, checkProviderOptions, withoutTrailingSlashes } from './providerOptions.js';
import {
  IncompleteStreamError,
  MalformedStreamError,
  decodeSse,
  isObject,
  midStreamError,
  parseEventJson,
  parseToolArguments,
  type StreamDecoder,
} from './sse.js';
import type { SseEvent } from './sseParser.js';

/**
 * Options of {@link anthropicModel}.
 *
 * @example
 * ```ts
 * const options: AnthropicModelOptions = { apiKey: process.env.ANTHROPIC_API_KEY, model: 'claude-sonnet-4-5', maxTokens: 2048 };
 * ```
 */
export interface AnthropicModelOptions {
  /** The API's origin. Requests go to `<baseURL>/v1/messages`. Defaults to `https://api.anthropic.com`. */
  readonly baseURL?: string;
  /** Sent as `x-api-key`. None by default (local servers need none). */
  readonly apiKey?: string;
  /** The model name sent in each request, e.g. `'claude-sonnet-4-5'`. */
  readonly model: string;
  /** `max_tokens` of each request (required by the API). Defaults to 4096. */
  readonly maxTokens?: number;
  /**
   * Extra request headers; they win over the defaults. From a browser, Anthropic's API also
   * wants `'anthropic-dangerous-direct-browser-access': 'true'`.
   */
  readonly headers?: Readonly<Record<string, string>>;
  /** Extra fields merged into every request body (e.g. `{ temperature: 0 }`); the adapter's own fields win. */
  readonly body?: Readonly<Record<string, unknown>>;
  /** The `fetch` to use. Defaults to the global `fetch`, looked up per call. */
  readonly fetch?: typeof fetch;
  /**
   * The largest Server-Sent Event accepted, in characters: a larger one ends the stream with a
   * `MalformedStreamError` (a provider fault: retryable, fallback-able) instead of growing memory
   * without bound. Defaults to `DEFAULT_MAX_EVENT_SIZE` (16 MiB).
   */
  readonly maxEventSize?: number;
  /** The `Model.id` (breakers are named `model:<id>`). Defaults to `anthropic:<model>`. */
  readonly id?: string;
}

const props = {
  baseURL: HttpUrl,
  apiKey: AnyString,
  model: NonEmptyString,
  maxTokens: PositiveInteger,
  headers: StringRecord,
  body: PlainObject,
  fetch: Func,
  id: NonEmptyString,
  maxEventSize: PositiveInteger,
};

/**
 * The API version this adapter speaks, sent as `anthropic-version`.
 *
 * @example
 * ```ts
 * fetch(url, { headers: { 'anthropic-version': ANTHROPIC_VERSION } });
 * ```
 */
export const ANTHROPIC_VERSION = '2023-06-01';

// ---------------------------------------------------------------------------------------------
// request
// ---------------------------------------------------------------------------------------------

type Block = Record<string, unknown>;
interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: Block[];
}

/** A tool call's arguments as the object `tool_use.input` must be. */
function inputOf(args: unknown): Record<string, unknown> {
  if (typeof args === 'object' && args !== null && !Array.isArray(args)) return args as Record<string, unknown>;
  if (typeof args === 'string') {
    const parsed = parseToolArguments(args);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  }
  // not an object (e.g. raw text that was not JSON): the tool result that follows says what was wrong
  return {};
}

function blocksOf(message: Exclude<Message, { role: 'system' }>): AnthropicMessage {
  switch (message.role) {
    case 'user':
      return { role: 'user', content: message.content === '' ? [] : [{ type: 'text', text: message.content }] };
    case 'assistant': {
      // reasoning first, as the API gave it: signed thinking and redacted blocks (the API wants
      // them back on a tool-use turn with extended thinking); unsigned reasoning can't be sent
      const content: Block[] = [];
      for (const part of message.reasoning ?? []) {
        if (part.redactedData !== undefined) content.push({ type: 'redacted_thinking', data: part.redactedData });
        else if (part.signature !== undefined) content.push({ type: 'thinking', thinking: part.text, signature: part.signature });
      }
      if (message.content !== '') content.push({ type: 'text', text: message.content });
      for (const call of message.toolCalls ?? []) content.push({ type: 'tool_use', id: call.id, name: call.name, input: inputOf(call.args) });
      return { role: 'assistant', content };
    }
    case 'tool': {
      const block: Block = { type: 'tool_result', tool_use_id: message.toolCallId, content: message.content };
      if (message.isError) block['is_error'] = true;
      return { role: 'user', content: [block] };
    }
  }
}

/**
 * The Messages API request body for a model request (streaming): system messages joined into
 * `system`, tool results as user `tool_result` blocks, tool calls as assistant `tool_use`
 * blocks, consecutive messages of one role merged (the API wants roles to alternate), empty text
 * left out.
 *
 * @example
 * ```ts
 * anthropicRequestBody('claude-sonnet-4-5', 1024, { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }], tools: [] });
 * // { model: 'claude-sonnet-4-5', max_tokens: 1024, stream: true, system: 'Be brief.', messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }] }
 * ```
 */
export function anthropicRequestBody(
  model: string,
  maxTokens: number,
  request: ModelRequest,
  extra: Readonly<Record<string, unknown>> = {},
): Record<string, unknown> {
  const system: string[] = [];
  const messages: AnthropicMessage[] = [];
  for (const message of request.messages) {
    if (message.role === 'system') {
      system.push(message.content);
      continue;
    }
    const next = blocksOf(message);
    if (next.content.length === 0) continue;
    const last = messages[messages.length - 1];
    if (last !== undefined && last.role === next.role) {
      // tool results go first in a user turn, as the API asks
      last.content = next.content.some((b) => b['type'] === 'tool_result')
        ? [...last.content, ...next.content].sort(toolResultsFirst)
        : [...last.content, ...next.content];
    } else {
      messages.push(next);
    }
  }
  const body: Record<string, unknown> = { ...extra, model, max_tokens: maxTokens, stream: true };
  if (system.length > 0) body['system'] = system.join('\n\n');
  body['messages'] = messages;
  if (request.tools.length > 0) {
    body['tools'] = request.tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      input_schema: toolParameters(tool),
    }));
    const choice = request.toolChoice;
    if (choice !== undefined)
      body['tool_choice'] = typeof choice === 'object' ? { type: 'tool', name: choice.tool } : { type: choice === 'required' ? 'any' : choice };
  }
  return body;
}

const toolResultsFirst = (a: Block, b: Block): number => Number(b['type'] === 'tool_result') - Number(a['type'] === 'tool_result');

// ---------------------------------------------------------------------------------------------
// response
// ---------------------------------------------------------------------------------------------

const STOP_REASONS: Readonly<Record<string, FinishReason>> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  tool_use: 'tool-calls',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  refusal: 'content-filter',
};

/**
 * The HTTP status the Messages API gives an error type (`overloaded_error` → 529,
 * `rate_limit_error` → 429, …; unknown types → 500).
 *
 * @example
 * ```ts
 * anthropicErrorStatus('overloaded_error'); // 529
 * ```
 */
export function anthropicErrorStatus(type: unknown): number {
  return errorTypeStatus(type) ?? 500;
}

interface OpenBlock {
  readonly type: string;
  readonly id: string;
  readonly name: string;
  readonly input: unknown;
  json: string;
  /** A thinking block's signature (its `signature_delta`, or the start's own). */
  signature: string;
}

/** A thinking block's end, with its signature when it got one. */
const reasoningEnd = (block: OpenBlock): TurnEvent =>
  block.signature === '' ? { type: 'reasoning-end' } : { type: 'reasoning-end', signature: block.signature };

/** Delta types that carry nothing of the answer (anything else unknown in a text or tool_use block is an error). */
const SKIPPED_DELTAS = new Set(['citations_delta']);

/**
 * Reads one stream's events into model events; `done` once `message_stop` arrived.
 *
 * A state machine: before `message_start` (tolerated: some servers omit it), a message open (its
 * id known), blocks open by index, done. What would lose text or a tool call is a
 * {@link MalformedStreamError}: a second `message_start` with another id (a spliced stream), a
 * block started at an index already open, an `input_json_delta` or unknown delta in the wrong
 * block, a `tool_use` block still open at `message_stop`. Usage: input = `input_tokens` +
 * `cache_creation_input_tokens` + `cache_read_input_tokens`, each field from the last event that
 * carried it (`message_start` or `message_delta`). See the state table in
 * spec/providers/anthropic.spec.ts.
 */
class EventDecoder {
  done = false;
  private events = 0;
  private stopReason: FinishReason | undefined;
  /** Whether a `message_start` arrived, and its message id. */
  private started = false;
  private messageId: unknown;
  private readonly usage: { input?: number; cacheCreation?: number; cacheRead?: number; output?: number } = {};
  private readonly blocks = new Map<number, OpenBlock>();

  constructor(private readonly model: string) {}

  push(sse: SseEvent): TurnEvent[] {
    this.events++;
    if (this.done) return [];
    const data = parseEventJson(this.model, sse.data);
    // the data's `type` is authoritative; the `event:` field repeats it
    const type = typeof data['type'] === 'string' ? data['type'] : sse.event;
    switch (type) {
      case 'message_start': {
        const message = data['message'];
        if (!isObject(message)) throw this.malformed('message_start without a message', sse);
        if (this.started) {
          // the same message announced again is harmless; another one is a spliced stream
          if (message['id'] === this.messageId) return [];
          throw this.malformed(
            `a second message_start (id ${String(message['id'])}) while message ${String(this.messageId)} is open: two streams spliced`,
            sse,
          );
        }
        this.started = true;
        this.messageId = message['id'];
        const content = message['content'];
        if (Array.isArray(content) && content.length > 0) throw this.malformed('message_start with content (it would be lost: content arrives in blocks)', sse);
        this.readUsage(message['usage']);
        return [];
      }
      case 'content_block_start': {
        const block = data['content_block'];
        const index = data['index'];
        if (!isObject(block) || typeof index !== 'number') throw this.malformed('content_block_start without index or content_block', sse);
        if (this.blocks.has(index)) throw this.malformed(`content_block_start for block ${index}, which is still open`, sse);
        const open: OpenBlock = {
          type: String(block['type']),
          id: typeof block['id'] === 'string' ? block['id'] : `toolu_${index}`,
          name: typeof block['name'] === 'string' ? block['name'] : '',
          input: block['input'],
          json: '',
          signature: typeof block['signature'] === 'string' ? block['signature'] : '',
        };
        this.blocks.set(index, open);
        if (open.type === 'redacted_thinking') {
          // opaque and whole at its start: a block of its own, sent back as it came
          const redacted = block['data'];
          if (typeof redacted !== 'string') throw this.malformed(`redacted_thinking block ${index} without data`, sse);
          return [{ type: 'reasoning-end', redactedData: redacted }];
        }
        const text = block['type'] === 'text' ? block['text'] : block['type'] === 'thinking' ? block['thinking'] : undefined;
        if (typeof text !== 'string' || text === '') return [];
        return [open.type === 'text' ? { type: 'text-delta', text } : { type: 'reasoning-delta', text }];
      }
      case 'content_block_delta': {
        const delta = data['delta'];
        const index = data['index'];
        if (!isObject(delta) || typeof index !== 'number') throw this.malformed('content_block_delta without index or delta', sse);
        const block = this.blocks.get(index);
        if (delta['type'] === 'text_delta') {
          const text = delta['text'];
          if (typeof text !== 'string') throw this.malformed('text_delta without text', sse);
          if (block?.type === 'tool_use') throw this.malformed(`text_delta in tool_use block ${index}`, sse);
          // a text delta without its block start loses nothing: it is shown
          return text === '' ? [] : [{ type: 'text-delta', text }];
        }
        if (delta['type'] === 'thinking_delta' || delta['type'] === 'signature_delta') {
          const piece = delta['type'] === 'thinking_delta' ? delta['thinking'] : delta['signature'];
          if (typeof piece !== 'string') throw this.malformed(`${delta['type']} without its text`, sse);
          if (delta['type'] === 'signature_delta') {
            // only a thinking block is signed (one never started, or another kind, has nothing to sign)
            if (block?.type === 'thinking') block.signature = piece;
            return [];
          }
          // reasoning, wherever it arrives (without its block start, in another block): shown, never lost
          return piece === '' ? [] : [{ type: 'reasoning-delta', text: piece }];
        }
        if (delta['type'] === 'input_json_delta') {
          const piece = delta['partial_json'];
          if (typeof piece !== 'string' || block === undefined) throw this.malformed('input_json_delta without partial_json or an open block', sse);
          if (block.type === 'text' || block.type === 'thinking') throw this.malformed(`input_json_delta in ${block.type} block ${index}`, sse);
          block.json += piece;
          return [];
        }
        // citations: not part of the answer; anything else in a text or tool_use block might be,
        // and would be lost
        if ((block?.type === 'text' || block?.type === 'tool_use') && !SKIPPED_DELTAS.has(String(delta['type']))) {
          throw this.malformed(`a ${String(delta['type'])} delta in ${block.type} block ${index} (it would be lost)`, sse);
        }
        return [];
      }
      case 'content_block_stop': {
        const index = data['index'];
        if (typeof index !== 'number') throw this.malformed('content_block_stop without index', sse);
        const block = this.blocks.get(index);
        this.blocks.delete(index);
        if (block?.type === 'thinking') return [reasoningEnd(block)];
        // a stop for a block never started loses nothing
        if (block === undefined || block.type !== 'tool_use') return [];
        const args = block.json.trim() === '' ? (block.input ?? {}) : parseToolArguments(block.json);
        return [{ type: 'tool-call', id: block.id, name: block.name, args }];
      }
      case 'message_delta': {
        const delta = data['delta'];
        if (isObject(delta) && typeof delta['stop_reason'] === 'string') this.stopReason = STOP_REASONS[delta['stop_reason']] ?? 'other';
        this.readUsage(data['usage']);
        return [];
      }
      case 'message_stop': {
        const ends: TurnEvent[] = [];
        for (const [index, block] of this.blocks) {
          // its tool call is emitted at its stop: finishing now would drop it
          if (block.type === 'tool_use') throw this.malformed(`message_stop with tool_use block ${index} (${block.name}) still open`, sse);
          // a thinking block never stopped: its deltas were shown; it ends here, with what signature came
          if (block.type === 'thinking') ends.push(reasoningEnd(block));
        }
        this.blocks.clear();
        this.done = true;
        const { input, cacheCreation, cacheRead, output } = this.usage;
        const usage: Usage | undefined =
          input === undefined && cacheCreation === undefined && cacheRead === undefined
            ? undefined
            : { inputTokens: (input ?? 0) + (cacheCreation ?? 0) + (cacheRead ?? 0), outputTokens: output ?? 0 };
        const reason = this.stopReason ?? 'other';
        ends.push(usage ? { type: 'finish', reason, usage } : { type: 'finish', reason });
        return ends;
      }
      case 'error': {
        const error = isObject(data['error']) ? data['error'] : {};
        const message = typeof error['message'] === 'string' ? error['message'] : 'error event';
        throw midStreamError(this.model, data, `${String(error['type'] ?? 'error')}: ${message}`);
      }
      default:
        // ping, and event types added to the API later
        return [];
    }
  }

  /** Each usage field a `message_start` or `message_delta` carries replaces the one before. */
  private readUsage(usage: unknown): void {
    if (!isObject(usage)) return;
    const read = (key: string): number | undefined => (typeof usage[key] === 'number' && Number.isFinite(usage[key]) ? usage[key] : undefined);
    this.usage.input = read('input_tokens') ?? this.usage.input;
    this.usage.cacheCreation = read('cache_creation_input_tokens') ?? this.usage.cacheCreation;
    this.usage.cacheRead = read('cache_read_input_tokens') ?? this.usage.cacheRead;
    this.usage.output = read('output_tokens') ?? this.usage.output;
  }

  /** The stream's body ended: fine only after `message_stop`. */
  end(): void {
    if (!this.done) throw new IncompleteStreamError(this.model, 'no message_stop', this.events);
  }

  private malformed(detail: string, sse: SseEvent): MalformedStreamError {
    return new MalformedStreamError(this.model, detail, sse.data);
  }
}

/**
 * A fresh decoder of one stream's Messages API events into model events (what the model uses per request):
 * feed it parsed Server-Sent Events; `done` at the protocol's final event; `end` throws when the
 * body ended before it. For replaying recorded streams and for protocols built on this one.
 *
 * @example
 * ```ts
 * const decoder = anthropicStreamDecoder('recorded');
 * const events = parseSse(recorded).flatMap((e) => decoder.push(e));
 * decoder.end(); // throws IncompleteStreamError if the recording was cut short
 * ```
 */
export function anthropicStreamDecoder(modelId: string): StreamDecoder<TurnEvent> {
  return new EventDecoder(modelId);
}

/**
 * A {@link Model} speaking Anthropic's Messages API with `stream: true`, over `fetch`.
 *
 * Requests: `toolChoice` → `tool_choice` (`auto`, `none`, `any` for `'required'`, `tool` with
 * its name); system messages become the top-level `system`; tool results become user
 * `tool_result` blocks (`is_error` kept), assistant tool calls `tool_use` blocks (arguments that
 * are not an object are sent as `{}`), an assistant message's signed reasoning `thinking` blocks
 * and its redacted reasoning `redacted_thinking` blocks, first (so a tool-use turn with extended
 * thinking — `body: { thinking: { type: 'enabled', budget_tokens } }` — goes back as the API
 * requires); tools `{ name, description, input_schema }`; headers `x-api-key` and
 * `anthropic-version: 2023-06-01`.
 *
 * Events: `text_delta` → `text-delta`; a `thinking` block → `reasoning-delta`s (its
 * `thinking_delta`s), then a `reasoning-end` with its `signature` at its `content_block_stop`; a
 * `redacted_thinking` block → a `reasoning-end` with `redactedData`; a `tool_use` block (id and name from
 * `content_block_start`, its `input_json_delta` pieces joined) → one `tool-call` at its
 * `content_block_stop`, arguments parsed (the raw text when not valid JSON, as with
 * {@link openAICompatibleModel}); `message_stop` → one `finish` (`end_turn` / `stop_sequence` →
 * `stop`, `tool_use` → `tool-calls`, `max_tokens` → `length`, `refusal` → `content-filter`,
 * others `other`) with `usage`: input = `input_tokens` + `cache_creation_input_tokens` +
 * `cache_read_input_tokens` and output = `output_tokens`, each from the last `message_start` or
 * `message_delta` that carried it. `ping`, citations, server tool blocks and unknown event types
 * are skipped.
 *
 * Errors (each one `classifyError` understands):
 * - a non-2xx response → `HttpError` with status, headers and body;
 * - an `error` event mid-stream → `HttpError` with the status the API gives that error type:
 *   `overloaded_error` → 529 (`server_error`: retryable, fallback-able), `rate_limit_error` →
 *   429, `api_error` → 500, `invalid_request_error` → 400 (not retryable)…;
 * - the body ends before `message_stop`, or the connection drops → `IncompleteStreamError`
 *   (`connection`: retryable, fallback-able) — never a short answer;
 * - an unreadable event, or one that would lose text or a tool call (a second `message_start`
 *   with another id — a spliced stream —, a block started twice, a delta in the wrong block, a
 *   `tool_use` block still open at `message_stop`) → `MalformedStreamError` (`bad_gateway`:
 *   retryable, fallback-able); so is an event larger than `maxEventSize`.
 *
 * Unsubscribing aborts the request and cancels the body reader at once; so does aborting the
 * context signal given to `stream`.
 *
 * @example
 * ```ts
 * const claude = anthropicModel({ apiKey: process.env.ANTHROPIC_API_KEY, model: 'claude-sonnet-4-5' });
 * const local = anthropicModel({ baseURL: server.url, model: 'local', id: 'secondary' });
 * runAgent({ model: fallbackModel([claude, local]), tools: [getWeather], messages }).subscribe(render);
 * ```
 * @throws {InvalidOptionError} at once, for a missing or invalid option.
 */
export function anthropicModel(options: AnthropicModelOptions): Model {
  checkProviderOptions('anthropicModel', props, options, ['model']);
  const { apiKey, model, maxTokens = 4096, headers = {}, body = {} } = options;
  const id = options.id ?? `anthropic:${model}`;
  const url = `${withoutTrailingSlashes(options.baseURL ?? 'https://api.anthropic.com')}/v1/messages`;
  const defaults: Record<string, string> = { 'anthropic-version': ANTHROPIC_VERSION, ...(apiKey ? { 'x-api-key': apiKey } : {}) };
  return {
    id,
    stream: (request, context) =>
      decodeSse(
        {
          model: id,
          url,
          headers: { ...defaults, ...headers },
          body: anthropicRequestBody(model, maxTokens, request, body),
          ...(options.fetch ? { fetch: options.fetch } : {}),
          ...(options.maxEventSize ? { maxEventSize: options.maxEventSize } : {}),
          signal: context.signal,
        },
        () => new EventDecoder(id),
      ),
  };
}
