/**
 * fromAiSdk (src/ai-sdk/from.ts, partDecoder.ts): AI SDK 6 models (`MockLanguageModel` from
 * `ai/test` with null delays), hand-written v2 and v4 models, and the real
 * `@ai-sdk/openai-compatible`, `@ai-sdk/anthropic` and `@ai-sdk/google` providers pointed at
 * rxheal/server or recorded streams, as rxheal models.
 */
import type { LanguageModelV2StreamPart, LanguageModelV3StreamPart, LanguageModelV3Usage } from '@ai-sdk/provider';
import { expect } from 'chai';
import * as t from 'io-ts';
import { from, lastValueFrom, toArray } from 'rxjs';
import { fromAiSdk, toAiSdk, type LanguageModelV4Like } from '../../src/ai-sdk/index.js';
import { classifyError } from '../../src/core/errors/classify.js';
import { HttpError, IncompleteStreamError, InvalidOptionError, MalformedStreamError } from '../../src/core/errors/errors.js';
import type { TurnEvent } from '../../src/core/events/events.js';
import { streamModel, type Model, type ModelRequest } from '../../src/core/model/model.js';
import { fallbackModel } from '../../src/sources/fallbackModel.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';
import type { LocalProvider } from '../../src/server/index.js';
import { AI_SDK_KITS, reportSkippedMajors } from '../support/kits.js';
import {
  afterWeather,
  ask,
  cancelAfterFirstDelta,
  localProviders,
  RIVERS,
  RIVERS_ANSWER,
  textOf,
  turn,
  turnError,
  warmCacheTurns,
  WEATHER_TOOL,
} from '../support/interop.js';
import { chatChunk, fixtureFetch, OPENROUTER_ERROR_502, sseBody } from '../support/providerFakes.js';
import {
  ANTHROPIC_THINKING_SSE,
  GEMINI_ANSWER_SSE,
  GEMINI_CALL_SSE,
  GEMINI_SIGNATURE,
  GEMINI_THOUGHT_SIGNATURE,
  fakes,
  finish,
  text,
  usage,
  v2Model,
} from './fakes.js';

describe('rxheal/ai-sdk', function () {
  this.timeout(20_000);
  const providers = localProviders();
  let server: LocalProvider;
  let backup: LocalProvider;
  let slow: LocalProvider;
  before(() => ({ server, backup, slow } = providers));

  for (const kit of AI_SDK_KITS)
    describe(`fromAiSdk: AI SDK model → rxheal Model — ${kit.label}`, () => {
      const { mock, hanging, claudeOn, compat, claude } = fakes(kit);
      const { MockLanguageModel, simulateReadableStream, APICallError, createOpenAI, createGoogleGenerativeAI, streamText, tool, jsonSchema, stepCountIs } =
        kit;

      describe('text, tool calls, usage, finish reasons', () => {
        it('text deltas, then one finish with the unified reason and total usage', async () => {
          const events = await turn(fromAiSdk(mock({ type: 'response-metadata', id: 'r' }, ...text('Hello', ' world'), finish())), ask('Hi'));
          expect(events).to.deep.equal([
            { type: 'text-delta', text: 'Hello' },
            { type: 'text-delta', text: ' world' },
            { type: 'finish', reason: 'stop', usage: { inputTokens: 10, outputTokens: 3 } },
          ]);
        });

        it('a tool call assembled from tool-input-start/-delta/-end when no tool-call part follows, arguments parsed, before the finish', async () => {
          const model = mock(
            { type: 'tool-input-start', id: 'c1', toolName: 'get_weather' },
            { type: 'tool-input-delta', id: 'c1', delta: '{"city":' },
            { type: 'tool-input-delta', id: 'c1', delta: '"Paris"}' },
            { type: 'tool-input-end', id: 'c1' },
            finish('tool-calls'),
          );
          expect(await turn(fromAiSdk(model), ask('Weather?', [WEATHER_TOOL]))).to.deep.equal([
            { type: 'tool-call', id: 'c1', name: 'get_weather', args: { city: 'Paris' } },
            { type: 'finish', reason: 'tool-calls', usage: { inputTokens: 10, outputTokens: 3 } },
          ]);
        });

        it('tool-input-* followed by the whole tool-call part: one tool call, not two; a whole tool-call part alone: one', async () => {
          const model = mock(
            { type: 'tool-input-start', id: 'c1', toolName: 'get_weather' },
            { type: 'tool-input-delta', id: 'c1', delta: '{"city":"Paris"}' },
            { type: 'tool-input-end', id: 'c1' },
            { type: 'tool-call', toolCallId: 'c1', toolName: 'get_weather', input: '{"city":"Paris"}' },
            { type: 'tool-call', toolCallId: 'c2', toolName: 'get_weather', input: '{"city":"Oslo"}' },
            finish('tool-calls'),
          );
          const events = await turn(fromAiSdk(model), ask('Weather?', [WEATHER_TOOL]));
          expect(events.filter((e) => e.type === 'tool-call')).to.deep.equal([
            { type: 'tool-call', id: 'c1', name: 'get_weather', args: { city: 'Paris' } },
            { type: 'tool-call', id: 'c2', name: 'get_weather', args: { city: 'Oslo' } },
          ]);
        });

        it('tool calls the provider runs itself (providerExecuted) are not ours to run: skipped, with their results', async () => {
          const model = mock(
            { type: 'tool-input-start', id: 's1', toolName: 'web_search', providerExecuted: true },
            { type: 'tool-input-delta', id: 's1', delta: '{}' },
            { type: 'tool-input-end', id: 's1' },
            { type: 'tool-call', toolCallId: 's1', toolName: 'web_search', input: '{}', providerExecuted: true },
            { type: 'tool-result', toolCallId: 's1', toolName: 'web_search', result: { hits: 1 } },
            ...text('Found it.'),
            finish(),
          );
          expect(await turn(fromAiSdk(model), ask('Search'))).to.deep.equal([
            { type: 'text-delta', text: 'Found it.' },
            { type: 'finish', reason: 'stop', usage: { inputTokens: 10, outputTokens: 3 } },
          ]);
        });

        it('arguments that are not valid JSON are kept as text (the tool’s codec rejects them, reflection can correct them)', async () => {
          const model = mock({ type: 'tool-call', toolCallId: 'c1', toolName: 'get_weather', input: '{"city":"Par' }, finish('tool-calls'));
          expect((await turn(fromAiSdk(model), ask('Weather?')))[0]).to.deep.equal({ type: 'tool-call', id: 'c1', name: 'get_weather', args: '{"city":"Par' });
        });

        for (const [unified, ours] of [
          ['stop', 'stop'],
          ['length', 'length'],
          ['content-filter', 'content-filter'],
          ['tool-calls', 'tool-calls'],
          ['other', 'other'],
        ] as const) {
          it(`finish reason '${unified}' → '${ours}'`, async () => {
            const events = await turn(fromAiSdk(mock(...text('x'), finish(unified))), ask('Hi'));
            expect(events.at(-1)).to.deep.include({ type: 'finish', reason: ours });
          });
        }

        it('usage without totals: the sum of its parts (input: noCache + cacheRead + cacheWrite; output: text + reasoning), the shares kept', async () => {
          const parts: LanguageModelV3Usage = {
            inputTokens: { total: undefined, noCache: 5, cacheRead: 20, cacheWrite: 7 },
            outputTokens: { total: undefined, text: 3, reasoning: 4 },
          };
          expect((await turn(fromAiSdk(mock(...text('x'), finish('stop', parts))), ask('Hi'))).at(-1)).to.deep.equal({
            type: 'finish',
            reason: 'stop',
            usage: { inputTokens: 32, outputTokens: 7, cachedInputTokens: 20, cacheWriteTokens: 7, reasoningTokens: 4 },
          });
        });

        it('usage the provider did not report: a finish without usage', async () => {
          const none: LanguageModelV3Usage = {
            inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
            outputTokens: { total: undefined, text: undefined, reasoning: undefined },
          };
          expect((await turn(fromAiSdk(mock(...text('x'), finish('stop', none))), ask('Hi'))).at(-1)).to.deep.equal({ type: 'finish', reason: 'stop' });
        });

        it('sources, files, metadata and raw parts are not part of a turn: skipped', async () => {
          const model = mock(
            { type: 'source', sourceType: 'url', id: 's', url: 'https://example.com' },
            { type: 'raw', rawValue: { x: 1 } },
            ...text('Answer'),
            finish(),
          );
          expect(textOf(await turn(fromAiSdk(model), ask('Hi')))).to.equal('Answer');
        });

        it('a spec v2 model (AI SDK 5: string finish reason, flat usage), hand-written', async () => {
          const parts: LanguageModelV2StreamPart[] = [
            { type: 'stream-start', warnings: [] },
            { type: 'text-start', id: 't' },
            { type: 'text-delta', id: 't', delta: 'v2 says hi' },
            { type: 'text-end', id: 't' },
            { type: 'finish', finishReason: 'other', usage: { inputTokens: 4, outputTokens: 2, totalTokens: 6 } },
          ];
          const calls: unknown[] = [];
          const model = fromAiSdk(v2Model(parts, calls));
          expect(model.id).to.equal('old:m');
          expect(await turn(model, ask('Hi'))).to.deep.equal([
            { type: 'text-delta', text: 'v2 says hi' },
            { type: 'finish', reason: 'other', usage: { inputTokens: 4, outputTokens: 2 } },
          ]);
          expect(calls[0]).to.have.nested.property('prompt[0].role', 'user');
        });

        it('a spec v4 model (AI SDK 7), read by its shape', async () => {
          const v4: LanguageModelV4Like = {
            specificationVersion: 'v4',
            provider: 'new',
            modelId: 'm',
            doStream: () =>
              Promise.resolve({ stream: simulateReadableStream<unknown>({ chunks: [...text('v4'), finish()], initialDelayInMs: null, chunkDelayInMs: null }) }),
          };
          expect(textOf(await turn(fromAiSdk(v4), ask('Hi')))).to.equal('v4');
        });
      });

      // AI SDK 7's LanguageModelV4 parts (read by shape: the same on either kit's mock)
      describe('spec v4 stream parts (AI SDK 7)', () => {
        it('ping (a heartbeat) is ignored, never an error, wherever it comes', async () => {
          const model = mock(
            { type: 'ping' },
            { type: 'text-start', id: 't' },
            { type: 'ping' },
            { type: 'text-delta', id: 't', delta: 'alive' },
            { type: 'ping' },
            { type: 'text-end', id: 't' },
            finish(),
            { type: 'ping' },
          );
          expect(await turn(fromAiSdk(model), ask('Hi'))).to.deep.equal([
            { type: 'text-delta', text: 'alive' },
            { type: 'finish', reason: 'stop', usage: { inputTokens: 10, outputTokens: 3 } },
          ]);
        });

        it("custom parts (provider-specific content) and reasoning-file parts are dropped by fromAiSdk's rule: the turn carries text, reasoning and tool calls", async () => {
          const model = mock(
            { type: 'reasoning-start', id: 'r' },
            { type: 'reasoning-delta', id: 'r', delta: 'Sketching.' },
            { type: 'reasoning-file', mediaType: 'image/png', data: { type: 'data', data: 'iVBORw0KGgo=' } },
            { type: 'reasoning-end', id: 'r' },
            { type: 'custom', kind: 'openai.compaction', providerMetadata: { openai: { itemId: 'cmp_1' } } },
            ...text('Done.'),
            finish(),
          );
          expect(await turn(fromAiSdk(model), ask('Draw'))).to.deep.equal([
            { type: 'reasoning-delta', text: 'Sketching.' },
            { type: 'reasoning-end' },
            { type: 'text-delta', text: 'Done.' },
            { type: 'finish', reason: 'stop', usage: { inputTokens: 10, outputTokens: 3 } },
          ]);
        });

        it("text-end's citations are sources: the text passes whole, the citations are not part of the turn", async () => {
          const source = { type: 'source', sourceType: 'url', id: 's1', url: 'https://example.com/nile' };
          const model = mock(
            { type: 'text-start', id: 't' },
            { type: 'text-delta', id: 't', delta: 'The Nile is long.' },
            { type: 'text-end', id: 't', citations: [{ source, startIndex: 0, endIndex: 17, citedText: 'The Nile is long' }] } as never,
            finish(),
          );
          expect(await turn(fromAiSdk(model), ask('Nile?'))).to.deep.equal([
            { type: 'text-delta', text: 'The Nile is long.' },
            { type: 'finish', reason: 'stop', usage: { inputTokens: 10, outputTokens: 3 } },
          ]);
        });

        it("a tool input streamed with inputEncoding 'text' is the raw string its deltas make (not parsed); 'json' (or none) is parsed", async () => {
          const patch = '*** Begin Patch\n*** Update File: a.txt\n+{"not": json\n*** End Patch';
          const model = mock(
            { type: 'tool-input-start', id: 'p', toolName: 'apply_patch', inputEncoding: 'text' } as never,
            { type: 'tool-input-delta', id: 'p', delta: patch.slice(0, 20) },
            { type: 'tool-input-delta', id: 'p', delta: patch.slice(20) },
            { type: 'tool-input-end', id: 'p' },
            { type: 'tool-input-start', id: 'j', toolName: 'get_weather', inputEncoding: 'json' } as never,
            { type: 'tool-input-delta', id: 'j', delta: '{"city":"Oslo"}' },
            { type: 'tool-input-end', id: 'j' },
            finish('tool-calls'),
          );
          expect((await turn(fromAiSdk(model), ask('Patch it', [WEATHER_TOOL]))).filter((e) => e.type === 'tool-call')).to.deep.equal([
            { type: 'tool-call', id: 'p', name: 'apply_patch', args: patch },
            { type: 'tool-call', id: 'j', name: 'get_weather', args: { city: 'Oslo' } },
          ]);
          // the whole tool-call part's input is JSON in either encoding: a JSON string is the raw input
          const whole = mock(
            { type: 'tool-input-start', id: 'p', toolName: 'apply_patch', inputEncoding: 'text' } as never,
            { type: 'tool-input-delta', id: 'p', delta: patch },
            { type: 'tool-input-end', id: 'p' },
            { type: 'tool-call', toolCallId: 'p', toolName: 'apply_patch', input: JSON.stringify(patch) },
            finish('tool-calls'),
          );
          expect((await turn(fromAiSdk(whole), ask('Patch it'))).filter((e) => e.type === 'tool-call')).to.deep.equal([
            { type: 'tool-call', id: 'p', name: 'apply_patch', args: patch },
          ]);
        });

        it("finish reason 'interrupted' (the stream ended without a completion signal): an IncompleteStreamError, retryable and a fallback — never a short answer", async () => {
          const interrupted = {
            type: 'finish',
            finishReason: { unified: 'interrupted', raw: undefined },
            usage: usage(10, 3),
          } as unknown as LanguageModelV3StreamPart;
          const error = await turnError(fromAiSdk(mock(...text('Hel'), interrupted)), ask('Hi'));
          expect(error).to.be.instanceOf(IncompleteStreamError).with.property('message').that.contains('interrupted');
          expect(classifyError(error)).to.deep.include({ retryable: true, fallback: true });
        });

        it("an interrupted stream heals like any cut stream: fallbackModel's 'continue' has the backup finish the answer, nothing lost or doubled", async () => {
          const interrupted = {
            type: 'finish',
            finishReason: { unified: 'interrupted', raw: undefined },
            usage: usage(10, 3),
          } as unknown as LanguageModelV3StreamPart;
          const primary = fromAiSdk(mock(...text('The Nile ', 'is'), interrupted), { id: 'primary' });
          const backup = fromAiSdk(mock(...text(' 6,650 km long.'), finish()), { id: 'backup' });
          const events = await turn(fallbackModel([primary, backup], { midStream: 'continue' }), ask('How long is the Nile?'));
          expect(textOf(events)).to.equal('The Nile is 6,650 km long.');
          expect(events.filter((e) => e.type === 'reset')).to.deep.equal([]);
        });

        it("the reasoning setting (AI SDK 7's call option) is sent along; a value AI SDK 7 doesn't know is refused at once, naming the option", async () => {
          const model = mock(...text('ok'), finish());
          await turn(fromAiSdk(model, { settings: { reasoning: 'high' } }), ask('Hi'));
          expect(model.doStreamCalls[0]).to.have.property('reasoning', 'high');
          expect(() => fromAiSdk(model, { settings: { reasoning: 'extreme' as never } })).to.throw(InvalidOptionError, /settings\.reasoning.*'max'/);
        });
      });

      describe('reasoning', () => {
        it("reasoning parts → reasoning-delta events, then a reasoning-end with the signature @ai-sdk/anthropic sends on a delta's providerMetadata; not text", async () => {
          const model = mock(
            { type: 'reasoning-start', id: '0' },
            { type: 'reasoning-delta', id: '0', delta: 'The user wants' },
            { type: 'reasoning-delta', id: '0', delta: ' Paris.' },
            { type: 'reasoning-delta', id: '0', delta: '', providerMetadata: { anthropic: { signature: 'sig-1' } } },
            { type: 'reasoning-end', id: '0' },
            ...text('Sunny.'),
            finish(),
          );
          const events = await turn(fromAiSdk(model), ask('Weather?'));
          expect(events).to.deep.equal([
            { type: 'reasoning-delta', text: 'The user wants' },
            { type: 'reasoning-delta', text: ' Paris.' },
            { type: 'reasoning-end', signature: 'sig-1' },
            { type: 'text-delta', text: 'Sunny.' },
            { type: 'finish', reason: 'stop', usage: { inputTokens: 10, outputTokens: 3 } },
          ]);
          expect(textOf(events)).to.equal('Sunny.');
        });

        it('a signature on the reasoning-end part (or its start) is read too', async () => {
          const model = mock(
            { type: 'reasoning-start', id: 'a' },
            { type: 'reasoning-delta', id: 'a', delta: 'Hm.' },
            { type: 'reasoning-end', id: 'a', providerMetadata: { anthropic: { signature: 'on-end' } } },
            { type: 'reasoning-start', id: 'b', providerMetadata: { anthropic: { signature: 'on-start' } } },
            { type: 'reasoning-delta', id: 'b', delta: 'Ok.' },
            { type: 'reasoning-end', id: 'b' },
            finish(),
          );
          expect((await turn(fromAiSdk(model), ask('Hi'))).filter((e) => e.type === 'reasoning-end')).to.deep.equal([
            { type: 'reasoning-end', signature: 'on-end' },
            { type: 'reasoning-end', signature: 'on-start' },
          ]);
        });

        it('a redacted block (@ai-sdk/anthropic: redactedData on the start, no deltas) → a reasoning-end with redactedData alone', async () => {
          const model = mock(
            { type: 'reasoning-start', id: '1', providerMetadata: { anthropic: { redactedData: 'EmwKAhgB' } } },
            { type: 'reasoning-end', id: '1' },
            ...text('Done.'),
            finish(),
          );
          expect(await turn(fromAiSdk(model), ask('Hi'))).to.deep.equal([
            { type: 'reasoning-end', redactedData: 'EmwKAhgB' },
            { type: 'text-delta', text: 'Done.' },
            { type: 'finish', reason: 'stop', usage: { inputTokens: 10, outputTokens: 3 } },
          ]);
        });

        it("unsigned reasoning (@ai-sdk/openai-compatible's reasoning_content) → deltas and an unsigned end; OpenAI's unsummarised reasoning (no text) → an end with its item as providerMetadata; a block with nothing at all is dropped", async () => {
          const model = mock(
            { type: 'reasoning-start', id: 'rs_1:0', providerMetadata: { openai: { itemId: 'rs_1', reasoningEncryptedContent: null } } },
            { type: 'reasoning-end', id: 'rs_1:0', providerMetadata: { openai: { itemId: 'rs_1', reasoningEncryptedContent: null } } },
            { type: 'reasoning-start', id: 'reasoning-0' },
            { type: 'reasoning-delta', id: 'reasoning-0', delta: 'Think' },
            { type: 'reasoning-end', id: 'reasoning-0' },
            { type: 'reasoning-start', id: 'empty' },
            { type: 'reasoning-end', id: 'empty' },
            ...text('Answer'),
            finish(),
          );
          expect(await turn(fromAiSdk(model), ask('Hi'))).to.deep.equal([
            { type: 'reasoning-end', providerMetadata: { openai: { itemId: 'rs_1', reasoningEncryptedContent: null } } },
            { type: 'reasoning-delta', text: 'Think' },
            { type: 'reasoning-end' },
            { type: 'text-delta', text: 'Answer' },
            { type: 'finish', reason: 'stop', usage: { inputTokens: 10, outputTokens: 3 } },
          ]);
        });

        it('overlapping reasoning ids: the first block streams, the second’s text waits and follows when the first ends — blocks and signatures never mixed', async () => {
          const model = mock(
            { type: 'reasoning-start', id: 'a' },
            { type: 'reasoning-start', id: 'b' },
            { type: 'reasoning-delta', id: 'a', delta: 'A1' },
            { type: 'reasoning-delta', id: 'b', delta: 'B1' },
            { type: 'reasoning-delta', id: 'a', delta: 'A2' },
            { type: 'reasoning-delta', id: 'b', delta: 'B2', providerMetadata: { anthropic: { signature: 'sig-b' } } },
            { type: 'reasoning-end', id: 'b' },
            { type: 'reasoning-delta', id: 'a', delta: 'A3' },
            { type: 'reasoning-end', id: 'a', providerMetadata: { anthropic: { signature: 'sig-a' } } },
            finish(),
          );
          expect((await turn(fromAiSdk(model), ask('Hi'))).slice(0, -1)).to.deep.equal([
            { type: 'reasoning-delta', text: 'A1' },
            { type: 'reasoning-delta', text: 'A2' },
            { type: 'reasoning-delta', text: 'A3' },
            { type: 'reasoning-end', signature: 'sig-a' },
            { type: 'reasoning-delta', text: 'B1B2' },
            { type: 'reasoning-end', signature: 'sig-b' },
          ]);
        });

        it('reasoning the provider never ended ends at the finish, before the tool calls, with the seal its parts carried', async () => {
          const model = mock(
            { type: 'reasoning-start', id: 'r' },
            { type: 'reasoning-delta', id: 'r', delta: 'Need weather.', providerMetadata: { anthropic: { signature: 'sig' } } },
            { type: 'tool-call', toolCallId: 'c1', toolName: 'get_weather', input: '{"city":"Oslo"}' },
            finish('tool-calls'),
          );
          expect(await turn(fromAiSdk(model), ask('Weather?', [WEATHER_TOOL]))).to.deep.equal([
            { type: 'reasoning-delta', text: 'Need weather.' },
            { type: 'tool-call', id: 'c1', name: 'get_weather', args: { city: 'Oslo' } },
            { type: 'reasoning-end', signature: 'sig' },
            { type: 'finish', reason: 'tool-calls', usage: { inputTokens: 10, outputTokens: 3 } },
          ]);
        });

        it('a spec v2 model’s reasoning parts (the same shape) are read alike', async () => {
          const model = v2Model([
            { type: 'reasoning-start', id: 'r' },
            { type: 'reasoning-delta', id: 'r', delta: 'v2 thinks', providerMetadata: { anthropic: { signature: 's2' } } },
            { type: 'reasoning-end', id: 'r' },
            { type: 'text-delta', id: 't', delta: 'v2' },
            { type: 'finish', finishReason: 'stop', usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 } },
          ]);
          expect((await turn(fromAiSdk(model), ask('Hi'))).slice(0, 2)).to.deep.equal([
            { type: 'reasoning-delta', text: 'v2 thinks' },
            { type: 'reasoning-end', signature: 's2' },
          ]);
        });

        it('requests: an assistant message’s reasoning goes first, as reasoning parts: signed and redacted with providerOptions.anthropic, unsigned as text', async () => {
          const model = mock(...text('ok'), finish());
          const request = afterWeather('call_1');
          const messages = request.messages.map((m) =>
            m.role === 'assistant'
              ? { ...m, reasoning: [{ text: 'Paris, celsius.', signature: 'sig-1' }, { text: '', redactedData: 'EmwK' }, { text: 'unsigned musing' }] }
              : m,
          );
          await turn(fromAiSdk(model), { ...request, messages });
          expect(model.doStreamCalls[0]!.prompt[2]).to.deep.equal({
            role: 'assistant',
            content: [
              { type: 'reasoning', text: 'Paris, celsius.', providerOptions: { anthropic: { signature: 'sig-1' } } },
              { type: 'reasoning', text: '', providerOptions: { anthropic: { redactedData: 'EmwK' } } },
              { type: 'reasoning', text: 'unsigned musing' },
              { type: 'tool-call', toolCallId: 'call_1', toolName: 'get_weather', input: { city: 'Paris', units: 'celsius' } },
            ],
          });
        });

        it('with thinking on against rxheal/server (which refuses a tool turn sent back without its reasoning, as the APIs do): @ai-sdk/openai-compatible (DeepSeek-style reasoning_content) and @ai-sdk/anthropic (signed thinking) complete a tool turn under runAgent', async () => {
          const thinkingOn = { type: 'enabled', budget_tokens: 1024 };
          const models: [string, Model][] = [
            ['openai-compatible', fromAiSdk(compat(server), { settings: { providerOptions: { local: { thinking: thinkingOn } } } })],
            ['anthropic', fromAiSdk(claude(server), { settings: { maxOutputTokens: 2048, providerOptions: { anthropic: { thinking: thinkingOn } } } })],
          ];
          for (const [name, model] of models) {
            const before = server.requests.length;
            const getWeather = defineTool({
              name: 'get_weather',
              description: 'Weather',
              args: t.type({ city: t.string, units: t.string }),
              execute: () => [{ temperature: 22, condition: 'sunny' }],
            });
            const events = await lastValueFrom(
              runAgent({ model, tools: [getWeather], messages: [{ role: 'user', content: "What's the weather in NYC?" }] }).pipe(toArray()),
            );
            expect(
              server.requests.slice(before).map((r) => r.status),
              name,
            ).to.deep.equal([200, 200]);
            expect(events.filter((e) => e.type === 'reasoning-delta').length, name).to.be.greaterThan(4);
            const last = events.at(-1);
            expect(last?.type === 'message' && last.message.content, name).to.equal('It is 22 °C and sunny in NYC.');
          }
        });

        it("the real @ai-sdk/google on a recorded Gemini 3 turn: the thought signatures of its reasoning and of its function call ride on our events and go back with them on the next request (no 'skip' sentinel)", async () => {
          const bodies = [GEMINI_CALL_SSE, GEMINI_ANSWER_SSE];
          const sent: { contents: { role: string; parts: Record<string, unknown>[] }[] }[] = [];
          const fetch = ((url: string, init: RequestInit) => {
            sent.push(JSON.parse(String(init.body)) as (typeof sent)[number]);
            return fixtureFetch(bodies[sent.length - 1]!).fetch(url, init);
          }) as typeof globalThis.fetch;
          const gemini = createGoogleGenerativeAI({ apiKey: 'k', fetch })('gemini-3-pro-preview');
          const getWeather = defineTool({
            name: 'get_weather',
            description: 'Weather',
            args: t.type({ city: t.string, units: t.string }),
            execute: () => [{ temperature: 22, condition: 'sunny' }],
          });
          const events = await lastValueFrom(
            runAgent({ model: fromAiSdk(gemini), tools: [getWeather], messages: [{ role: 'user', content: "What's the weather in Paris?" }] }).pipe(toArray()),
          );
          const call = events.find((e) => e.type === 'tool-call');
          expect(call).to.deep.include({
            name: 'get_weather',
            args: { city: 'Paris', units: 'celsius' },
            providerMetadata: { google: { thoughtSignature: GEMINI_SIGNATURE } },
          });
          const last = events.at(-1);
          expect(last?.type === 'message' && last.message.content).to.equal('It is 22 °C and sunny in Paris.');
          expect(sent).to.have.length(2);
          const model = sent[1]!.contents.find((c) => c.role === 'model')!;
          const fn = model.parts.find((p) => 'functionCall' in p)!;
          expect(fn['thoughtSignature']).to.equal(GEMINI_SIGNATURE);
          expect(model.parts.find((p) => p['thought'] === true)).to.deep.equal({
            text: 'Paris weather: call the tool.',
            thought: true,
            thoughtSignature: GEMINI_THOUGHT_SIGNATURE,
          });
          expect(events.find((e) => e.type === 'reasoning-end')).to.deep.equal({
            type: 'reasoning-end',
            providerMetadata: { google: { thoughtSignature: GEMINI_THOUGHT_SIGNATURE } },
          });
        });

        it("toAiSdk carries a tool call's provider metadata both ways: on the tool-call part it streams, and from the prompt's tool-call part to our message", async () => {
          const requests: ModelRequest[] = [];
          const model: Model = {
            id: 'signed',
            stream: (request) => {
              requests.push(request);
              return from<TurnEvent[]>(
                requests.length === 1
                  ? [
                      { type: 'tool-call', id: 'c1', name: 'get_weather', args: { city: 'Paris' }, providerMetadata: { google: { thoughtSignature: 'sig' } } },
                      { type: 'finish', reason: 'tool-calls' },
                    ]
                  : [
                      { type: 'text-delta', text: 'Sunny.' },
                      { type: 'finish', reason: 'stop' },
                    ],
              );
            },
          };
          const getWeather = tool({
            description: 'Weather',
            inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } } }),
            execute: () => Promise.resolve({ temperature: 22 }),
          });
          const result = streamText({ model: toAiSdk(model), tools: { get_weather: getWeather }, stopWhen: stepCountIs(2), prompt: 'Weather?', maxRetries: 0 });
          expect(await result.text).to.equal('Sunny.');
          const steps = await result.steps;
          expect(steps[0]!.toolCalls[0]!.providerMetadata).to.deep.equal({ google: { thoughtSignature: 'sig' } });
          const assistant = requests[1]!.messages.find((m) => m.role === 'assistant');
          expect(assistant?.role === 'assistant' && assistant.toolCalls?.[0]?.providerMetadata).to.deep.equal({ google: { thoughtSignature: 'sig' } });
        });

        describe('the real @ai-sdk/anthropic provider on a recorded extended-thinking stream (served by its fetch)', () => {
          it('a signed thinking block and a redacted one → our reasoning events, with the signature and the redacted data', async () => {
            const events = await turn(fromAiSdk(claudeOn(fixtureFetch(ANTHROPIC_THINKING_SSE).fetch)), ask("What's the weather in Paris?", [WEATHER_TOOL]));
            expect(events).to.deep.equal([
              { type: 'reasoning-delta', text: 'The user wants ' },
              { type: 'reasoning-delta', text: 'the weather in Paris.' },
              { type: 'reasoning-end', signature: 'EqQBCgIYAhIM1gbcDa' },
              { type: 'reasoning-end', redactedData: 'EmwKAhgBEgy3va3pzix' },
              { type: 'tool-call', id: 'toolu_1', name: 'get_weather', args: { city: 'Paris' } },
              { type: 'finish', reason: 'tool-calls', usage: { inputTokens: 12, outputTokens: 40 } },
            ]);
          });

          it('the blocks go back to Anthropic as thinking (with its signature) and redacted_thinking blocks, before the tool_use, in the next request', async () => {
            const { fetch, calls } = fixtureFetch(ANTHROPIC_THINKING_SSE);
            const request = afterWeather('toolu_1');
            const messages = request.messages.map((m) =>
              m.role === 'assistant'
                ? {
                    ...m,
                    reasoning: [
                      { text: 'The user wants the weather in Paris.', signature: 'EqQBCgIYAhIM1gbcDa' },
                      { text: '', redactedData: 'EmwKAhgBEgy3va3pzix' },
                      { text: 'unsigned' },
                    ],
                  }
                : m,
            );
            await turn(fromAiSdk(claudeOn(fetch)), { ...request, messages });
            const sent = (calls[0]!.body as { messages: { role: string; content: unknown[] }[] }).messages[1]!;
            expect(sent.role).to.equal('assistant');
            expect(sent.content).to.deep.equal([
              { type: 'thinking', thinking: 'The user wants the weather in Paris.', signature: 'EqQBCgIYAhIM1gbcDa' },
              { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix' },
              { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris', units: 'celsius' } },
            ]);
          });
        });
      });

      describe('requests', () => {
        it('the conversation as an AI SDK prompt, tools as function tools, settings sent, the signal as abortSignal', async () => {
          const model = mock(...text('ok'), finish());
          await turn(fromAiSdk(model, { settings: { temperature: 0, maxOutputTokens: 100 } }), afterWeather('call_1'));
          const call = model.doStreamCalls[0]!;
          expect(call.prompt).to.deep.equal([
            { role: 'system', content: 'Be brief.' },
            { role: 'user', content: [{ type: 'text', text: "What's the weather in Paris?" }] },
            { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'call_1', toolName: 'get_weather', input: { city: 'Paris', units: 'celsius' } }] },
            {
              role: 'tool',
              content: [
                {
                  type: 'tool-result',
                  toolCallId: 'call_1',
                  toolName: 'get_weather',
                  output: { type: 'text', value: '{"temperature":22,"condition":"sunny","city":"Paris"}' },
                },
              ],
            },
          ]);
          expect(call.tools).to.deep.equal([
            { type: 'function', name: 'get_weather', description: WEATHER_TOOL.description, inputSchema: WEATHER_TOOL.parameters },
          ]);
          expect(call).to.include({ temperature: 0, maxOutputTokens: 100 });
          expect(call.abortSignal).to.be.instanceOf(AbortSignal);
        });

        it('promptCacheKey → providerOptions.openai.promptCacheKey, merged with the provider options given (theirs kept); none added without a key; a bad key: InvalidOptionError, no doStream', async () => {
          const model = mock(...text('ok'), finish());
          const providerOptions = { openai: { store: false, promptCacheKey: 'settings-key' }, anthropic: { sendReasoning: true } };
          await turn(fromAiSdk(model, { settings: { temperature: 0, providerOptions } }), { ...ask('Hi'), promptCacheKey: 'conversation-42' });
          await turn(fromAiSdk(model, { settings: { providerOptions } }), ask('Hi'));
          await turn(fromAiSdk(model), { ...ask('Hi'), promptCacheKey: 'conversation-42' });
          await turn(fromAiSdk(model), ask('Hi'));
          const calls = model.doStreamCalls;
          expect(calls[0]!.providerOptions).to.deep.equal({
            openai: { store: false, promptCacheKey: 'conversation-42' },
            anthropic: { sendReasoning: true },
          });
          expect(calls[0]).to.include({ temperature: 0 });
          expect(calls[1]!.providerOptions).to.deep.equal(providerOptions);
          expect(calls[2]!.providerOptions).to.deep.equal({ openai: { promptCacheKey: 'conversation-42' } });
          expect(calls[3]).not.to.have.property('providerOptions');
          // the settings given are not changed
          expect(providerOptions.openai.promptCacheKey).to.equal('settings-key');
          const error = await turnError(fromAiSdk(model), { ...ask('Hi'), promptCacheKey: '' });
          expect(error).to.be.instanceOf(InvalidOptionError).and.to.deep.include({ option: 'request.promptCacheKey', value: '' });
          expect(model.doStreamCalls).to.have.length(4);
        });

        it('promptCacheKey on the wire through the real @ai-sdk/openai, Chat Completions and Responses: prompt_cache_key in the body rxheal/server received', async () => {
          const openai = createOpenAI({ baseURL: server.openAIBaseURL, apiKey: 'k' });
          const before = server.requests.length;
          for (const made of [openai.chat('local'), openai.responses('local')]) {
            const events = await turn(fromAiSdk(made), { ...ask(RIVERS), promptCacheKey: 'conversation-42' });
            expect(textOf(events)).to.equal(RIVERS_ANSWER);
          }
          const sent = server.requests.slice(before);
          expect(sent.map((r) => [r.protocol, (r.body as Record<string, unknown>)['prompt_cache_key']])).to.deep.equal([
            ['openai', 'conversation-42'],
            ['responses', 'conversation-42'],
          ]);
        });

        it("cached input through the real @ai-sdk/openai (Chat Completions, Responses): what rxheal/server's usage said, as usage.cachedInputTokens", async () => {
          const openai = createOpenAI({ baseURL: server.openAIBaseURL, apiKey: 'k' });
          for (const made of [openai.chat('local'), openai.responses('local')]) {
            const { usages, records } = await warmCacheTurns(fromAiSdk(made), server);
            expect(records[1]!.cacheRead, made.provider).to.be.greaterThan(0);
            expect(usages.map((u) => u?.cachedInputTokens)).to.deep.equal(records.map((r) => r.cacheRead));
          }
        });

        it("a failed tool's result goes as error-text", async () => {
          const model = mock(...text('ok'), finish());
          await turn(fromAiSdk(model), { messages: [{ role: 'tool', toolCallId: 'c', toolName: 't', content: 'boom', isError: true }], tools: [] });
          expect(model.doStreamCalls[0]!.prompt[0]).to.deep.equal({
            role: 'tool',
            content: [{ type: 'tool-result', toolCallId: 'c', toolName: 't', output: { type: 'error-text', value: 'boom' } }],
          });
        });

        it('bad input at once: a model id string, a v1 model, a non-model, an unknown option', () => {
          expect(() => fromAiSdk('openai/gpt-4o' as never)).to.throw(InvalidOptionError, /model object/);
          expect(() => fromAiSdk({ specificationVersion: 'v1', provider: 'p', modelId: 'm', doStream: () => undefined } as never)).to.throw(
            InvalidOptionError,
            /specificationVersion/,
          );
          expect(() => fromAiSdk({} as never)).to.throw(InvalidOptionError);
          expect(() => fromAiSdk(mock(), { retries: 2 } as never)).to.throw(InvalidOptionError, /retries/);
        });
      });

      describe('errors mid-stream', () => {
        it('an error part after text: the stream errors at once with that error (the AI SDK providers would stream on, silently short)', async () => {
          const boom = new Error('boom');
          const seen: TurnEvent[] = [];
          const error = await new Promise<unknown>((resolve) =>
            streamModel(fromAiSdk(mock(...text('Hel'), { type: 'error', error: boom }, ...text('lo'), finish())), ask('Hi')).subscribe({
              next: (e) => seen.push(e),
              error: resolve,
            }),
          );
          expect(error).to.equal(boom);
          expect(seen).to.deep.equal([{ type: 'text-delta', text: 'Hel' }]);
        });

        it("a raw error object in an error part ({ type: 'server_error' }): an HttpError with the status its type implies", async () => {
          const error = await turnError(
            fromAiSdk(mock(...text('Hel'), { type: 'error', error: { message: 'The server had an error', type: 'server_error' } })),
            ask('Hi'),
          );
          expect(error).to.be.instanceOf(HttpError).and.have.property('status', 500);
          expect(classifyError(error)).to.deep.include({ category: 'server_error', retryable: true });
        });

        it("a finish with reason 'error': an IncompleteStreamError (retryable), never a finish", async () => {
          const error = await turnError(fromAiSdk(mock(...text('Hel'), finish('error'))), ask('Hi'));
          expect(error).to.be.instanceOf(IncompleteStreamError);
          expect(classifyError(error)).to.deep.include({ retryable: true, fallback: true });
        });

        it("a finish that says no reason came — v3's { unified: 'other', raw: undefined }, v2's 'unknown' (what the AI SDK's providers finish a cut stream with) — is an IncompleteStreamError, never a short answer", async () => {
          const placeholder: LanguageModelV3StreamPart = { type: 'finish', finishReason: { unified: 'other', raw: undefined }, usage: usage(10, 3) };
          const error = await turnError(fromAiSdk(mock(...text('Hel'), placeholder)), ask('Hi'));
          expect(error).to.be.instanceOf(IncompleteStreamError);
          expect(classifyError(error)).to.deep.include({ retryable: true, fallback: true });
          const v2 = v2Model([
            { type: 'text-delta', id: 't', delta: 'Hel' },
            { type: 'finish', finishReason: 'unknown', usage: { inputTokens: 4, outputTokens: 2, totalTokens: 6 } },
          ]);
          expect(await turnError(fromAiSdk(v2), ask('Hi'))).to.be.instanceOf(IncompleteStreamError);
        });

        it("a finish whose raw reason is 'error' (OpenRouter's, unified by @ai-sdk/openai as 'other') is an IncompleteStreamError", async () => {
          const error = await turnError(
            fromAiSdk(mock(...text('Hel'), { type: 'finish', finishReason: { unified: 'other', raw: 'error' }, usage: usage(10, 3) })),
            ask('Hi'),
          );
          expect(error).to.be.instanceOf(IncompleteStreamError);
        });

        it('an error part with a chunk the provider could not validate (AI_TypeValidationError) is a MalformedStreamError (bad_gateway), its error the cause', async () => {
          const invalid = Object.assign(new Error('Type validation failed: Value: {"object":"error","message":"out of memory"}.'), {
            name: 'AI_TypeValidationError',
          });
          const error = await turnError(fromAiSdk(mock(...text('Hel'), { type: 'error', error: invalid }, finish())), ask('Hi'));
          expect(error).to.be.instanceOf(MalformedStreamError).and.have.property('cause', invalid);
          expect(classifyError(error)).to.deep.include({ category: 'bad_gateway', retryable: true });
        });

        it('a tool input still open at the finish: a MalformedStreamError', async () => {
          const model = mock(
            { type: 'tool-input-start', id: 'c1', toolName: 'get_weather' },
            { type: 'tool-input-delta', id: 'c1', delta: '{"ci' },
            finish('tool-calls'),
          );
          expect(await turnError(fromAiSdk(model), ask('Hi'))).to.be.instanceOf(MalformedStreamError);
        });

        it('a stream that ends without a finish: an IncompleteStreamError', async () => {
          expect(await turnError(fromAiSdk(mock(...text('Hel'))), ask('Hi'))).to.be.instanceOf(IncompleteStreamError);
        });

        it('doStream resolving without a readable stream, or with one already read (a test double reused across attempts): the turn errors with the TypeError, never an unhandled rejection and a hang', async () => {
          const noStream = new MockLanguageModel({ doStream: () => Promise.resolve({} as never) });
          expect(await turnError(fromAiSdk(noStream), ask('Hi'))).to.be.instanceOf(TypeError);
          const once = simulateReadableStream<LanguageModelV3StreamPart>({ chunks: [...text('Hi'), finish()], initialDelayInMs: null, chunkDelayInMs: null });
          const reused = fromAiSdk(new MockLanguageModel({ doStream: () => Promise.resolve({ stream: once }) }));
          expect(textOf(await turn(reused, ask('Hi')))).to.equal('Hi');
          const error = await turnError(reused, ask('Hi'));
          expect(error).to.be.instanceOf(TypeError);
          expect(classifyError(error)).to.deep.include({ category: 'programming', retryable: false });
        });

        it('doStream rejecting (an APICallError) passes as is', async () => {
          const apiError = new APICallError({
            message: 'busy',
            url: 'u',
            requestBodyValues: {},
            statusCode: 503,
            responseHeaders: { 'retry-after': '1' },
            isRetryable: true,
          });
          const model = new MockLanguageModel({ doStream: () => Promise.reject(apiError) });
          const error = await turnError(fromAiSdk(model), ask('Hi'));
          expect(error).to.equal(apiError);
          expect(classifyError(error)).to.deep.include({ category: 'service_unavailable', retryAfterMs: 1000 });
        });
      });

      describe('the real @ai-sdk/openai provider on recorded streams (served by its fetch)', () => {
        const gpt = (body: string) => fromAiSdk(createOpenAI({ baseURL: 'http://x.test/v1', apiKey: 'k', fetch: fixtureFetch(body).fetch }).chat('gpt-4o'));

        it('a stream cut before its finish_reason (the body just ends): an IncompleteStreamError, where the provider finishes it as "other"', async () => {
          const error = await turnError(gpt(sseBody(chatChunk({ role: 'assistant', content: 'It is' }), chatChunk({ content: ' 22' }))), ask('Hi'));
          expect(error).to.be.instanceOf(IncompleteStreamError);
          expect(classifyError(error)).to.deep.include({ retryable: true, fallback: true });
        });

        it("OpenRouter's mid-stream error chunk (error + finish_reason 'error', which the provider reads as a plain chunk): an error, never a finish", async () => {
          const error = await turnError(gpt(OPENROUTER_ERROR_502), ask('Hi'));
          expect(error).to.be.instanceOf(IncompleteStreamError);
          expect(classifyError(error)).to.deep.include({ retryable: true, fallback: true });
        });
      });

      describe('real providers against rxheal/server', () => {
        for (const [name, make] of [
          ['@ai-sdk/openai-compatible', compat],
          ['@ai-sdk/anthropic', claude],
        ] as const) {
          it(`${name}: text with usage, a tool call, an answer from a tool result`, async () => {
            const events = await turn(fromAiSdk(make(server)), ask(RIVERS));
            expect(textOf(events)).to.equal(RIVERS_ANSWER);
            expect(events.at(-1))
              .to.deep.include({ type: 'finish', reason: 'stop' })
              .and.have.nested.property('usage.outputTokens', events.length - 1);
            const call = await turn(fromAiSdk(make(server)), ask("What's the weather in Paris?", [WEATHER_TOOL]));
            expect(call.map((e) => e.type)).to.deep.equal(['tool-call', 'finish']);
            expect(call[0]).to.deep.include({ name: 'get_weather', args: { city: 'Paris', units: 'celsius' } });
            expect(call[1]).to.deep.include({ reason: 'tool-calls' });
            expect(textOf(await turn(fromAiSdk(make(server)), afterWeather('call_1')))).to.equal('It is 22 °C and sunny in Paris.');
          });

          it(`${name}: a malformed chunk errors the turn (bad_gateway), where the provider alone would drop the chunk's text`, async () => {
            server.faults.set({ kind: 'malformed', afterChunks: 2, times: 1 });
            const error = await turnError(fromAiSdk(make(server)), ask(RIVERS));
            expect(classifyError(error)).to.deep.include({ category: 'bad_gateway', retryable: true });
          });

          it(`${name}: an error event mid-stream errors the turn, retryable`, async () => {
            server.faults.set({ kind: 'stream-error', afterChunks: 2, errorType: 'overloaded_error', times: 1 });
            const error = await turnError(fromAiSdk(make(server)), ask(RIVERS));
            expect(classifyError(error)).to.deep.include({ retryable: true, fallback: true });
          });

          it(`${name}: unsubscribing mid-answer aborts the request (the server sees the client close it)`, async () => {
            const record = await cancelAfterFirstDelta(streamModel(fromAiSdk(make(slow)), ask(RIVERS)), slow);
            expect(record.end).to.equal('client-closed');
          });
        }

        it('unsubscribing cancels the stream and aborts the signal (a model that would hang)', async () => {
          const { model, state } = hanging([{ type: 'stream-start', warnings: [] }, ...text('Hel').slice(0, 2)]);
          await new Promise<void>((resolve) => {
            const subscription = streamModel(fromAiSdk(model), ask('Hi')).subscribe(() => queueMicrotask(() => (subscription.unsubscribe(), resolve())));
          });
          await Promise.resolve();
          expect(state.cancelled).to.equal(true);
          expect(model.doStreamCalls[0]!.abortSignal!.aborted).to.equal(true);
        });
      });

      describe('healing', () => {
        it('a dead primary: fallbackModel hands the request to the backup, which answers in full', async () => {
          server.faults.set({ kind: 'down' });
          const events = await turn(fallbackModel([fromAiSdk(compat(server), { id: 'primary' }), fromAiSdk(claude(backup), { id: 'backup' })]), ask(RIVERS));
          expect(textOf(events)).to.equal(RIVERS_ANSWER);
        });

        it("a connection reset mid-answer with midStream 'continue': the backup continues it, nothing lost or doubled", async () => {
          server.faults.set({ kind: 'reset', afterChunks: 6, times: 1 });
          const events = await turn(
            fallbackModel([fromAiSdk(compat(server), { id: 'primary' }), fromAiSdk(claude(backup), { id: 'backup' })], { midStream: 'continue' }),
            ask(RIVERS),
          );
          expect(textOf(events)).to.equal(RIVERS_ANSWER);
          expect(events.filter((e) => e.type === 'reset')).to.deep.equal([]);
        });
      });
    });
  reportSkippedMajors('fromAiSdk: AI SDK model → rxheal Model');
});
