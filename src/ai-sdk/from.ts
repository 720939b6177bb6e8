/**
 * {@link fromAiSdk}: an AI SDK language model (spec v2, v3, v4) as an rxheal {@link Model} — its
 * options and the model types it takes, our conversation and tools as an AI SDK prompt, and the
 * read loop of one `doStream` call (its parts decoded by `partDecoder.ts`).
 *
 * @module
 */
import type {
  LanguageModelV2,
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3FunctionTool,
  LanguageModelV3Message,
  LanguageModelV3Prompt,
  LanguageModelV3ProviderTool,
  LanguageModelV3ToolApprovalResponsePart,
  LanguageModelV3ToolResultOutput,
  LanguageModelV3ToolResultPart,
  SharedV3ProviderOptions,
} from '@ai-sdk/provider';
import { Observable, throwError } from 'rxjs';
import { InvalidOptionError } from '../core/errors/errors.js';
import type { Message, ToolCall, TurnEvent } from '../core/events/events.js';
import { toolParameters, type Model, type ToolChoice, type ToolSpec } from '../core/model/model.js';
import { requestMaxOutputTokens } from '../core/model/outputTokens.js';
import { requestPromptCacheKey } from '../core/model/promptCacheKey.js';
import { check, NonEmptyString, validateOptions } from '../core/errors/options.js';
import { PlainObject } from '../providers/providerOptions.js';
import { isObject } from '../adapters/common.js';
import { APPROVAL_METADATA, PartDecoder } from './partDecoder.js';
import { isProviderTool } from './providerApproval.js';
import { sealMetadata } from './seal.js';
import { CALL_SETTINGS, REASONING_EFFORTS, TAKES_SETTINGS, type AiSdkCallSettings, type RequestWithSettings } from './settings.js';

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
   * call, when it reaches this model through {@link toAiSdk}, win over these; so does a
   * request's `maxOutputTokens` (per request) over `settings.maxOutputTokens`.
   */
  readonly settings?: AiSdkCallSettings;
  /**
   * Tools the provider runs itself, by name as in `streamText`'s `tools`, sent with every request
   * besides the run's function tools: `{ mcp: openai.tools.mcp({ …, requireApproval: 'always' }) }`,
   * `{ web_search: openai.tools.webSearch() }`… Their calls and results are the provider's
   * (skipped), except a call that waits for approval: see {@link providerToolApproval}.
   */
  readonly providerTools?: Readonly<Record<string, { readonly type: 'provider'; readonly id: string; readonly args?: unknown }>>;
}

function toolResultOutput(message: Extract<Message, { role: 'tool' }>): LanguageModelV3ToolResultOutput {
  return message.isError ? { type: 'error-text', value: message.content } : { type: 'text', value: message.content };
}

/** The approval id a tool call of ours carries when it stands for a provider's call waiting for approval (see `PartDecoder`). */
function approvalIdOf(call: ToolCall): string | undefined {
  const ours = isObject(call.providerMetadata) ? call.providerMetadata[APPROVAL_METADATA] : undefined;
  return isObject(ours) && typeof ours['approvalId'] === 'string' ? ours['approvalId'] : undefined;
}

/** A tool call's metadata as the part's `providerOptions`, without our approval mark. */
function callOptions(call: ToolCall): SharedV3ProviderOptions | undefined {
  if (!isObject(call.providerMetadata)) return undefined;
  // eslint-disable-next-line @typescript-eslint/no-unused-vars -- our mark, not the provider's
  const { [APPROVAL_METADATA]: _ours, ...rest } = call.providerMetadata;
  return Object.keys(rest).length > 0 ? (rest as SharedV3ProviderOptions) : undefined;
}

/**
 * Our conversation as an AI SDK prompt (the same in spec v2, v3 and v4 for text and tools). A
 * provider's call that waited for approval goes back as the provider's own call
 * (`providerExecuted`), and its tool message as the answer: `tool-approval-response`, approved
 * unless the message is an error (a denial, or a run with nobody to ask), whose text is the reason.
 */
function toPrompt(messages: readonly Message[]): LanguageModelV3Prompt {
  const prompt: LanguageModelV3Message[] = [];
  /** The approval ids of the provider's calls of the conversation, by call id. */
  const approvals = new Map<string, string>();
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
          const approvalId = approvalIdOf(call);
          if (approvalId !== undefined) approvals.set(call.id, approvalId);
          const providerOptions = callOptions(call);
          const part = { type: 'tool-call' as const, toolCallId: call.id, toolName: call.name, input: call.args };
          const own = approvalId === undefined ? part : { ...part, providerExecuted: true };
          content.push(providerOptions ? { ...own, providerOptions } : own);
        }
        prompt.push({ role: 'assistant', content });
        break;
      }
      case 'tool': {
        const approvalId = approvals.get(message.toolCallId);
        const part: LanguageModelV3ToolResultPart | LanguageModelV3ToolApprovalResponsePart =
          approvalId === undefined
            ? { type: 'tool-result', toolCallId: message.toolCallId, toolName: message.toolName, output: toolResultOutput(message) }
            : message.isError
              ? { type: 'tool-approval-response', approvalId, approved: false, reason: message.content }
              : { type: 'tool-approval-response', approvalId, approved: true };
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

/** Our tools as function tools: not those that stand for the provider's own (`providerToolApproval`). */
function toTools(tools: readonly ToolSpec[]): LanguageModelV3FunctionTool[] {
  return tools
    .filter((tool) => !isProviderTool(tool.parameters))
    .map((tool) => ({
      type: 'function',
      name: tool.name,
      description: tool.description,
      inputSchema: toolParameters(tool) as LanguageModelV3FunctionTool['inputSchema'],
    }));
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

const ProviderTools = check(
  "the provider's tools by name ({ [name]: openai.tools.mcp(…) }, each { type: 'provider', id, args })",
  (u): u is NonNullable<FromAiSdkOptions['providerTools']> =>
    isObject(u) && Object.values(u).every((tool) => isObject(tool) && tool['type'] === 'provider' && typeof tool['id'] === 'string'),
);

const fromProps = { id: NonEmptyString, settings: PlainObject, providerTools: ProviderTools };

/**
 * An rxheal {@link Model} over any AI SDK language model — spec v2 (AI SDK 5), v3 (AI SDK 6) or
 * v4 (AI SDK 7, read by shape) — so it can sit in a `fallbackModel` with breakers, under
 * `retryWithBackoff`, in `runAgent`, or back in `streamText` through {@link toAiSdk}.
 *
 * Requests: our messages become the AI SDK prompt (system, user text, assistant text and
 * `tool-call` parts, `tool-result` parts with `{ type: 'text' | 'error-text' }` output), tools
 * `function` tools (`ToolSpec.parameters` as the input schema); `settings` (and the AI SDK call's
 * own, through `toAiSdk`) are sent along; a request's `promptCacheKey` as
 * `providerOptions.openai.promptCacheKey` (what `@ai-sdk/openai` sends as `prompt_cache_key`,
 * on Chat Completions and Responses alike), over a key the settings gave and with every other
 * provider option kept (a model of another provider ignores it); the context's signal is the
 * `abortSignal`.
 *
 * Events: `text-delta` parts → `text-delta`; tool calls from whole `tool-call` parts (input
 * parsed), or assembled from `tool-input-start/-delta/-end` when no `tool-call` part follows
 * (provider-executed tools are skipped: they are not ours to run); `finish` → one `finish` with
 * the reason (v2's string, v3's `unified`) and usage (`inputTokens.total` /
 * `outputTokens.total`, or v2's numbers). Sources, files and metadata parts are not part of an
 * rxheal turn and are skipped.
 *
 * Spec v4 (AI SDK 7), read as v3 plus: `ping` (a heartbeat) is ignored; `custom` parts
 * (provider-specific content) and `reasoning-file` parts (a file made while reasoning) are
 * dropped — an rxheal turn carries text, reasoning text and tool calls, nothing else — and so are
 * `text-end`'s `citations` (sources, like `source` parts); a tool input streamed with
 * `inputEncoding: 'text'` is the raw string its deltas make (not parsed as JSON; a whole
 * `tool-call` part's input is JSON in either encoding); the finish reason `interrupted` (the
 * stream ended without a completion signal: what `@ai-sdk/openai` 4 finishes a cut stream with)
 * is an `IncompleteStreamError`, healed like any cut stream. AI SDK 7's `reasoning` call option
 * (`settings.reasoning`, or the `streamText` call's through `toAiSdk`) is sent along: a v4 model
 * reads it, a v3 or v2 model ignores it (as under `ai@7` itself).
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
 * const model = fallbackModel([fromAiSdk(openai('gpt-4o')), fromAiSdk(anthropic('claude-sonnet-4-5'), { settings: { temperature: 0 } })], {
 *   breakers,
 *   midStream: 'continue',
 * });
 * runAgent({ model, tools: [], messages: [{ role: 'user', content: 'Hi' }] }).subscribe(console.log);
 * ```
 * @throws {InvalidOptionError} at once, for something that is not an AI SDK model object (a
 * model id string, a v1 model), or an invalid option (`settings.reasoning` not one of AI SDK 7's
 * values).
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
  if (settings.reasoning !== undefined && !REASONING_EFFORTS.includes(settings.reasoning)) {
    throw new InvalidOptionError(
      'fromAiSdk',
      'settings.reasoning',
      settings.reasoning,
      `one of ${REASONING_EFFORTS.map((r) => `'${r}'`).join(', ')} (AI SDK 7's reasoning call option)`,
    );
  }
  const tools = Object.entries(o.providerTools ?? {}).map(([name, tool]): LanguageModelV3ProviderTool => ({
    type: 'provider',
    id: tool.id as `${string}.${string}`,
    name,
    args: (tool.args ?? {}) as Record<string, unknown>,
  }));
  const doStream = (call: LanguageModelV3CallOptions) => (model as LanguageModelV3).doStream(call) as PromiseLike<{ readonly stream: ReadableStream<unknown> }>;
  const made: Model = {
    id,
    stream: (request, context) => {
      let maxOutputTokens: number | undefined;
      let promptCacheKey: string | undefined;
      try {
        maxOutputTokens = requestMaxOutputTokens('fromAiSdk', request);
        promptCacheKey = requestPromptCacheKey('fromAiSdk', request);
      } catch (error) {
        return throwError(() => error); // a request it can't send: an error of the call, no doStream
      }
      const given: AiSdkCallSettings = { ...settings, ...(request as RequestWithSettings)[CALL_SETTINGS] };
      const call: LanguageModelV3CallOptions = {
        ...given,
        ...(promptCacheKey === undefined ? {} : { providerOptions: withPromptCacheKey(given.providerOptions, promptCacheKey) }),
        prompt: toPrompt(request.messages),
        ...(tools.length > 0 || request.tools.length > 0 ? { tools: [...toTools(request.tools), ...tools] } : {}),
        ...(request.toolChoice !== undefined && request.tools.length > 0 ? { toolChoice: aiSdkToolChoice(request.toolChoice) } : {}),
        // the request's own limit, over the settings' (the model's default)
        ...(maxOutputTokens === undefined ? {} : { maxOutputTokens }),
        abortSignal: context.signal,
      };
      return decodeParts(() => doStream(call), new PartDecoder(id));
    },
  };
  Object.defineProperty(made, TAKES_SETTINGS, { value: true, enumerable: false });
  return made;
}

/**
 * The call's provider options with the request's prompt-cache key for OpenAI
 * (`providerOptions.openai.promptCacheKey`, what `@ai-sdk/openai` sends as `prompt_cache_key`):
 * every other option given kept, OpenAI's included; other providers ignore it.
 */
function withPromptCacheKey(given: SharedV3ProviderOptions | undefined, promptCacheKey: string): SharedV3ProviderOptions {
  return { ...given, openai: { ...given?.['openai'], promptCacheKey } };
}

/** Our tool choice in the AI SDK's words. */
function aiSdkToolChoice(choice: ToolChoice): NonNullable<LanguageModelV3CallOptions['toolChoice']> {
  return typeof choice === 'object' ? { type: 'tool', toolName: choice.tool } : { type: choice };
}
