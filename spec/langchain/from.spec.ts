/**
 * fromLangChain (src/langchain/from.ts, chunkReader.ts): LangChain's fake chat models
 * (`@langchain/core/utils/testing`), a scripted one, and the real `ChatOpenAI` (`@langchain/openai`
 * 1.5, the last Node-20 line) pointed at rxheal/server or replayed Responses API streams, as rxheal
 * models.
 */
import { AIMessage } from '@langchain/core/messages';
import { FakeListChatModel, FakeStreamingChatModel } from '@langchain/core/utils/testing';
import { ChatOpenAI } from '@langchain/openai';
import { expect } from 'chai';
import * as t from 'io-ts';
import { lastValueFrom, of, toArray } from 'rxjs';
import { fromLangChain } from '../../src/langchain/index.js';
import { classifyError } from '../../src/core/errors/classify.js';
import { HttpError, IncompleteStreamError, InvalidOptionError } from '../../src/core/errors/errors.js';
import type { TurnEvent } from '../../src/core/events/events.js';
import { streamModel } from '../../src/core/model/model.js';
import { fallbackModel } from '../../src/sources/fallbackModel.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';
import type { LocalProvider } from '../../src/server/index.js';
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
import { chatChunk, fixtureFetch, sseBody } from '../support/providerFakes.js';
import { recordedResponses, replayResponses, type ResponseEvents, type ResponsesReplay } from '../support/responsesReplay.js';
import { ScriptedChatModel, chatOpenAI, chunk } from './fakes.js';

describe('rxheal/langchain', function () {
  this.timeout(20_000);
  const providers = localProviders();
  let server: LocalProvider;
  let backup: LocalProvider;
  let slow: LocalProvider;
  before(() => ({ server, backup, slow } = providers));

  describe('fromLangChain: chat model → rxheal Model', () => {
    describe('LangChain fake chat models', () => {
      it('FakeListChatModel: its text as deltas, then finish stop', async () => {
        const events = await turn(fromLangChain(new FakeListChatModel({ responses: ['Hi there'] })), ask('Hello'));
        expect(textOf(events)).to.equal('Hi there');
        expect(events.at(-1)).to.deep.equal({ type: 'finish', reason: 'stop' });
      });

      it("the finish reason from response_metadata (FakeListChatModel's generationInfo: finish_reason 'length')", async () => {
        const events = await turn(fromLangChain(new FakeListChatModel({ responses: ['Hi'], generationInfo: { finish_reason: 'length' } })), ask('Hello'));
        expect(events.at(-1)).to.deep.equal({ type: 'finish', reason: 'length' });
      });

      it('FakeStreamingChatModel with whole tool_calls: one tool-call each, finish tool-calls', async () => {
        const model = new FakeStreamingChatModel({
          chunks: [chunk({ content: '', tool_calls: [{ id: 't1', name: 'get_weather', args: { city: 'Paris' }, type: 'tool_call' }] })],
        });
        expect(await turn(fromLangChain(model), ask('Weather?', [WEATHER_TOOL]))).to.deep.equal([
          { type: 'tool-call', id: 't1', name: 'get_weather', args: { city: 'Paris' } },
          { type: 'finish', reason: 'tool-calls' },
        ]);
      });

      it('tool_call_chunks joined by index, usage_metadata summed, stop_reason read', async () => {
        const model = new ScriptedChatModel([
          chunk({ content: 'Let me check.', usage_metadata: { input_tokens: 12, output_tokens: 0, total_tokens: 12 } }),
          chunk({ content: '', tool_call_chunks: [{ type: 'tool_call_chunk', index: 0, id: 'a', name: 'get_weather', args: '{"city":' }] }),
          chunk({ content: '', tool_call_chunks: [{ type: 'tool_call_chunk', index: 1, id: 'b', name: 'get_weather', args: '{"city":"Oslo"}' }] }),
          chunk({ content: '', tool_call_chunks: [{ type: 'tool_call_chunk', index: 0, args: '"Paris"}' }] }),
          chunk({ content: '', response_metadata: { stop_reason: 'tool_use' }, usage_metadata: { input_tokens: 0, output_tokens: 9, total_tokens: 9 } }),
        ]);
        expect(await turn(fromLangChain(model), ask('Weather?', [WEATHER_TOOL]))).to.deep.equal([
          { type: 'text-delta', text: 'Let me check.' },
          { type: 'tool-call', id: 'a', name: 'get_weather', args: { city: 'Paris' } },
          { type: 'tool-call', id: 'b', name: 'get_weather', args: { city: 'Oslo' } },
          { type: 'finish', reason: 'tool-calls', usage: { inputTokens: 12, outputTokens: 9 } },
        ]);
      });

      it('parallel tool calls that all say index 0 (ChatOpenAI over Ollama): a new id with a name is another call, never one call with both arguments', async () => {
        const model = new ScriptedChatModel([
          chunk({ content: '', tool_call_chunks: [{ type: 'tool_call_chunk', index: 0, id: 'call_p', name: 'get_weather', args: '{"city":' }] }),
          chunk({ content: '', tool_call_chunks: [{ type: 'tool_call_chunk', index: 0, args: '"Paris"}' }] }),
          chunk({ content: '', tool_call_chunks: [{ type: 'tool_call_chunk', index: 0, id: 'call_o', name: 'get_weather', args: '{"city":"Oslo"}' }] }),
          chunk({ content: '', response_metadata: { finish_reason: 'tool_calls', model_provider: 'openai' } }),
        ]);
        expect(await turn(fromLangChain(model), ask('Weather?', [WEATHER_TOOL]))).to.deep.equal([
          { type: 'tool-call', id: 'call_p', name: 'get_weather', args: { city: 'Paris' } },
          { type: 'tool-call', id: 'call_o', name: 'get_weather', args: { city: 'Oslo' } },
          { type: 'finish', reason: 'tool-calls' },
        ]);
      });

      it("a finish reason 'error' (OpenRouter's, through ChatOpenAI) is an IncompleteStreamError, never a finish", async () => {
        const model = new ScriptedChatModel([
          chunk({ content: 'The answ' }),
          chunk({ content: '', response_metadata: { finish_reason: 'error', model_provider: 'openai' } }),
        ]);
        const error = await turnError(fromLangChain(model), ask('Hi'));
        expect(error).to.be.instanceOf(IncompleteStreamError);
        expect(classifyError(error)).to.deep.include({ retryable: true, fallback: true });
      });

      it('text content blocks (Anthropic style) are read; tool-use echoes are skipped, thinking is not text', async () => {
        const model = new ScriptedChatModel([
          chunk({ content: [{ type: 'thinking', thinking: 'hmm' }] as never }),
          chunk({ content: [{ type: 'text', text: 'Hello', index: 0 }] as never }),
          chunk({ content: [{ type: 'text_delta', text: ' world', index: 0 }] as never }),
        ]);
        expect(textOf(await turn(fromLangChain(model), ask('Hi')))).to.equal('Hello world');
      });

      it('requests: our messages as LangChain messages, tools bound per request', async () => {
        const model = new ScriptedChatModel([chunk({ content: 'ok' })]);
        await turn(fromLangChain(model), afterWeather('call_1'));
        const { messages, tools } = model.seen[0]!;
        expect(messages.map((m) => m.getType())).to.deep.equal(['system', 'human', 'ai', 'tool']);
        expect((messages[2] as AIMessage).tool_calls).to.deep.equal([
          { id: 'call_1', name: 'get_weather', args: { city: 'Paris', units: 'celsius' }, type: 'tool_call' },
        ]);
        expect(messages[3]).to.include({ tool_call_id: 'call_1', status: 'success' });
        expect(tools).to.deep.equal([
          { type: 'function', function: { name: 'get_weather', description: WEATHER_TOOL.description, parameters: WEATHER_TOOL.parameters } },
        ]);
      });

      it('maxOutputTokens → the call option maxTokens (tools bound or not); absent without one; not a positive integer: InvalidOptionError', async () => {
        const model = new ScriptedChatModel([chunk({ content: 'ok' })]);
        await turn(fromLangChain(model), { ...ask('Hi'), maxOutputTokens: 64 });
        await turn(fromLangChain(model), { ...ask('Hi', [WEATHER_TOOL]), maxOutputTokens: 32 });
        await turn(fromLangChain(model), ask('Hi'));
        expect(model.seen.map((s) => s.maxTokens)).to.deep.equal([64, 32, undefined]);
        const error = await turnError(fromLangChain(model), { ...ask('Hi'), maxOutputTokens: 0 });
        expect(error).to.be.instanceOf(InvalidOptionError).and.to.deep.include({ option: 'request.maxOutputTokens', value: 0 });
        expect(model.seen).to.have.length(3);
      });

      it('an error thrown mid-stream errors the turn after the text it had given', async () => {
        const boom = new HttpError(503);
        const seen: TurnEvent[] = [];
        const error = await new Promise<unknown>((resolve) =>
          streamModel(fromLangChain(new ScriptedChatModel([chunk({ content: 'Hel' })], boom)), ask('Hi')).subscribe({
            next: (e) => seen.push(e),
            error: resolve,
          }),
        );
        expect(error).to.equal(boom);
        expect(seen).to.deep.equal([{ type: 'text-delta', text: 'Hel' }]);
      });

      it('requireFinishReason: a stream without a finish reason is cut (IncompleteStreamError); by default only for OpenAI models', async () => {
        const openaiLike = () => new ScriptedChatModel([chunk({ content: 'Hel', response_metadata: { model_provider: 'openai' } })]);
        expect(await turnError(fromLangChain(openaiLike()), ask('Hi'))).to.be.instanceOf(IncompleteStreamError);
        expect((await turn(fromLangChain(openaiLike(), { requireFinishReason: false }), ask('Hi'))).at(-1)).to.deep.equal({ type: 'finish', reason: 'stop' });
        expect(await turnError(fromLangChain(new FakeListChatModel({ responses: ['Hi'] }), { requireFinishReason: true }), ask('Hi'))).to.be.instanceOf(
          IncompleteStreamError,
        );
      });

      // found by a review of the checks: over ChatAnthropic a cleanly cut body passed as a complete answer. Its
      // chunks as @langchain/anthropic makes them (utils/message_outputs.ts): message_start with
      // model_provider 'anthropic', text deltas (a bare string without tools), message_delta with
      // the stop_reason in additional_kwargs; message_stop makes no chunk; the SDK ends a cut stream quietly
      describe('ChatAnthropic: the stop_reason is the end marker', () => {
        const start = () =>
          chunk({
            content: '',
            additional_kwargs: { id: 'msg_01', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5' },
            response_metadata: { model_provider: 'anthropic', usage: {} },
            usage_metadata: { input_tokens: 12, output_tokens: 1, total_tokens: 13 },
          });
        const delta = (text: string) => chunk({ content: text });
        const stopped = (stop_reason: string, output_tokens = 5) =>
          chunk({
            content: '',
            additional_kwargs: { stop_reason, stop_sequence: null },
            response_metadata: {},
            usage_metadata: { input_tokens: 0, output_tokens, total_tokens: output_tokens },
          });
        class AnthropicLike extends ScriptedChatModel {
          override _llmType(): string {
            return 'anthropic';
          }
        }

        it("message_delta's stop_reason (in additional_kwargs) is the finish reason: end_turn → stop, max_tokens → length, tool_use → tool-calls", async () => {
          const stop = await turn(fromLangChain(new ScriptedChatModel([start(), delta('Sunny'), delta(' today.'), stopped('end_turn')])), ask('Weather?'));
          expect(stop).to.deep.equal([
            { type: 'text-delta', text: 'Sunny' },
            { type: 'text-delta', text: ' today.' },
            { type: 'finish', reason: 'stop', usage: { inputTokens: 12, outputTokens: 6 } },
          ]);
          expect((await turn(fromLangChain(new ScriptedChatModel([start(), delta('Sunny'), stopped('max_tokens')])), ask('Weather?'))).at(-1)).to.deep.include({
            type: 'finish',
            reason: 'length',
          });
          const call = chunk({
            content: [{ index: 0, type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: '' }] as never,
            tool_call_chunks: [{ type: 'tool_call_chunk', index: 0, id: 'toolu_1', name: 'get_weather', args: '' }],
            response_metadata: { model_provider: 'anthropic' },
          });
          const args = chunk({
            content: [{ index: 0, type: 'input_json_delta', input: '{"city":"Oslo"}' }] as never,
            tool_call_chunks: [{ type: 'tool_call_chunk', index: 0, args: '{"city":"Oslo"}' }],
            response_metadata: { model_provider: 'anthropic' },
          });
          expect(
            (await turn(fromLangChain(new ScriptedChatModel([start(), call, args, stopped('tool_use')])), ask('Weather?', [WEATHER_TOOL]))).at(-1),
          ).to.deep.include({ type: 'finish', reason: 'tool-calls' });
        });

        it('a stream cut before message_delta is an IncompleteStreamError, never a complete answer: by its model_provider, or (older ChatAnthropic, no model_provider) its _llmType(); requireFinishReason: false opts out', async () => {
          expect(await turnError(fromLangChain(new ScriptedChatModel([start(), delta('Sunny')])), ask('Weather?'))).to.be.instanceOf(IncompleteStreamError);
          const older = () =>
            new AnthropicLike([chunk({ content: '', additional_kwargs: { id: 'msg_01', type: 'message', role: 'assistant' } }), delta('Sunny')]);
          expect(await turnError(fromLangChain(older()), ask('Weather?'))).to.be.instanceOf(IncompleteStreamError);
          expect((await turn(fromLangChain(older(), { requireFinishReason: false }), ask('Weather?'))).at(-1)).to.deep.equal({
            type: 'finish',
            reason: 'stop',
          });
        });
      });

      it('a request with tools to a model without bindTools errors clearly', async () => {
        const model = new FakeListChatModel({ responses: ['x'] });
        const noTools = { stream: model.stream.bind(model), _llmType: () => 'bare' };
        const error = await turnError(fromLangChain(noTools as never), ask('Hi', [WEATHER_TOOL]));
        expect(error).to.be.instanceOf(InvalidOptionError).with.property('message').that.contains('bindTools');
      });

      it("the model's id: langchain:<model name> or <_llmType()>, or options.id; bad input at once", () => {
        expect(fromLangChain(chatOpenAI(server, 'gpt-4o')).id).to.equal('langchain:gpt-4o');
        expect(fromLangChain(new FakeListChatModel({ responses: [] })).id).to.equal('langchain:fake-list');
        expect(fromLangChain(new FakeListChatModel({ responses: [] }), { id: 'x' }).id).to.equal('x');
        expect(() => fromLangChain({} as never)).to.throw(InvalidOptionError);
        expect(() => fromLangChain(new FakeListChatModel({ responses: [] }), { name: 'x' } as never)).to.throw(InvalidOptionError);
      });
    });

    describe('reasoning', () => {
      it("ChatAnthropic's chunks — thinking blocks by index, the signature in a block of its own, a redacted_thinking block — → reasoning deltas and reasoning-ends with the signature / redactedData; not text", async () => {
        const model = new ScriptedChatModel([
          chunk({ content: [{ index: 0, type: 'thinking', thinking: '', signature: '' }] as never }),
          chunk({ content: [{ index: 0, type: 'thinking', thinking: 'The user wants' }] as never }),
          chunk({ content: [{ index: 0, type: 'thinking', thinking: ' Paris.' }] as never }),
          chunk({ content: [{ index: 0, type: 'thinking', signature: 'sig-1' }] as never }),
          chunk({ content: [{ index: 1, type: 'redacted_thinking', data: 'EmwKAhgB' }] as never }),
          chunk({ content: [{ index: 2, type: 'text', text: 'Sunny.' }] as never }),
          chunk({ content: [], response_metadata: { stop_reason: 'end_turn' } }),
        ]);
        const events = await turn(fromLangChain(model), ask('Weather?'));
        expect(events).to.deep.equal([
          { type: 'reasoning-delta', text: 'The user wants' },
          { type: 'reasoning-delta', text: ' Paris.' },
          { type: 'reasoning-end', signature: 'sig-1' },
          { type: 'reasoning-end', redactedData: 'EmwKAhgB' },
          { type: 'text-delta', text: 'Sunny.' },
          { type: 'finish', reason: 'stop' },
        ]);
        expect(textOf(events)).to.equal('Sunny.');
      });

      it("unsigned reasoning: the real ChatOpenAI over an OpenAI-compatible server's reasoning_content (additional_kwargs) → deltas, and an unsigned end when the answer starts", async () => {
        const body = sseBody(
          chatChunk({ role: 'assistant', content: '', reasoning_content: 'Think' }),
          chatChunk({ reasoning_content: 'ing.' }),
          chatChunk({ content: 'Answer' }),
          chatChunk({}, 'stop'),
          '[DONE]',
        );
        const chat = new ChatOpenAI({
          model: 'deepseek-reasoner',
          apiKey: 'k',
          configuration: { baseURL: 'http://x.test/v1', fetch: fixtureFetch(body).fetch },
          maxRetries: 0,
        });
        expect(await turn(fromLangChain(chat), ask('Hi'))).to.deep.equal([
          { type: 'reasoning-delta', text: 'Think' },
          { type: 'reasoning-delta', text: 'ing.' },
          { type: 'reasoning-end' },
          { type: 'text-delta', text: 'Answer' },
          { type: 'finish', reason: 'stop' },
        ]);
      });

      it("OpenAI's Responses API chunks (a reasoning block and the same summary in additional_kwargs): read once; another summary index is another block; a tool call ends the reasoning", async () => {
        const summary = (text: string, index: number) => ({ reasoning: { type: 'reasoning', summary: [{ type: 'summary_text', text, index }] } });
        const model = new ScriptedChatModel([
          chunk({ content: [{ type: 'reasoning', reasoning: 'First', index: 0 }] as never, additional_kwargs: summary('First', 0) }),
          chunk({ content: [{ type: 'reasoning', reasoning: ' part.', index: 0 }] as never, additional_kwargs: summary(' part.', 0) }),
          chunk({ content: [{ type: 'reasoning', reasoning: 'Second.', index: 1 }] as never, additional_kwargs: summary('Second.', 1) }),
          chunk({ content: [], tool_call_chunks: [{ type: 'tool_call_chunk', index: 0, id: 'c1', name: 'get_weather', args: '{"city":"Oslo"}' }] }),
        ]);
        expect(await turn(fromLangChain(model), ask('Weather?', [WEATHER_TOOL]))).to.deep.equal([
          { type: 'reasoning-delta', text: 'First' },
          { type: 'reasoning-delta', text: ' part.' },
          { type: 'reasoning-end' },
          { type: 'reasoning-delta', text: 'Second.' },
          { type: 'reasoning-end' },
          { type: 'tool-call', id: 'c1', name: 'get_weather', args: { city: 'Oslo' } },
          { type: 'finish', reason: 'tool-calls' },
        ]);
      });

      it("requests: our signed and redacted reasoning go first, as ChatAnthropic's thinking / redacted_thinking blocks, to a chat model whose _llmType() is 'anthropic'; unsigned reasoning is not sent; the real ChatOpenAI is sent none (no redacted_thinking part, no emptied content list)", async () => {
        class AnthropicLike extends ScriptedChatModel {
          override _llmType(): string {
            return 'anthropic';
          }
        }
        // a whole answer: ChatAnthropic's last chunk carries the stop_reason (a cut one is refused)
        const model = new AnthropicLike([
          chunk({ content: 'ok' }),
          chunk({ content: '', additional_kwargs: { stop_reason: 'end_turn', stop_sequence: null } }),
        ]);
        const request = afterWeather('toolu_1');
        const messages = request.messages.map((m) =>
          m.role === 'assistant'
            ? {
                ...m,
                content: 'Checking.',
                reasoning: [{ text: 'Paris, celsius.', signature: 'sig-1' }, { text: '', redactedData: 'EmwK' }, { text: 'unsigned' }],
              }
            : m,
        );
        await turn(fromLangChain(model), { ...request, messages });
        const ai = model.seen[0]!.messages[2] as AIMessage;
        expect(ai.content).to.deep.equal([
          { type: 'thinking', thinking: 'Paris, celsius.', signature: 'sig-1' },
          { type: 'redacted_thinking', data: 'EmwK' },
          { type: 'text', text: 'Checking.' },
        ]);
        expect(ai.tool_calls).to.deep.equal([{ id: 'toolu_1', name: 'get_weather', args: { city: 'Paris', units: 'celsius' }, type: 'tool_call' }]);

        const { fetch, calls } = fixtureFetch(sseBody(chatChunk({ role: 'assistant', content: 'ok' }), chatChunk({}, 'stop'), '[DONE]'));
        const gpt = new ChatOpenAI({ model: 'gpt-4o', apiKey: 'k', configuration: { baseURL: 'http://x.test/v1', fetch }, maxRetries: 0 });
        const toolOnly = messages.map((m) => (m.role === 'assistant' ? { ...m, content: '' } : m));
        await turn(fromLangChain(gpt), { ...request, messages: toolOnly });
        const sent = (calls[0]!.body as { messages: Record<string, unknown>[] }).messages[2]!;
        expect(sent).to.deep.include({ role: 'assistant', content: '' });
        expect(sent['tool_calls']).to.have.length(1);
      });
    });

    describe('ChatOpenAI (@langchain/openai) against rxheal/server', () => {
      it('text with usage and finish stop; a tool call; an answer from a tool result', async () => {
        const events = await turn(fromLangChain(chatOpenAI(server)), ask(RIVERS));
        expect(textOf(events)).to.equal(RIVERS_ANSWER);
        expect(events.at(-1))
          .to.deep.include({ type: 'finish', reason: 'stop' })
          .and.have.nested.property('usage.outputTokens', events.length - 1);
        const call = await turn(fromLangChain(chatOpenAI(server)), ask("What's the weather in Paris?", [WEATHER_TOOL]));
        expect(call).to.deep.equal([
          { type: 'tool-call', id: (call[0] as { id: string }).id, name: 'get_weather', args: { city: 'Paris', units: 'celsius' } },
          { type: 'finish', reason: 'tool-calls', usage: (call[1] as { usage: unknown }).usage },
        ]);
        expect(textOf(await turn(fromLangChain(chatOpenAI(server)), afterWeather('call_1')))).to.equal('It is 22 °C and sunny in Paris.');
      });

      it("promptCacheKey → ChatOpenAI's promptCacheKey call option: prompt_cache_key on the wire (Chat Completions and Responses), over the key it was built with; none without either", async () => {
        const before = server.requests.length;
        const built = (useResponsesApi: boolean, promptCacheKey?: string) =>
          new ChatOpenAI({
            model: 'local',
            apiKey: 'test',
            configuration: { baseURL: server.openAIBaseURL },
            maxRetries: 0,
            useResponsesApi,
            ...(promptCacheKey === undefined ? {} : { promptCacheKey }),
          });
        for (const useResponsesApi of [false, true]) {
          const events = await turn(fromLangChain(built(useResponsesApi, 'built-key')), { ...ask(RIVERS), promptCacheKey: 'conversation-42' });
          expect(textOf(events)).to.equal(RIVERS_ANSWER);
          await turn(fromLangChain(built(useResponsesApi, 'built-key')), ask(RIVERS));
          await turn(fromLangChain(built(useResponsesApi)), ask(RIVERS));
        }
        const sent = server.requests.slice(before).map((r) => [r.path, (r.body as Record<string, unknown>)['prompt_cache_key']]);
        expect(sent).to.deep.equal([
          ['/v1/chat/completions', 'conversation-42'],
          ['/v1/chat/completions', 'built-key'],
          ['/v1/chat/completions', undefined],
          ['/v1/responses', 'conversation-42'],
          ['/v1/responses', 'built-key'],
          ['/v1/responses', undefined],
        ]);
        const error = await turnError(fromLangChain(chatOpenAI(server)), { ...ask(RIVERS), promptCacheKey: '' });
        expect(error).to.be.instanceOf(InvalidOptionError).and.to.deep.include({ option: 'request.promptCacheKey', value: '' });
        expect(server.requests).to.have.length(before + 6);
      });

      it("cached input (Chat Completions and Responses): what rxheal/server's usage said, read from usage_metadata's input_token_details as usage.cachedInputTokens", async () => {
        for (const useResponsesApi of [false, true]) {
          const chat = new ChatOpenAI({
            model: 'local',
            apiKey: 'test',
            configuration: { baseURL: server.openAIBaseURL },
            maxRetries: 0,
            streamUsage: true,
            useResponsesApi,
          });
          const { usages, records } = await warmCacheTurns(fromLangChain(chat), server);
          expect(records[1]!.cacheRead, String(useResponsesApi)).to.be.greaterThan(0);
          expect(usages.map((u) => u?.cachedInputTokens)).to.deep.equal(records.map((r) => r.cacheRead));
        }
      });

      it('an error event mid-stream: the SDK’s status-less APIError, classified by its type (server_error, retryable)', async () => {
        server.faults.set({
          kind: 'stream-error',
          afterChunks: 2,
          errorType: 'server_error',
          message: 'The server had an error processing your request.',
          times: 1,
        });
        const error = await turnError(fromLangChain(chatOpenAI(server)), ask(RIVERS));
        expect(classifyError(error)).to.deep.include({ category: 'server_error', retryable: true });
      });

      it('a 429 with retry-after: classified rate_limit with the wait', async () => {
        server.faults.set({ kind: 'status', status: 429, retryAfter: 2, times: 1 });
        const error = await turnError(fromLangChain(chatOpenAI(server)), ask(RIVERS));
        expect(classifyError(error)).to.deep.include({ category: 'rate_limit', retryAfterMs: 2000 });
      });

      it('unsubscribing mid-answer aborts the request (the server sees the client close it)', async () => {
        const record = await cancelAfterFirstDelta(streamModel(fromLangChain(chatOpenAI(slow)), ask(RIVERS)), slow);
        expect(record.end).to.equal('client-closed');
      });

      it('healing: a dead primary → the backup answers in full', async () => {
        server.faults.set({ kind: 'down' });
        const events = await turn(fallbackModel([fromLangChain(chatOpenAI(server, 'a')), fromLangChain(chatOpenAI(backup, 'b'))]), ask(RIVERS));
        expect(textOf(events)).to.equal(RIVERS_ANSWER);
      });

      it("healing: a connection reset mid-answer with midStream 'continue' → continued, nothing lost or doubled", async () => {
        server.faults.set({ kind: 'reset', afterChunks: 6, times: 1 });
        const events = await turn(
          fallbackModel([fromLangChain(chatOpenAI(server, 'a')), fromLangChain(chatOpenAI(backup, 'b'))], { midStream: 'continue' }),
          ask(RIVERS),
        );
        expect(textOf(events)).to.equal(RIVERS_ANSWER);
        expect(events.filter((e) => e.type === 'reset')).to.deep.equal([]);
      });
    });
    // a Responses stream cut before its end taken for an answer: a Responses stream ends with response.completed, whose metadata carries
    // the response's `status`, not a finish reason; every complete answer was refused
    describe('ChatOpenAI on the Responses API (a codex model; useResponsesApi): recorded streams replayed on 127.0.0.1', () => {
      // gpt-5.1-codex-max, recorded by vercel/ai: a reasoning summary and a call, two more calls, the answer
      const codex = recordedResponses('openai-responses-codex-calculator.jsonl');
      const answer = codex[3]!;
      const CALCULATOR = {
        name: 'calculator',
        description: 'A minimal calculator for basic arithmetic. Call it once per step.',
        parameters: {
          type: 'object',
          properties: { a: { type: 'number' }, b: { type: 'number' }, op: { type: 'string', enum: ['add', 'subtract', 'multiply', 'divide'] } },
          required: ['a', 'b', 'op'],
        },
      };
      const replays: ResponsesReplay[] = [];
      const replay = async (...responses: ResponseEvents[]) => {
        const r = await replayResponses(responses);
        replays.push(r);
        return r;
      };
      after(() => Promise.all(replays.map((r) => r.close())));
      // ChatOpenAI picks the Responses API itself for codex models (and for useResponsesApi, built-in tools, reasoning summaries…)
      const codexModel = (r: ResponsesReplay) =>
        new ChatOpenAI({ model: 'gpt-5.1-codex-max', apiKey: 'k', configuration: { baseURL: r.baseURL }, maxRetries: 0 });
      /** The recorded response with its last event (response.completed) replaced, or dropped. */
      const ending = (events: ResponseEvents, last?: (completed: Record<string, unknown>) => Record<string, unknown>): ResponseEvents => {
        const completed = events.at(-1)!;
        expect(completed['type']).to.equal('response.completed');
        return last ? [...events.slice(0, -1), last(completed)] : events.slice(0, -1);
      };
      const incomplete = (reason: string | null) => (completed: Record<string, unknown>) => ({
        ...completed,
        type: 'response.incomplete',
        response: { ...(completed['response'] as object), status: 'incomplete', incomplete_details: reason === null ? null : { reason } },
      });

      it("a codex model's whole agent run — a reasoning summary, three calculator calls, the answer — each turn complete at response.completed", async () => {
        const r = await replay(...codex);
        const calculator = defineTool({
          name: 'calculator',
          description: CALCULATOR.description,
          args: t.type({ a: t.number, b: t.number, op: t.keyof({ add: null, subtract: null, multiply: null, divide: null }) }),
          execute: ({ a, b, op }) => of({ add: a + b, subtract: a - b, multiply: a * b, divide: a / b }[op]),
        });
        const events = await lastValueFrom(
          runAgent({
            model: fromLangChain(codexModel(r)),
            tools: [calculator],
            messages: [{ role: 'user', content: 'Compute ((12 + 7) × 3) × 10 with the calculator.' }],
          }).pipe(toArray()),
        );
        const results = events.flatMap((e) => (e.type === 'tool-result' ? [e.result] : []));
        expect(results).to.deep.equal([19, 57, 570]);
        const final = events.at(-1);
        expect(final).to.have.nested.property('message.content', 'The final result is **570**.');
        expect(r.requests.map((q) => [q.path, q.body['model'], q.body['stream']])).to.deep.equal(Array(4).fill(['/v1/responses', 'gpt-5.1-codex-max', true]));
      });

      it("the first turn: the reasoning summary as reasoning, the call, then finish tool-calls with response.completed's usage", async () => {
        const r = await replay(codex[0]!);
        const events = await turn(fromLangChain(codexModel(r)), ask('Compute ((12 + 7) × 3) × 10.', [CALCULATOR]));
        const thought = events
          .filter((e) => e.type === 'reasoning-delta')
          .map((e) => (e as { text: string }).text)
          .join('');
        expect(thought).to.equal(
          "**Calculating step-by-step using calculator**\n\nI'll compute 12 plus 7, then multiply the result by 3, and finally multiply that by 10, reporting the final product.",
        );
        expect(events.filter((e) => e.type !== 'reasoning-delta')).to.deep.equal([
          { type: 'reasoning-end' },
          { type: 'tool-call', id: 'call_AB6AaRZ1FYZB2RwS6A5vbdqn', name: 'calculator', args: { a: 12, b: 7, op: 'add' } },
          { type: 'finish', reason: 'tool-calls', usage: { inputTokens: 134, outputTokens: 28 } },
        ]);
      });

      it('useResponsesApi on any model: the recorded answer is complete at response.completed (finish stop, its usage)', async () => {
        const r = await replay(answer);
        const chat = new ChatOpenAI({ model: 'gpt-4o-mini', useResponsesApi: true, apiKey: 'k', configuration: { baseURL: r.baseURL }, maxRetries: 0 });
        const events = await turn(fromLangChain(chat), ask('And the result?'));
        expect(textOf(events)).to.equal('The final result is **570**.');
        expect(events.at(-1)).to.deep.equal({ type: 'finish', reason: 'stop', usage: { inputTokens: 299, outputTokens: 12 } });
        expect(r.requests[0]!.path).to.equal('/v1/responses');
      });

      it('still refused: a stream that ends without response.completed — cut mid-answer, or right before it — is an IncompleteStreamError, never a short answer', async () => {
        const cuts = [ending(answer), answer.slice(0, answer.findIndex((e) => e['type'] === 'response.output_text.delta') + 3), codex[0]!.slice(0, -3)];
        const r = await replay(...cuts);
        for (const [i] of cuts.entries())
          expect(await turnError(fromLangChain(codexModel(r)), ask('x', [CALCULATOR])), `cut ${i}`).to.be.instanceOf(IncompleteStreamError);
      });

      it('still refused: a failed response — the recorded insufficient_quota error event then response.failed — is an error, classified; response.failed alone (LangChain drops it) ends without response.completed: IncompleteStreamError', async () => {
        const failed = recordedResponses('openai-responses-failed.jsonl')[0]!;
        const r = await replay(
          failed,
          failed.filter((e) => e['type'] !== 'error'),
        );
        const quota = await turnError(fromLangChain(codexModel(r)), ask('x'));
        // the SDK throws the error event's status-less APIError; its type says what it was
        expect(quota, String(quota)).to.be.instanceOf(HttpError);
        expect(classifyError(quota)).to.deep.include({ category: 'rate_limit', retryable: false, fallback: true });
        expect(await turnError(fromLangChain(codexModel(r)), ask('x'))).to.be.instanceOf(IncompleteStreamError);
      });

      it("response.incomplete — the answer stopped by max_output_tokens or the content filter — finishes as Chat Completions' finish_reason would: 'length', 'content-filter' (the answer as far as it went; not a cut stream)", async () => {
        const r = await replay(ending(answer, incomplete('max_output_tokens')), ending(answer, incomplete('content_filter')), ending(answer, incomplete(null)));
        for (const reason of ['length', 'content-filter', 'other']) {
          const events = await turn(fromLangChain(codexModel(r)), ask('x'));
          expect(textOf(events), reason).to.equal('The final result is **570**.');
          expect(events.at(-1), reason).to.deep.equal({ type: 'finish', reason, usage: { inputTokens: 299, outputTokens: 12 } });
        }
      });

      it("a Responses status other than completed or incomplete on a last chunk ('failed', 'cancelled', 'in_progress') is refused whatever requireFinishReason says", async () => {
        for (const status of ['failed', 'cancelled', 'in_progress']) {
          const model = new ScriptedChatModel([
            chunk({ content: [{ type: 'text', text: 'Par', index: 0 }] as never, response_metadata: { model_provider: 'openai' } }),
            chunk({ content: [], response_metadata: { model_provider: 'openai', object: 'response', status, incomplete_details: null } }),
          ]);
          for (const requireFinishReason of [undefined, false]) {
            expect(await turnError(fromLangChain(model, { requireFinishReason }), ask('x')), `${status}, ${String(requireFinishReason)}`).to.be.instanceOf(
              IncompleteStreamError,
            );
          }
        }
      });
    });
  });
});
