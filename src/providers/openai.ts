/**
 * OpenAI-compatible Chat Completions over Server-Sent Events, spoken with `fetch` (Node 20 and
 * browsers; no SDK). Works with OpenAI and with the many servers that copy its protocol.
 *
 * @module
 */
import { throwError } from 'rxjs';
import type { HttpError } from '../core/errors/errors.js';
import type { FinishReason, TurnEvent, Usage } from '../core/events/events.js';
import { Func, NonEmptyString, PositiveInteger } from '../core/errors/options.js';
import type { Model } from '../core/model/model.js';
import { AnyString, HttpUrl, PlainObject, StringRecord, checkProviderOptions, withoutTrailingSlashes } from './providerOptions.js';
import {
  IncompleteStreamError,
  MalformedStreamError,
  decodeSse,
  isObject,
  midStreamError,
  parseEventJson,
  parseToolArguments,
  tokenDetail,
  type StreamDecoder,
} from './sse.js';
import type { SseEvent } from './sseParser.js';
import { checkOneAnswer, openAIRequestBody } from './openaiRequest.js';

export { argumentsText, checkOneAnswer, openAIRequestBody, openAITools } from './openaiRequest.js';

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
  /**
   * Extra fields merged into every request body (e.g. `{ temperature: 0, max_completion_tokens: 512 }`); the adapter's own
   * fields win. A request's `maxOutputTokens` is per request, so it wins over the model's default here: it is sent as
   * `max_completion_tokens`, and this body's `max_tokens` (the legacy field) is left out of that request.
   */
  readonly body?: Readonly<Record<string, unknown>>;
  /** The `fetch` to use. Defaults to the global `fetch`, looked up per call. */
  readonly fetch?: typeof fetch;
  /**
   * The largest Server-Sent Event accepted, in characters: a larger one ends the stream with a
   * `MalformedStreamError` (a provider fault: retryable, fallback-able) instead of growing memory
   * without bound. Defaults to `DEFAULT_MAX_EVENT_SIZE` (16 MiB).
   */
  readonly maxEventSize?: number;
  /** The `Model.id` (breakers are named `model:<id>`). Defaults to `openai:<model>`. */
  readonly id?: string;
}

/** The option codecs of `openAICompatibleModel`, and of `openAIResponsesModel`, which takes the same options. */
export const OPENAI_OPTION_PROPS = {
  baseURL: HttpUrl,
  apiKey: AnyString,
  model: NonEmptyString,
  headers: StringRecord,
  body: PlainObject,
  fetch: Func,
  id: NonEmptyString,
  maxEventSize: PositiveInteger,
};

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
  /** The `index` its pieces carry (several calls may share one: see `addPiece`). */
  readonly index: number;
  id: string;
  name: string;
  args: string;
}

/** A reasoning field's text: undefined when absent or empty; not text is a MalformedStreamError (it would be lost). */
function reasoningOf(u: unknown, field: string, model: string, data: string): string | undefined {
  if (u === undefined || u === null || u === '') return undefined;
  if (typeof u !== 'string') throw new MalformedStreamError(model, `${field} is not text`, data);
  return u;
}

/** The texts of a reasoning content part: its `text`, `thinking` or `reasoning` string, or those of its nested text parts. */
function partTexts(part: Record<string, unknown>): string[] {
  for (const key of ['text', 'thinking', 'reasoning']) if (typeof part[key] === 'string') return [part[key]];
  const nested = part['thinking'] ?? part['content'];
  if (!Array.isArray(nested)) return [];
  return (nested as unknown[]).flatMap((p) => (isObject(p) && typeof p['text'] === 'string' ? [p['text']] : []));
}

/** Whether a delta carries anything of an answer: text, refusal, reasoning or tool calls. */
function carriesContent(delta: Record<string, unknown>): boolean {
  const nonEmpty = (u: unknown): boolean => u !== undefined && u !== null && u !== '' && !(Array.isArray(u) && u.length === 0);
  return ['content', 'refusal', 'tool_calls', 'function_call', 'reasoning_content', 'reasoning'].some((field) => nonEmpty(delta[field]));
}

/**
 * Reads one stream's chunks into model events; `done` once `[DONE]` arrived.
 *
 * One answer is read: rxheal asks for one (`n` is never more than 1), so every choice is that
 * answer, whatever its `index` — gateways and reasoning models send `index: 1` for a one-answer
 * stream, some the content at `index: 1` and the finish at `index: 0` (vercel/ai's own fixtures).
 * Two choices carrying content (text, refusal, reasoning or tool calls) in one chunk are
 * ambiguous: a {@link MalformedStreamError}, as is anything of an answer in a field of the wrong
 * type — never dropped, never joined. So is an error chunk, however it is
 * shaped (`{"error": …}`, vLLM's `{"object": "error", …}`), and a `finish_reason: "error"`
 * (OpenRouter's mark of an answer the provider gave up on). Tool calls are joined by `index`; a
 * piece that starts another call (a new id with a name) at an index already taken starts a new
 * call (Ollama and some gateways give every parallel call `index: 0`). Usage from `usage`, or
 * Groq's `x_groq.usage`. See the state table in spec/providers/openai.spec.ts.
 */
class ChunkDecoder {
  done = false;
  private events = 0;
  private finishReason: FinishReason | undefined;
  private usage: Usage | undefined;
  /** Every call, in the order they started. */
  private readonly calls: PendingCall[] = [];
  /** The call each `index` currently continues. */
  private readonly byIndex = new Map<number, PendingCall>();

  constructor(private readonly model: string) {}

  push(sse: SseEvent): TurnEvent[] {
    this.events++;
    if (this.done) return [];
    const data = sse.data.trim();
    if (data === '[DONE]') return this.finish();
    // some servers name their events; only the data matters in this protocol
    const chunk = parseEventJson(this.model, sse.data);
    if (chunk['error'] !== undefined && chunk['error'] !== null) throw this.streamError(chunk);
    // vLLM's (and SGLang's) mid-stream error: the error object is the chunk
    if (chunk['object'] === 'error') throw this.streamError(chunk);
    const out: TurnEvent[] = [];
    // Groq reports usage in `x_groq.usage`
    const groq = chunk['x_groq'];
    const usage = chunk['usage'] ?? (isObject(groq) ? groq['usage'] : undefined);
    if (isObject(usage)) this.usage = this.readUsage(usage, sse.data);
    const choices = chunk['choices'];
    if (choices === undefined || choices === null) return out;
    if (!Array.isArray(choices)) throw new MalformedStreamError(this.model, '"choices" is not an array', sse.data);
    // every choice is the one answer; the index of the one carrying content in this chunk, if any
    let carrier: unknown;
    for (const choice of choices as unknown[]) {
      if (!isObject(choice)) throw new MalformedStreamError(this.model, 'a choice is not an object', sse.data);
      const index = choice['index'] ?? 0;
      if (typeof index !== 'number') throw new MalformedStreamError(this.model, 'a choice\'s "index" is not a number', sse.data);
      // a gateway answering in one chunk may send `message` instead of `delta`
      const delta = choice['delta'] !== undefined ? (choice['delta'] ?? {}) : (choice['message'] ?? {});
      if (!isObject(delta)) throw new MalformedStreamError(this.model, 'a choice\'s "delta" is not an object', sse.data);
      if (carriesContent(delta)) {
        if (carrier !== undefined) {
          throw new MalformedStreamError(
            this.model,
            `two choices (index ${String(carrier)} and ${index}) carry content in one chunk: rxheal reads one answer (do not ask for n > 1)`,
            sse.data,
          );
        }
        carrier = index;
      }
      const reason = choice['finish_reason'];
      const finishes = typeof reason === 'string' && reason !== '';
      this.readDelta(delta, sse.data, out);
      if (reason === 'error') {
        // OpenRouter: the provider failed mid-answer (its error object, when sent, was read above)
        throw new IncompleteStreamError(this.model, "finish_reason 'error': the provider gave up on the answer", this.events);
      }
      if (finishes) {
        // the calls go out at the first finish reason; a piece after it would be lost (addPiece)
        const first = this.finishReason === undefined;
        this.finishReason = FINISH_REASONS[reason] ?? 'other';
        if (first) out.push(...this.emitCalls());
      }
    }
    // the usage at (or after) the finish reason is the answer's last piece: it is whole, whether
    // or not `[DONE]` follows (llama.cpp-style servers end the body without one)
    if (isObject(usage) && this.finishReason !== undefined) out.push(...this.finish());
    return out;
  }

  /**
   * Reasoning (`reasoning_content`: DeepSeek, vLLM, llama.cpp, Qwen; `reasoning`: OpenRouter,
   * Ollama, Groq — one of the two, `reasoning_content` first, as gateways that send both repeat
   * it), text (`content` as a string or text parts, `refusal`) and tool-call pieces.
   */
  private readDelta(delta: Record<string, unknown>, data: string, out: TurnEvent[]): void {
    const thought =
      reasoningOf(delta['reasoning_content'], '"reasoning_content"', this.model, data) ?? reasoningOf(delta['reasoning'], '"reasoning"', this.model, data);
    if (thought !== undefined) out.push({ type: 'reasoning-delta', text: thought });
    const content = delta['content'];
    if (typeof content === 'string') {
      if (content !== '') out.push({ type: 'text-delta', text: content });
    } else if (Array.isArray(content)) {
      for (const part of content as unknown[]) {
        if (isObject(part) && part['type'] === 'text' && typeof part['text'] === 'string') {
          if (part['text'] !== '') out.push({ type: 'text-delta', text: part['text'] });
        } else if (isObject(part) && (part['type'] === 'thinking' || part['type'] === 'reasoning')) {
          // Mistral's `thinking` parts carry text parts; others `text`, `thinking` or `reasoning`
          for (const text of partTexts(part)) if (text !== '') out.push({ type: 'reasoning-delta', text });
        } else {
          throw new MalformedStreamError(this.model, 'a content part that is neither text nor reasoning', data);
        }
      }
    } else if (content !== undefined && content !== null) {
      throw new MalformedStreamError(this.model, '"content" is neither text nor a list of parts', data);
    }
    const refusal = delta['refusal'];
    if (typeof refusal === 'string') {
      if (refusal !== '') out.push({ type: 'text-delta', text: refusal });
    } else if (refusal !== undefined && refusal !== null) {
      throw new MalformedStreamError(this.model, '"refusal" is not text', data);
    }
    const toolCalls = delta['tool_calls'];
    if (Array.isArray(toolCalls)) for (const piece of toolCalls as unknown[]) this.addPiece(piece, data);
    else if (toolCalls !== undefined && toolCalls !== null) throw new MalformedStreamError(this.model, '"tool_calls" is not an array', data);
    // the legacy single call (`functions` / `function_call`)
    const functionCall = delta['function_call'];
    if (isObject(functionCall)) this.addPiece({ index: 0, function: functionCall }, data);
    else if (functionCall !== undefined && functionCall !== null) throw new MalformedStreamError(this.model, '"function_call" is not an object', data);
  }

  /** The stream's body ended: fine only after `[DONE]` (or the usage that follows the finish reason). */
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
    if (this.finishReason !== undefined)
      throw new MalformedStreamError(this.model, 'a tool call piece after the finish_reason (its call was already emitted)', data);
    const fnField = piece['function'];
    if (fnField !== undefined && fnField !== null && !isObject(fnField))
      throw new MalformedStreamError(this.model, 'a tool call\'s "function" is not an object', data);
    const fn = isObject(fnField) ? fnField : {};
    const id = typeof piece['id'] === 'string' ? piece['id'] : '';
    const last = this.calls[this.calls.length - 1];
    // servers that omit `index`: a piece with a new id starts a call, others continue the last one
    const index = typeof piece['index'] === 'number' ? piece['index'] : last !== undefined && (id === '' || id === last.id) ? last.index : this.calls.length;
    let call = this.byIndex.get(index);
    // another call's start (its id and name) at an index already taken: a new call, not more of that one
    const starts = id !== '' && typeof fn['name'] === 'string' && fn['name'] !== '';
    if (call === undefined || (starts && call.id !== '' && call.id !== id)) {
      call = { index, id: '', name: '', args: '' };
      this.calls.push(call);
      this.byIndex.set(index, call);
    }
    if (id !== '') call.id = id;
    if (typeof fn['name'] === 'string' && fn['name'] !== '' && call.name === '') call.name = fn['name'];
    const args = fn['arguments'];
    if (typeof args === 'string') call.args += args;
    else if (isObject(args))
      call.args += JSON.stringify(args); // servers that send the arguments parsed
    else if (args !== undefined && args !== null) throw new MalformedStreamError(this.model, 'tool call arguments are neither text nor an object', data);
  }

  private emitCalls(): TurnEvent[] {
    // by index; calls sharing one in the order they started (sort is stable)
    return [...this.calls]
      .sort((a, b) => a.index - b.index)
      .map((call) => ({ type: 'tool-call', id: call.id || `call_${call.index}`, name: call.name, args: parseToolArguments(call.args) }));
  }

  private readUsage(usage: Record<string, unknown>, data: string): Usage {
    const input = usage['prompt_tokens'] ?? 0;
    const output = usage['completion_tokens'] ?? 0;
    if (typeof input !== 'number' || typeof output !== 'number') throw new MalformedStreamError(this.model, 'usage tokens are not numbers', data);
    const cached = tokenDetail(usage['prompt_tokens_details'], 'cached_tokens');
    const reasoning = tokenDetail(usage['completion_tokens_details'], 'reasoning_tokens');
    return { inputTokens: input, outputTokens: output, ...(cached ? { cachedInputTokens: cached } : {}), ...(reasoning ? { reasoningTokens: reasoning } : {}) };
  }

  /** `data: {"error": {...}}` (or vLLM's `{"object": "error", …}`) mid-stream: the provider gave up after the headers. */
  private streamError(chunk: Record<string, unknown>): HttpError {
    const error = chunk['error'];
    const info = isObject(error) ? error : chunk['object'] === 'error' ? chunk : { message: String(error) };
    const message = typeof info['message'] === 'string' ? info['message'] : 'error event';
    return midStreamError(this.model, chunk, message);
  }
}

/**
 * A fresh decoder of one stream's Chat Completions chunks into model events (what the model uses per request):
 * feed it parsed Server-Sent Events; `done` at the protocol's final event; `end` throws when the
 * body ended before it. For replaying recorded streams and for protocols built on this one.
 *
 * @example
 * ```ts
 * const decoder = openAIStreamDecoder('recorded');
 * const events = parseSse(recorded).flatMap((e) => decoder.push(e));
 * decoder.end(); // throws IncompleteStreamError if the recording was cut short
 * ```
 */
export function openAIStreamDecoder(modelId: string): StreamDecoder<TurnEvent> {
  return new ChunkDecoder(modelId);
}

/**
 * A {@link Model} speaking OpenAI's Chat Completions protocol with `stream: true` (and
 * `stream_options.include_usage`), over `fetch`: OpenAI itself, or any compatible server (vLLM,
 * Ollama, LiteLLM, OpenRouter, the local provider of `rxheal/server`…).
 *
 * Requests: `toolChoice` → `tool_choice` (`'auto'` / `'none'` / `'required'`, or
 * `{ type: 'function', function: { name } }`); `maxOutputTokens` → `max_completion_tokens` (over
 * the `body` option's; one that is not a positive integer errors the call with an
 * `InvalidOptionError`, nothing sent); `promptCacheKey` → `prompt_cache_key` (over the `body`
 * option's; one that is not a non-empty string errors the call alike); our messages map to `system` / `user` /
 * `assistant` (with `tool_calls`, and the
 * message's unsigned reasoning as `reasoning_content`, as the AI SDK's OpenAI-compatible provider
 * sends it: DeepSeek's thinking mode refuses a tool-call turn without it) / `tool` (with
 * `tool_call_id`) messages, tools to `function` definitions (`ToolSpec.parameters` as the JSON
 * schema). A server that refuses `reasoning_content` (OpenAI's own API, behind a reasoning
 * server in a `fallbackModel`) gets requests without it through `fallbackModel`'s `adapt`.
 *
 * Events: `reasoning_content` (DeepSeek, vLLM, llama.cpp) or `reasoning` (OpenRouter, Ollama),
 * and reasoning content parts → `reasoning-delta` (unsigned: no `reasoning-end`); the answer's
 * `delta.content` (a string, or text parts) and `refusal` → `text-delta` (one answer is asked
 * for, so every choice is that answer, whatever its `index`); tool calls (and the legacy `function_call`), whose JSON
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
 * - the body ends before `[DONE]` (unless the usage that follows the finish reason arrived: the
 *   answer is whole, as llama.cpp-style servers send it), `[DONE]` without a finish reason, or the
 *   connection drops → `IncompleteStreamError` (`connection`: retryable, fallback-able) — never a
 *   short answer;
 * - an unreadable chunk, or one the decoder would have to drop or join (two choices carrying
 *   content in one chunk; text or tool calls in a field of the wrong type, or after the finish
 *   reason's calls) →
 *   `MalformedStreamError` (`bad_gateway`: retryable, fallback-able); so is an event larger than
 *   `maxEventSize`.
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
 * @throws {InvalidOptionError} at once, for a missing or invalid option (a `body` asking for
 * more than one answer, `n` > 1, too).
 */
export function openAICompatibleModel(options: OpenAICompatibleModelOptions): Model {
  checkProviderOptions('openAICompatibleModel', OPENAI_OPTION_PROPS, options, ['baseURL', 'model']);
  checkOneAnswer('openAICompatibleModel', 'body', options.body);
  const { apiKey, model, headers = {}, body = {} } = options;
  const id = options.id ?? `openai:${model}`;
  const url = `${withoutTrailingSlashes(options.baseURL)}/chat/completions`;
  const auth: Record<string, string> = apiKey ? { authorization: `Bearer ${apiKey}` } : {};
  return {
    id,
    stream: (request, context) => {
      let payload: Record<string, unknown>;
      try {
        payload = openAIRequestBody(model, request, body);
      } catch (error) {
        return throwError(() => error); // a request it can't send (maxOutputTokens, promptCacheKey): an error of the call
      }
      return decodeSse(
        {
          model: id,
          url,
          headers: { ...auth, ...headers },
          body: payload,
          ...(options.fetch ? { fetch: options.fetch } : {}),
          ...(options.maxEventSize ? { maxEventSize: options.maxEventSize } : {}),
          signal: context.signal,
        },
        () => new ChunkDecoder(id),
      );
    },
  };
}
