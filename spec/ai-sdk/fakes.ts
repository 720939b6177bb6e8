/**
 * What the rxheal/ai-sdk specs (from.spec.ts, to.spec.ts) share: AI SDK stream parts, mock and
 * hand-written models (v2; v3 or v4 by the kit, one that hangs), recorded provider streams
 * (Anthropic's thinking, Gemini's thought signatures), a scripted rxheal model, and the real
 * providers of a kit (AI SDK 6 or 7: spec/support/kits.ts) pointed at rxheal/server.
 */
import type {
  LanguageModelV2,
  LanguageModelV2StreamPart,
  LanguageModelV3FinishReason,
  LanguageModelV3StreamPart,
  LanguageModelV3Usage,
} from '@ai-sdk/provider';
import type { TextStreamPart, ToolSet } from 'ai';
import { simulateReadableStream, type MockLanguageModelV3 } from 'ai/test';
import { Observable } from 'rxjs';
import type { TurnEvent } from '../../src/core/events/events.js';
import type { Model } from '../../src/core/model/model.js';
import type { LocalProvider } from '../../src/server/index.js';
import type { AiSdkKit } from '../support/kits.js';
import { sseBody } from '../support/providerFakes.js';

export const usage = (input: number, output: number): LanguageModelV3Usage => ({
  inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: output, text: output, reasoning: 0 },
});
export const reason = (unified: LanguageModelV3FinishReason['unified'], raw: string = unified): LanguageModelV3FinishReason => ({ unified, raw });
export const finish = (unified: LanguageModelV3FinishReason['unified'] = 'stop', u = usage(10, 3)): LanguageModelV3StreamPart => ({
  type: 'finish',
  finishReason: reason(unified),
  usage: u,
});
export const text = (...deltas: string[]): LanguageModelV3StreamPart[] => [
  { type: 'text-start', id: 't' },
  ...deltas.map((delta): LanguageModelV3StreamPart => ({ type: 'text-delta', id: 't', delta })),
  { type: 'text-end', id: 't' },
];

/** A recorded-style Anthropic stream with extended thinking: a signed thinking block, a redacted one, a tool call. */
export const ANTHROPIC_THINKING_SSE = sseBody(
  {
    type: 'message_start',
    message: {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 12, output_tokens: 1 },
    },
  },
  { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'The user wants ' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'the weather in Paris.' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'EqQBCgIYAhIM1gbcDa' } },
  { type: 'content_block_stop', index: 0 },
  { type: 'content_block_start', index: 1, content_block: { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix' } },
  { type: 'content_block_stop', index: 1 },
  { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} } },
  { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"city":"Paris"}' } },
  { type: 'content_block_stop', index: 2 },
  { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 40 } },
  { type: 'message_stop' },
);

/** Gemini 3's streamGenerateContent (alt=sse), as it records a function call: its thought signature rides on the call's part. */
export const GEMINI_SIGNATURE = 'CiQBVKhc7mNvB2l0aGluZy1zaWduYXR1cmUtZm9yLXRoZS1jYWxs';
export const geminiChunk = (parts: unknown[], finish?: string) => ({
  candidates: [{ content: { parts, role: 'model' }, index: 0, ...(finish ? { finishReason: finish } : {}) }],
  usageMetadata: { promptTokenCount: 20, candidatesTokenCount: 8, totalTokenCount: 33, thoughtsTokenCount: 5 },
  modelVersion: 'gemini-3-pro-preview',
  responseId: 'r1',
});
export const GEMINI_THOUGHT_SIGNATURE = 'EpIBCo8BAdHtim9thought-signature';
export const GEMINI_CALL_SSE = sseBody(
  geminiChunk([{ text: 'Paris weather: call the tool.', thought: true, thoughtSignature: GEMINI_THOUGHT_SIGNATURE }]),
  geminiChunk([{ text: 'Let me check.' }]),
  geminiChunk([{ functionCall: { name: 'get_weather', args: { city: 'Paris', units: 'celsius' } }, thoughtSignature: GEMINI_SIGNATURE }], 'STOP'),
);
export const GEMINI_ANSWER_SSE = sseBody(geminiChunk([{ text: 'It is 22 °C and sunny in Paris.' }], 'STOP'));

/** A hand-written spec v2 model (AI SDK 5) streaming these parts; records each call's options. */
export function v2Model(parts: LanguageModelV2StreamPart[], calls: unknown[] = []): LanguageModelV2 {
  return {
    specificationVersion: 'v2',
    provider: 'old',
    modelId: 'm',
    supportedUrls: {},
    doGenerate: () => Promise.reject(new Error('not used')),
    doStream: (options) => {
      calls.push(options);
      return Promise.resolve({ stream: simulateReadableStream({ chunks: parts, initialDelayInMs: null, chunkDelayInMs: null }) });
    },
  };
}

/** Every part of a streamText call's fullStream. */
export async function fullStream<T extends ToolSet>(result: { fullStream: AsyncIterable<TextStreamPart<T>> }): Promise<TextStreamPart<T>[]> {
  const parts: TextStreamPart<T>[] = [];
  for await (const part of result.fullStream) parts.push(part);
  return parts;
}

/** A scripted rxheal model: the events, or an observable per call. */
export const scripted = (id: string, events: () => Observable<TurnEvent> | TurnEvent[]): Model & { calls: number } => {
  const model = {
    id,
    calls: 0,
    stream: () => {
      model.calls++;
      return events();
    },
  };
  return model;
};

/** A stream part of either spec the kits implement (v4's own parts typed loosely: they are read by shape). */
export type AnyStreamPart = LanguageModelV3StreamPart | { readonly type: 'ping' | 'custom' | 'reasoning-file'; readonly [key: string]: unknown };

/** The models and providers of one AI SDK kit (6 or 7). */
export function fakes(kit: AiSdkKit) {
  return {
    /** A mock model of the kit's spec (v3 or v4) streaming these parts (a fresh stream per call, no timers). */
    mock(...parts: AnyStreamPart[]): MockLanguageModelV3 {
      return new kit.MockLanguageModel({
        doStream: () =>
          Promise.resolve({
            stream: kit.simulateReadableStream({
              chunks: [{ type: 'stream-start', warnings: [] }, ...(parts as LanguageModelV3StreamPart[])],
              initialDelayInMs: null,
              chunkDelayInMs: null,
            }),
          }),
      });
    },
    /** A mock model whose stream sends `parts`, then hangs until cancelled; records the cancel. */
    hanging(parts: LanguageModelV3StreamPart[]): { model: MockLanguageModelV3; state: { cancelled: boolean } } {
      const state = { cancelled: false };
      const model = new kit.MockLanguageModel({
        doStream: () =>
          Promise.resolve({
            stream: new ReadableStream<LanguageModelV3StreamPart>({
              start(controller) {
                for (const part of parts) controller.enqueue(part);
              },
              pull: () => new Promise<void>(() => undefined),
              cancel() {
                state.cancelled = true;
              },
            }),
          }),
      });
      return { model, state };
    },
    /** The kit's @ai-sdk/anthropic provider, served by this fetch. */
    claudeOn: (fetch: typeof globalThis.fetch) => kit.createAnthropic({ baseURL: 'http://x.test/v1', apiKey: 'k', fetch })('claude-sonnet-4-5'),
    /** The kit's @ai-sdk/openai-compatible provider, pointed at a local provider. */
    compat: (s: LocalProvider, name = 'local') => kit.createOpenAICompatible({ name, baseURL: s.openAIBaseURL, includeUsage: true })('local'),
    /** The kit's @ai-sdk/anthropic provider, pointed at a local provider. */
    claude: (s: LocalProvider) => kit.createAnthropic({ baseURL: `${s.anthropicBaseURL}/v1`, apiKey: 'test' })('local'),
  };
}
