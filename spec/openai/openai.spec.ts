/**
 * rxheal/openai: fromOpenAI over the official `openai` SDK — 6.x, and 7.x on Node ≥ 22
 * (spec/support/kits.ts) — pointed at the local provider.
 */
import { expect } from 'chai';
import * as t from 'io-ts';
import { lastValueFrom, toArray } from 'rxjs';
import { runAgent } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';
import OpenAI from 'openai';
import { fromOpenAI, type OpenAIChatClient } from '../../src/openai/index.js';
import { openAICompatibleModel } from '../../src/providers/openai.js';
import { startLocalProvider, type LocalProvider } from '../../src/server/index.js';
import { sdkAdapterSuite } from '../support/sdkAdapterSuite.js';
import { ask, RIVERS, turn, turnError, WEATHER_TOOL } from '../support/interop.js';
import { chatChunk, fixture, fixtureFetch, OPENROUTER_ERROR_502, sseBody } from '../support/providerFakes.js';
import { classifyError } from '../../src/core/errors/classify.js';
import { HttpError, InvalidOptionError } from '../../src/core/errors/errors.js';
import { OPENAI_KITS, reportSkippedMajors } from '../support/kits.js';

for (const kit of OPENAI_KITS)
  describe(`rxheal/openai: fromOpenAI (${kit.label} against rxheal/server)`, function () {
    this.timeout(20_000);
    const SDK = kit.OpenAI;
    const client = (server: LocalProvider): OpenAI => new SDK({ baseURL: server.openAIBaseURL, apiKey: 'test', logLevel: 'off' });

    sdkAdapterSuite({
      make: (server, options) => fromOpenAI(client(server), { model: 'local' }, options),
      reference: (server) => openAICompatibleModel({ baseURL: server.openAIBaseURL, model: 'local' }),
      apiError: SDK.APIError,
      rateLimitError: SDK.RateLimitError,
      midStream: { errorType: 'server_error', status: 500 },
      badInput: [
        ['a client without chat.completions.create', () => fromOpenAI({} as OpenAIChatClient, { model: 'gpt-4o' })],
        ['params without a model', () => fromOpenAI(new SDK({ apiKey: 'x' }), { model: '' })],
        ['maxRetries: -1', () => fromOpenAI(new SDK({ apiKey: 'x' }), { model: 'gpt-4o' }, { maxRetries: -1 })],
        ['an unknown option', () => fromOpenAI(new SDK({ apiKey: 'x' }), { model: 'gpt-4o' }, { retries: 2 } as never)],
        // every choice of the stream is read as the one answer rxheal asked for
        ['params asking for two answers (n: 2)', () => fromOpenAI(new SDK({ apiKey: 'x' }), { model: 'gpt-4o', n: 2 })],
      ],
    });

    describe('requests', () => {
      it('sends params with the stream settings, the signal and maxRetries 0 (a hand-written client records them)', async () => {
        const calls: { body: Record<string, unknown>; options: OpenAI.RequestOptions | undefined }[] = [];
        const fake: OpenAIChatClient = {
          chat: {
            completions: {
              create: (body, options) => {
                calls.push({ body: body as unknown as Record<string, unknown>, options });
                async function* chunks(): AsyncGenerator<OpenAI.ChatCompletionChunk> {
                  yield {
                    id: 'c',
                    object: 'chat.completion.chunk',
                    created: 0,
                    model: 'm',
                    choices: [{ index: 0, delta: { content: 'Hi' }, finish_reason: null }],
                  };
                  yield { id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] };
                }
                return Promise.resolve(chunks());
              },
            },
          },
        };
        const events = await turn(fromOpenAI(fake, { model: 'gpt-4o', temperature: 0 }), ask(RIVERS));
        expect(events).to.deep.equal([
          { type: 'text-delta', text: 'Hi' },
          { type: 'finish', reason: 'stop' },
        ]);
        expect(calls[0]?.body).to.deep.include({ model: 'gpt-4o', temperature: 0, stream: true, stream_options: { include_usage: true } });
        expect(calls[0]?.options?.maxRetries).to.equal(0);
        expect(calls[0]?.options?.signal).to.be.instanceOf(AbortSignal);
      });

      it("maxOutputTokens → max_completion_tokens, over params' (max_tokens left out); absent without one; a bad one: InvalidOptionError", async () => {
        const { fetch, calls } = fixtureFetch(fixture('openai-text.sse'));
        const model = fromOpenAI(new SDK({ baseURL: 'http://x.test/v1', apiKey: 'k', logLevel: 'off', fetch }), { model: 'm', max_tokens: 4096 });
        await turn(model, { ...ask(RIVERS), maxOutputTokens: 256 });
        expect(calls[0]?.body).to.deep.include({ model: 'm', max_completion_tokens: 256 }).and.not.to.have.property('max_tokens');
        await turn(fromOpenAI(new SDK({ baseURL: 'http://x.test/v1', apiKey: 'k', logLevel: 'off', fetch }), { model: 'm' }), ask(RIVERS));
        expect(calls[1]?.body).not.to.have.property('max_completion_tokens');
        const error = await turnError(model, { ...ask(RIVERS), maxOutputTokens: 0 });
        expect(error).to.be.instanceOf(InvalidOptionError).and.to.deep.include({ option: 'request.maxOutputTokens', value: 0 });
        expect(calls).to.have.length(2);
      });

      it("promptCacheKey → prompt_cache_key on the wire, over params' (which stays for a request without one); a bad one: InvalidOptionError, nothing sent", async () => {
        const { fetch, calls } = fixtureFetch(fixture('openai-text.sse'));
        const sdk = new SDK({ baseURL: 'http://x.test/v1', apiKey: 'k', logLevel: 'off', fetch });
        const model = fromOpenAI(sdk, { model: 'm', prompt_cache_key: 'params-key' });
        await turn(model, { ...ask(RIVERS), promptCacheKey: 'conversation-42' });
        await turn(model, ask(RIVERS));
        await turn(fromOpenAI(sdk, { model: 'm' }), ask(RIVERS));
        expect(calls.map((c) => (c.body as Record<string, unknown>)['prompt_cache_key'])).to.deep.equal(['conversation-42', 'params-key', undefined]);
        const error = await turnError(model, { ...ask(RIVERS), promptCacheKey: 42 as never });
        expect(error).to.be.instanceOf(InvalidOptionError).and.to.deep.include({ option: 'request.promptCacheKey', value: 42 });
        expect(calls).to.have.length(3);
      });

      it("the model's id: openai:<model>, or options.id", () => {
        expect(fromOpenAI(new SDK({ apiKey: 'x' }), { model: 'gpt-4o' }).id).to.equal('openai:gpt-4o');
        expect(fromOpenAI(new SDK({ apiKey: 'x' }), { model: 'gpt-4o' }, { id: 'primary' }).id).to.equal('primary');
      });

      it('a stream the SDK ends without any finish_reason errors (IncompleteStreamError), never a short answer', async () => {
        const fake: OpenAIChatClient = {
          chat: {
            completions: {
              create: () =>
                Promise.resolve(
                  (async function* (): AsyncGenerator<OpenAI.ChatCompletionChunk> {
                    yield {
                      id: 'c',
                      object: 'chat.completion.chunk',
                      created: 0,
                      model: 'm',
                      choices: [{ index: 0, delta: { content: 'Hal' }, finish_reason: null }],
                    };
                  })(),
                ),
            },
          },
        };
        const error = await turn(fromOpenAI(fake, { model: 'gpt-4o' }), ask(RIVERS)).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).to.have.property('name', 'IncompleteStreamError');
      });
    });

    describe('recorded streams of OpenAI-compatible servers (the real SDK, served by its fetch)', () => {
      const sdk = (body: string) =>
        fromOpenAI(new SDK({ baseURL: 'http://x.test/v1', apiKey: 'k', logLevel: 'off', fetch: fixtureFetch(body).fetch }), { model: 'm' });

      it("OpenRouter's mid-stream error { code: 502 } (the SDK's APIError has no status): an HttpError 502, retryable", async () => {
        const error = await turnError(sdk(OPENROUTER_ERROR_502), ask(RIVERS));
        expect(error).to.be.instanceOf(HttpError).and.have.property('status', 502);
        expect(classifyError(error)).to.deep.include({ category: 'bad_gateway', retryable: true });
      });

      it('parallel tool calls that all say index 0 (Ollama): one tool-call each, never one call with both arguments', async () => {
        const call = (id: string, city: string) => ({ index: 0, id, type: 'function', function: { name: 'get_weather', arguments: JSON.stringify({ city }) } });
        const body = sseBody(
          chatChunk({ role: 'assistant', content: '', tool_calls: [call('call_p', 'Paris')] }),
          chatChunk({ tool_calls: [call('call_o', 'Oslo')] }),
          chatChunk({}, 'tool_calls'),
          '[DONE]',
        );
        expect(await turn(sdk(body), ask('Weather in Paris and Oslo?', [WEATHER_TOOL]))).to.deep.equal([
          { type: 'tool-call', id: 'call_p', name: 'get_weather', args: { city: 'Paris' } },
          { type: 'tool-call', id: 'call_o', name: 'get_weather', args: { city: 'Oslo' } },
          { type: 'finish', reason: 'tool-calls' },
        ]);
      });
    });
    describe('extended thinking (the real SDK against rxheal/server with thinking on)', () => {
      let server: LocalProvider;
      before(async () => {
        server = await startLocalProvider({ name: 'openai-thinking', tokenDelayMs: 0 });
      });
      after(() => server.close());

      it('a tool turn with thinking goes back as the API requires (the server refuses it otherwise); the reasoning streams apart from the answer', async () => {
        const getWeather = defineTool({
          name: 'get_weather',
          description: 'Weather',
          args: t.type({ city: t.string, units: t.string }),
          execute: () => [{ temperature: 22, condition: 'sunny' }],
        });
        const model = fromOpenAI(new SDK({ baseURL: server.openAIBaseURL, apiKey: 'test', logLevel: 'off' }), {
          model: 'local',
          thinking: { type: 'enabled' },
        } as Parameters<typeof fromOpenAI>[1]);
        const events = await lastValueFrom(
          runAgent({ model, tools: [getWeather], messages: [{ role: 'user', content: "What's the weather in NYC?" }] }).pipe(toArray()),
        );
        expect(server.requests.map((r) => r.status)).to.deep.equal([200, 200]);
        expect(events.filter((e) => e.type === 'reasoning-delta').length).to.be.greaterThan(4);
        const last = events.at(-1);
        expect(last?.type === 'message' && last.message.content).to.equal('It is 22 °C and sunny in NYC.');
      });
    });
  });

describe('rxheal/openai: fromOpenAI', () => reportSkippedMajors('fromOpenAI'));
