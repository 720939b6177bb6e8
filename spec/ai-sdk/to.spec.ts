/**
 * toAiSdk (src/ai-sdk/to.ts, partWriter.ts): rxheal models — scripted ones, fallbackModel chains
 * of fromAiSdk models — as AI SDK models under the real `streamText` / `generateText`.
 */
import type { LanguageModelV3, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import type { TextStreamPart, ToolSet } from 'ai';
import { expect } from 'chai';
import { concat, from, Observable, throwError, timer } from 'rxjs';
import { fromAiSdk, StreamRestartError, toAiSdk } from '../../src/ai-sdk/index.js';
import { HttpError, InvalidOptionError } from '../../src/core/errors/errors.js';
import type { TurnEvent } from '../../src/core/events/events.js';
import type { Model, ModelRequest } from '../../src/core/model/model.js';
import { fallbackModel } from '../../src/sources/fallbackModel.js';
import { openAICompatibleModel } from '../../src/providers/openai.js';
import type { LocalProvider } from '../../src/server/index.js';
import { ask, localProviders, RIVERS, RIVERS_ANSWER, turn, WEATHER_TOOL } from '../support/interop.js';
import { fixtureFetch } from '../support/providerFakes.js';
import { AI_SDK_KITS, reportSkippedMajors } from '../support/kits.js';
import { ANTHROPIC_THINKING_SSE, fakes, finish, fullStream, scripted, text, usage } from './fakes.js';

describe('rxheal/ai-sdk', function () {
  this.timeout(20_000);
  const providers = localProviders();
  let server: LocalProvider;
  let backup: LocalProvider;
  let slow: LocalProvider;
  before(() => ({ server, backup, slow } = providers));

  for (const kit of AI_SDK_KITS)
    describe(`toAiSdk: rxheal Model → LanguageModelV3 under streamText / generateText — ${kit.label}`, () => {
      const { mock, claudeOn, compat, claude } = fakes(kit);
      const { streamText, generateText, tool, jsonSchema, stepCountIs } = kit;

      it('streamText: text, finish reason and usage', async () => {
        const model = scripted('s', () => [
          { type: 'text-delta', text: 'Hello' },
          { type: 'text-delta', text: ' world' },
          { type: 'finish', reason: 'stop', usage: { inputTokens: 7, outputTokens: 2 } },
        ]);
        const result = streamText({ model: toAiSdk(model), prompt: 'Hi', maxRetries: 0 });
        expect(await result.text).to.equal('Hello world');
        expect(await result.finishReason).to.equal('stop');
        expect(await result.totalUsage).to.deep.include({ inputTokens: 7, outputTokens: 2, totalTokens: 9 });
      });

      it("the prompt cache's reads and writes and the reasoning share reach the AI SDK's usage (cacheRead, cacheWrite, noCache, reasoning), and fromAiSdk reads them back", async () => {
        const cached = { inputTokens: 100, outputTokens: 12, cachedInputTokens: 80, cacheWriteTokens: 15, reasoningTokens: 5 };
        const model = scripted('s', () => [
          { type: 'text-delta', text: 'Hi' },
          { type: 'finish', reason: 'stop', usage: cached },
        ]);
        const result = streamText({ model: toAiSdk(model), prompt: 'Hi', maxRetries: 0 });
        const usage = (await result.totalUsage) as {
          inputTokenDetails?: Record<string, unknown>;
          outputTokenDetails?: Record<string, unknown>;
          cachedInputTokens?: number;
        };
        expect(usage).to.deep.include({ inputTokens: 100, outputTokens: 12 });
        if (usage.inputTokenDetails) {
          expect(usage.inputTokenDetails).to.deep.include({ cacheReadTokens: 80, cacheWriteTokens: 15, noCacheTokens: 5 });
          expect(usage.outputTokenDetails).to.deep.include({ reasoningTokens: 5, textTokens: 7 });
        } else expect(usage.cachedInputTokens).to.equal(80);
        const back = await turn(fromAiSdk(toAiSdk(model)), ask('Hi'));
        expect(back.at(-1)).to.deep.equal({ type: 'finish', reason: 'stop', usage: cached });
      });

      it("streamText's toolChoice becomes the request's toolChoice (every rxheal model gets it: a real one sends tool_choice), and fromAiSdk hands it on as the AI SDK's", async () => {
        const getWeather = tool({
          description: 'Current weather for a city',
          inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }),
        });
        const before = server.requests.length;
        const seen: unknown[] = [];
        const real = openAICompatibleModel({ baseURL: server.openAIBaseURL, model: 'local' });
        const spy: Model = { id: 'spy', stream: (request, context) => (seen.push(request.toolChoice), real.stream(request, context)) };
        for (const toolChoice of ['required', { type: 'tool', toolName: 'get_weather' }, 'none'] as const) {
          await streamText({
            model: toAiSdk(spy),
            tools: { get_weather: getWeather },
            toolChoice,
            prompt: "What's the weather in Paris?",
            maxRetries: 0,
          }).consumeStream();
        }
        expect(seen).to.deep.equal(['required', { tool: 'get_weather' }, 'none']);
        expect(server.requests.slice(before).map((r) => (r.body as { tool_choice?: unknown }).tool_choice)).to.deep.equal([
          'required',
          { type: 'function', function: { name: 'get_weather' } },
          'none',
        ]);
        // and the other way: our toolChoice reaches an AI SDK model as its own
        const model = mock(finish());
        await turn(fromAiSdk(model), { ...ask('x', [WEATHER_TOOL]), toolChoice: { tool: 'get_weather' } });
        await turn(fromAiSdk(model), { ...ask('x', [WEATHER_TOOL]), toolChoice: 'required' });
        expect(model.doStreamCalls.map((c) => c.toolChoice)).to.deep.equal([{ type: 'tool', toolName: 'get_weather' }, { type: 'required' }]);
      });

      it("providerOptions.openai.promptCacheKey is the request's promptCacheKey: sent by every rxheal model as prompt_cache_key", async () => {
        const before = server.requests.length;
        const seen: unknown[] = [];
        const real = openAICompatibleModel({ baseURL: server.openAIBaseURL, model: 'local' });
        const spy: Model = { id: 'spy', stream: (request, context) => (seen.push(request.promptCacheKey), real.stream(request, context)) };
        await streamText({ model: toAiSdk(spy), prompt: RIVERS, providerOptions: { openai: { promptCacheKey: 'conv-9' } }, maxRetries: 0 }).consumeStream();
        await streamText({ model: toAiSdk(spy), prompt: RIVERS, maxRetries: 0 }).consumeStream();
        expect(seen).to.deep.equal(['conv-9', undefined]);
        const sent = server.requests.slice(before).map((r) => r.body as Record<string, unknown>);
        expect(sent.map((b) => b['prompt_cache_key'])).to.deep.equal(['conv-9', undefined]);
      });

      it("maxOutputTokens: streamText's is the request's (sent as max_completion_tokens, no warning); fromAiSdk sends it over its settings'", async () => {
        const before = server.requests.length;
        const seen: unknown[] = [];
        const real = openAICompatibleModel({ baseURL: server.openAIBaseURL, model: 'local' });
        const spy: Model = { id: 'spy', stream: (request, context) => (seen.push(request.maxOutputTokens), real.stream(request, context)) };
        const limited = streamText({ model: toAiSdk(spy), prompt: RIVERS, maxOutputTokens: 64, maxRetries: 0 });
        await limited.consumeStream();
        expect(await limited.warnings).to.deep.equal([]);
        await streamText({ model: toAiSdk(spy), prompt: RIVERS, maxRetries: 0 }).consumeStream();
        expect(seen).to.deep.equal([64, undefined]);
        const sent = server.requests.slice(before).map((r) => r.body as Record<string, unknown>);
        expect(sent.map((b) => b['max_completion_tokens'])).to.deep.equal([64, undefined]);
        expect(sent[1]).not.to.have.property('max_completion_tokens');
        // a limit no model could send: the call rejects, no model called
        const rejected = await toAiSdk(spy)
          .doStream({ prompt: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }], maxOutputTokens: 0 })
          .then(
            () => undefined,
            (e: unknown) => e,
          );
        expect(rejected).to.be.instanceOf(InvalidOptionError).and.to.deep.include({ option: 'request.maxOutputTokens', value: 0 });
        expect(seen).to.have.length(2);
        // the other way
        const model = mock(finish());
        await turn(fromAiSdk(model, { settings: { maxOutputTokens: 4096 } }), { ...ask('x'), maxOutputTokens: 128 });
        await turn(fromAiSdk(model, { settings: { maxOutputTokens: 4096 } }), ask('x'));
        await turn(fromAiSdk(model), ask('x'));
        expect(model.doStreamCalls.map((c) => c.maxOutputTokens)).to.deep.equal([128, 4096, undefined]);
        const error = await turn(fromAiSdk(model), { ...ask('x'), maxOutputTokens: 1.5 }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).to.be.instanceOf(InvalidOptionError).and.to.deep.include({ option: 'request.maxOutputTokens', value: 1.5 });
        expect(model.doStreamCalls).to.have.length(3);
      });

      it("a real rxheal model (openAICompatibleModel) with the AI SDK's tools: streamText calls the tool and answers from its result", async () => {
        const getWeather = tool({
          description: 'Current weather for a city',
          inputSchema: jsonSchema<{ city: string; units?: string }>({
            type: 'object',
            properties: { city: { type: 'string' }, units: { type: 'string' } },
            required: ['city'],
          }),
          execute: ({ city }) => Promise.resolve({ temperature: 22, condition: 'sunny', city }),
        });
        const result = streamText({
          model: toAiSdk(openAICompatibleModel({ baseURL: server.openAIBaseURL, model: 'local' })),
          tools: { get_weather: getWeather },
          stopWhen: stepCountIs(3),
          prompt: "What's the weather in Paris?",
          maxRetries: 0,
        });
        expect(await result.text).to.equal('It is 22 °C and sunny in Paris.');
        const steps = await result.steps;
        expect(steps[0]!.toolCalls.map((c) => [c.toolName, c.input])).to.deep.equal([['get_weather', { city: 'Paris', units: 'celsius' }]]);
        expect(steps[0]!.finishReason).to.equal('tool-calls');
      });

      for (const ours of ['length', 'content-filter', 'other'] as const) {
        it(`finish reason '${ours}' reaches streamText`, async () => {
          const result = streamText({
            model: toAiSdk(
              scripted('s', () => [
                { type: 'text-delta', text: 'x' },
                { type: 'finish', reason: ours },
              ]),
            ),
            prompt: 'Hi',
            maxRetries: 0,
          });
          expect(await result.finishReason).to.equal(ours);
        });
      }

      it("an error mid-stream: an error part with the model's error, then finishReason 'error' (as the AI SDK's providers do)", async () => {
        const boom = new HttpError(503);
        const model = scripted('s', () =>
          concat(
            from<TurnEvent[]>([{ type: 'text-delta', text: 'Hel' }]),
            throwError(() => boom),
          ),
        );
        const errors: unknown[] = [];
        const result = streamText({ model: toAiSdk(model), prompt: 'Hi', maxRetries: 0, onError: ({ error }) => void errors.push(error) });
        const parts = await fullStream(result);
        expect(parts.filter((p) => p.type === 'error').map((p) => (p as { error: unknown }).error)).to.deep.equal([boom]);
        expect(errors).to.deep.equal([boom]);
        expect(await result.finishReason).to.equal('error');
        expect(await result.text).to.equal('Hel');
      });

      it('a malformed event from a hand-written model (a throwing getter) ends the stream with an error part, never an uncaught throw', async () => {
        const bad = new Error('bad event');
        const event = {
          type: 'text-delta',
          get text(): string {
            throw bad;
          },
        } as TurnEvent;
        const model = scripted('s', () => [{ type: 'text-delta', text: 'Hel' }, event, { type: 'finish', reason: 'stop' }]);
        const result = streamText({ model: toAiSdk(model), prompt: 'Hi', maxRetries: 0, onError: () => undefined });
        const parts = await fullStream(result);
        expect(parts.filter((p) => p.type === 'error').map((p) => (p as { error: unknown }).error)).to.deep.equal([bad]);
        expect(await result.text).to.equal('Hel');
        expect(await result.finishReason).to.equal('error');
      });

      it("a reset after text was delivered can't be expressed: an error part (StreamRestartError), finishReason 'error', and the restart is never started — never a splice", async () => {
        let restartStarted = false;
        const model = scripted('s', () =>
          concat(
            from<TurnEvent[]>([
              { type: 'text-delta', text: 'First attempt' },
              { type: 'reset', reason: 'fallback', target: 'model:b' },
            ]),
            new Observable<TurnEvent>((subscriber) => {
              restartStarted = true;
              subscriber.next({ type: 'text-delta', text: 'Second attempt' });
            }),
          ),
        );
        const result = streamText({ model: toAiSdk(model), prompt: 'Hi', maxRetries: 0, onError: () => undefined });
        const parts = await fullStream(result);
        const errors = parts.filter((p) => p.type === 'error').map((p) => (p as { error: unknown }).error);
        expect(errors).to.have.length(1);
        expect(errors[0]).to.be.instanceOf(StreamRestartError).and.include({ reason: 'fallback', target: 'model:b' });
        expect(await result.text).to.equal('First attempt');
        expect(await result.finishReason).to.equal('error');
        // the stream's end reaches the model while it still emits synchronously: concat never subscribes the restart
        expect(restartStarted).to.equal(false);
      });

      it('a reset before anything was delivered is invisible: the next attempt is the whole answer', async () => {
        const model = scripted('s', () => [
          { type: 'reset', reason: 'retry', target: 'model:s' },
          { type: 'text-delta', text: 'Whole' },
          { type: 'finish', reason: 'stop' },
        ]);
        const result = streamText({ model: toAiSdk(model), prompt: 'Hi', maxRetries: 0 });
        expect(await result.text).to.equal('Whole');
        expect(await result.finishReason).to.equal('stop');
      });

      it("fallbackModel midStream 'continue': the continuation goes on in the same stream, nothing lost or doubled", async () => {
        const a = scripted('a', () =>
          concat(
            from<TurnEvent[]>([
              { type: 'text-delta', text: 'The river ' },
              { type: 'text-delta', text: 'flows' },
            ]),
            throwError(() => new HttpError(503)),
          ),
        );
        const b = scripted('b', () => [
          { type: 'text-delta', text: ' flows to the sea.' },
          { type: 'finish', reason: 'stop' },
        ]);
        const result = streamText({ model: toAiSdk(fallbackModel([a, b], { midStream: 'continue' })), prompt: 'Tell me about rivers', maxRetries: 0 });
        const parts = await fullStream(result);
        expect(await result.text).to.equal('The river flows to the sea.');
        expect(parts.filter((p) => p.type === 'error')).to.deep.equal([]);
        expect(await result.finishReason).to.equal('stop');
      });

      it('healing under streamText with real providers: a dead primary → the backup answers; a reset mid-answer → continued, nothing lost or doubled', async () => {
        const model = toAiSdk(
          fallbackModel([fromAiSdk(compat(server), { id: 'primary' }), fromAiSdk(claude(backup), { id: 'backup' })], { midStream: 'continue' }),
        );
        server.faults.set({ kind: 'down', times: 1 });
        expect(await streamText({ model, prompt: RIVERS, maxRetries: 0 }).text).to.equal(RIVERS_ANSWER);
        server.faults.set({ kind: 'reset', afterChunks: 6, times: 1 });
        const result = streamText({ model, prompt: RIVERS, maxRetries: 0 });
        const parts = await fullStream(result);
        expect(await result.text).to.equal(RIVERS_ANSWER);
        expect(parts.filter((p) => p.type === 'error')).to.deep.equal([]);
        expect(JSON.stringify(backup.requests.at(-1)?.body)).to.contain('was cut off');
      });

      it("streamText's own retry never re-runs the chain: doStream doesn't reject, a failing model is called once", async () => {
        const failing = scripted('f', () => throwError(() => new HttpError(503)));
        const result = streamText({ model: toAiSdk(failing), prompt: 'Hi', onError: () => undefined }); // maxRetries: its default 2
        await fullStream(result);
        expect(await result.finishReason).to.equal('error');
        expect(failing.calls).to.equal(1);
      });

      it("aborting streamText's abortSignal unsubscribes: the model's request is aborted (the server sees the client close it)", async () => {
        const controller = new AbortController();
        const before = slow.requests.length;
        const result = streamText({
          model: toAiSdk(openAICompatibleModel({ baseURL: slow.openAIBaseURL, model: 'local' })),
          prompt: RIVERS,
          maxRetries: 0,
          abortSignal: controller.signal,
          onError: () => undefined,
        });
        for await (const delta of result.textStream) {
          if (delta !== '') break;
        }
        controller.abort();
        const record = await slow.waitForRequest((r) => Number(r.id.slice(4)) > before);
        expect(record.end).to.equal('client-closed');
      });

      it("the call's settings travel to the fromAiSdk models inside (streamText's win over the model's own)", async () => {
        const inner = mock(...text('ok'), finish());
        const model = toAiSdk(fallbackModel([fromAiSdk(inner, { settings: { temperature: 1, topP: 0.5 } })], { midStream: 'continue' }));
        await streamText({ model, prompt: 'Hi', temperature: 0.2, maxOutputTokens: 50, maxRetries: 0 }).text;
        expect(inner.doStreamCalls[0]).to.include({ temperature: 0.2, topP: 0.5, maxOutputTokens: 50 });
      });

      // found by a review of the checks: settings a model inside can't take were dropped without a word
      it("settings a model inside can't take are warned about, as AI SDK providers do ('unsupported', naming the model): in the stream-start part and generateText's warnings; fromAiSdk models inside take them, so none", async () => {
        const logging = (globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS;
        (globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false;
        try {
          const native = openAICompatibleModel({ baseURL: server.openAIBaseURL, model: 'local', id: 'native' });
          const details = "rxheal model 'native' takes no AI SDK call settings (only fromAiSdk models do): set it on the model itself";
          const chain = toAiSdk(fallbackModel([fromAiSdk(mock(...text('ok'), finish()), { id: 'inner' }), native]));
          const streamed = streamText({ model: chain, prompt: RIVERS, temperature: 0.2, seed: 7, maxRetries: 0 });
          await streamed.text;
          expect(await streamed.warnings).to.deep.equal(['temperature', 'seed'].map((feature) => ({ type: 'unsupported', feature, details })));
          // the stream-start part itself (responseFormat: what streamText sets for an output schema)
          const { stream } = await chain.doStream({
            prompt: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
            responseFormat: { type: 'json' },
            providerOptions: { openai: { user: 'u' } },
          });
          const first = await stream.getReader().read();
          expect(first.value).to.deep.equal({ type: 'stream-start', warnings: [{ type: 'unsupported', feature: 'responseFormat', details }] });
          const generated = await generateText({ model: toAiSdk(native), prompt: RIVERS, temperature: 0, maxRetries: 0 });
          expect(generated.warnings).to.deep.equal([{ type: 'unsupported', feature: 'temperature', details }]);
          const two = toAiSdk(fallbackModel([native, openAICompatibleModel({ baseURL: server.openAIBaseURL, model: 'local', id: 'other' })]));
          expect((await generateText({ model: two, prompt: RIVERS, topP: 0.5, maxRetries: 0 })).warnings).to.deep.equal([
            {
              type: 'unsupported',
              feature: 'topP',
              details: "rxheal models 'native' and 'other' take no AI SDK call settings (only fromAiSdk models do): set it on the models themselves",
            },
          ]);
          // every model inside takes them; a call that sets none warns about none
          expect(
            await streamText({
              model: toAiSdk(fallbackModel([fromAiSdk(mock(...text('ok'), finish()))])),
              prompt: 'Hi',
              temperature: 0.2,
              seed: 7,
              maxRetries: 0,
            }).warnings,
          ).to.deep.equal([]);
          expect(await streamText({ model: toAiSdk(native), prompt: RIVERS, maxRetries: 0 }).warnings).to.deep.equal([]);
        } finally {
          (globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = logging;
        }
      });

      it('a prompt with a file part is refused clearly (rxheal models take text)', async () => {
        const model = toAiSdk(scripted('s', () => []));
        const error = await Promise.resolve(
          model.doStream({ prompt: [{ role: 'user', content: [{ type: 'file', data: new Uint8Array([1]), mediaType: 'image/png' }] }] }),
        ).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).to.be.instanceOf(InvalidOptionError).with.property('message').that.contains('image/png');
      });

      it('generateText: text, tool calls and usage; a reset there discards what was collected (nothing was delivered)', async () => {
        const model = scripted('g', () => [
          { type: 'text-delta', text: 'discarded' },
          { type: 'reset', reason: 'retry', target: 'model:g' },
          { type: 'text-delta', text: 'Calling' },
          { type: 'tool-call', id: 'c1', name: 'get_weather', args: { city: 'Oslo' } },
          { type: 'finish', reason: 'tool-calls', usage: { inputTokens: 3, outputTokens: 4 } },
        ]);
        const result = await generateText({ model: toAiSdk(model), prompt: 'Weather?', maxRetries: 0 });
        expect(result.text).to.equal('Calling');
        expect(result.toolCalls.map((c) => [c.toolCallId, c.toolName, c.input])).to.deep.equal([['c1', 'get_weather', { city: 'Oslo' }]]);
        expect(result.finishReason).to.equal('tool-calls');
        expect(result.usage).to.deep.include({ inputTokens: 3, outputTokens: 4 });
      });

      it("generateText rejects with the model's error", async () => {
        const boom = new HttpError(400);
        const error = await generateText({ model: toAiSdk(scripted('g', () => throwError(() => boom))), prompt: 'Hi', maxRetries: 0 }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).to.equal(boom);
      });

      it('cancelling the stream (the consumer stops reading) unsubscribes the model', async () => {
        let unsubscribed = false;
        const model = scripted(
          's',
          () =>
            new Observable<TurnEvent>((subscriber) => {
              subscriber.next({ type: 'text-delta', text: 'Hel' });
              const t = timer(60_000).subscribe();
              return () => {
                unsubscribed = true;
                t.unsubscribe();
              };
            }),
        );
        const { stream } = await toAiSdk(model).doStream({ prompt: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }] });
        const reader = stream.getReader();
        await reader.read(); // stream-start
        await reader.read(); // text-start
        await reader.cancel();
        expect(unsubscribed).to.equal(true);
      });

      describe('reasoning', () => {
        /** The reasoning parts of a fullStream, without what streamText adds (ids it renames). */
        const reasoningParts = (parts: readonly TextStreamPart<ToolSet>[]) =>
          parts.flatMap((p) =>
            p.type === 'reasoning-start' || p.type === 'reasoning-end' || p.type === 'reasoning-delta'
              ? [
                  {
                    type: p.type,
                    ...(p.type === 'reasoning-delta' ? { text: p.text } : {}),
                    ...(p.providerMetadata ? { providerMetadata: p.providerMetadata } : {}),
                  },
                ]
              : [],
          );

        it("streamText: reasoning as reasoning-start/-delta/-end parts, the signature in the end's providerMetadata.anthropic; result.reasoning keeps it, result.text excludes the reasoning", async () => {
          const model = scripted('s', () => [
            { type: 'reasoning-delta', text: 'The user wants' },
            { type: 'reasoning-delta', text: ' Paris.' },
            { type: 'reasoning-end', signature: 'sig-1' },
            { type: 'text-delta', text: 'Sunny.' },
            { type: 'finish', reason: 'stop' },
          ]);
          const result = streamText({ model: toAiSdk(model), prompt: 'Weather?', maxRetries: 0 });
          expect(reasoningParts(await fullStream(result))).to.deep.equal([
            { type: 'reasoning-start' },
            { type: 'reasoning-delta', text: 'The user wants' },
            { type: 'reasoning-delta', text: ' Paris.' },
            { type: 'reasoning-end', providerMetadata: { anthropic: { signature: 'sig-1' } } },
          ]);
          expect(await result.reasoning).to.deep.equal([
            { type: 'reasoning', text: 'The user wants Paris.', providerMetadata: { anthropic: { signature: 'sig-1' } } },
          ]);
          expect(await result.reasoningText).to.equal('The user wants Paris.');
          expect(await result.text).to.equal('Sunny.');
        });

        it('a redacted block: reasoning-start and -end with providerMetadata.anthropic.redactedData (as @ai-sdk/anthropic streams it), no text', async () => {
          const model = scripted('s', () => [
            { type: 'reasoning-end', redactedData: 'EmwK' },
            { type: 'text-delta', text: 'Done.' },
            { type: 'finish', reason: 'stop' },
          ]);
          const result = streamText({ model: toAiSdk(model), prompt: 'Hi', maxRetries: 0 });
          expect(reasoningParts(await fullStream(result))).to.deep.equal([
            { type: 'reasoning-start', providerMetadata: { anthropic: { redactedData: 'EmwK' } } },
            { type: 'reasoning-end', providerMetadata: { anthropic: { redactedData: 'EmwK' } } },
          ]);
          expect(await result.reasoning).to.deep.equal([{ type: 'reasoning', text: '', providerMetadata: { anthropic: { redactedData: 'EmwK' } } }]);
          expect(await result.text).to.equal('Done.');
        });

        it('unsigned reasoning never ended: its block ends before the finish, without metadata; an unsigned end of nothing delivers nothing', async () => {
          const model = scripted('s', () => [
            { type: 'reasoning-end' },
            { type: 'reasoning-delta', text: 'Musing' },
            { type: 'text-delta', text: 'Answer' },
            { type: 'finish', reason: 'stop' },
          ]);
          const result = streamText({ model: toAiSdk(model), prompt: 'Hi', maxRetries: 0 });
          const parts = await fullStream(result);
          expect(reasoningParts(parts)).to.deep.equal([{ type: 'reasoning-start' }, { type: 'reasoning-delta', text: 'Musing' }, { type: 'reasoning-end' }]);
          expect(parts.findIndex((p) => p.type === 'reasoning-end')).to.be.lessThan(parts.findIndex((p) => p.type === 'finish-step'));
          expect((await result.reasoning).map((r) => [r.text, r.providerMetadata])).to.deep.equal([['Musing', undefined]]);
          expect(await result.text).to.equal('Answer');
        });

        it('a reset before anything was delivered is invisible: only the next attempt’s reasoning shows', async () => {
          const model = scripted('s', () => [
            { type: 'reset', reason: 'retry', target: 'model:s' },
            { type: 'reasoning-delta', text: 'Second thoughts' },
            { type: 'reasoning-end', signature: 'sig-2' },
            { type: 'text-delta', text: 'Whole' },
            { type: 'finish', reason: 'stop' },
          ]);
          const result = streamText({ model: toAiSdk(model), prompt: 'Hi', maxRetries: 0 });
          const parts = await fullStream(result);
          expect(parts.filter((p) => p.type === 'error')).to.deep.equal([]);
          expect(await result.reasoning).to.deep.equal([
            { type: 'reasoning', text: 'Second thoughts', providerMetadata: { anthropic: { signature: 'sig-2' } } },
          ]);
          expect(await result.finishReason).to.equal('stop');
        });

        it("a reset after reasoning was delivered (reasoning is output): an error part (StreamRestartError), finishReason 'error', never a splice", async () => {
          const model = scripted('s', () => [
            { type: 'reasoning-delta', text: 'First thoughts' },
            { type: 'reset', reason: 'fallback', target: 'model:b' },
            { type: 'reasoning-delta', text: 'Second thoughts' },
            { type: 'text-delta', text: 'Second' },
            { type: 'finish', reason: 'stop' },
          ]);
          const result = streamText({ model: toAiSdk(model), prompt: 'Hi', maxRetries: 0, onError: () => undefined });
          const parts = await fullStream(result);
          const errors = parts.filter((p) => p.type === 'error').map((p) => (p as { error: unknown }).error);
          expect(errors).to.have.length(1);
          expect(errors[0]).to.be.instanceOf(StreamRestartError).and.include({ reason: 'fallback', target: 'model:b' });
          expect(await result.reasoningText).to.equal('First thoughts');
          expect(await result.text).to.equal('');
          expect(await result.finishReason).to.equal('error');
        });

        it('generateText: reasoning and reasoningText with the signature; a reset there discards the reasoning collected (nothing was delivered)', async () => {
          const model = scripted('g', () => [
            { type: 'reasoning-delta', text: 'discarded' },
            { type: 'reset', reason: 'retry', target: 'model:g' },
            { type: 'reasoning-delta', text: 'Kept' },
            { type: 'reasoning-delta', text: ' thought' },
            { type: 'reasoning-end', signature: 'sig-g' },
            { type: 'reasoning-end', redactedData: 'EmwK' },
            { type: 'text-delta', text: 'Answer' },
            { type: 'finish', reason: 'stop' },
          ]);
          const result = await generateText({ model: toAiSdk(model), prompt: 'Hi', maxRetries: 0 });
          expect(result.reasoning).to.deep.equal([
            { type: 'reasoning', text: 'Kept thought', providerMetadata: { anthropic: { signature: 'sig-g' } } },
            { type: 'reasoning', text: '', providerMetadata: { anthropic: { redactedData: 'EmwK' } } },
          ]);
          expect(result.reasoningText).to.equal('Kept thought');
          expect(result.text).to.equal('Answer');
        });

        it("the prompt's reasoning parts → the assistant message's reasoning (signature, redacted data, other providers' metadata); a part with nothing at all is dropped", async () => {
          const seen: ModelRequest[] = [];
          const model: Model = {
            id: 'r',
            stream: (request) => (
              seen.push(request),
              [
                { type: 'text-delta', text: 'ok' },
                { type: 'finish', reason: 'stop' },
              ]
            ),
          };
          const { stream } = await toAiSdk(model).doStream({
            prompt: [
              { role: 'user', content: [{ type: 'text', text: 'Weather?' }] },
              {
                role: 'assistant',
                content: [
                  { type: 'reasoning', text: 'Need the tool.', providerOptions: { anthropic: { signature: 'sig-1' } } },
                  { type: 'reasoning', text: '', providerOptions: { anthropic: { redactedData: 'EmwK' } } },
                  { type: 'reasoning', text: 'plain musing' },
                  { type: 'reasoning', text: '', providerOptions: { openai: { itemId: 'rs_1' } } },
                  { type: 'reasoning', text: '' },
                  { type: 'tool-call', toolCallId: 'c1', toolName: 'get_weather', input: { city: 'Oslo' } },
                ],
              },
            ],
          });
          await stream.pipeTo(new WritableStream());
          expect(seen[0]!.messages[1]).to.deep.equal({
            role: 'assistant',
            content: '',
            toolCalls: [{ id: 'c1', name: 'get_weather', args: { city: 'Oslo' } }],
            reasoning: [
              { text: 'Need the tool.', signature: 'sig-1' },
              { text: '', redactedData: 'EmwK' },
              { text: 'plain musing' },
              { text: '', providerMetadata: { openai: { itemId: 'rs_1' } } },
            ],
          });
        });

        it("a tool loop under generateText: the AI SDK hands the first step's signed reasoning back with its assistant message, and rxheal's model sees it", async () => {
          const seen: ModelRequest[] = [];
          const model: Model = {
            id: 'loop',
            stream: (request) => {
              seen.push(request);
              return seen.length === 1
                ? [
                    { type: 'reasoning-delta', text: 'Need Oslo weather.' },
                    { type: 'reasoning-end', signature: 'sig-1' },
                    { type: 'tool-call', id: 'c1', name: 'get_weather', args: { city: 'Oslo' } },
                    { type: 'finish', reason: 'tool-calls' },
                  ]
                : [
                    { type: 'text-delta', text: 'Sunny in Oslo.' },
                    { type: 'finish', reason: 'stop' },
                  ];
            },
          };
          const getWeather = tool({
            inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }),
            execute: ({ city }) => Promise.resolve(`sunny in ${city}`),
          });
          const result = await generateText({
            model: toAiSdk(model),
            tools: { get_weather: getWeather },
            stopWhen: stepCountIs(2),
            prompt: 'Weather in Oslo?',
            maxRetries: 0,
          });
          expect(result.text).to.equal('Sunny in Oslo.');
          expect(seen[1]!.messages[1]).to.deep.include({ role: 'assistant', reasoning: [{ text: 'Need Oslo weather.', signature: 'sig-1' }] });
        });

        it('through a whole chain — streamText over toAiSdk(fromAiSdk(the real @ai-sdk/anthropic)) — the signed and the redacted block reach Anthropic again as thinking blocks in the next step', async () => {
          const { fetch, calls } = fixtureFetch(ANTHROPIC_THINKING_SSE);
          const getWeather = tool({
            inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }),
            execute: ({ city }) => Promise.resolve(`sunny in ${city}`),
          });
          const result = streamText({
            model: toAiSdk(fallbackModel([fromAiSdk(claudeOn(fetch))])),
            tools: { get_weather: getWeather },
            stopWhen: stepCountIs(2),
            prompt: 'Weather in Paris?',
            maxRetries: 0,
          });
          await fullStream(result);
          const firstStep = (await result.steps)[0]!.content.flatMap((part) => (part.type === 'reasoning' ? [[part.text, part.providerMetadata]] : []));
          expect(firstStep).to.deep.equal([
            ['The user wants the weather in Paris.', { anthropic: { signature: 'EqQBCgIYAhIM1gbcDa' } }],
            ['', { anthropic: { redactedData: 'EmwKAhgBEgy3va3pzix' } }],
          ]);
          const second = (calls[1]!.body as { messages: { role: string; content: unknown[] }[] }).messages[1]!;
          expect(second).to.deep.equal({
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'The user wants the weather in Paris.', signature: 'EqQBCgIYAhIM1gbcDa' },
              { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix' },
              { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
            ],
          });
        });
      });

      it('round trip: streamText over toAiSdk(fromAiSdk(m)) gives what streamText over m gives — text, finish, usage, and reasoning with its signature and redacted data', async () => {
        const parts: LanguageModelV3StreamPart[] = [
          { type: 'reasoning-start', id: '0' },
          { type: 'reasoning-delta', id: '0', delta: 'Greet ' },
          { type: 'reasoning-delta', id: '0', delta: 'them.' },
          { type: 'reasoning-delta', id: '0', delta: '', providerMetadata: { anthropic: { signature: 'sig-rt' } } },
          { type: 'reasoning-end', id: '0' },
          { type: 'reasoning-start', id: '1', providerMetadata: { anthropic: { redactedData: 'EmwK' } } },
          { type: 'reasoning-end', id: '1' },
          ...text('Hello', ' there'),
          finish('stop', usage(5, 2)),
        ];
        const direct = streamText({ model: mock(...parts), prompt: 'Hi', maxRetries: 0 });
        const healed = streamText({ model: toAiSdk(fromAiSdk(mock(...parts))), prompt: 'Hi', maxRetries: 0 });
        expect(await healed.text).to.equal(await direct.text);
        expect(await healed.finishReason).to.equal(await direct.finishReason);
        expect((await healed.totalUsage).totalTokens).to.equal((await direct.totalUsage).totalTokens);
        expect(await direct.reasoning).to.have.length(2);
        expect(await healed.reasoning).to.deep.equal(await direct.reasoning);
        expect(await healed.reasoningText).to.equal(await direct.reasoningText);
      });

      it('bad input at once: not a model, an unknown option', () => {
        expect(() => toAiSdk({} as Model)).to.throw(InvalidOptionError);
        expect(() =>
          toAiSdk(
            scripted('s', () => []),
            { name: 'x' } as never,
          ),
        ).to.throw(InvalidOptionError, /name/);
      });

      // what AI SDK 7's own call options do with an rxheal model inside
      if (kit.major === 7) {
        describe("AI SDK 7's own options: reasoning, streamRetries, timeout", () => {
          it("streamText's reasoning option travels to the fromAiSdk models inside: a real @ai-sdk/openai-compatible 3 sends it as reasoning_effort", async () => {
            const before = server.requests.length;
            const inner = mock(...text('ok'), finish());
            const model = toAiSdk(fallbackModel([fromAiSdk(inner), fromAiSdk(compat(server))]));
            expect(await streamText({ model, prompt: 'Hi', reasoning: 'low', maxRetries: 0 } as never).text).to.equal('ok');
            expect(inner.doStreamCalls[0]).to.have.property('reasoning', 'low');
            const real = toAiSdk(fromAiSdk(compat(server)));
            await streamText({ model: real, prompt: RIVERS, reasoning: 'high', maxRetries: 0 } as never).text;
            expect(server.requests.slice(before).map((r) => (r.body as { reasoning_effort?: unknown }).reasoning_effort)).to.deep.equal(['high']);
          });

          it("streamRetries left unset (its default): a stream error reaches onError once and the chain runs once — set it, and AI SDK 7 re-runs the whole chain after rxheal gave up, every attempt's partial text left in the stream", async () => {
            const failing = scripted('f', () =>
              concat(
                from<TurnEvent[]>([{ type: 'text-delta', text: 'Hel' }]),
                throwError(() => new HttpError(503)),
              ),
            );
            const errors: unknown[] = [];
            const once = streamText({ model: toAiSdk(failing), prompt: 'Hi', maxRetries: 0, onError: ({ error }) => void errors.push(error) });
            const parts = await fullStream(once);
            expect(failing.calls).to.equal(1);
            expect(errors).to.have.length(1);
            expect(parts.filter((p) => p.type === 'text-delta').map((p) => (p as { text: string }).text)).to.deep.equal(['Hel']);
            failing.calls = 0;
            const retried = streamText({ model: toAiSdk(failing), prompt: 'Hi', maxRetries: 0, streamRetries: 2, onError: () => undefined } as never);
            const repeated = await fullStream(retried);
            expect(failing.calls).to.equal(3);
            expect(repeated.filter((p) => p.type === 'text-delta').map((p) => (p as { text: string }).text)).to.deep.equal(['Hel', 'Hel', 'Hel']);
            expect(await retried.finishReason).to.equal('error');
          });

          for (const timeout of [60, { totalMs: 60 }, { stepMs: 60 }, { firstChunkMs: 60 }] as const) {
            it(`timeout ${JSON.stringify(timeout)}: the call is aborted, which unsubscribes the model inside (its request aborted)`, async () => {
              let unsubscribed = 0;
              const stalled = scripted('s', () => new Observable<TurnEvent>(() => () => void unsubscribed++));
              const result = streamText({ model: toAiSdk(stalled), prompt: 'Hi', maxRetries: 0, timeout, onError: () => undefined } as never);
              const parts = await fullStream(result);
              expect(parts.map((p) => p.type)).to.include('abort');
              expect(unsubscribed).to.equal(1);
            });
          }

          it('timeout { chunkMs }: a model that stalls after its first delta is aborted and unsubscribed', async () => {
            let unsubscribed = 0;
            const stalled = scripted(
              's',
              () => new Observable<TurnEvent>((subscriber) => (subscriber.next({ type: 'text-delta', text: 'Hel' }), () => void unsubscribed++)),
            );
            const result = streamText({ model: toAiSdk(stalled), prompt: 'Hi', maxRetries: 0, timeout: { chunkMs: 60 }, onError: () => undefined } as never);
            const parts = await fullStream(result);
            expect(parts.map((p) => p.type)).to.include.members(['text-delta', 'abort']);
            expect(unsubscribed).to.equal(1);
          });
        });
      }

      it(`wrapLanguageModel over it (a spec ${kit.specificationVersion} model, its middleware's) streams the same answer, with a middleware's settings travelling to the models inside`, async () => {
        const inner = mock(...text('Wrapped', ' fine.'), finish());
        const wrapped = kit.wrapLanguageModel({
          model: toAiSdk(fromAiSdk(inner)),
          middleware: {
            specificationVersion: 'v3',
            transformParams: ({ params }: { params: Record<string, unknown> }) => Promise.resolve({ ...params, temperature: 0.3 }),
          } as never,
        });
        expect(wrapped.specificationVersion).to.equal(kit.specificationVersion);
        expect(await streamText({ model: wrapped, prompt: 'Hi', maxRetries: 0 }).text).to.equal('Wrapped fine.');
        expect(inner.doStreamCalls[0]).to.have.property('temperature', 0.3);
      });

      it('reports itself as a v3 model of provider rxheal with the model id', () => {
        const model: LanguageModelV3 = toAiSdk(scripted('chain', () => []));
        expect(model).to.include({ specificationVersion: 'v3', provider: 'rxheal', modelId: 'chain' });
      });
    });
  reportSkippedMajors('toAiSdk: rxheal Model → LanguageModelV3 under streamText / generateText');

  // the prompt of a spec v4 caller (or of ai@7's conversion, which tags nothing it
  // passes down but file data it untags), handed straight to doStream
  describe('toAiSdk: spec v4 prompts (AI SDK 7: tagged file data, custom and reasoning-file parts)', () => {
    const requests: ModelRequest[] = [];
    const recording: Model = {
      id: 'rec',
      stream: (request) => (
        requests.push(request),
        from<TurnEvent[]>([
          { type: 'text-delta', text: 'ok' },
          { type: 'finish', reason: 'stop' },
        ])
      ),
    };
    const call = async (prompt: unknown[]): Promise<{ parts: LanguageModelV3StreamPart[]; error?: unknown }> => {
      try {
        const { stream } = await toAiSdk(recording).doStream({ prompt: prompt as never });
        const parts: LanguageModelV3StreamPart[] = [];
        for await (const part of stream as unknown as AsyncIterable<LanguageModelV3StreamPart>) parts.push(part);
        return { parts };
      } catch (error) {
        return { parts: [], error };
      }
    };

    it('a user file part with tagged data (data, url, reference, text) is refused, naming its media type and data', async () => {
      for (const [data, said] of [
        [{ type: 'data', data: new Uint8Array([1]) }, 'inline data'],
        [{ type: 'url', url: new URL('https://example.com/cat.png') }, 'a URL'],
        [{ type: 'reference', reference: { openai: 'file-1' } }, 'a provider file reference'],
        [{ type: 'text', text: 'notes' }, 'inline text'],
      ] as const) {
        const { error } = await call([
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Look:' },
              { type: 'file', mediaType: 'image/png', data },
            ],
          },
        ]);
        expect(error, said)
          .to.be.instanceOf(InvalidOptionError)
          .with.property('message')
          .that.contains('image/png')
          .and.contains(said)
          .and.contains('prompt[0].content[1]');
      }
    });

    it("an assistant message's custom and reasoning-file parts are left out with an 'unsupported' warning each; its text, reasoning and tool calls reach the model", async () => {
      requests.length = 0;
      const { parts, error } = await call([
        { role: 'user', content: [{ type: 'text', text: 'Draw a cat' }] },
        {
          role: 'assistant',
          content: [
            { type: 'reasoning', text: 'A cat, then.', providerOptions: { anthropic: { signature: 'sig' } } },
            { type: 'reasoning-file', mediaType: 'image/png', data: { type: 'data', data: 'iVBORw0KGgo=' } },
            { type: 'custom', kind: 'openai.compaction', providerOptions: { openai: { itemId: 'cmp_1' } } },
            { type: 'text', text: 'Here it is.' },
            { type: 'tool-call', toolCallId: 'c1', toolName: 'draw', input: { what: 'cat' } },
          ],
        },
        { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'draw', output: { type: 'text', value: 'drawn' } }] },
      ]);
      expect(error).to.equal(undefined);
      expect(parts[0]).to.deep.equal({
        type: 'stream-start',
        warnings: [
          {
            type: 'unsupported',
            feature: 'prompt[1].content[1]: a reasoning file (image/png)',
            details: 'rxheal conversations carry text, reasoning text, tool calls and tool results: the part was left out',
          },
          {
            type: 'unsupported',
            feature: "prompt[1].content[2]: custom content 'openai.compaction'",
            details: 'rxheal conversations carry text, reasoning text, tool calls and tool results: the part was left out',
          },
        ],
      });
      expect(requests[0]!.messages[1]).to.deep.equal({
        role: 'assistant',
        content: 'Here it is.',
        toolCalls: [{ id: 'c1', name: 'draw', args: { what: 'cat' } }],
        reasoning: [{ text: 'A cat, then.', signature: 'sig' }],
      });
    });

    it("a tool result's content: text as is, a v4 file of inline text as its text, other files named by type and media type", async () => {
      requests.length = 0;
      await call([
        {
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              toolCallId: 'c1',
              toolName: 'read',
              output: {
                type: 'content',
                value: [
                  { type: 'text', text: 'Report: ' },
                  { type: 'file', mediaType: 'text/plain', data: { type: 'text', text: 'all good' } },
                  { type: 'file', mediaType: 'image/png', data: { type: 'data', data: 'iVBORw0KGgo=' } },
                  { type: 'file-data', mediaType: 'application/pdf', data: 'JVBERi0=' },
                ],
              },
            },
          ],
        },
      ]);
      expect(requests[0]!.messages).to.deep.equal([
        { role: 'tool', toolCallId: 'c1', toolName: 'read', content: 'Report: all good[file image/png][file-data application/pdf]' },
      ]);
    });
  });
});
