/**
 * {@link toAiSdk}: an rxheal {@link Model} as an AI SDK `LanguageModelV3` — its options, the AI SDK
 * prompt and call as our request (with the call's settings for the `fromAiSdk` models inside),
 * `doStream` (its parts written by `partWriter.ts`) and `doGenerate`.
 *
 * @module
 */
import type {
  JSONValue,
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3Content,
  LanguageModelV3GenerateResult,
  LanguageModelV3Prompt,
  LanguageModelV3Reasoning,
  LanguageModelV3ToolResultOutput,
  SharedV3Warning,
} from '@ai-sdk/provider';
import { Subscription } from 'rxjs';
import { InvalidOptionError } from '../core/errors/errors.js';
import type { Message, ReasoningPart, ToolCall } from '../core/events/events.js';
import { isModel, streamModel, type Model, type ToolChoice, type ToolSpec } from '../core/model/model.js';
import { requestMaxOutputTokens } from '../core/model/outputTokens.js';
import { NonEmptyString, validateOptions } from '../core/errors/options.js';
import { abortReason, onAbort } from '../adapters/common.js';
import { PartWriter, partStream, v3Reason, v3ToolCall, v3Usage } from './partWriter.js';
import { subscribeWithin } from '../core/rx/operate.js';
import { sealed, sealMetadata, sealOf } from './seal.js';
import { CALL_SETTINGS, settingsIgnoredBy, settingsWarnings, type AiSdkCallSettings, type RequestWithSettings } from './settings.js';

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

function unsupported(at: string, what: string): never {
  throw new InvalidOptionError('toAiSdk', at, what, 'text, tool calls and tool results (rxheal models take text)');
}

/** Spec v4's tagged file data (`{ type: 'data' | 'url' | 'reference' | 'text', … }`), or v3's bare bytes, base64 string or URL. */
function fileDataKind(data: unknown): string {
  if (typeof data === 'object' && data !== null && !(data instanceof Uint8Array) && !(data instanceof URL)) {
    const type = (data as { type?: unknown }).type;
    return type === 'data'
      ? 'inline data'
      : type === 'url'
        ? 'a URL'
        : type === 'reference'
          ? 'a provider file reference'
          : type === 'text'
            ? 'inline text'
            : 'data';
  }
  return data instanceof URL ? 'a URL' : 'inline data';
}

/** A tool result's content part as text: text as is, a v4 file of inline text as its text, anything else named. */
function contentPartText(part: { readonly type: string; readonly [key: string]: unknown }): string {
  if (part.type === 'text') return String(part['text']);
  const data = part['data'] as { type?: unknown; text?: unknown } | undefined;
  if (part.type === 'file' && data?.type === 'text' && typeof data.text === 'string') return data.text;
  return typeof part['mediaType'] === 'string' ? `[${part.type} ${part['mediaType']}]` : `[${part.type}]`;
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
      // v3's text, file-data, file-url… parts; v4's text and file parts (tagged data)
      return { content: output.value.map((p) => contentPartText(p as unknown as { type: string })).join(''), isError: false };
    default:
      return { content: JSON.stringify(output), isError: false };
  }
}

/**
 * The AI SDK prompt (spec v3, or v4: as a v4 caller or `ai@7`'s conversion hands it) as our
 * conversation; what an assistant message holds that ours can't (v4's `custom` and
 * `reasoning-file` parts) is dropped with a warning in `warnings`.
 */
export function fromPrompt(prompt: LanguageModelV3Prompt, warnings: SharedV3Warning[]): Message[] {
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
          else unsupported(`prompt[${i}].content[${j}]`, `a ${String(part.type)} part (${part.mediaType}, ${fileDataKind(part.data)})`);
        });
        messages.push({ role: 'user', content: text });
        break;
      }
      case 'assistant': {
        let text = '';
        const toolCalls: ToolCall[] = [];
        const reasoning: ReasoningPart[] = [];
        message.content.forEach((part, j) => {
          const type: string = part.type;
          if (part.type === 'text') text += part.text;
          else if (part.type === 'tool-call') {
            if (part.providerExecuted !== true) {
              toolCalls.push(
                part.providerOptions
                  ? { id: part.toolCallId, name: part.toolName, args: part.input, providerMetadata: part.providerOptions }
                  : { id: part.toolCallId, name: part.toolName, args: part.input },
              );
            }
          } else if (part.type === 'reasoning') {
            // with its signature or redacted data (Anthropic's) and other providers' metadata,
            // which the model may need back; a part with none of it and no text says nothing
            const seal = sealOf(part.providerOptions);
            if (part.text !== '' || sealed(seal)) reasoning.push({ text: part.text, ...seal } satisfies ReasoningPart);
          } else if (part.type === 'file') unsupported(`prompt[${i}].content[${j}]`, `a file part (${part.mediaType}, ${fileDataKind(part.data)})`);
          else if (type === 'custom' || type === 'reasoning-file') {
            // spec v4: provider-specific content, a file made while reasoning — an rxheal
            // conversation has no place for them (the models inside get the rest of the message)
            const what =
              type === 'custom'
                ? `custom content '${String((part as { kind?: unknown }).kind)}'`
                : `a reasoning file (${String((part as { mediaType?: unknown }).mediaType)})`;
            warnings.push({
              type: 'unsupported',
              feature: `prompt[${i}].content[${j}]: ${what}`,
              details: 'rxheal conversations carry text, reasoning text, tool calls and tool results: the part was left out',
            });
          }
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
          messages.push(
            isError
              ? { role: 'tool', toolCallId: part.toolCallId, toolName: part.toolName, content, isError }
              : { role: 'tool', toolCallId: part.toolCallId, toolName: part.toolName, content },
          );
        }
        break;
    }
  });
  return messages;
}

/** The settings the call sets (the AI SDK passes every one, most as undefined: only those set travel). */
export function settingsOf(options: LanguageModelV3CallOptions): Record<string, unknown> {
  // eslint-disable-next-line @typescript-eslint/no-unused-vars -- what is not a setting
  const { prompt: _prompt, tools: _tools, abortSignal: _signal, includeRawChunks: _raw, toolChoice: _choice, ...rest } = options;
  const settings: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(rest)) if (value !== undefined) settings[key] = value;
  return settings;
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
  const { prompt, toolChoice } = options;
  // the output limit is the request's own too (every rxheal model sends it): no warning, not a setting
  const { maxOutputTokens, ...settings } = settingsOf(options);
  warnings.push(...settingsWarnings(settings, ignoredBy));
  // the tool choice is the request's own: every rxheal model gets it, not only fromAiSdk ones
  // the caller's OpenAI cache key is the request's own: every rxheal model sends it (a pool sticks to it)
  const openai = options.providerOptions?.['openai'];
  const cacheKey = typeof openai?.['promptCacheKey'] === 'string' ? openai['promptCacheKey'] : undefined;
  const choice: ToolChoice | undefined = toolChoice === undefined ? undefined : toolChoice.type === 'tool' ? { tool: toolChoice.toolName } : toolChoice.type;
  const request: RequestWithSettings = {
    messages: fromPrompt(prompt, warnings),
    tools,
    ...(choice === undefined ? {} : { toolChoice: choice }),
    ...(maxOutputTokens === undefined ? {} : { maxOutputTokens: maxOutputTokens as number }),
    ...(cacheKey === undefined ? {} : { promptCacheKey: cacheKey }),
    [CALL_SETTINGS]: settings as AiSdkCallSettings,
  };
  requestMaxOutputTokens('toAiSdk', request); // a limit no model could send: the call rejects
  return { request, warnings };
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
 * (`temperature`, `providerOptions`, `headers`…) travel with the request to
 * every `fromAiSdk` model inside — except `maxOutputTokens`, which becomes the request's own
 * `maxOutputTokens`, so every rxheal model sends it (as `max_completion_tokens`, `max_tokens`…;
 * not a positive integer: the call rejects with an `InvalidOptionError`), and
 * `providerOptions.openai.promptCacheKey`, which becomes the request's `promptCacheKey` too (every
 * rxheal model sends it; a `modelPool` keeps the conversation on one member by it); the other models (`openAICompatibleModel`, `fromLangChain`…,
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
 *
 * **AI SDK 7** takes this v3 model as it takes every v3 provider, converting on the fly (a v4
 * prompt's tagged file data untagged; v3 stream parts are v4 parts): the specs run every case of
 * this adapter under `ai` 6 and `ai` 7 with the same results. A v4 prompt handed to `doStream`
 * directly reads the same way — a file part (tagged data or not) is refused, naming its media type
 * and data; an assistant message's `custom` and `reasoning-file` parts are left out with an
 * `unsupported` warning each; a tool result's file of inline text is its text — and the call's
 * `reasoning` option travels with the other settings. Of AI SDK 7's own options: leave
 * `streamRetries` unset (its default): an error in this stream means the chain inside gave up
 * (or asked for a restart it can't express), and `streamRetries` would run the whole chain again
 * with the failed attempt's text left in the consumer's stream — a `fallbackModel` with
 * `midStream: 'continue'` inside continues it instead; `timeout` (total, step, first chunk, chunk
 * gap) aborts the call, which unsubscribes the chain (its requests aborted): an outer bound, not a
 * fallback — per-model deadlines belong inside, where they move on to the next model
 * (`fallbackModel`'s `perModel`: `timeout({ first, each })` before `retryWithBackoff`).
 * `doGenerate` collects the stream — text, `reasoning` content (with its seal as provider
 * metadata), tool calls; a `reset` there just discards what was collected — and rejects with the
 * model's error. Aborting the call's `abortSignal`, or cancelling the stream, unsubscribes: the
 * model's requests are aborted.
 *
 * **Agent frameworks** take it as they take any AI SDK model: the OpenAI Agents SDK through
 * `aisdk(toAiSdk(…))` (`@openai/agents-extensions`) — wrap that in `withRxhealRetryAdvice` (`rxheal/ai-sdk`),
 * so the runner's retry never re-runs the chain — and Mastra as an `Agent`'s `model` (leave its
 * `maxRetries` at 0: it re-runs a rejected `doGenerate`, the whole chain).
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
      const stream = partStream(options.abortSignal, warnings, (controller, lifetime) =>
        subscribeWithin(lifetime, streamModel(model, request), new PartWriter(controller, model.id, lifetime)),
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
