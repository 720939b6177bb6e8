/**
 * The two wire protocols the local provider speaks: OpenAI Chat Completions and Anthropic
 * Messages, streaming (SSE frames) and not (JSON); requests in, as rxheal messages; answers,
 * errors and faulty frames out.
 *
 * @module
 */
import { asyncScheduler } from 'rxjs';
import { showValue } from '../core/errors/errors.js';
import type { Message } from '../core/events/events.js';
import { isObject, parseToolArguments } from '../providers/sse.js';
import type { StreamErrorFault } from './faults.js';
import type { AssistantTool } from './assistant.js';
import { afterCompaction } from './providerSide.js';

/**
 * Which protocol a request spoke: `'openai'` (`/v1/chat/completions`), `'anthropic'`
 * (`/v1/messages`) or `'responses'` (OpenAI's Responses API, `/v1/responses`).
 *
 * @example
 * ```ts
 * const anthropicCalls = server.requests.filter((r) => r.protocol === 'anthropic').length;
 * ```
 */
export type Protocol = 'openai' | 'anthropic' | 'responses';

export interface ToolCallOut {
  readonly id: string;
  readonly name: string;
  readonly args: unknown;
}

/** One model turn, ready to encode. */
export interface Answer {
  readonly id: string;
  readonly model: string;
  readonly text: string;
  readonly tokens: readonly string[];
  readonly toolCalls: readonly ToolCallOut[];
  readonly finishReason: 'stop' | 'tool-calls' | 'length';
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** The turn's reasoning, when the request asked for thinking: its tokens and its signature. */
  readonly reasoning?: { readonly tokens: readonly string[]; readonly signature: string };
  /** Of `inputTokens`, those read from the prompt cache and those written to it. */
  readonly cacheRead?: number;
  readonly cacheWrite?: number;
  /** A server-side compaction's summary, sent before the answer. */
  readonly compaction?: string;
  /** A server-side fallback: the blocked model, the model that answered. */
  readonly fallback?: { readonly from: string; readonly to: string };
  /** A blocked turn refused (no fallback asked for), with the model recommended instead. */
  readonly refusal?: { readonly recommendedModel: string };
}

/** An SSE frame: `content` frames carry a token or a tool-argument piece; `closing` frames end the stream. */
export interface Frame {
  readonly text: string;
  readonly part: 'preamble' | 'content' | 'closing';
}

export const sse = (data: unknown, event?: string): string =>
  `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;

/** A tool call's JSON arguments cut into pieces, as providers stream them. */
export function argumentPieces(args: unknown): string[] {
  const json = typeof args === 'string' ? args : JSON.stringify(args ?? {});
  const pieces: string[] = [];
  for (let i = 0; i < json.length; i += 7) pieces.push(json.slice(i, i + 7));
  return pieces.length > 0 ? pieces : [''];
}

const OPENAI_FINISH = { stop: 'stop', 'tool-calls': 'tool_calls', length: 'length' } as const;
const ANTHROPIC_STOP = { stop: 'end_turn', 'tool-calls': 'tool_use', length: 'max_tokens' } as const;

export function openAIFrames(answer: Answer, includeUsage: boolean): Frame[] {
  const created = Math.floor(asyncScheduler.now() / 1000);
  const chunk = (choices: unknown[], usage?: unknown): string =>
    sse({ id: answer.id, object: 'chat.completion.chunk', created, model: answer.model, choices, ...(usage === undefined ? {} : { usage }) });
  const delta = (d: unknown, finish: string | null = null): string => chunk([{ index: 0, delta: d, logprobs: null, finish_reason: finish }]);
  const frames: Frame[] = [{ part: 'preamble', text: delta({ role: 'assistant', content: '' }) }];
  // DeepSeek-style reasoning: `reasoning_content` deltas before the answer
  for (const token of answer.reasoning?.tokens ?? []) frames.push({ part: 'content', text: delta({ content: null, reasoning_content: token }) });
  for (const token of answer.tokens) frames.push({ part: 'content', text: delta({ content: token }) });
  answer.toolCalls.forEach((call, index) => {
    frames.push({ part: 'preamble', text: delta({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }) });
    for (const piece of argumentPieces(call.args)) frames.push({ part: 'content', text: delta({ tool_calls: [{ index, function: { arguments: piece } }] }) });
  });
  frames.push({ part: 'closing', text: delta({}, OPENAI_FINISH[answer.finishReason]) });
  if (includeUsage) {
    frames.push({ part: 'closing', text: chunk([], openAIUsage(answer)) });
  }
  frames.push({ part: 'closing', text: sse('[DONE]') });
  return frames;
}

export function anthropicFrames(answer: Answer): Frame[] {
  const frames: Frame[] = [
    {
      part: 'preamble',
      text: sse(
        {
          type: 'message_start',
          message: {
            id: answer.id,
            type: 'message',
            role: 'assistant',
            model: answer.model,
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { ...anthropicInput(answer), output_tokens: 1 },
          },
        },
        'message_start',
      ),
    },
  ];
  let index = 0;
  const block = (content_block: Record<string, unknown>, deltas: readonly Record<string, unknown>[] = []): void => {
    frames.push({ part: 'preamble', text: sse({ type: 'content_block_start', index, content_block }, 'content_block_start') });
    for (const delta of deltas) frames.push({ part: 'preamble', text: sse({ type: 'content_block_delta', index, delta }, 'content_block_delta') });
    frames.push({ part: 'preamble', text: sse({ type: 'content_block_stop', index }, 'content_block_stop') });
    index++;
  };
  // compaction first (it replaces what came before), then a server-side fallback's hop
  if (answer.compaction !== undefined) block({ type: 'compaction', content: null }, [{ type: 'compaction_delta', content: answer.compaction }]);
  if (answer.fallback) block({ type: 'fallback', from: { model: answer.fallback.from }, to: { model: answer.fallback.to } });
  if (answer.reasoning) {
    // a thinking block, as the API streams one: empty at its start, its deltas, then its signature
    frames.push({
      part: 'preamble',
      text: sse({ type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } }, 'content_block_start'),
    });
    for (const token of answer.reasoning.tokens) {
      frames.push({
        part: 'content',
        text: sse({ type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: token } }, 'content_block_delta'),
      });
    }
    frames.push({
      part: 'preamble',
      text: sse({ type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: answer.reasoning.signature } }, 'content_block_delta'),
    });
    frames.push({ part: 'preamble', text: sse({ type: 'content_block_stop', index }, 'content_block_stop') });
    index++;
  }
  if (answer.tokens.length > 0) {
    frames.push({ part: 'preamble', text: sse({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } }, 'content_block_start') });
    frames.push({ part: 'preamble', text: sse({ type: 'ping' }, 'ping') });
    for (const token of answer.tokens) {
      frames.push({ part: 'content', text: sse({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: token } }, 'content_block_delta') });
    }
    frames.push({ part: 'preamble', text: sse({ type: 'content_block_stop', index }, 'content_block_stop') });
    index++;
  }
  for (const call of answer.toolCalls) {
    frames.push({
      part: 'preamble',
      text: sse({ type: 'content_block_start', index, content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} } }, 'content_block_start'),
    });
    for (const piece of argumentPieces(call.args)) {
      frames.push({
        part: 'content',
        text: sse({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: piece } }, 'content_block_delta'),
      });
    }
    frames.push({ part: 'preamble', text: sse({ type: 'content_block_stop', index }, 'content_block_stop') });
    index++;
  }
  frames.push({
    part: 'closing',
    text: sse(
      {
        type: 'message_delta',
        delta: answer.refusal
          ? { stop_reason: 'refusal', stop_sequence: null, stop_details: { type: 'refusal', recommended_model: answer.refusal.recommendedModel } }
          : { stop_reason: ANTHROPIC_STOP[answer.finishReason], stop_sequence: null },
        usage: { ...anthropicInput(answer), output_tokens: answer.outputTokens, ...anthropicIterations(answer) },
      },
      'message_delta',
    ),
  });
  frames.push({ part: 'closing', text: sse({ type: 'message_stop' }, 'message_stop') });
  return frames;
}

/** An answer's input usage as the Messages API says it: the uncached input, and the cache's reads and writes apart. */
function anthropicInput(answer: Answer): Record<string, number> {
  const read = answer.cacheRead ?? 0;
  const write = answer.cacheWrite ?? 0;
  return { input_tokens: answer.inputTokens - read - write, cache_creation_input_tokens: write, cache_read_input_tokens: read };
}

/** A server-side fallback's samplings: the blocked one (no output), then the one that answered. */
function anthropicIterations(answer: Answer): Record<string, unknown> {
  if (!answer.fallback) return {};
  const input = answer.inputTokens;
  return {
    iterations: [
      { type: 'message', model: answer.fallback.from, input_tokens: input, output_tokens: 0 },
      { type: 'fallback_message', model: answer.fallback.to, input_tokens: input, output_tokens: answer.outputTokens },
    ],
  };
}

/** OpenAI's usage object of an answer (the cache's reads in `prompt_tokens_details`). */
function openAIUsage(answer: Answer): Record<string, unknown> {
  return {
    prompt_tokens: answer.inputTokens,
    completion_tokens: answer.outputTokens,
    total_tokens: answer.inputTokens + answer.outputTokens,
    prompt_tokens_details: { cached_tokens: answer.cacheRead ?? 0 },
  };
}

export function openAIJson(answer: Answer): unknown {
  return {
    id: answer.id,
    object: 'chat.completion',
    created: Math.floor(asyncScheduler.now() / 1000),
    model: answer.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: answer.text === '' && answer.toolCalls.length > 0 ? null : answer.text,
          ...(answer.reasoning ? { reasoning_content: answer.reasoning.tokens.join('') } : {}),
          ...(answer.toolCalls.length > 0
            ? {
                tool_calls: answer.toolCalls.map((c) => ({
                  id: c.id,
                  type: 'function',
                  function: { name: c.name, arguments: typeof c.args === 'string' ? c.args : JSON.stringify(c.args) },
                })),
              }
            : {}),
        },
        finish_reason: OPENAI_FINISH[answer.finishReason],
      },
    ],
    usage: openAIUsage(answer),
  };
}

export function anthropicJson(answer: Answer): unknown {
  return {
    id: answer.id,
    type: 'message',
    role: 'assistant',
    model: answer.model,
    content: [
      ...(answer.compaction === undefined ? [] : [{ type: 'compaction', content: answer.compaction }]),
      ...(answer.fallback ? [{ type: 'fallback', from: { model: answer.fallback.from }, to: { model: answer.fallback.to } }] : []),
      ...(answer.reasoning ? [{ type: 'thinking', thinking: answer.reasoning.tokens.join(''), signature: answer.reasoning.signature }] : []),
      ...(answer.text === '' ? [] : [{ type: 'text', text: answer.text }]),
      ...answer.toolCalls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: c.args })),
    ],
    stop_reason: answer.refusal ? 'refusal' : ANTHROPIC_STOP[answer.finishReason],
    stop_sequence: null,
    ...(answer.refusal ? { stop_details: { type: 'refusal', recommended_model: answer.refusal.recommendedModel } } : {}),
    usage: { ...anthropicInput(answer), output_tokens: answer.outputTokens, ...anthropicIterations(answer) },
  };
}

const ANTHROPIC_ERROR_TYPES: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  503: 'overloaded_error',
  529: 'overloaded_error',
};

/** An error body in the protocol's format. */
export function errorBody(protocol: Protocol, status: number, message: string): unknown {
  if (protocol === 'anthropic') {
    return { type: 'error', error: { type: ANTHROPIC_ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error'), message } };
  }
  const type = status === 429 ? 'rate_limit_exceeded' : status >= 500 ? 'server_error' : 'invalid_request_error';
  return { error: { message, type, param: null, code: status === 429 ? 'rate_limit_exceeded' : null } };
}

export function malformedFrame(protocol: Protocol, answer: Answer): string {
  return protocol === 'anthropic'
    ? `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel\n\n`
    : `data: {"id":"${answer.id}","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hel\n\n`;
}

export function streamErrorFrame(protocol: Protocol, fault: StreamErrorFault): string {
  const type = fault.errorType ?? 'overloaded_error';
  // a message of its own, as the APIs send: the type is in the frame already, and clients print both
  const message = fault.message ?? (type === 'overloaded_error' ? 'Overloaded' : 'The stream failed (local fault)');
  if (protocol === 'anthropic') return sse({ type: 'error', error: { type, message } }, 'error');
  return sse({ error: { message, type: type === 'rate_limit_error' ? 'rate_limit_exceeded' : 'server_error', param: null, code: null } });
}

// ---- requests in: both protocols → rxheal messages ----------------------------------------

/** A JSON object, not an array (the providers' own check). */
export const isRecord = isObject;

/** Text of a content field: a string, or text parts/blocks joined. */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((part) => (typeof part === 'string' ? part : isRecord(part) && typeof part['text'] === 'string' ? part['text'] : '')).join('');
  }
  return content === undefined || content === null ? '' : JSON.stringify(content);
}

/** A request the server refuses, with its HTTP status (400 unless said). */
export class BadRequest extends Error {
  constructor(
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

/**
 * The tools a request's `tool_choice` leaves the assistant: none for `'none'` (OpenAI) or
 * `{ type: 'none' }` (Anthropic), only the named one for `{ type: 'function', function: { name } }`,
 * `{ type: 'tool', name }` or `{ type: 'function', name }` (Responses), all of them otherwise.
 */
export function toolsAllowed<T extends { readonly name: string }>(body: Record<string, unknown>, tools: readonly T[]): T[] {
  const choice = body['tool_choice'];
  const kind = isRecord(choice) ? choice['type'] : choice;
  if (kind === 'none') return [];
  const fn = isRecord(choice) ? choice['function'] : undefined;
  // { type: 'function', function: { name } } (Chat Completions), { type: 'tool', name } (Anthropic), { type: 'function', name } (Responses)
  const name = isRecord(fn) ? fn['name'] : isRecord(choice) && (kind === 'tool' || kind === 'function') ? choice['name'] : undefined;
  return typeof name === 'string' ? tools.filter((t) => t.name === name) : [...tools];
}

// ---- extended thinking: asked for, signed, and required back -------------------------------

/**
 * Whether a request asks for thinking: `thinking: { type: 'enabled' | 'adaptive' }` (Anthropic,
 * and DeepSeek's OpenAI-format switch) or `reasoning_effort` (OpenAI format).
 */
export function asksForThinking(body: Record<string, unknown>): boolean {
  const thinking = body['thinking'];
  if (isRecord(thinking) && (thinking['type'] === 'enabled' || thinking['type'] === 'adaptive')) return true;
  return typeof body['reasoning_effort'] === 'string' && body['reasoning_effort'] !== 'none';
}

/**
 * The local provider's signature of a thinking text (FNV-1a over its UTF-16 units, with its
 * length): enough to tell a block sent back unchanged from one altered or made up, as the API's
 * own signatures do. Not a secret: the local provider guards nothing with it.
 *
 * @example
 * ```ts
 * import { thinkingSignature } from 'rxheal/server';
 * // a thinking block the local provider accepts back (thinking on, a tool turn)
 * const block = { type: 'thinking', thinking: 'Use the tool.', signature: thinkingSignature('Use the tool.') };
 * ```
 */
export function thinkingSignature(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return `local-sig-${text.length.toString(36)}-${hash.toString(36)}`;
}

/**
 * Anthropic's rules for thinking blocks sent back, with thinking on: every `thinking` block's
 * signature must be its own, and the last assistant message, when it made tool calls (a tool loop
 * going on), must start with a `thinking` or `redacted_thinking` block. A broken rule is a 400 in
 * the API's words.
 */
function checkThinkingBack(raw: readonly unknown[]): void {
  let lastAssistant = -1;
  raw.forEach((m, i) => {
    if (!isRecord(m) || m['role'] !== 'assistant') return;
    lastAssistant = i;
    const blocks = Array.isArray(m['content']) ? (m['content'] as unknown[]) : [];
    blocks.forEach((b, j) => {
      if (isRecord(b) && b['type'] === 'thinking' && (typeof b['thinking'] !== 'string' || b['signature'] !== thinkingSignature(b['thinking']))) {
        throw new BadRequest(`messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`);
      }
    });
  });
  if (lastAssistant < 0) return;
  const last = raw[lastAssistant] as Record<string, unknown>;
  const blocks = Array.isArray(last['content']) ? (last['content'] as unknown[]) : [];
  if (!blocks.some((b) => isRecord(b) && b['type'] === 'tool_use')) return;
  const first = blocks[0];
  const type = isRecord(first) ? String(first['type']) : typeof first;
  if (type !== 'thinking' && type !== 'redacted_thinking') {
    throw new BadRequest(
      `messages.${lastAssistant}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${type}\`. When \`thinking\` is enabled, ` +
        `a final \`assistant\` message must start with a thinking block (preceding the lastmost set of \`tool_use\` and \`tool_result\` blocks).`,
    );
  }
}

export function fromOpenAI(body: Record<string, unknown>): { messages: Message[]; tools: AssistantTool[] } {
  const raw = body['messages'];
  if (!Array.isArray(raw)) throw new BadRequest('"messages" must be an array');
  const thinking = asksForThinking(body);
  const names = new Map<string, string>();
  const messages: Message[] = [];
  let index = -1;
  for (const m of raw as unknown[]) {
    index++;
    if (!isRecord(m)) throw new BadRequest('each message must be an object');
    const role = m['role'];
    const content = textOf(m['content']);
    if (role === 'system' || role === 'developer') messages.push({ role: 'system', content });
    else if (role === 'user') messages.push({ role: 'user', content });
    else if (role === 'assistant') {
      const calls = Array.isArray(m['tool_calls']) ? (m['tool_calls'] as unknown[]).filter(isRecord) : [];
      const toolCalls = calls.map((c) => {
        const fn = isRecord(c['function']) ? c['function'] : {};
        const call = {
          id: String(c['id'] ?? ''),
          name: String(fn['name'] ?? ''),
          args: parseToolArguments(typeof fn['arguments'] === 'string' ? fn['arguments'] : ''),
        };
        names.set(call.id, call.name);
        return call;
      });
      // DeepSeek's thinking mode: a tool-call turn goes back with its reasoning_content
      if (thinking && toolCalls.length > 0 && (typeof m['reasoning_content'] !== 'string' || m['reasoning_content'] === '')) {
        throw new BadRequest(
          `Missing \`reasoning_content\` field in the assistant message at message index ${index}: ` +
            `with thinking on, a turn that called tools must be sent back with its reasoning_content`,
        );
      }
      messages.push(toolCalls.length > 0 ? { role: 'assistant', content, toolCalls } : { role: 'assistant', content });
    } else if (role === 'tool') {
      const id = String(m['tool_call_id'] ?? '');
      messages.push({ role: 'tool', toolCallId: id, toolName: names.get(id) ?? '', content });
    } else throw new BadRequest(`unknown message role ${showValue(role)}`);
  }
  const tools = Array.isArray(body['tools'])
    ? (body['tools'] as unknown[]).filter(isRecord).map((tool): AssistantTool => {
        const fn = isRecord(tool['function']) ? tool['function'] : tool;
        return { name: String(fn['name'] ?? ''), description: String(fn['description'] ?? ''), parameters: fn['parameters'] };
      })
    : [];
  return { messages, tools };
}

export function fromAnthropic(body: Record<string, unknown>): { messages: Message[]; tools: AssistantTool[] } {
  const raw = body['messages'];
  if (!Array.isArray(raw)) throw new BadRequest('messages: Field required');
  if (asksForThinking(body)) checkThinkingBack(raw as unknown[]);
  const messages: Message[] = [];
  const system = textOf(body['system']);
  if (system !== '') messages.push({ role: 'system', content: system });
  const names = new Map<string, string>();
  let compacted: { at: number; summary: string } | undefined;
  for (const m of raw as unknown[]) {
    if (!isRecord(m)) throw new BadRequest('each message must be an object');
    const role = m['role'];
    if (role !== 'user' && role !== 'assistant') throw new BadRequest(`unknown message role ${showValue(role)}`);
    const blocks: unknown[] = typeof m['content'] === 'string' ? [{ type: 'text', text: m['content'] }] : Array.isArray(m['content']) ? m['content'] : [];
    let text = '';
    const toolCalls: { id: string; name: string; args: unknown }[] = [];
    for (const block of blocks) {
      if (!isRecord(block)) continue;
      // a compaction sent back: it stands for everything before it (the API drops that)
      if (block['type'] === 'compaction' && role === 'assistant') compacted = { at: messages.length, summary: textOf(block['content']) };
      if (block['type'] === 'text' && typeof block['text'] === 'string') text += block['text'];
      else if (block['type'] === 'tool_use') {
        const call = { id: String(block['id'] ?? ''), name: String(block['name'] ?? ''), args: block['input'] ?? {} };
        names.set(call.id, call.name);
        toolCalls.push(call);
      } else if (block['type'] === 'tool_result') {
        const id = String(block['tool_use_id'] ?? '');
        const result: Message = { role: 'tool', toolCallId: id, toolName: names.get(id) ?? '', content: textOf(block['content']) };
        messages.push(block['is_error'] === true ? { ...result, isError: true } : result);
      }
    }
    if (role === 'assistant') messages.push(toolCalls.length > 0 ? { role: 'assistant', content: text, toolCalls } : { role: 'assistant', content: text });
    else if (text !== '') messages.push({ role: 'user', content: text });
  }
  const tools = Array.isArray(body['tools'])
    ? (body['tools'] as unknown[])
        .filter(isRecord)
        .map((tool): AssistantTool => ({ name: String(tool['name'] ?? ''), description: String(tool['description'] ?? ''), parameters: tool['input_schema'] }))
    : [];
  return { messages: compacted ? afterCompaction(messages, compacted.at, compacted.summary) : messages, tools };
}
