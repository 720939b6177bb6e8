/**
 * A local LLM provider: a real HTTP server on 127.0.0.1 that speaks OpenAI's Chat Completions and
 * Anthropic's Messages protocols (streaming and not), backed by a deterministic scripted
 * assistant, with faults you switch on and off by option, in-process, or over HTTP. For demos
 * and for integration tests that need no API key and no network. Node only.
 *
 * @module
 */
// Node-only module: the library's build has no ambient Node types (its other modules are browser-safe)
/// <reference types="node" />
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import * as t from 'io-ts';
import { asyncScheduler, Observable, Subject } from 'rxjs';
import { InvalidOptionError, showValue } from '../core/errors.js';
import type { Message } from '../core/events.js';
import { Bool, Func, NonEmptyString, NonNegativeInteger, NonNegativeNumber, PositiveInteger, check, oneOf, validateOptions } from '../core/options.js';
import { parseToolArguments } from '../sources/providers/sse.js';
import { scriptedAssistant, tokenize, type Assistant, type AssistantRequest, type AssistantTool, type AssistantTurn } from './assistant.js';

// ---------------------------------------------------------------------------------------------
// faults
// ---------------------------------------------------------------------------------------------

/**
 * Fields every fault has.
 *
 * @example
 * ```ts
 * const oneShot: FaultBase = { id: 'rate-limit', times: 1 };
 * ```
 */
export interface FaultBase {
  /** A name for the fault (a toggle's key). Adding a fault with an id already listed replaces it. Assigned (`f1`, `f2`…) when absent. */
  readonly id?: string;
  /** How many requests it acts on before it removes itself. Absent: until removed. */
  readonly times?: number;
}

/**
 * Answer with an HTTP error status instead of the model's answer, in the protocol's error format.
 *
 * @example
 * ```ts
 * const rateLimited: StatusFault = { kind: 'status', status: 429, retryAfter: 1, times: 1 };
 * ```
 */
export interface StatusFault extends FaultBase {
  readonly kind: 'status';
  /** 400–599. */
  readonly status: number;
  /** `retry-after` header, in seconds. */
  readonly retryAfter?: number;
  /** `retry-after-ms` header, in milliseconds. */
  readonly retryAfterMs?: number;
  /** `x-should-retry: true|false` header. */
  readonly shouldRetry?: boolean;
  /** The error message in the body. Defaults to one naming the status and the fault. */
  readonly message?: string;
}

/**
 * The provider is off: every request's connection is destroyed before any response
 * (`mode: 'destroy'`, the default — `fetch` fails with a network error), or answered 503
 * (`mode: 'status'`).
 *
 * @example
 * ```ts
 * const off: DownFault = { kind: 'down', id: 'primary-off' };
 * ```
 */
export interface DownFault extends FaultBase {
  readonly kind: 'down';
  readonly mode?: 'destroy' | 'status';
}

/**
 * Destroy the connection after `afterChunks` content chunks (text tokens or tool-argument
 * pieces) of a streamed answer — before the stream's final events when the answer is shorter.
 *
 * @example
 * ```ts
 * const dropped: ResetFault = { kind: 'reset', afterChunks: 3, times: 1 };
 * ```
 */
export interface ResetFault extends FaultBase {
  readonly kind: 'reset';
  readonly afterChunks: number;
}

/**
 * Stop sending after `afterChunks` content chunks (default 0: headers, then silence) and keep
 * the connection open until the client gives up.
 *
 * @example
 * ```ts
 * const stalled: StallFault = { kind: 'stall' };
 * ```
 */
export interface StallFault extends FaultBase {
  readonly kind: 'stall';
  readonly afterChunks?: number;
}

/**
 * Wait `delayMs` before the response's first byte (headers included), whatever the response.
 *
 * @example
 * ```ts
 * const slow: SlowFirstByteFault = { kind: 'slow-first-byte', delayMs: 2000 };
 * ```
 */
export interface SlowFirstByteFault extends FaultBase {
  readonly kind: 'slow-first-byte';
  readonly delayMs: number;
}

/**
 * Send one unreadable event (truncated JSON) after `afterChunks` content chunks (default 0),
 * then carry on.
 *
 * @example
 * ```ts
 * const garbled: MalformedFault = { kind: 'malformed', afterChunks: 2, times: 1 };
 * ```
 */
export interface MalformedFault extends FaultBase {
  readonly kind: 'malformed';
  readonly afterChunks?: number;
}

/**
 * End the stream with the protocol's error event after `afterChunks` content chunks (default 0):
 * Anthropic `event: error` with `{ type: errorType }`, OpenAI `data: {"error": …}`.
 *
 * @example
 * ```ts
 * const overloaded: StreamErrorFault = { kind: 'stream-error', errorType: 'overloaded_error', afterChunks: 2 };
 * ```
 */
export interface StreamErrorFault extends FaultBase {
  readonly kind: 'stream-error';
  readonly afterChunks?: number;
  /** Anthropic's error type. Defaults to `'overloaded_error'`. */
  readonly errorType?: string;
  readonly message?: string;
}

/**
 * The model sends bad tool arguments: `args` replaces each call's arguments; by default
 * `get_weather` gets `units: 'kelvin'` and other tools `{}` — what the tool's codec rejects, so
 * reflection kicks in. Acts only on turns that call a tool.
 *
 * @example
 * ```ts
 * const kelvin: BadToolArgsFault = { kind: 'bad-tool-args', times: 1 };
 * ```
 */
export interface BadToolArgsFault extends FaultBase {
  readonly kind: 'bad-tool-args';
  readonly args?: Readonly<Record<string, unknown>>;
}

/**
 * A fault to inject, as JSON (the admin endpoint's body) or in-process. Several may be active;
 * per request, the first active fault of each phase acts: `slow-first-byte`, then `down`, then
 * `status`, then `bad-tool-args`, then one stream fault (`reset` / `stall` / `malformed` /
 * `stream-error`). Stream faults act on streamed answers only.
 *
 * @example
 * ```ts
 * server.faults.set([{ kind: 'status', status: 503, times: 2 }, { kind: 'bad-tool-args', times: 1 }]);
 * ```
 */
export type Fault = StatusFault | DownFault | ResetFault | StallFault | SlowFirstByteFault | MalformedFault | StreamErrorFault | BadToolArgsFault;

/**
 * A fault's `kind`.
 *
 * @example
 * ```ts
 * const kinds: FaultKind[] = ['status', 'down', 'reset', 'stall', 'slow-first-byte', 'malformed', 'stream-error', 'bad-tool-args'];
 * ```
 */
export type FaultKind = Fault['kind'];

/**
 * A fault as listed: its id, uses left (`remaining`, when limited by `times`), and how many
 * requests it has acted on (`hits`).
 *
 * @example
 * ```ts
 * const listed: ActiveFault = { kind: 'status', status: 429, id: 'f1', times: 2, remaining: 1, hits: 1 };
 * ```
 */
export type ActiveFault = Fault & { readonly id: string; readonly remaining?: number; readonly hits: number };

const FAULT_KINDS = ['status', 'down', 'reset', 'stall', 'slow-first-byte', 'malformed', 'stream-error', 'bad-tool-args'] as const;
const HttpStatus = check('an integer from 400 to 599', (u): u is number => Number.isInteger(u) && (u as number) >= 400 && (u as number) <= 599);
const PlainObject = check('a plain object', (u): u is Record<string, unknown> => typeof u === 'object' && u !== null && !Array.isArray(u));
const common = { kind: oneOf(...FAULT_KINDS), id: NonEmptyString, times: PositiveInteger };
const FAULT_PROPS: Readonly<Record<FaultKind, t.Props>> = {
  status: { ...common, status: HttpStatus, retryAfter: NonNegativeNumber, retryAfterMs: NonNegativeInteger, shouldRetry: Bool, message: NonEmptyString },
  down: { ...common, mode: oneOf('destroy', 'status') },
  reset: { ...common, afterChunks: NonNegativeInteger },
  stall: { ...common, afterChunks: NonNegativeInteger },
  'slow-first-byte': { ...common, delayMs: NonNegativeNumber },
  malformed: { ...common, afterChunks: NonNegativeInteger },
  'stream-error': { ...common, afterChunks: NonNegativeInteger, errorType: NonEmptyString, message: NonEmptyString },
  'bad-tool-args': { ...common, args: PlainObject },
};
const REQUIRED: Readonly<Partial<Record<FaultKind, readonly string[]>>> = { status: ['status'], reset: ['afterChunks'], 'slow-first-byte': ['delayMs'] };

/**
 * Checks a fault's shape; throws {@link InvalidOptionError} naming the bad field.
 *
 * @example
 * ```ts
 * validateFault({ kind: 'reset', afterChunks: 3 }); // ok
 * validateFault({ kind: 'reset' }); // throws: fault "reset": option "afterChunks" must be a non-negative integer, got undefined
 * ```
 */
export function validateFault(fault: unknown): asserts fault is Fault {
  const kind = (fault as { kind?: unknown } | null | undefined)?.kind;
  if (typeof kind !== 'string' || !(FAULT_KINDS as readonly string[]).includes(kind)) {
    throw new InvalidOptionError('fault', 'kind', kind, common.kind.name);
  }
  const props = FAULT_PROPS[kind as FaultKind];
  validateOptions(`fault "${kind}"`, props, fault);
  for (const key of REQUIRED[kind as FaultKind] ?? []) {
    if ((fault as Record<string, unknown>)[key] === undefined) throw new InvalidOptionError(`fault "${kind}"`, key, undefined, props[key]?.name ?? 'present');
  }
}

/**
 * The faults of one provider instance. Change them in-process (`set`, `add`, `remove`, `clear`)
 * or over HTTP (`/admin/faults`); both see the same list.
 *
 * @example
 * ```ts
 * const server = await startLocalProvider();
 * server.faults.add({ kind: 'status', status: 429, retryAfter: 1, times: 1 }); // the next request gets a 429
 * server.faults.set({ kind: 'down', id: 'off' });                              // every request fails
 * server.faults.remove('off');
 * ```
 */
export class FaultController {
  private faults: ActiveFault[] = [];
  private seq = 0;
  private readonly subject = new Subject<readonly ActiveFault[]>();
  /** The list after each change (including a fault used up). */
  readonly changes$: Observable<readonly ActiveFault[]> = this.subject.asObservable();

  constructor(initial: Fault | readonly Fault[] = []) {
    this.set(initial);
  }

  /** The active faults, in order. */
  list(): ActiveFault[] {
    return this.faults.map((f) => ({ ...f }));
  }

  /** Replaces every fault (all are validated first: a bad one changes nothing). */
  set(faults: Fault | readonly Fault[]): ActiveFault[] {
    const list: readonly Fault[] = Array.isArray(faults) ? faults : [faults as Fault];
    list.forEach((f) => validateFault(f));
    this.faults = [];
    for (const fault of list) this.insert(fault);
    this.changed();
    return this.list();
  }

  /** Adds one fault (replacing one with the same `id`); returns it as listed. */
  add(fault: Fault): ActiveFault {
    validateFault(fault);
    const active = this.insert(fault);
    this.changed();
    return { ...active };
  }

  /** Removes the fault with this id; false when there was none. */
  remove(id: string): boolean {
    const before = this.faults.length;
    this.faults = this.faults.filter((f) => f.id !== id);
    if (this.faults.length === before) return false;
    this.changed();
    return true;
  }

  /** Removes every fault. */
  clear(): void {
    this.faults = [];
    this.changed();
  }

  /**
   * Takes the first active fault of one of `kinds` for a request, counting the use (a fault
   * with `times` disappears when used up). The server calls this; tests need not.
   */
  consume<K extends FaultKind>(...kinds: K[]): Extract<ActiveFault, { kind: K }> | undefined {
    const index = this.faults.findIndex((f) => (kinds as FaultKind[]).includes(f.kind));
    const fault = this.faults[index];
    if (fault === undefined) return undefined;
    const used: ActiveFault = { ...fault, hits: fault.hits + 1, ...(fault.remaining === undefined ? {} : { remaining: fault.remaining - 1 }) };
    if (used.remaining === 0) this.faults.splice(index, 1);
    else this.faults[index] = used;
    this.changed();
    return used as Extract<ActiveFault, { kind: K }>;
  }

  /** Completes `changes$` (the server's `close()` calls this). */
  dispose(): void {
    this.subject.complete();
  }

  private insert(fault: Fault): ActiveFault {
    const id = fault.id ?? `f${++this.seq}`;
    const active = { ...fault, id, hits: 0, ...(fault.times === undefined ? {} : { remaining: fault.times }) } as ActiveFault;
    const at = this.faults.findIndex((f) => f.id === id);
    if (at === -1) this.faults.push(active);
    else this.faults[at] = active;
    return active;
  }

  private changed(): void {
    this.subject.next(this.list());
  }
}

// ---------------------------------------------------------------------------------------------
// protocols
// ---------------------------------------------------------------------------------------------

/**
 * Which protocol a request spoke: `'openai'` (`/v1/chat/completions`) or `'anthropic'` (`/v1/messages`).
 *
 * @example
 * ```ts
 * const anthropicCalls = server.requests.filter((r) => r.protocol === 'anthropic').length;
 * ```
 */
export type Protocol = 'openai' | 'anthropic';

interface ToolCallOut {
  readonly id: string;
  readonly name: string;
  readonly args: unknown;
}

/** One model turn, ready to encode. */
interface Answer {
  readonly id: string;
  readonly model: string;
  readonly text: string;
  readonly tokens: readonly string[];
  readonly toolCalls: readonly ToolCallOut[];
  readonly finishReason: 'stop' | 'tool-calls' | 'length';
  readonly inputTokens: number;
  readonly outputTokens: number;
}

/** An SSE frame: `content` frames carry a token or a tool-argument piece; `closing` frames end the stream. */
interface Frame {
  readonly text: string;
  readonly part: 'preamble' | 'content' | 'closing';
}

const sse = (data: unknown, event?: string): string => `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;

/** A tool call's JSON arguments cut into pieces, as providers stream them. */
function argumentPieces(args: unknown): string[] {
  const json = typeof args === 'string' ? args : JSON.stringify(args ?? {});
  const pieces: string[] = [];
  for (let i = 0; i < json.length; i += 7) pieces.push(json.slice(i, i + 7));
  return pieces.length > 0 ? pieces : [''];
}

const OPENAI_FINISH = { stop: 'stop', 'tool-calls': 'tool_calls', length: 'length' } as const;
const ANTHROPIC_STOP = { stop: 'end_turn', 'tool-calls': 'tool_use', length: 'max_tokens' } as const;

function openAIFrames(answer: Answer, includeUsage: boolean): Frame[] {
  const created = Math.floor(asyncScheduler.now() / 1000);
  const chunk = (choices: unknown[], usage?: unknown): string =>
    sse({ id: answer.id, object: 'chat.completion.chunk', created, model: answer.model, choices, ...(usage === undefined ? {} : { usage }) });
  const delta = (d: unknown, finish: string | null = null): string => chunk([{ index: 0, delta: d, logprobs: null, finish_reason: finish }]);
  const frames: Frame[] = [{ part: 'preamble', text: delta({ role: 'assistant', content: '' }) }];
  for (const token of answer.tokens) frames.push({ part: 'content', text: delta({ content: token }) });
  answer.toolCalls.forEach((call, index) => {
    frames.push({ part: 'preamble', text: delta({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }) });
    for (const piece of argumentPieces(call.args)) frames.push({ part: 'content', text: delta({ tool_calls: [{ index, function: { arguments: piece } }] }) });
  });
  frames.push({ part: 'closing', text: delta({}, OPENAI_FINISH[answer.finishReason]) });
  if (includeUsage) {
    const usage = { prompt_tokens: answer.inputTokens, completion_tokens: answer.outputTokens, total_tokens: answer.inputTokens + answer.outputTokens };
    frames.push({ part: 'closing', text: chunk([], usage) });
  }
  frames.push({ part: 'closing', text: sse('[DONE]') });
  return frames;
}

function anthropicFrames(answer: Answer): Frame[] {
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
            usage: { input_tokens: answer.inputTokens, output_tokens: 1 },
          },
        },
        'message_start',
      ),
    },
  ];
  let index = 0;
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
      frames.push({ part: 'content', text: sse({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: piece } }, 'content_block_delta') });
    }
    frames.push({ part: 'preamble', text: sse({ type: 'content_block_stop', index }, 'content_block_stop') });
    index++;
  }
  frames.push({
    part: 'closing',
    text: sse({ type: 'message_delta', delta: { stop_reason: ANTHROPIC_STOP[answer.finishReason], stop_sequence: null }, usage: { output_tokens: answer.outputTokens } }, 'message_delta'),
  });
  frames.push({ part: 'closing', text: sse({ type: 'message_stop' }, 'message_stop') });
  return frames;
}

function openAIJson(answer: Answer): unknown {
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
          ...(answer.toolCalls.length > 0
            ? { tool_calls: answer.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: typeof c.args === 'string' ? c.args : JSON.stringify(c.args) } })) }
            : {}),
        },
        finish_reason: OPENAI_FINISH[answer.finishReason],
      },
    ],
    usage: { prompt_tokens: answer.inputTokens, completion_tokens: answer.outputTokens, total_tokens: answer.inputTokens + answer.outputTokens },
  };
}

function anthropicJson(answer: Answer): unknown {
  return {
    id: answer.id,
    type: 'message',
    role: 'assistant',
    model: answer.model,
    content: [
      ...(answer.text === '' ? [] : [{ type: 'text', text: answer.text }]),
      ...answer.toolCalls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: c.args })),
    ],
    stop_reason: ANTHROPIC_STOP[answer.finishReason],
    stop_sequence: null,
    usage: { input_tokens: answer.inputTokens, output_tokens: answer.outputTokens },
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
function errorBody(protocol: Protocol, status: number, message: string): unknown {
  if (protocol === 'anthropic') {
    return { type: 'error', error: { type: ANTHROPIC_ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error'), message } };
  }
  const type = status === 429 ? 'rate_limit_exceeded' : status >= 500 ? 'server_error' : 'invalid_request_error';
  return { error: { message, type, param: null, code: status === 429 ? 'rate_limit_exceeded' : null } };
}

function malformedFrame(protocol: Protocol, answer: Answer): string {
  return protocol === 'anthropic'
    ? `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel\n\n`
    : `data: {"id":"${answer.id}","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hel\n\n`;
}

function streamErrorFrame(protocol: Protocol, fault: StreamErrorFault): string {
  const type = fault.errorType ?? 'overloaded_error';
  const message = fault.message ?? (type === 'overloaded_error' ? 'Overloaded' : `${type} (local fault)`);
  if (protocol === 'anthropic') return sse({ type: 'error', error: { type, message } }, 'error');
  return sse({ error: { message, type: type === 'rate_limit_error' ? 'rate_limit_exceeded' : 'server_error', param: null, code: null } });
}

// ---- requests in: both protocols → rxheal messages ----------------------------------------

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === 'object' && u !== null && !Array.isArray(u);

/** Text of a content field: a string, or text parts/blocks joined. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (typeof part === 'string' ? part : isRecord(part) && typeof part['text'] === 'string' ? part['text'] : ''))
      .join('');
  }
  return content === undefined || content === null ? '' : JSON.stringify(content);
}

class BadRequest extends Error {}

function fromOpenAI(body: Record<string, unknown>): { messages: Message[]; tools: AssistantTool[] } {
  const raw = body['messages'];
  if (!Array.isArray(raw)) throw new BadRequest('"messages" must be an array');
  const names = new Map<string, string>();
  const messages: Message[] = [];
  for (const m of raw as unknown[]) {
    if (!isRecord(m)) throw new BadRequest('each message must be an object');
    const role = m['role'];
    const content = textOf(m['content']);
    if (role === 'system' || role === 'developer') messages.push({ role: 'system', content });
    else if (role === 'user') messages.push({ role: 'user', content });
    else if (role === 'assistant') {
      const calls = Array.isArray(m['tool_calls']) ? (m['tool_calls'] as unknown[]).filter(isRecord) : [];
      const toolCalls = calls.map((c) => {
        const fn = isRecord(c['function']) ? c['function'] : {};
        const call = { id: String(c['id'] ?? ''), name: String(fn['name'] ?? ''), args: parseToolArguments(typeof fn['arguments'] === 'string' ? fn['arguments'] : '') };
        names.set(call.id, call.name);
        return call;
      });
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

function fromAnthropic(body: Record<string, unknown>): { messages: Message[]; tools: AssistantTool[] } {
  const raw = body['messages'];
  if (!Array.isArray(raw)) throw new BadRequest('messages: Field required');
  const messages: Message[] = [];
  const system = textOf(body['system']);
  if (system !== '') messages.push({ role: 'system', content: system });
  const names = new Map<string, string>();
  for (const m of raw as unknown[]) {
    if (!isRecord(m)) throw new BadRequest('each message must be an object');
    const role = m['role'];
    if (role !== 'user' && role !== 'assistant') throw new BadRequest(`unknown message role ${showValue(role)}`);
    const blocks: unknown[] = typeof m['content'] === 'string' ? [{ type: 'text', text: m['content'] }] : Array.isArray(m['content']) ? m['content'] : [];
    let text = '';
    const toolCalls: { id: string; name: string; args: unknown }[] = [];
    for (const block of blocks) {
      if (!isRecord(block)) continue;
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
    ? (body['tools'] as unknown[]).filter(isRecord).map((tool): AssistantTool => ({ name: String(tool['name'] ?? ''), description: String(tool['description'] ?? ''), parameters: tool['input_schema'] }))
    : [];
  return { messages, tools };
}

// ---------------------------------------------------------------------------------------------
// the server
// ---------------------------------------------------------------------------------------------

/**
 * Options of {@link startLocalProvider}.
 *
 * @example
 * ```ts
 * const options: LocalProviderOptions = { name: 'primary', tokenDelayMs: 2, faults: [{ kind: 'status', status: 503 }] };
 * ```
 */
export interface LocalProviderOptions {
  /** Port to listen on. Defaults to 0: any free port (read it from `port` / `url`). */
  readonly port?: number;
  /** Address to bind. Defaults to `'127.0.0.1'`. */
  readonly host?: string;
  /** A name for this instance, sent as `x-provider-name` and shown by `/health`. Defaults to `'local'`. */
  readonly name?: string;
  /** Faults active from the start. None by default. */
  readonly faults?: Fault | readonly Fault[];
  /** Wait before each streamed content chunk (token or tool-argument piece), in ms. Defaults to 15. */
  readonly tokenDelayMs?: number;
  /** What answers. Defaults to {@link scriptedAssistant}. */
  readonly assistant?: Assistant;
}

/**
 * One request the server received, with what happened to it (updated while it runs).
 *
 * @example
 * ```ts
 * const done = server.requests.filter((r) => r.end === 'completed').length;
 * ```
 */
export interface RecordedRequest {
  /** `req_1`, `req_2`… (also the response's `x-request-id`). */
  readonly id: string;
  readonly protocol: Protocol;
  readonly path: string;
  /** Whether the request asked for a stream. */
  readonly stream: boolean;
  /** The parsed JSON body. */
  readonly body: unknown;
  /** Epoch ms. */
  readonly startedAt: number;
  /** The HTTP status sent; absent while waiting or when the connection was destroyed first. */
  readonly status?: number;
  /** Kinds of the faults that acted on it, in order. */
  readonly faults: readonly FaultKind[];
  /** Content chunks (tokens, tool-argument pieces) written. */
  readonly chunks: number;
  /**
   * How it ended: `'completed'` (the whole response sent), `'reset'` (the server destroyed the
   * connection: `down` or `reset` fault), `'client-closed'` (the client went away first, e.g. it
   * unsubscribed), `'server-closed'` (`close()` while it ran). Absent while it runs.
   */
  readonly end?: 'completed' | 'reset' | 'client-closed' | 'server-closed';
  /** Epoch ms, once ended. */
  readonly endedAt?: number;
}

/**
 * What the server reports as it works (`activity$`, and `/admin/events` over SSE).
 *
 * @example
 * ```ts
 * server.activity$.subscribe((a) => a.type === 'request-end' && console.log(a.request.id, a.request.end));
 * ```
 */
export type ProviderActivity =
  | { readonly type: 'request-start'; readonly request: RecordedRequest }
  | { readonly type: 'request-end'; readonly request: RecordedRequest }
  | { readonly type: 'faults'; readonly faults: readonly ActiveFault[] };

/**
 * A running local provider.
 *
 * @example
 * ```ts
 * const server = await startLocalProvider({ name: 'primary' });
 * const model = openAICompatibleModel({ baseURL: server.openAIBaseURL, model: 'local' });
 * // …
 * await server.close();
 * ```
 */
export interface LocalProvider {
  /** `http://127.0.0.1:<port>` (no trailing slash). */
  readonly url: string;
  /** Base URL for `openAICompatibleModel` / OpenAI SDKs: `<url>/v1`. */
  readonly openAIBaseURL: string;
  /** Base URL for `anthropicModel` / Anthropic SDKs: `<url>`. */
  readonly anthropicBaseURL: string;
  readonly port: number;
  readonly name: string;
  /** This instance's faults. */
  readonly faults: FaultController;
  /** Requests received, oldest first (the last 1000). */
  readonly requests: readonly RecordedRequest[];
  /** Requests starting and ending, and fault changes, as they happen (hot). */
  readonly activity$: Observable<ProviderActivity>;
  /** Resolves once a request ends that matches `predicate` (or has already ended). */
  waitForRequest(predicate?: (request: RecordedRequest) => boolean): Promise<RecordedRequest>;
  /** Stops listening and drops every open connection (stalled streams included). Idempotent. */
  close(): Promise<void>;
}

const optionProps = {
  port: check('an integer from 0 to 65535', (u): u is number => Number.isInteger(u) && (u as number) >= 0 && (u as number) <= 65535),
  host: NonEmptyString,
  name: NonEmptyString,
  faults: check('a fault or an array of faults', (u): u is Fault | Fault[] => typeof u === 'object' && u !== null),
  tokenDelayMs: NonNegativeNumber,
  assistant: Func,
};

const MAX_BODY = 4 * 1024 * 1024;
const MAX_RECORDED = 1000;
const EXPOSED_HEADERS = 'retry-after, retry-after-ms, x-should-retry, x-request-id, x-provider-name';

type MutableRequest = { -readonly [K in keyof RecordedRequest]: RecordedRequest[K] } & { faults: FaultKind[] };

/**
 * Starts a local provider: a real HTTP server speaking OpenAI's Chat Completions
 * (`POST /v1/chat/completions`) and Anthropic's Messages (`POST /v1/messages`), streamed (SSE)
 * or not, answered by a deterministic scripted assistant that streams text token by token and
 * calls tools ({@link scriptedAssistant}), with faults per instance (see {@link Fault}): HTTP
 * statuses with `retry-after` / `x-should-retry`, down, connection reset after N chunks, stall,
 * slow first byte, malformed chunk, mid-stream error event, bad tool arguments.
 *
 * Admin endpoints (never affected by faults): `GET /health`; `GET /admin/faults` → `{ faults }`;
 * `POST /admin/faults` with `{ faults: [...] }` replaces them all, with one fault `{ kind, … }`
 * adds it (201); `DELETE /admin/faults` clears, `DELETE /admin/faults/<id>` removes one;
 * `GET /admin/requests` → `{ requests }`; `GET /admin/events` → an SSE stream of
 * {@link ProviderActivity}. Every response carries CORS headers (any origin; `retry-after`,
 * `x-should-retry`… exposed), so a page on another port can call it. See docs/local-provider.md.
 *
 * @example
 * ```ts
 * const primary = await startLocalProvider({ name: 'primary', faults: [{ kind: 'status', status: 503 }] });
 * const secondary = await startLocalProvider({ name: 'secondary' });
 * const model = fallbackModel([
 *   openAICompatibleModel({ baseURL: primary.openAIBaseURL, model: 'local', id: 'primary' }),
 *   anthropicModel({ baseURL: secondary.anthropicBaseURL, model: 'local', id: 'secondary' }),
 * ]);
 * // …
 * await Promise.all([primary.close(), secondary.close()]);
 * ```
 * @throws {InvalidOptionError} at once (synchronously), for an invalid option or fault.
 */
export function startLocalProvider(options: LocalProviderOptions = {}): Promise<LocalProvider> {
  validateOptions('startLocalProvider', optionProps, options);
  const { port = 0, host = '127.0.0.1', name = 'local', tokenDelayMs = 15, assistant = scriptedAssistant } = options;
  const faults = new FaultController(options.faults ?? []);
  const activity = new Subject<ProviderActivity>();
  const requests: MutableRequest[] = [];
  const waiters = new Set<{ predicate: (r: RecordedRequest) => boolean; resolve: (r: RecordedRequest) => void }>();
  /** Requests in progress, by the controller that stops their work. */
  const running = new Map<AbortController, MutableRequest>();
  let seq = 0;
  let closing = false;

  faults.changes$.subscribe((list) => activity.next({ type: 'faults', faults: list }));

  const snapshot = (r: MutableRequest): RecordedRequest => ({ ...r, faults: [...r.faults] });
  const finish = (record: MutableRequest, end: NonNullable<RecordedRequest['end']>): void => {
    if (record.end !== undefined) return;
    record.end = end;
    record.endedAt = asyncScheduler.now();
    const done = snapshot(record);
    activity.next({ type: 'request-end', request: done });
    for (const waiter of waiters) {
      if (waiter.predicate(done)) {
        waiters.delete(waiter);
        waiter.resolve(done);
      }
    }
  };

  const cors = (req: IncomingMessage, res: ServerResponse): void => {
    res.setHeader('access-control-allow-origin', '*');
    res.setHeader('access-control-expose-headers', EXPOSED_HEADERS);
    res.setHeader('x-provider-name', name);
    if (req.method === 'OPTIONS') {
      res.setHeader('access-control-allow-methods', 'GET, POST, PUT, DELETE, OPTIONS');
      const asked = req.headers['access-control-request-headers'];
      res.setHeader('access-control-allow-headers', typeof asked === 'string' && asked !== '' ? asked : 'content-type, authorization, x-api-key, anthropic-version');
      res.setHeader('access-control-max-age', '600');
      if (req.headers['access-control-request-private-network'] === 'true') res.setHeader('access-control-allow-private-network', 'true');
    }
  };

  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
    res.end(text);
  };

  const readBody = (req: IncomingMessage): Promise<string> =>
    new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_BODY) {
          reject(new BadRequest('request body too large'));
          req.destroy();
          return;
        }
        chunks.push(chunk);
      });
      req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      req.on('error', reject);
    });

  const readJson = async (req: IncomingMessage): Promise<unknown> => {
    const text = await readBody(req);
    if (text.trim() === '') return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new BadRequest('the body is not valid JSON');
    }
  };

  // ---- admin ------------------------------------------------------------------------------

  const admin = async (req: IncomingMessage, res: ServerResponse, path: string): Promise<void> => {
    const method = req.method ?? 'GET';
    if (path === '/health' && method === 'GET') return json(res, 200, { ok: true, name, protocols: ['openai', 'anthropic'] });
    if (path === '/admin/requests' && method === 'GET') return json(res, 200, { requests: requests.map(snapshot) });
    if (path === '/admin/events' && method === 'GET') {
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
      res.write(`retry: 1000\n\n${sse({ type: 'faults', faults: faults.list() }, 'faults')}`);
      const subscription = activity.subscribe({
        next: (a) => res.write(sse(a, a.type)),
        complete: () => res.end(),
      });
      res.on('close', () => subscription.unsubscribe());
      return;
    }
    if (path === '/admin/faults') {
      if (method === 'GET') return json(res, 200, { faults: faults.list() });
      if (method === 'DELETE') {
        faults.clear();
        return json(res, 200, { faults: [] });
      }
      if (method === 'POST' || method === 'PUT') {
        const body = await readJson(req);
        try {
          if (isRecord(body) && Array.isArray(body['faults'])) return json(res, 200, { faults: faults.set(body['faults'] as Fault[]) });
          if (isRecord(body) && 'kind' in body) {
            const fault = faults.add(body as unknown as Fault);
            return json(res, 201, { fault, faults: faults.list() });
          }
          throw new BadRequest('expected { "faults": [ … ] } or one fault { "kind": … }');
        } catch (error) {
          if (error instanceof InvalidOptionError) throw new BadRequest(error.message);
          throw error;
        }
      }
      return json(res, 405, { error: { message: `${method} not allowed on ${path}` } }, { allow: 'GET, POST, PUT, DELETE' });
    }
    const one = /^\/admin\/faults\/([^/]+)$/.exec(path);
    if (one !== null && method === 'DELETE') {
      const id = decodeURIComponent(one[1] ?? '');
      return faults.remove(id) ? json(res, 200, { faults: faults.list() }) : json(res, 404, { error: { message: `no fault with id ${JSON.stringify(id)}` } });
    }
    return json(res, 404, { error: { message: `no route for ${method} ${path}` } });
  };

  // ---- the model endpoints ----------------------------------------------------------------

  const provide = async (req: IncomingMessage, res: ServerResponse, protocol: Protocol, path: string): Promise<void> => {
    const raw = await readJson(req).catch((error: unknown) => {
      if (error instanceof BadRequest) return error;
      throw error;
    });
    if (raw instanceof BadRequest || !isRecord(raw)) {
      const message = raw instanceof BadRequest ? raw.message : 'the body must be a JSON object';
      return json(res, 400, errorBody(protocol, 400, message));
    }
    const body = raw;
    const stream = body['stream'] === true;
    const record: MutableRequest = { id: `req_${++seq}`, protocol, path, stream, body, startedAt: asyncScheduler.now(), faults: [], chunks: 0 };
    requests.push(record);
    if (requests.length > MAX_RECORDED) requests.shift();
    activity.next({ type: 'request-start', request: snapshot(record) });

    const controller = new AbortController();
    running.set(controller, record);
    res.on('close', () => {
      running.delete(controller);
      controller.abort();
      finish(record, closing ? 'server-closed' : res.writableFinished ? 'completed' : 'client-closed');
    });
    const { signal } = controller;
    const wait = (ms: number): Promise<void> => (ms > 0 ? sleep(ms, undefined, { signal }) : Promise.resolve());
    const destroy = (): void => {
      finish(record, 'reset');
      res.socket?.destroy();
    };
    const headers = { 'x-request-id': record.id };

    try {
      const slow = faults.consume('slow-first-byte');
      if (slow) {
        record.faults.push('slow-first-byte');
        await wait(slow.delayMs);
      }
      const down = faults.consume('down');
      if (down) {
        record.faults.push('down');
        if ((down.mode ?? 'destroy') === 'destroy') return destroy();
        record.status = 503;
        return json(res, 503, errorBody(protocol, 503, `provider '${name}' is down (local fault)`), headers);
      }
      const status = faults.consume('status');
      if (status) {
        record.faults.push('status');
        record.status = status.status;
        const extra: Record<string, string> = { ...headers };
        if (status.retryAfter !== undefined) extra['retry-after'] = String(status.retryAfter);
        if (status.retryAfterMs !== undefined) extra['retry-after-ms'] = String(status.retryAfterMs);
        if (status.shouldRetry !== undefined) extra['x-should-retry'] = String(status.shouldRetry);
        return json(res, status.status, errorBody(protocol, status.status, status.message ?? `HTTP ${status.status} from '${name}' (local fault)`), extra);
      }

      let conversation: { messages: Message[]; tools: AssistantTool[] };
      try {
        conversation = protocol === 'openai' ? fromOpenAI(body) : fromAnthropic(body);
      } catch (error) {
        if (!(error instanceof BadRequest)) throw error;
        record.status = 400;
        return json(res, 400, errorBody(protocol, 400, error.message), headers);
      }
      const model = typeof body['model'] === 'string' ? body['model'] : 'local';
      const request: AssistantRequest = { protocol, model, ...conversation };
      const turn: AssistantTurn = assistant(request);
      let calls: ToolCallOut[] = (turn.toolCalls ?? []).map((c, i) => ({
        id: protocol === 'openai' ? `call_${record.id.slice(4)}_${i}` : `toolu_${record.id.slice(4)}_${i}`,
        name: c.name,
        args: c.args,
      }));
      if (calls.length > 0) {
        const bad = faults.consume('bad-tool-args');
        if (bad) {
          record.faults.push('bad-tool-args');
          calls = calls.map((c) => ({ ...c, args: bad.args ?? (c.name === 'get_weather' && isRecord(c.args) ? { ...c.args, units: 'kelvin' } : {}) }));
        }
      }
      const text = turn.text ?? '';
      const tokens = tokenize(text);
      const inputChars = conversation.messages.reduce((n, m) => n + m.content.length, 0);
      const answer: Answer = {
        id: protocol === 'openai' ? `chatcmpl-${record.id}` : `msg_${record.id}`,
        model,
        text,
        tokens,
        toolCalls: calls,
        finishReason: turn.finishReason ?? (calls.length > 0 ? 'tool-calls' : 'stop'),
        inputTokens: Math.max(1, Math.ceil(inputChars / 4)),
        outputTokens: tokens.length + calls.reduce((n, c) => n + argumentPieces(c.args).length, 0),
      };

      if (!stream) {
        record.status = 200;
        return json(res, 200, protocol === 'openai' ? openAIJson(answer) : anthropicJson(answer), headers);
      }

      const streamOptions = body['stream_options'];
      const frames = protocol === 'openai' ? openAIFrames(answer, isRecord(streamOptions) && streamOptions['include_usage'] === true) : anthropicFrames(answer);
      const fault = faults.consume('reset', 'stall', 'malformed', 'stream-error');
      if (fault) record.faults.push(fault.kind);
      const after = fault?.afterChunks ?? 0;
      let pending = fault;

      record.status = 200;
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', ...headers });
      res.flushHeaders();
      const write = (chunk: string): Promise<void> =>
        new Promise((resolve, reject) => res.write(chunk, (error) => (error ? reject(error) : resolve())));

      /** Acts on the stream fault; true when the stream must stop here. */
      const act = async (): Promise<boolean> => {
        const f = pending;
        pending = undefined;
        if (f === undefined) return false;
        switch (f.kind) {
          case 'reset':
            destroy();
            return true;
          case 'stall':
            // headers (and what was sent so far), then silence until the client leaves or close()
            if (!signal.aborted) await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
            return true;
          case 'malformed':
            await write(malformedFrame(protocol, answer));
            return false;
          case 'stream-error':
            await write(streamErrorFrame(protocol, f));
            res.end();
            return true;
        }
      };

      let content = 0;
      for (const frame of frames) {
        if (signal.aborted) return;
        // a stream fault acts before content chunk `after` + 1, or before the closing events of a shorter answer
        const due = pending !== undefined && (frame.part === 'closing' || (frame.part === 'content' && content >= after));
        if (due && (await act())) return;
        if (frame.part === 'content') {
          await wait(tokenDelayMs);
          content++;
          record.chunks = content;
        }
        await write(frame.text);
      }
      res.end();
    } catch (error) {
      if (signal.aborted) return; // the client left, or close(): nothing to answer
      if (error instanceof BadRequest) {
        record.status = 400;
        return json(res, 400, errorBody(protocol, 400, error.message), headers);
      }
      if (!res.headersSent) {
        record.status = 500;
        return json(res, 500, errorBody(protocol, 500, `the local assistant failed: ${(error as Error | undefined)?.message ?? String(error)}`), headers);
      }
      res.destroy();
    }
  };

  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    cors(req, res);
    if (req.method === 'OPTIONS') {
      res.writeHead(204);
      res.end();
      return;
    }
    const route = async (): Promise<void> => {
      if (path === '/v1/chat/completions' || path === '/chat/completions') {
        if (req.method !== 'POST') return json(res, 405, errorBody('openai', 405, 'use POST'), { allow: 'POST' });
        return provide(req, res, 'openai', path);
      }
      if (path === '/v1/messages') {
        if (req.method !== 'POST') return json(res, 405, errorBody('anthropic', 405, 'use POST'), { allow: 'POST' });
        return provide(req, res, 'anthropic', path);
      }
      return admin(req, res, path);
    };
    route().catch((error: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const status = error instanceof BadRequest ? 400 : 500;
      json(res, status, { error: { message: (error as Error | undefined)?.message ?? String(error) } });
    });
  });
  server.keepAliveTimeout = 5000;

  return new Promise<LocalProvider>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address() as AddressInfo;
      const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
      let closed: Promise<void> | undefined;
      resolve({
        url,
        openAIBaseURL: `${url}/v1`,
        anthropicBaseURL: url,
        port: address.port,
        name,
        faults,
        get requests() {
          return requests.map(snapshot);
        },
        activity$: activity.asObservable(),
        waitForRequest(predicate = () => true) {
          const done = requests.find((r) => r.end !== undefined && predicate(snapshot(r)));
          if (done) return Promise.resolve(snapshot(done));
          return new Promise((resolveWait) => waiters.add({ predicate, resolve: resolveWait }));
        },
        close() {
          closed ??= new Promise<void>((resolveClose) => {
            closing = true;
            for (const [controller, record] of running) {
              finish(record, 'server-closed');
              controller.abort();
            }
            server.close(() => resolveClose());
            server.closeAllConnections();
          }).then(() => {
            faults.dispose();
            activity.complete();
          });
          return closed;
        },
      });
    });
  });
}
