/**
 * `rxheal/ai-sdk`: the Vercel AI SDK both ways. {@link fromAiSdk} turns any AI SDK language
 * model (spec v2, v3, v4) into an rxheal {@link Model}; {@link toAiSdk} turns an rxheal model —
 * typically a `fallbackModel` of `fromAiSdk` models with breakers and retries — into a
 * `LanguageModelV3` for `streamText` / `generateText`. The AI SDK (`ai` 6, `@ai-sdk/provider` 3)
 * is an optional peer dependency: only this subpath needs it, and only its types.
 *
 * @example
 * ```ts
 * import { openai } from '@ai-sdk/openai';
 * import { anthropic } from '@ai-sdk/anthropic';
 * import { streamText } from 'ai';
 * import { CircuitBreakerRegistry, fallbackModel } from 'rxheal';
 * import { fromAiSdk, toAiSdk } from 'rxheal/ai-sdk';
 *
 * const breakers = new CircuitBreakerRegistry({ failureThreshold: 3 });
 * const model = toAiSdk(fallbackModel([fromAiSdk(openai('gpt-4o')), fromAiSdk(anthropic('claude-sonnet-4-5'))], { breakers, midStream: 'continue' }));
 * const result = streamText({ model, prompt: 'Hello', maxRetries: 0 });
 * ```
 *
 * @module
 */
import type {
  JSONValue,
  LanguageModelV2,
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3Content,
  LanguageModelV3FinishReason,
  LanguageModelV3FunctionTool,
  LanguageModelV3GenerateResult,
  LanguageModelV3Message,
  LanguageModelV3Prompt,
  LanguageModelV3Reasoning,
  LanguageModelV3StreamPart,
  LanguageModelV3ToolResultOutput,
  LanguageModelV3Usage,
  SharedV3ProviderMetadata,
  SharedV3ProviderOptions,
  SharedV3Warning,
} from '@ai-sdk/provider';
import { Observable, Subscriber, Subscription } from 'rxjs';
import { IncompleteStreamError, InvalidOptionError, MalformedStreamError } from '../core/errors/errors.js';
import type { FinishReason, Message, ReasoningEnd, ReasoningPart, ToolCall, TurnEvent, Usage } from '../core/events/events.js';
import { isModel, modelsInside, streamModel, toolParameters, type Model, type ModelRequest, type ToolChoice, type ToolSpec } from '../core/model/model.js';
import { NonEmptyString, validateOptions } from '../core/errors/options.js';
import { argumentsText } from '../providers/openai.js';
import { parseToolArguments, PlainObject } from '../providers/sse.js';
import { abortReason, isObject, num, onAbort, providerStreamError, StreamRestartError } from '../adapters/common.js';

export { StreamRestartError } from '../adapters/common.js';

// ---------------------------------------------------------------------------------------------
// types
// ---------------------------------------------------------------------------------------------

/**
 * An AI SDK 7 model (spec v4), read by its shape: `doStream` and stream parts as in v3.
 *
 * @example
 * ```ts
 * const model: LanguageModelV4Like = openai('gpt-4o'); // with ai@7
 * ```
 */
export interface LanguageModelV4Like {
  readonly specificationVersion: 'v4';
  readonly provider: string;
  readonly modelId: string;
  doStream(options: never): PromiseLike<{ readonly stream: ReadableStream<unknown> }>;
}

/**
 * What {@link fromAiSdk} takes: a language model object of spec v2 (AI SDK 5), v3 (AI SDK 6) or
 * v4 (AI SDK 7) — `openai('gpt-4o')`, `anthropic('claude-sonnet-4-5')`, a `wrapLanguageModel`
 * result… (Model id strings resolved by the AI SDK's gateway are not: pass the model object.)
 *
 * @example
 * ```ts
 * const model: AiSdkLanguageModel = createOpenAICompatible({ name: 'local', baseURL: 'http://127.0.0.1:11434/v1' })('llama3.2');
 * ```
 */
export type AiSdkLanguageModel = LanguageModelV3 | LanguageModelV2 | LanguageModelV4Like;

/**
 * Call settings of one AI SDK call: `temperature`, `maxOutputTokens`, `topP`, `stopSequences`,
 * `seed`, `toolChoice`, `responseFormat`, `headers`, `providerOptions`…
 *
 * @example
 * ```ts
 * const settings: AiSdkCallSettings = { temperature: 0, maxOutputTokens: 1024 };
 * ```
 */
export type AiSdkCallSettings = Omit<LanguageModelV3CallOptions, 'prompt' | 'tools' | 'abortSignal' | 'includeRawChunks'>;

/**
 * Options of {@link fromAiSdk}.
 *
 * @example
 * ```ts
 * const options: FromAiSdkOptions = { id: 'gpt', settings: { temperature: 0 } };
 * ```
 */
export interface FromAiSdkOptions {
  /** The `Model.id` (breakers are named `model:<id>`). Defaults to `<provider>:<modelId>`. */
  readonly id?: string;
  /**
   * Call settings sent with every request. The settings of the `streamText` / `generateText`
   * call, when it reaches this model through {@link toAiSdk}, win over these.
   */
  readonly settings?: AiSdkCallSettings;
}

/**
 * Options of {@link toAiSdk}.
 *
 * @example
 * ```ts
 * const options: ToAiSdkOptions = { provider: 'rxheal', modelId: 'chat' };
 * ```
 */
export interface ToAiSdkOptions {
  /** The `provider` the AI SDK reports (telemetry, `response`). Defaults to `'rxheal'`. */
  readonly provider?: string;
  /** The `modelId` the AI SDK reports. Defaults to the model's `id`. */
  readonly modelId?: string;
}

// ---------------------------------------------------------------------------------------------
// shared
// ---------------------------------------------------------------------------------------------

/**
 * Where {@link toAiSdk} puts the AI SDK call's settings on the request it hands its rxheal
 * model, for the {@link fromAiSdk} models inside to send. A symbol key: it travels through
 * `{ ...request }` copies (fallbackModel's continuation, `adapt`), other models ignore it.
 */
const CALL_SETTINGS = Symbol.for('rxheal.ai-sdk.callSettings');
/** Marks the models `fromAiSdk` makes: they take the call settings `toAiSdk` hands on. */
const TAKES_SETTINGS = Symbol.for('rxheal.ai-sdk.takesCallSettings');
type RequestWithSettings = ModelRequest & { readonly [CALL_SETTINGS]?: AiSdkCallSettings };


const FINISH_REASONS: ReadonlySet<string> = new Set<FinishReason>(['stop', 'tool-calls', 'length', 'content-filter', 'error', 'other']);

/**
 * What a reasoning block needs to be accepted back, as the AI SDK carries it: Anthropic's
 * `signature` or `redactedData` under `anthropic` (in a part's `providerMetadata`, a prompt part's
 * `providerOptions`) — what `@ai-sdk/anthropic` writes and reads — and whatever else providers
 * attach (`providerMetadata`: OpenAI's reasoning `itemId` and encrypted content, Gemini's
 * thought signature), carried as it came. The fields of a `reasoning-end` and a `ReasoningPart`.
 */
type Seal = { signature?: string; redactedData?: string; providerMetadata?: Record<string, Record<string, unknown>> };

/** Whether a seal carries anything. */
const sealed = (seal: Seal): boolean => seal.signature !== undefined || seal.redactedData !== undefined || seal.providerMetadata !== undefined;

/**
 * Adds a part's provider metadata (or a prompt part's options) to `into`: Anthropic's signature
 * and redacted data as fields of their own, everything else by provider in `providerMetadata`.
 * Runs for every reasoning delta that carries metadata: writes in place, nothing per field.
 */
function sealOf(metadata: unknown, into: Seal = {}): Seal {
  if (!isObject(metadata)) return into;
  for (const provider in metadata) {
    const value = metadata[provider];
    if (!isObject(value)) continue;
    for (const key in value) {
      const field = value[key];
      if (field === undefined) continue;
      if (provider === 'anthropic' && (key === 'signature' || key === 'redactedData')) {
        if (typeof field === 'string' && field !== '') into[key] = field;
      } else ((into.providerMetadata ??= {})[provider] ??= {})[key] = field;
    }
  }
  return into;
}

/** A seal (a reasoning part or event) as provider metadata: its `providerMetadata`, Anthropic's signature or redacted data added; `undefined` for none. */
function sealMetadata(seal: { readonly signature?: string; readonly redactedData?: string; readonly providerMetadata?: Record<string, unknown> }): SharedV3ProviderMetadata | undefined {
  const out: Record<string, Record<string, unknown>> = {};
  if (seal.providerMetadata !== undefined) for (const [provider, value] of Object.entries(seal.providerMetadata)) if (isObject(value)) out[provider] = { ...value };
  if (seal.signature !== undefined) out['anthropic'] = { ...out['anthropic'], signature: seal.signature };
  else if (seal.redactedData !== undefined) out['anthropic'] = { ...out['anthropic'], redactedData: seal.redactedData };
  return Object.keys(out).length > 0 ? (out as SharedV3ProviderMetadata) : undefined;
}

// ---------------------------------------------------------------------------------------------
// fromAiSdk: AI SDK model → rxheal Model
// ---------------------------------------------------------------------------------------------

function toolResultOutput(message: Extract<Message, { role: 'tool' }>): LanguageModelV3ToolResultOutput {
  return message.isError ? { type: 'error-text', value: message.content } : { type: 'text', value: message.content };
}

/** Our conversation as an AI SDK prompt (the same in spec v2, v3 and v4 for text and tools). */
function toPrompt(messages: readonly Message[]): LanguageModelV3Prompt {
  const prompt: LanguageModelV3Message[] = [];
  for (const message of messages) {
    switch (message.role) {
      case 'system':
        prompt.push({ role: 'system', content: message.content });
        break;
      case 'user':
        prompt.push({ role: 'user', content: [{ type: 'text', text: message.content }] });
        break;
      case 'assistant': {
        const content: Extract<LanguageModelV3Message, { role: 'assistant' }>['content'] = [];
        // reasoning first, as the model gave it (as the AI SDK itself sends it back): a signed or
        // redacted block is what Anthropic needs back (unsigned ones it drops, with a warning);
        // unsigned text is what @ai-sdk/openai-compatible sends as reasoning_content (DeepSeek's
        // thinking mode refuses a tool-call turn without it)
        for (const part of message.reasoning ?? []) {
          const providerOptions = sealMetadata(part);
          if (providerOptions !== undefined) content.push({ type: 'reasoning', text: part.text, providerOptions });
          else if (part.text !== '') content.push({ type: 'reasoning', text: part.text });
        }
        if (message.content !== '') content.push({ type: 'text', text: message.content });
        // with what the provider attached to each call (Gemini's thought signature), as it came
        for (const call of message.toolCalls ?? []) {
          const providerOptions = call.providerMetadata as SharedV3ProviderOptions | undefined;
          content.push(providerOptions ? { type: 'tool-call', toolCallId: call.id, toolName: call.name, input: call.args, providerOptions } : { type: 'tool-call', toolCallId: call.id, toolName: call.name, input: call.args });
        }
        prompt.push({ role: 'assistant', content });
        break;
      }
      case 'tool': {
        const part = { type: 'tool-result' as const, toolCallId: message.toolCallId, toolName: message.toolName, output: toolResultOutput(message) };
        const last = prompt[prompt.length - 1];
        // consecutive tool results: one tool message, as the AI SDK builds them
        if (last?.role === 'tool') last.content.push(part);
        else prompt.push({ role: 'tool', content: [part] });
        break;
      }
    }
  }
  return prompt;
}

function toTools(tools: readonly ToolSpec[]): LanguageModelV3FunctionTool[] {
  return tools.map((tool) => ({
    type: 'function',
    name: tool.name,
    description: tool.description,
    inputSchema: toolParameters(tool) as LanguageModelV3FunctionTool['inputSchema'],
  }));
}

/** Where {@link PartDecoder} hands its events (the turn's subscriber). */
interface EventSink {
  next(event: TurnEvent): void;
}

interface PendingInput {
  readonly name: string;
  json: string;
  ended: boolean;
  /** What the provider attached to the call (Gemini's thought signature), from its start. */
  readonly metadata: Record<string, unknown> | undefined;
}

/** A tool-call event, with the provider's metadata for the call when it sent some. */
function toolCallEvent(id: string, name: string, args: unknown, metadata: unknown): TurnEvent {
  return isObject(metadata) ? { type: 'tool-call', id, name, args, providerMetadata: metadata } : { type: 'tool-call', id, name, args };
}

/** A reasoning block between its `reasoning-start` and our `reasoning-end`. */
interface OpenReasoning {
  /** Text not yet handed on: the block's deltas while another block was streaming. */
  pending: string;
  /** Whether any text was handed on or is pending. */
  said: boolean;
  ended: boolean;
  readonly seal: Seal;
}

/**
 * Reads one `doStream`'s parts into model events: text deltas; reasoning deltas, each block ended
 * by a `reasoning-end` with the signature or redacted data its parts carried; tool calls from
 * whole `tool-call` parts, or assembled from `tool-input-start/-delta/-end` when no `tool-call`
 * part follows; one `finish`. An `error` part, an error finish, or a tool input still open at
 * the finish is an error.
 *
 * Reasoning blocks open at once (by their ids): the first opened streams, the others' deltas wait
 * until it ends, then pass on as one delta — our blocks never interleave, and no block's text or
 * signature is mixed into another's. Blocks still open at the finish end there, in order.
 */
class PartDecoder {
  done = false;
  private parts = 0;
  private readonly inputs = new Map<string, PendingInput>();
  private readonly called = new Set<string>();
  /** Ids of tool calls the provider runs itself (its results come in the stream; not ours to run). */
  private readonly providerExecuted = new Set<string>();
  /** Reasoning blocks by id, in the order they opened: the first is the one streaming. */
  private readonly reasoning = new Map<string, OpenReasoning>();
  /** The id of the first open reasoning block (the one whose deltas pass at once). */
  private streaming: string | undefined = undefined;

  constructor(private readonly model: string) {}

  /**
   * Decodes one part, handing its events (none, one, or at the finish the assembled tool calls and
   * the finish) to `out`; throws what ends the turn. No array or closure per part: this runs for
   * every text delta.
   */
  push(part: unknown, out: EventSink): void {
    this.parts++;
    if (this.done || !isObject(part)) return;
    switch (part['type']) {
      case 'text-delta': {
        const text = part['delta'];
        if (typeof text === 'string' && text !== '') out.next({ type: 'text-delta', text });
        return;
      }
      case 'reasoning-start':
        sealOf(part['providerMetadata'], this.block(String(part['id'])).seal);
        return;
      case 'reasoning-delta': {
        const id = String(part['id']);
        const block = this.block(id);
        sealOf(part['providerMetadata'], block.seal);
        const text = part['delta'];
        if (typeof text !== 'string' || text === '') return;
        block.said = true;
        // the first open block streams; another's text waits for it to end
        if (this.streaming === id) out.next({ type: 'reasoning-delta', text });
        else block.pending += text;
        return;
      }
      case 'reasoning-end': {
        const block = this.block(String(part['id']));
        sealOf(part['providerMetadata'], block.seal);
        block.ended = true;
        this.settle(out);
        return;
      }
      case 'tool-input-start': {
        const id = String(part['id']);
        if (part['providerExecuted'] === true) this.providerExecuted.add(id);
        else if (!this.called.has(id)) this.inputs.set(id, { name: String(part['toolName'] ?? ''), json: '', ended: false, metadata: isObject(part['providerMetadata']) ? part['providerMetadata'] : undefined });
        return;
      }
      case 'tool-input-delta': {
        const id = String(part['id']);
        const input = this.inputs.get(id);
        if (input !== undefined) input.json += typeof part['delta'] === 'string' ? part['delta'] : '';
        else if (!this.called.has(id) && !this.providerExecuted.has(id)) throw this.malformed(`tool-input-delta for a tool call never started (${id})`, part);
        return;
      }
      case 'tool-input-end': {
        const input = this.inputs.get(String(part['id']));
        if (input !== undefined) input.ended = true;
        return;
      }
      case 'tool-call': {
        const id = String(part['toolCallId']);
        if (part['providerExecuted'] === true || this.providerExecuted.has(id) || this.called.has(id)) return;
        this.called.add(id);
        this.inputs.delete(id);
        // `input`: the arguments as JSON text (an object from some hand-written models)
        const input = part['input'];
        out.next(toolCallEvent(id, String(part['toolName'] ?? ''), typeof input === 'string' ? parseToolArguments(input) : (input ?? {}), part['providerMetadata']));
        return;
      }
      case 'finish':
        // every check first: a finish that throws hands on none of its tool calls
        for (const event of this.finish(part)) out.next(event);
        return;
      case 'error':
        throw providerStreamError(this.model, part['error']);
      default:
        // stream-start, response-metadata, text-start/-end, sources, files, raw,
        // provider-executed tool results, approval requests: not part of an rxheal turn
        return;
    }
  }

  /** The reasoning block of this id, opened if it is not (a delta or an end without a start). */
  private block(id: string): OpenReasoning {
    let block = this.reasoning.get(id);
    if (block === undefined) {
      this.reasoning.set(id, (block = { pending: '', said: false, ended: false, seal: {} }));
      this.streaming ??= id;
    }
    return block;
  }

  /**
   * Hands on what the blocks in front have finished: while the first block has ended, its
   * `reasoning-end` (a block with no text, seal or metadata ends unseen), then the next block's
   * waiting text. `all`: end every block (the finish).
   */
  private settle(out: EventSink, all = false): void {
    this.streaming = undefined;
    for (const [id, block] of this.reasoning) {
      this.streaming = id;
      if (block.pending !== '') out.next({ type: 'reasoning-delta', text: block.pending });
      block.pending = '';
      if (!block.ended && !all) return;
      if (block.said || sealed(block.seal)) out.next({ type: 'reasoning-end', ...block.seal } satisfies ReasoningEnd);
      this.reasoning.delete(id);
      this.streaming = undefined;
    }
  }

  /** The stream ended: fine only after `finish` (streamModel says so otherwise). */
  end(): void {
    if (!this.done) throw new IncompleteStreamError(this.model, 'no finish part', this.parts);
  }

  private finish(part: Record<string, unknown>): TurnEvent[] {
    this.done = true;
    const reasonField = part['finishReason'];
    // v2: a string; v3, v4: { unified, raw }
    const unified = isObject(reasonField) ? reasonField['unified'] : reasonField;
    const raw = isObject(reasonField) ? reasonField['raw'] : undefined;
    // 'error', or the provider's own 'error' (OpenRouter's finish_reason, which @ai-sdk/openai unifies as 'other')
    if (unified === 'error' || raw === 'error') {
      throw new IncompleteStreamError(this.model, `finish reason 'error'${typeof raw === 'string' ? ` (${raw})` : ''}`, this.parts);
    }
    // the placeholder an AI SDK provider finishes with when the stream ended without a finish
    // reason (a cut connection): v2's 'unknown', v3's { unified: 'other', raw: undefined }
    if (unified === 'unknown' || (isObject(reasonField) && unified === 'other' && raw === undefined)) {
      throw new IncompleteStreamError(this.model, 'the provider sent no finish reason (the stream was cut)', this.parts);
    }
    const out: TurnEvent[] = [];
    // reasoning the provider never ended ends here, with what its parts carried
    this.settle({ next: (event) => out.push(event) }, true);
    for (const [id, input] of this.inputs) {
      if (!input.ended) throw this.malformed(`the input of tool call ${id} (${input.name}) was still open at the finish`, part);
      out.push(toolCallEvent(id, input.name, parseToolArguments(input.json), input.metadata));
    }
    this.inputs.clear();
    const reason: FinishReason = typeof unified === 'string' && FINISH_REASONS.has(unified) ? (unified as FinishReason) : 'other';
    const usage = usageOf(part['usage']);
    out.push(usage ? { type: 'finish', reason, usage } : { type: 'finish', reason });
    return out;
  }

  private malformed(detail: string, part: Record<string, unknown>): MalformedStreamError {
    let data = '';
    try {
      data = JSON.stringify(part) ?? '';
    } catch {
      // a part that can't be shown
    }
    return new MalformedStreamError(this.model, detail, data);
  }
}

/** The sum of the counts given, `undefined` when none is. */
function sum(counts: readonly unknown[]): number | undefined {
  let total: number | undefined;
  for (const c of counts) if (num(c) !== undefined) total = (total ?? 0) + (c as number);
  return total;
}

/**
 * Token counts of any spec's usage: v3/v4 `{ inputTokens: { total } }` (or, without a total, the
 * sum of its parts: `noCache` + `cacheRead` + `cacheWrite`, `text` + `reasoning`), v2 numbers.
 */
function usageOf(u: unknown): Usage | undefined {
  if (!isObject(u)) return undefined;
  const count = (v: unknown, parts: readonly string[]): number | undefined =>
    num(v) ?? (isObject(v) ? (num(v['total']) ?? sum(parts.map((p) => v[p]))) : undefined);
  const input = count(u['inputTokens'], ['noCache', 'cacheRead', 'cacheWrite']);
  const output = count(u['outputTokens'], ['text', 'reasoning']);
  if (input === undefined && output === undefined) return undefined;
  return { inputTokens: input ?? 0, outputTokens: output ?? 0 };
}

/**
 * One `doStream` call's parts, decoded: completes at the finish (cancelling the rest), errors
 * with what the call, the stream or the decoder throws; unsubscribing cancels the stream (the
 * signal in the call aborts the request). One read loop, its handlers made once per call.
 */
function decodeParts(open: () => PromiseLike<{ readonly stream: ReadableStream<unknown> }>, decoder: PartDecoder): Observable<TurnEvent> {
  return new Observable<TurnEvent>((subscriber) => {
    let reader: ReadableStreamDefaultReader<unknown> | undefined;
    /** The stream was read to its end (nothing to cancel). */
    let ended = false;
    const fail = (error: unknown): void => {
      if (!subscriber.closed) subscriber.error(error);
    };
    const onRead = (result: ReadableStreamReadResult<unknown>): void => {
      if (subscriber.closed) return;
      if (result.done) {
        ended = true;
        try {
          decoder.end();
        } catch (error) {
          return fail(error);
        }
        return subscriber.complete();
      }
      try {
        decoder.push(result.value, subscriber);
      } catch (error) {
        return fail(error);
      }
      if (decoder.done) subscriber.complete();
      else if (!subscriber.closed) reader!.read().then(onRead, fail);
    };
    new Promise<{ readonly stream: ReadableStream<unknown> }>((resolve) => resolve(open())).then((result) => {
      // a model that resolves without a readable stream, or with one already read (a test double
      // reused across attempts): its TypeError ends the turn, never an unhandled rejection and a hang
      try {
        const { stream } = result;
        if (subscriber.closed) {
          stream.cancel().catch(() => undefined);
          return;
        }
        reader = stream.getReader();
      } catch (error) {
        return fail(error);
      }
      reader.read().then(onRead, fail);
    }, fail);
    return () => {
      if (!ended) reader?.cancel().catch(() => undefined);
    };
  });
}

const fromProps = { id: NonEmptyString, settings: PlainObject };

/**
 * An rxheal {@link Model} over any AI SDK language model — spec v2 (AI SDK 5), v3 (AI SDK 6) or
 * v4 (AI SDK 7, read by shape) — so it can sit in a `fallbackModel` with breakers, under
 * `retryWithBackoff`, in `runAgent`, or back in `streamText` through {@link toAiSdk}.
 *
 * Requests: our messages become the AI SDK prompt (system, user text, assistant text and
 * `tool-call` parts, `tool-result` parts with `{ type: 'text' | 'error-text' }` output), tools
 * `function` tools (`ToolSpec.parameters` as the input schema); `settings` (and the AI SDK call's
 * own, through `toAiSdk`) are sent along; the context's signal is the `abortSignal`.
 *
 * Events: `text-delta` parts → `text-delta`; tool calls from whole `tool-call` parts (input
 * parsed), or assembled from `tool-input-start/-delta/-end` when no `tool-call` part follows
 * (provider-executed tools are skipped: they are not ours to run); `finish` → one `finish` with
 * the reason (v2's string, v3's `unified`) and usage (`inputTokens.total` /
 * `outputTokens.total`, or v2's numbers). Sources, files and metadata parts are not part of an
 * rxheal turn and are skipped.
 *
 * Reasoning, both ways: `reasoning-delta` parts → `reasoning-delta`, each block's
 * `reasoning-end` → `reasoning-end` with the `signature` / `redactedData` that
 * `providerMetadata.anthropic` carried on any of the block's parts (`@ai-sdk/anthropic` sends the
 * signature on a delta, redacted data on the start) and, as `providerMetadata`, whatever else
 * they carried (OpenAI's reasoning item, Gemini's thought signature); blocks open at once stream
 * one at a time (the others' text follows when the first ends), a block never ended ends at the
 * finish, and a block with no text, seal or metadata is dropped. An assistant message's
 * `reasoning` goes back first in its content, as `reasoning` parts with their metadata as
 * `providerOptions`: signed or redacted ones with `providerOptions.anthropic.signature` /
 * `.redactedData` (Anthropic's thinking blocks), unsigned ones as text (`@ai-sdk/openai-compatible` sends it as `reasoning_content`;
 * `@ai-sdk/anthropic` drops it with a warning) — as the AI SDK sends its own steps back. A tool
 * call's `providerMetadata` (Gemini 3's `{ google: { thoughtSignature } }`, which it needs back
 * with the call) becomes our tool call's `providerMetadata`, and goes back as the call part's
 * `providerOptions`.
 *
 * Errors (each one `classifyError` understands): `doStream` rejecting passes as is (the AI SDK's
 * `APICallError`, with `statusCode`, `responseHeaders` and `isRetryable`); the first `error` part
 * ends the stream at once (the AI SDK providers keep streaming after a chunk they could not
 * parse, which would silently drop text): an `Error` passes as is (`AI_JSONParseError` reads as
 * a malformed response) except a chunk the provider's schema rejects (`AI_TypeValidationError`)
 * or a response it found invalid (`AI_InvalidResponseDataError`), which become a
 * `MalformedStreamError`; a raw error object (`{ type: 'server_error' }`, `{ code: 502 }`)
 * becomes an `HttpError` with the status it implies; a finish with reason `error` (unified, or
 * the provider's raw `error`, as OpenRouter sends), a finish that says no reason came (v2's
 * `unknown`, v3's `{ unified: 'other', raw: undefined }`: what `@ai-sdk/openai` finishes a cut
 * stream with), a tool input still open at the finish, or a stream ending without a finish → an
 * error too (`IncompleteStreamError`, `MalformedStreamError`) — never a short answer.
 * Unsubscribing aborts the request and cancels the stream.
 *
 * The AI SDK's own retries live in `streamText` / `generateText` (`maxRetries`), not in the
 * model: a model read through `fromAiSdk` is tried once per subscription — retry it with
 * `retryWithBackoff`.
 *
 * @example
 * ```ts
 * import { openai } from '@ai-sdk/openai';
 * import { anthropic } from '@ai-sdk/anthropic';
 * import { CircuitBreakerRegistry, fallbackModel, runAgent } from 'rxheal';
 * import { fromAiSdk } from 'rxheal/ai-sdk';
 *
 * const breakers = new CircuitBreakerRegistry({ failureThreshold: 3, resetTimeoutMs: 60_000 });
 * const model = fallbackModel([fromAiSdk(openai('gpt-4o')), fromAiSdk(anthropic('claude-sonnet-4-5'), { settings: { temperature: 0 } })], { breakers, midStream: 'continue' });
 * runAgent({ model, tools: [], messages: [{ role: 'user', content: 'Hi' }] }).subscribe(console.log);
 * ```
 * @throws {InvalidOptionError} at once, for something that is not an AI SDK model object (a
 * model id string, a v1 model), or an invalid option.
 */
export function fromAiSdk(model: AiSdkLanguageModel, options?: FromAiSdkOptions): Model {
  if (typeof model === 'string') {
    throw new InvalidOptionError('fromAiSdk', 'model', model, "a language model object, e.g. openai('gpt-4o') (id strings need the AI SDK's gateway)");
  }
  if (!isObject(model) || typeof (model as { doStream?: unknown }).doStream !== 'function') {
    throw new InvalidOptionError('fromAiSdk', 'model', model, 'an AI SDK language model (with doStream)');
  }
  const version = (model as { specificationVersion?: unknown }).specificationVersion;
  if (version !== 'v2' && version !== 'v3' && version !== 'v4') {
    throw new InvalidOptionError('fromAiSdk', 'model.specificationVersion', version, "'v2', 'v3' or 'v4' (AI SDK 5, 6 or 7)");
  }
  const o = validateOptions('fromAiSdk', fromProps, options);
  const id = o.id ?? `${model.provider}:${model.modelId}`;
  const settings = (o.settings ?? {}) as AiSdkCallSettings;
  const doStream = (call: LanguageModelV3CallOptions) => (model as LanguageModelV3).doStream(call) as PromiseLike<{ readonly stream: ReadableStream<unknown> }>;
  const made: Model = {
    id,
    stream: (request, context) => {
      const call: LanguageModelV3CallOptions = {
        ...settings,
        ...(request as RequestWithSettings)[CALL_SETTINGS],
        prompt: toPrompt(request.messages),
        ...(request.tools.length > 0 ? { tools: toTools(request.tools) } : {}),
        ...(request.toolChoice !== undefined && request.tools.length > 0 ? { toolChoice: aiSdkToolChoice(request.toolChoice) } : {}),
        abortSignal: context.signal,
      };
      return decodeParts(() => doStream(call), new PartDecoder(id));
    },
  };
  Object.defineProperty(made, TAKES_SETTINGS, { value: true, enumerable: false });
  return made;
}

/** The ids of the models in `model` (itself, or those it is made of, all the way down) that take no AI SDK call settings: not `fromAiSdk` models. */
function settingsIgnoredBy(model: Model, out: string[] = []): string[] {
  if ((model as { [TAKES_SETTINGS]?: boolean })[TAKES_SETTINGS] === true) return out;
  const inside = modelsInside(model);
  if (inside === undefined) out.push(model.id);
  else for (const m of inside) settingsIgnoredBy(m, out);
  return out;
}

/**
 * What an AI SDK provider says of a setting it can't honour (`'unsupported'`), for each setting
 * the call set that some model inside takes no part of (`ignoredBy`: their ids). Provider options
 * are not warned about (every AI SDK provider ignores those of others), nor headers (the AI SDK
 * sends its own, a user-agent, on every call).
 */
function settingsWarnings(settings: Readonly<Record<string, unknown>>, ignoredBy: readonly string[]): SharedV3Warning[] {
  if (ignoredBy.length === 0) return [];
  const names = ignoredBy.map((id) => `'${id}'`);
  const details =
    names.length === 1
      ? `rxheal model ${names[0]} takes no AI SDK call settings (only fromAiSdk models do): set it on the model itself`
      : `rxheal models ${names.slice(0, -1).join(', ')} and ${names.at(-1)} take no AI SDK call settings (only fromAiSdk models do): set it on the models themselves`;
  return Object.keys(settings)
    .filter((key) => key !== 'providerOptions' && key !== 'headers')
    .map((feature) => ({ type: 'unsupported', feature, details }));
}

/** Our tool choice in the AI SDK's words. */
function aiSdkToolChoice(choice: ToolChoice): NonNullable<LanguageModelV3CallOptions['toolChoice']> {
  return typeof choice === 'object' ? { type: 'tool', toolName: choice.tool } : { type: choice };
}

// ---------------------------------------------------------------------------------------------
// toAiSdk: rxheal Model → LanguageModelV3
// ---------------------------------------------------------------------------------------------

function unsupported(at: string, what: string): never {
  throw new InvalidOptionError('toAiSdk', at, what, 'text, tool calls and tool results (rxheal models take text)');
}

function toolResultText(output: LanguageModelV3ToolResultOutput): { content: string; isError: boolean } {
  const json = (v: JSONValue | undefined): string => JSON.stringify(v ?? null);
  switch (output.type) {
    case 'text':
      return { content: output.value, isError: false };
    case 'json':
      return { content: json(output.value), isError: false };
    case 'error-text':
      return { content: output.value, isError: true };
    case 'error-json':
      return { content: json(output.value), isError: true };
    case 'execution-denied':
      return { content: `The tool call was denied${output.reason ? `: ${output.reason}` : '.'}`, isError: true };
    case 'content':
      return { content: output.value.map((p) => (p.type === 'text' ? p.text : `[${p.type}]`)).join(''), isError: false };
    default:
      return { content: JSON.stringify(output), isError: false };
  }
}

/** The AI SDK prompt as our conversation. */
function fromPrompt(prompt: LanguageModelV3Prompt): Message[] {
  const messages: Message[] = [];
  prompt.forEach((message, i) => {
    switch (message.role) {
      case 'system':
        messages.push({ role: 'system', content: message.content });
        break;
      case 'user': {
        let text = '';
        message.content.forEach((part, j) => {
          if (part.type === 'text') text += part.text;
          else unsupported(`prompt[${i}].content[${j}]`, `a ${part.type} part (${part.mediaType})`);
        });
        messages.push({ role: 'user', content: text });
        break;
      }
      case 'assistant': {
        let text = '';
        const toolCalls: ToolCall[] = [];
        const reasoning: ReasoningPart[] = [];
        message.content.forEach((part, j) => {
          if (part.type === 'text') text += part.text;
          else if (part.type === 'tool-call') {
            if (part.providerExecuted !== true) {
              toolCalls.push(part.providerOptions ? { id: part.toolCallId, name: part.toolName, args: part.input, providerMetadata: part.providerOptions } : { id: part.toolCallId, name: part.toolName, args: part.input });
            }
          } else if (part.type === 'reasoning') {
            // with its signature or redacted data (Anthropic's) and other providers' metadata,
            // which the model may need back; a part with none of it and no text says nothing
            const seal = sealOf(part.providerOptions);
            if (part.text !== '' || sealed(seal)) reasoning.push({ text: part.text, ...seal } satisfies ReasoningPart);
          } else if (part.type === 'file') unsupported(`prompt[${i}].content[${j}]`, `a file part (${part.mediaType})`);
          // provider-executed tool results: not part of an rxheal conversation
        });
        const answer: Message = toolCalls.length > 0 ? { role: 'assistant', content: text, toolCalls } : { role: 'assistant', content: text };
        messages.push(reasoning.length > 0 ? { ...answer, reasoning } : answer);
        break;
      }
      case 'tool':
        for (const part of message.content) {
          if (part.type !== 'tool-result') continue; // approval responses: the AI SDK resolves them
          const { content, isError } = toolResultText(part.output);
          messages.push(isError ? { role: 'tool', toolCallId: part.toolCallId, toolName: part.toolName, content, isError } : { role: 'tool', toolCallId: part.toolCallId, toolName: part.toolName, content });
        }
        break;
    }
  });
  return messages;
}

/**
 * The call as an rxheal request (with its settings for `fromAiSdk` models), and the warnings:
 * provider tools, and settings the models `ignoredBy` names can't take.
 */
function toRequest(options: LanguageModelV3CallOptions, ignoredBy: readonly string[]): { request: RequestWithSettings; warnings: SharedV3Warning[] } {
  const warnings: SharedV3Warning[] = [];
  const tools: ToolSpec[] = [];
  for (const tool of options.tools ?? []) {
    if (tool.type === 'function') tools.push({ name: tool.name, description: tool.description ?? '', parameters: tool.inputSchema });
    else warnings.push({ type: 'unsupported', feature: `provider tool ${tool.name}`, details: 'rxheal models take function tools' });
  }
  // eslint-disable-next-line @typescript-eslint/no-unused-vars -- what is not a setting
  const { prompt, tools: _tools, abortSignal: _signal, includeRawChunks: _raw, toolChoice, ...rest } = options;
  // the AI SDK passes every setting, most as undefined: only those set travel
  const settings: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(rest)) if (value !== undefined) settings[key] = value;
  warnings.push(...settingsWarnings(settings, ignoredBy));
  // the tool choice is the request's own: every rxheal model gets it, not only fromAiSdk ones
  const choice: ToolChoice | undefined = toolChoice === undefined ? undefined : toolChoice.type === 'tool' ? { tool: toolChoice.toolName } : toolChoice.type;
  const request: RequestWithSettings = { messages: fromPrompt(prompt), tools, ...(choice === undefined ? {} : { toolChoice: choice }), [CALL_SETTINGS]: settings as AiSdkCallSettings };
  return { request, warnings };
}

/** Our tool call as a v3 `tool-call` part, with the provider's metadata for it when it has some. */
function v3ToolCall(event: Extract<TurnEvent, { type: 'tool-call' }>): Extract<LanguageModelV3StreamPart, { type: 'tool-call' }> {
  const part = { type: 'tool-call' as const, toolCallId: event.id, toolName: event.name, input: argumentsText(event.args) };
  return event.providerMetadata === undefined ? part : { ...part, providerMetadata: event.providerMetadata as SharedV3ProviderMetadata };
}

const v3Usage = (usage: Usage | undefined): LanguageModelV3Usage => ({
  inputTokens: { total: usage?.inputTokens, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: usage?.outputTokens, text: undefined, reasoning: undefined },
});

const v3Reason = (reason: FinishReason, raw: string = reason): LanguageModelV3FinishReason => ({ unified: reason, raw });

/**
 * Writes a model's events into an AI SDK stream as parts: text deltas in `text-start/-delta/-end`
 * blocks, tool calls as `tool-call` parts, the finish with its reason and usage; an error, or a
 * `reset` after something was delivered ({@link StreamRestartError}), as an `error` part and an
 * error finish. The stream's own subscriber (no observer wrapped in another per event).
 * `lifetime` is the stream's: ending the stream unsubscribes it (cancelling the model), and once
 * it is closed later events are ignored — the model's subscription is added to it when `subscribe`
 * returns, so a model that emits synchronously past the end is still subscribed, then cancelled.
 */
class PartWriter extends Subscriber<TurnEvent> {
  private delivered = false;
  private textId: string | undefined = undefined;
  private reasoningId: string | undefined = undefined;
  private blocks = 0;

  constructor(
    private readonly controller: ReadableStreamDefaultController<LanguageModelV3StreamPart>,
    private readonly modelId: string,
    private readonly lifetime: Subscription,
  ) {
    super();
  }

  protected override _next(event: TurnEvent): void {
    if (this.lifetime.closed) return;
    try {
      switch (event.type) {
        case 'text-delta':
          if (event.text === '') return;
          if (this.textId === undefined) {
            this.textId = `text-${this.blocks++}`;
            this.controller.enqueue({ type: 'text-start', id: this.textId });
          }
          this.controller.enqueue({ type: 'text-delta', id: this.textId, delta: event.text });
          this.delivered = true;
          return;
        case 'reasoning-delta':
          if (event.text === '') return;
          this.openReasoning();
          this.controller.enqueue({ type: 'reasoning-delta', id: this.reasoningId!, delta: event.text });
          this.delivered = true;
          return;
        case 'reasoning-end': {
          const providerMetadata = sealMetadata(event);
          // an unsigned end of no text: nothing to show
          if (this.reasoningId === undefined && providerMetadata === undefined) return;
          // a block of no text (redacted, or a signature alone) opens with its metadata, as @ai-sdk/anthropic's redacted blocks do
          this.openReasoning(providerMetadata);
          this.controller.enqueue(providerMetadata ? { type: 'reasoning-end', id: this.reasoningId!, providerMetadata } : { type: 'reasoning-end', id: this.reasoningId! });
          this.reasoningId = undefined;
          this.delivered = true;
          return;
        }
        case 'tool-call':
          this.closeText();
          this.controller.enqueue(v3ToolCall(event));
          this.delivered = true;
          return;
        case 'finish':
          return this.end({ type: 'finish', finishReason: v3Reason(event.reason), usage: v3Usage(event.usage) });
        case 'reset':
          // nothing delivered yet: the next attempt's answer is the whole answer
          if (!this.delivered) return;
          return this.fail(new StreamRestartError(this.modelId, event, 'the AI SDK'));
      }
    } catch (error) {
      // a malformed event (a hand-written model's): an error part, never a throw into the model
      this.fail(error);
    }
  }

  protected override _error(error: unknown): void {
    this.fail(error);
  }

  // streamModel errors a stream that completes without a finish: never reached first
  protected override _complete(): void {
    this.end();
  }

  private closeText(): void {
    if (this.textId !== undefined) this.controller.enqueue({ type: 'text-end', id: this.textId });
    this.textId = undefined;
  }

  /** Starts a reasoning block unless one is open (text before it ends its text block). */
  private openReasoning(providerMetadata?: SharedV3ProviderMetadata): void {
    if (this.reasoningId !== undefined) return;
    this.closeText();
    this.reasoningId = `reasoning-${this.blocks++}`;
    this.controller.enqueue(providerMetadata ? { type: 'reasoning-start', id: this.reasoningId, providerMetadata } : { type: 'reasoning-start', id: this.reasoningId });
  }

  private fail(error: unknown): void {
    this.end({ type: 'error', error }, { type: 'finish', finishReason: v3Reason('error'), usage: v3Usage(undefined) });
  }

  /** Ends the stream with its last parts (finish, or error + error finish) and cancels the model. */
  private end(...parts: LanguageModelV3StreamPart[]): void {
    if (this.lifetime.closed) return;
    this.closeText();
    // reasoning the model never ended ends here, unsigned
    if (this.reasoningId !== undefined) this.controller.enqueue({ type: 'reasoning-end', id: this.reasoningId });
    this.reasoningId = undefined;
    for (const part of parts) this.controller.enqueue(part);
    this.controller.close();
    this.lifetime.unsubscribe();
  }
}

const toProps = { provider: NonEmptyString, modelId: NonEmptyString };

/**
 * An AI SDK `LanguageModelV3` over an rxheal {@link Model} — typically a `fallbackModel` of
 * {@link fromAiSdk} models with breakers and per-model retries — for `streamText`,
 * `generateText`, `streamObject`, agents…, which then get per-model retries, breakers shared
 * across requests, fallback, and mid-stream continuation.
 *
 * The prompt becomes our conversation (text, tool calls, tool results, and an assistant message's
 * `reasoning` parts as its `reasoning`, with `providerOptions.anthropic.signature` /
 * `.redactedData`; a file part is an `InvalidOptionError`: rxheal models take text), function
 * tools our tools (provider tools are reported as `unsupported` warnings). The call's settings
 * (`temperature`, `maxOutputTokens`, `providerOptions`, `headers`…) travel with the request to
 * every `fromAiSdk` model inside; the other models (`openAICompatibleModel`, `fromLangChain`…,
 * inside a `fallbackModel` or not) take theirs from their own options, so each setting the call
 * sets is reported as an `unsupported` warning naming them (in the `stream-start` part, and
 * `doGenerate`'s warnings), as an AI SDK provider reports a setting it can't honour (not
 * `providerOptions`, which providers ignore for one another, nor `headers`). A model that wraps
 * others in code of its own counts as one that takes none.
 *
 * `doStream` streams the model through `streamModel` (the finish contract holds): text deltas as
 * `text-start/-delta/-end`, reasoning as `reasoning-start/-delta/-end` (a `reasoning-end`'s
 * signature or redacted data in its `providerMetadata.anthropic`, as `@ai-sdk/anthropic` reads it
 * back — `streamText`'s `reasoning` keeps it), tool calls as `tool-call` parts, the finish with
 * its reason and usage. **An AI SDK stream can't take back what it delivered** (reasoning
 * included), so:
 * - with `fallbackModel`'s `midStream: 'continue'`, a model dying mid-answer is continued by the
 *   next one *in the same stream*: the consumer sees one answer, nothing lost or doubled;
 * - a `reset` before anything was delivered (a retry or fallback before the first part) is
 *   invisible;
 * - a `reset` after text, reasoning or a tool call was delivered (`midStream: 'restart'`, a
 *   retry with `afterEmit: 'restart'`) can't be expressed: the stream ends with an `error` part
 *   ({@link StreamRestartError}) and `finishReason: 'error'`, and the restart is cancelled —
 *   never a silent splice of two attempts;
 * - an error (e.g. `AllFallbacksFailedError`) ends the stream with an `error` part and
 *   `finishReason: 'error'`, as the AI SDK's own providers do.
 *
 * `doStream` itself never rejects for a model failure (errors arrive in the stream), so
 * `streamText`'s own retry (`maxRetries`, default 2), which only re-runs a rejected `doStream`,
 * never re-runs the chain; pass **`maxRetries: 0`** anyway, to say the retries are rxheal's.
 * `doGenerate` collects the stream — text, `reasoning` content (with its seal as provider
 * metadata), tool calls; a `reset` there just discards what was collected — and rejects with the
 * model's error. Aborting the call's `abortSignal`, or cancelling the stream, unsubscribes: the
 * model's requests are aborted.
 *
 * @example
 * ```ts
 * import { openai } from '@ai-sdk/openai';
 * import { anthropic } from '@ai-sdk/anthropic';
 * import { streamText } from 'ai';
 * import { CircuitBreakerRegistry, fallbackModel } from 'rxheal';
 * import { fromAiSdk, toAiSdk } from 'rxheal/ai-sdk';
 *
 * const breakers = new CircuitBreakerRegistry({ failureThreshold: 3, resetTimeoutMs: 60_000 });
 * const model = toAiSdk(fallbackModel([fromAiSdk(openai('gpt-4o')), fromAiSdk(anthropic('claude-sonnet-4-5'))], { breakers, midStream: 'continue' }));
 * const result = streamText({ model, prompt: 'Write a haiku about rivers', maxRetries: 0 });
 * for await (const text of result.textStream) process.stdout.write(text);
 * ```
 * @throws {InvalidOptionError} at once, for something that is not a Model, or an invalid option.
 */
export function toAiSdk(model: Model, options?: ToAiSdkOptions): LanguageModelV3 {
  if (!isModel(model)) {
    throw new InvalidOptionError('toAiSdk', 'model', model, 'a Model ({ id: non-empty string, stream(request, context) })');
  }
  const o = validateOptions('toAiSdk', toProps, options);
  // what a model is made of does not change: who takes no settings is known once
  const ignoredBy = settingsIgnoredBy(model);
  return {
    specificationVersion: 'v3',
    provider: o.provider ?? 'rxheal',
    modelId: o.modelId ?? model.id,
    supportedUrls: {},

    // async: a prompt rxheal can't take rejects, it doesn't throw
    async doStream(options) {
      const { request, warnings } = toRequest(options, ignoredBy);
      const subscription = new Subscription();
      const stream = new ReadableStream<LanguageModelV3StreamPart>(
        {
          start(controller) {
            subscription.add(
              onAbort(options.abortSignal, () => {
                if (subscription.closed) return;
                subscription.unsubscribe();
                controller.error(abortReason(options.abortSignal));
              }),
            );
            if (subscription.closed) return;
            controller.enqueue({ type: 'stream-start', warnings });
            subscription.add(streamModel(model, request).subscribe(new PartWriter(controller, model.id, subscription)));
          },
          cancel() {
            subscription.unsubscribe();
          },
        },
        // the parts are pushed as they come (no pull): a high-water mark of 0 spares the stream a
        // call to pull, and its promise, after every part
        { highWaterMark: 0 },
      );
      return { stream, request: { body: { messages: request.messages, tools: request.tools } } };
    },

    async doGenerate(options) {
      const { request, warnings } = toRequest(options, ignoredBy);
      return new Promise<LanguageModelV3GenerateResult>((resolve, reject) => {
        let content: LanguageModelV3Content[] = [];
        /** The part the deltas go on: the last one, while it is text or a reasoning block not ended yet. */
        let open: LanguageModelV3Reasoning | Extract<LanguageModelV3Content, { type: 'text' }> | undefined;
        const append = (type: 'text' | 'reasoning', text: string): void => {
          if (text === '') return;
          if (open?.type === type) open.text += text;
          else content.push((open = { type, text }));
        };
        const subscription = new Subscription();
        subscription.add(
          onAbort(options.abortSignal, () => {
            subscription.unsubscribe();
            reject(abortReason(options.abortSignal));
          }),
        );
        if (subscription.closed) return;
        subscription.add(
          streamModel(model, request).subscribe({
            next: (event) => {
              switch (event.type) {
                case 'reset':
                  content = []; // nothing was delivered: the next attempt's answer replaces it
                  open = undefined;
                  return;
                case 'reasoning-delta':
                case 'text-delta':
                  append(event.type === 'text-delta' ? 'text' : 'reasoning', event.text);
                  return;
                case 'reasoning-end': {
                  const providerMetadata = sealMetadata(event);
                  if (open?.type === 'reasoning') {
                    if (providerMetadata !== undefined) open.providerMetadata = providerMetadata;
                  } else if (providerMetadata !== undefined) {
                    content.push({ type: 'reasoning', text: '', providerMetadata }); // a block of no text (redacted, or a seal alone)
                  } else return; // an unsigned end of no reasoning: nothing to keep
                  open = undefined;
                  return;
                }
                case 'tool-call':
                  content.push(v3ToolCall(event));
                  open = undefined;
                  return;
                case 'finish':
                  subscription.unsubscribe();
                  resolve({
                    content,
                    finishReason: v3Reason(event.reason),
                    usage: v3Usage(event.usage),
                    warnings,
                    request: { body: { messages: request.messages, tools: request.tools } },
                  });
              }
            },
            error: (error: unknown) => {
              subscription.unsubscribe();
              reject(error);
            },
          }),
        );
      });
    },
  };
}
