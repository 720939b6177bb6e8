/**
 * OpenAI-compatible Chat Completions over Server-Sent Events, spoken with `fetch` (Node 20 and
 * browsers; no SDK). Works with OpenAI and with the many servers that copy its protocol.
 *
 * @module
 */
import { errorTypeStatus } from '../../core/classify.js';
import { HttpError } from '../../core/errors.js';
import type { FinishReason, Message, TurnEvent, Usage } from '../../core/events.js';
import { Func, NonEmptyString } from '../../core/options.js';
import type { Model, ModelRequest, ToolSpec } from '../../core/model.js';
import {
  AnyString,
  HttpUrl,
  IncompleteStreamError,
  MalformedStreamError,
  PlainObject,
  StringRecord,
  checkProviderOptions,
  decodeSse,
  parseEventJson,
  parseToolArguments,
  type SseEvent,
  type StreamDecoder,
} from './sse.js';

/**
 * Options of {@link openAICompatibleModel}.
 *
 * @example
 * ```ts
 * const options: OpenAICompatibleModelOptions = { baseURL: 'https://api.openai.com/v1', apiKey: process.env.OPENAI_API_KEY, model: 'gpt-4o-mini' };
 * ```
 */
export interface OpenAICompatibleModelOptions {
  /** The API's base URL, up to and including the version: `https://api.openai.com/v1`. Requests go to `<baseURL>/chat/completions`. */
  readonly baseURL: string;
  /** Sent as `authorization: Bearer <apiKey>`. None by default (local servers need none). */
  readonly apiKey?: string;
  /** The model name sent in each request, e.g. `'gpt-4o-mini'`. */
  readonly model: string;
  /** Extra request headers (e.g. `OpenAI-Organization`); they win over the defaults. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Extra fields merged into every request body (e.g. `{ temperature: 0, max_tokens: 512 }`); the adapter's own fields win. */
  readonly body?: Readonly<Record<string, unknown>>;
  /** The `fetch` to use. Defaults to the global `fetch`, looked up per call. */
  readonly fetch?: typeof fetch;
  /** The `Model.id` (breakers are named `model:<id>`). Defaults to `openai:<model>`. */
  readonly id?: string;
}

const props = { baseURL: HttpUrl, apiKey: AnyString, model: NonEmptyString, headers: StringRecord, body: PlainObject, fetch: Func, id: NonEmptyString };

// ---------------------------------------------------------------------------------------------
// request
// ---------------------------------------------------------------------------------------------

/**
 * A tool call's arguments as the JSON string a protocol carries: raw text as it is, anything else
 * as JSON (`{}` when it can't be).
 *
 * @example
 * ```ts
 * argumentsText({ city: 'Paris' }); // '{"city":"Paris"}'
 * argumentsText('{"city":"Par'); // '{"city":"Par'
 * ```
 */
export function argumentsText(args: unknown): string {
  if (typeof args === 'string') return args; // raw text the model sent (not valid JSON): send it back as is
  try {
    return JSON.stringify(args ?? {});
  } catch {
    return '{}';
  }
}

function toOpenAIMessage(message: Message): Record<string, unknown> {
  switch (message.role) {
    case 'system':
    case 'user':
      return { role: message.role, content: message.content };
    case 'assistant': {
      const calls = message.toolCalls ?? [];
      if (calls.length === 0) return { role: 'assistant', content: message.content };
      return {
        role: 'assistant',
        content: message.content === '' ? null : message.content,
        tool_calls: calls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: argumentsText(call.args) } })),
      };
    }
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
  }
}

/** JSON Schema for a tool's parameters: `ToolSpec.parameters`, or "any object" without one. */
function parametersOf(tool: ToolSpec): unknown {
  return tool.parameters ?? { type: 'object', properties: {} };
}

/**
 * The Chat Completions request body for a model request (streaming, with usage).
 *
 * @example
 * ```ts
 * openAIRequestBody('gpt-4o-mini', { messages: [{ role: 'user', content: 'Hi' }], tools: [] });
 * // { model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Hi' }] }
 * ```
 */
export function openAIRequestBody(model: string, request: ModelRequest, extra: Readonly<Record<string, unknown>> = {}): Record<string, unknown> {
  const body: Record<string, unknown> = {
    ...extra,
    model,
    stream: true,
    stream_options: { include_usage: true },
    messages: request.messages.map(toOpenAIMessage),
  };
  if (request.tools.length > 0) {
    body['tools'] = request.tools.map((tool) => ({
      type: 'function',
      function: { name: tool.name, description: tool.description, parameters: parametersOf(tool) },
    }));
  }
  return body;
}

// ---------------------------------------------------------------------------------------------
// response
// ---------------------------------------------------------------------------------------------

const FINISH_REASONS: Readonly<Record<string, FinishReason>> = {
  stop: 'stop',
  tool_calls: 'tool-calls',
  function_call: 'tool-calls',
  length: 'length',
  content_filter: 'content-filter',
};

interface PendingCall {
  id: string;
  name: string;
  args: string;
}

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === 'object' && u !== null && !Array.isArray(u);

/** Reads one stream's chunks into model events; `done` once `[DONE]` arrived. */
class ChunkDecoder {
  done = false;
  private events = 0;
  private finishReason: FinishReason | undefined;
  private usage: Usage | undefined;
  private readonly calls = new Map<number, PendingCall>();
  private callsEmitted = false;

  constructor(private readonly model: string) {}

  push(sse: SseEvent): TurnEvent[] {
    this.events++;
    if (this.done) return [];
    const data = sse.data.trim();
    if (data === '[DONE]') return this.finish();
    // some servers name their events; only the data matters in this protocol
    const chunk = parseEventJson(this.model, sse.data);
    if (chunk['error'] !== undefined && chunk['error'] !== null) throw this.streamError(chunk);
    const out: TurnEvent[] = [];
    const usage = chunk['usage'];
    if (isObject(usage)) this.usage = this.readUsage(usage, sse.data);
    const choices = chunk['choices'];
    if (choices === undefined || choices === null) return out;
    if (!Array.isArray(choices)) throw new MalformedStreamError(this.model, '"choices" is not an array', sse.data);
    for (const choice of choices as unknown[]) {
      if (!isObject(choice)) throw new MalformedStreamError(this.model, 'a choice is not an object', sse.data);
      if ((choice['index'] ?? 0) !== 0) continue; // one answer: the first choice
      const delta = choice['delta'];
      if (isObject(delta)) {
        for (const field of ['content', 'refusal'] as const) {
          const text = delta[field];
          if (typeof text === 'string' && text !== '') out.push({ type: 'text-delta', text });
        }
        const toolCalls = delta['tool_calls'];
        if (Array.isArray(toolCalls)) for (const piece of toolCalls as unknown[]) this.addPiece(piece, sse.data);
      }
      const reason = choice['finish_reason'];
      if (typeof reason === 'string' && reason !== '') {
        this.finishReason = FINISH_REASONS[reason] ?? 'other';
        out.push(...this.emitCalls());
      }
    }
    return out;
  }

  /** The stream's body ended: fine only after `[DONE]`. */
  end(): void {
    if (this.done) return;
    const detail = this.finishReason === undefined ? 'no finish_reason and no [DONE]' : 'no [DONE] after the finish_reason';
    throw new IncompleteStreamError(this.model, detail, this.events);
  }

  private finish(): TurnEvent[] {
    if (this.finishReason === undefined) throw new IncompleteStreamError(this.model, '[DONE] without a finish_reason', this.events);
    this.done = true;
    return [this.usage ? { type: 'finish', reason: this.finishReason, usage: this.usage } : { type: 'finish', reason: this.finishReason }];
  }

  private addPiece(piece: unknown, data: string): void {
    if (!isObject(piece)) throw new MalformedStreamError(this.model, 'a tool_calls entry is not an object', data);
    // servers that omit `index`: a piece with a new id starts a call, others continue the last one
    const last = this.calls.size - 1;
    const index =
      typeof piece['index'] === 'number' ? piece['index'] : last >= 0 && (typeof piece['id'] !== 'string' || piece['id'] === this.calls.get(last)?.id) ? last : this.calls.size;
    const fn = isObject(piece['function']) ? piece['function'] : {};
    let call = this.calls.get(index);
    if (call === undefined) {
      call = { id: '', name: '', args: '' };
      this.calls.set(index, call);
    }
    if (typeof piece['id'] === 'string' && piece['id'] !== '') call.id = piece['id'];
    if (typeof fn['name'] === 'string' && fn['name'] !== '' && call.name === '') call.name = fn['name'];
    if (typeof fn['arguments'] === 'string') call.args += fn['arguments'];
  }

  private emitCalls(): TurnEvent[] {
    if (this.callsEmitted) return [];
    this.callsEmitted = true;
    return [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, call]) => ({ type: 'tool-call', id: call.id || `call_${index}`, name: call.name, args: parseToolArguments(call.args) }));
  }

  private readUsage(usage: Record<string, unknown>, data: string): Usage {
    const input = usage['prompt_tokens'] ?? 0;
    const output = usage['completion_tokens'] ?? 0;
    if (typeof input !== 'number' || typeof output !== 'number') throw new MalformedStreamError(this.model, 'usage tokens are not numbers', data);
    return { inputTokens: input, outputTokens: output };
  }

  /** `data: {"error": {...}}` mid-stream: the provider gave up after the headers. */
  private streamError(chunk: Record<string, unknown>): HttpError {
    const error = chunk['error'];
    const info = isObject(error) ? error : { message: String(error) };
    const code = info['code'] ?? info['status'];
    const numeric = typeof code === 'number' ? code : typeof code === 'string' && /^\d{3}$/.test(code) ? Number(code) : undefined;
    const status = numeric !== undefined && numeric >= 400 && numeric <= 599 ? numeric : (errorTypeStatus(info['type']) ?? errorTypeStatus(code) ?? 500);
    const message = typeof info['message'] === 'string' ? info['message'] : 'error event';
    return new HttpError(status, {}, chunk, { message: `'${this.model}' sent an error mid-stream: ${message}` });
  }
}

/**
 * A {@link Model} speaking OpenAI's Chat Completions protocol with `stream: true` (and
 * `stream_options.include_usage`), over `fetch`: OpenAI itself, or any compatible server (vLLM,
 * Ollama, LiteLLM, OpenRouter, the local provider of `rxheal/server`…).
 *
 * Requests: our messages map to `system` / `user` / `assistant` (with `tool_calls`) / `tool`
 * (with `tool_call_id`) messages, tools to `function` definitions (`ToolSpec.parameters` as the
 * JSON schema).
 *
 * Events: `choices[0].delta.content` (and `refusal`) → `text-delta`; tool calls, whose JSON
 * arguments arrive in pieces by `index`, → one `tool-call` each when the choice's
 * `finish_reason` arrives, with the arguments parsed — or, when they are not valid JSON, the raw
 * text as `args` (the tool's codec rejects it; reflection lets the model correct it); then one
 * `finish` at `data: [DONE]` (`stop` / `tool_calls` / `length` / `content_filter` →
 * `stop` / `tool-calls` / `length` / `content-filter`, anything else `other`), with `usage` from
 * whichever chunk carried it (usually a last chunk with empty `choices`).
 *
 * Errors (each one `classifyError` understands):
 * - a non-2xx response → `HttpError` with status, headers and body (429 + `retry-after`,
 *   `x-should-retry` reach the classifier);
 * - `data: {"error": …}` mid-stream → `HttpError` (status from the error's code, else 500);
 * - the body ends before `[DONE]`, `[DONE]` without a finish reason, or the connection drops →
 *   `IncompleteStreamError` (`connection`: retryable, fallback-able) — never a short answer;
 * - an unreadable chunk → `MalformedStreamError` (`bad_gateway`: retryable, fallback-able).
 *
 * Unsubscribing aborts the request and cancels the body reader at once; so does aborting the
 * context signal given to `stream`.
 *
 * @example
 * ```ts
 * const gpt = openAICompatibleModel({ baseURL: 'https://api.openai.com/v1', apiKey: process.env.OPENAI_API_KEY, model: 'gpt-4o-mini' });
 * const local = openAICompatibleModel({ baseURL: `${server.url}/v1`, model: 'local', id: 'primary' });
 * runAgent({ model: fallbackModel([gpt, local]), tools: [getWeather], messages }).subscribe(render);
 * ```
 * @throws {InvalidOptionError} at once, for a missing or invalid option.
 */
export function openAICompatibleModel(options: OpenAICompatibleModelOptions): Model {
  checkProviderOptions('openAICompatibleModel', props, options, ['baseURL', 'model']);
  const { apiKey, model, headers = {}, body = {} } = options;
  const id = options.id ?? `openai:${model}`;
  const url = `${options.baseURL.replace(/\/+$/, '')}/chat/completions`;
  const auth: Record<string, string> = apiKey ? { authorization: `Bearer ${apiKey}` } : {};
  return {
    id,
    stream: (request, context) =>
      decodeSse(
        {
          model: id,
          url,
          headers: { ...auth, ...headers },
          body: openAIRequestBody(model, request, body),
          ...(options.fetch ? { fetch: options.fetch } : {}),
          signal: context.signal,
        },
        () => new ChunkDecoder(id),
      ),
  };
}

/**
 * The decoder {@link openAICompatibleModel} reads a Chat Completions stream with, for events
 * that arrive another way — e.g. the chunks the official `openai` SDK parsed (`rxheal/openai`),
 * each as `{ event: 'message', data: JSON.stringify(chunk) }`, then `data: [DONE]`.
 *
 * @example
 * ```ts
 * const decoder = openAIStreamDecoder('openai:gpt-4o');
 * decoder.push({ event: 'message', data: '{"choices":[{"index":0,"delta":{"content":"Hi"}}]}' }); // [{ type: 'text-delta', text: 'Hi' }]
 * ```
 */
export function openAIStreamDecoder(model: string): StreamDecoder<TurnEvent> {
  return new ChunkDecoder(model);
}
