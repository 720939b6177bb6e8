/**
 * rxheal/openai: fromOpenAIResponses over the official `openai` SDK's `responses.create` — 6.x,
 * and 7.x on Node ≥ 22 (spec/support/kits.ts) — against rxheal/server's `/v1/responses` (the
 * adapter suite every SDK adapter passes, checked against openAIResponsesModel) and against
 * recorded Responses streams replayed on loopback (spec/support/responsesReplay.ts): the same
 * requests and events as openAIResponsesModel, the SDK's errors classified.
 */
import { expect } from 'chai';
import * as t from 'io-ts';
import { lastValueFrom, toArray } from 'rxjs';
import { classifyError } from '../../src/core/errors/classify.js';
import { HttpError, IncompleteStreamError, InvalidOptionError, MalformedStreamError } from '../../src/core/errors/errors.js';
import { streamModel, type Model } from '../../src/core/model/model.js';
import { fromOpenAIResponses, type OpenAIResponsesClient } from '../../src/openai/index.js';
import type { LocalProvider } from '../../src/server/index.js';
import { openAIResponsesModel } from '../../src/providers/responses.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';
import { ask, turn, turnError } from '../support/interop.js';
import { OPENAI_KITS, reportSkippedMajors } from '../support/kits.js';
import { recordedResponses, replayResponses, type ResponseEvents } from '../support/responsesReplay.js';
import { sdkAdapterSuite } from '../support/sdkAdapterSuite.js';

const calculator = defineTool({
  name: 'calculator',
  description: 'Arithmetic',
  args: t.type({ a: t.number, b: t.number, op: t.keyof({ add: null, multiply: null }) }),
  execute: ({ a, b, op }) => [op === 'add' ? a + b : a * b],
});
const question = [{ role: 'user' as const, content: 'Compute (12 + 7) × 3 × 10 with the calculator.' }];

for (const kit of OPENAI_KITS) {
  describe(`rxheal/openai: fromOpenAIResponses (${kit.label} against rxheal/server's /v1/responses)`, function () {
    this.timeout(20_000);
    const client = (server: LocalProvider): OpenAIResponsesClient => new kit.OpenAI({ baseURL: server.openAIBaseURL, apiKey: 'test', logLevel: 'off' });
    sdkAdapterSuite({
      make: (server, options) => fromOpenAIResponses(client(server), { model: 'local' }, options),
      reference: (server) => openAIResponsesModel({ baseURL: server.openAIBaseURL, model: 'local' }),
      apiError: kit.OpenAI.APIError,
      rateLimitError: kit.OpenAI.RateLimitError,
      midStream: { errorType: 'server_error', status: 500, sdkMayPassIt: true },
      badInput: [
        ['a client without responses.create', () => fromOpenAIResponses({} as OpenAIResponsesClient, { model: 'gpt-5' })],
        ['params without a model', () => fromOpenAIResponses(new kit.OpenAI({ apiKey: 'x' }), { model: '' })],
        ['maxRetries: -1', () => fromOpenAIResponses(new kit.OpenAI({ apiKey: 'x' }), { model: 'gpt-5' }, { maxRetries: -1 })],
        ['an unknown option', () => fromOpenAIResponses(new kit.OpenAI({ apiKey: 'x' }), { model: 'gpt-5' }, { retries: 2 } as never)],
      ],
    });
  });

  describe(`rxheal/openai: fromOpenAIResponses (${kit.label}, recorded Responses streams on loopback)`, function () {
    this.timeout(20_000);
    const client = (baseURL: string): OpenAIResponsesClient => new kit.OpenAI({ baseURL, apiKey: 'k', logLevel: 'off' });
    const withReplay = async <T>(
      responses: readonly ResponseEvents[],
      run: (baseURL: string, requests: Awaited<ReturnType<typeof replayResponses>>['requests']) => Promise<T>,
    ): Promise<T> => {
      const replay = await replayResponses(responses);
      try {
        return await run(replay.baseURL, replay.requests);
      } finally {
        await replay.close();
      }
    };

    it('server-side compaction (the recorded compaction turn, then the next): the same events as openAIResponsesModel, the item sent back opaque, the cache fields in the body', async () => {
      const [compacted] = recordedResponses('openai-responses-compaction.jsonl');
      const params = { model: 'gpt-5.2', context_management: [{ type: 'compaction', compact_threshold: 50_000 }] } as never;
      const twoTurns = (model: Model) => async () => {
        const first = await lastValueFrom(streamModel(model, ask('Compare the frameworks.')).pipe(toArray()));
        const end = first.find((e) => e.type === 'reasoning-end');
        const text = first.flatMap((e) => (e.type === 'text-delta' ? [e.text] : [])).join('');
        const reasoning = end?.type === 'reasoning-end' && end.providerMetadata ? [{ text: '', providerMetadata: end.providerMetadata }] : [];
        await lastValueFrom(
          streamModel(model, {
            messages: [...ask('Compare the frameworks.').messages, { role: 'assistant', content: text, reasoning }, { role: 'user', content: 'And testing?' }],
            tools: [],
          }).pipe(toArray()),
        );
        return first;
      };
      const promptCache = { key: 'conversation-42', retention: '24h' } as const;
      const viaSdk = await withReplay([compacted!, compacted!], async (baseURL, requests) => ({
        events: await twoTurns(fromOpenAIResponses(client(baseURL), params, { promptCache }))(),
        bodies: requests.map((r) => r.body),
      }));
      const viaFetch = await withReplay([compacted!, compacted!], async (baseURL, requests) => ({
        events: await twoTurns(
          openAIResponsesModel({ baseURL, model: 'gpt-5.2', body: { context_management: [{ type: 'compaction', compact_threshold: 50_000 }] }, promptCache }),
        )(),
        bodies: requests.map((r) => r.body),
      }));
      expect(viaSdk.events).to.deep.equal(viaFetch.events);
      expect(viaSdk.events.at(-1)).to.deep.include({ usage: { inputTokens: 51097, outputTokens: 2505, cachedInputTokens: 49792 } });
      const item = compacted!.find((e) => e['type'] === 'response.output_item.done' && (e['item'] as { type: string }).type === 'compaction')!['item'];
      expect(viaSdk.bodies[1]!['input']).to.deep.include(item);
      expect(viaSdk.bodies[0]).to.deep.include({ prompt_cache_key: 'conversation-42', prompt_cache_retention: '24h' });
      expect(viaSdk.bodies).to.deep.equal(viaFetch.bodies);
    });

    it("runAgent: a reasoning model's tool turns — the same events and request bodies as openAIResponsesModel on the same recording", async () => {
      const codex = recordedResponses('openai-responses-codex-calculator.jsonl');
      const viaSdk = await withReplay(codex, async (baseURL, requests) => ({
        events: await lastValueFrom(
          runAgent({ model: fromOpenAIResponses(client(baseURL), { model: 'gpt-5.1-codex-max' }, { id: 'm' }), tools: [calculator], messages: question }).pipe(
            toArray(),
          ),
        ),
        bodies: requests.map((r) => r.body),
      }));
      const viaFetch = await withReplay(codex, async (baseURL, requests) => ({
        events: await lastValueFrom(
          runAgent({ model: openAIResponsesModel({ baseURL, model: 'gpt-5.1-codex-max', id: 'm' }), tools: [calculator], messages: question }).pipe(toArray()),
        ),
        bodies: requests.map((r) => r.body),
      }));
      const last = viaSdk.events.at(-1);
      expect(last?.type === 'message' && last.message.content).to.equal('The final result is **570**.');
      // the same events but for the call lifecycle's clock readings
      const timeless = (events: readonly unknown[]) => JSON.stringify(events.filter((e) => !['call-start', 'call-end'].includes((e as { type: string }).type)));
      expect(timeless(viaSdk.events)).to.equal(timeless(viaFetch.events));
      expect(viaSdk.bodies).to.deep.equal(viaFetch.bodies);
      expect(viaSdk.bodies[1]).to.include({ store: false });
    });

    it('an error event mid-stream (insufficient_quota; openai 6 passes it on as an event, 7 throws a status-less APIError) → HttpError 429, not retryable, fallback', async () => {
      const error = await withReplay(recordedResponses('openai-responses-failed.jsonl'), (baseURL) =>
        turnError(fromOpenAIResponses(client(baseURL), { model: 'm' }), ask('Hi')),
      );
      expect(error).to.be.instanceOf(HttpError).with.property('status', 429);
      expect(classifyError(error)).to.deep.include({ category: 'rate_limit', retryable: false, fallback: true });
    });

    it('response.failed (server_error) → HttpError 500, retryable; a stream cut before its completion → IncompleteStreamError; a malformed event → MalformedStreamError', async () => {
      const answer = recordedResponses('openai-responses-codex-calculator.jsonl')[3]!;
      const failed: ResponseEvents = [
        ...answer.slice(0, 5),
        { type: 'response.failed', sequence_number: 999, response: { status: 'failed', error: { code: 'server_error', message: 'The server had an error' } } },
      ];
      const error = await withReplay([failed], (baseURL) => turnError(fromOpenAIResponses(client(baseURL), { model: 'm' }), ask('Hi')));
      expect(error).to.be.instanceOf(HttpError).with.property('status', 500);
      expect(classifyError(error)).to.deep.include({ retryable: true, fallback: true });
      const cut = await withReplay([answer.slice(0, 6)], (baseURL) => turnError(fromOpenAIResponses(client(baseURL), { model: 'm' }), ask('Hi')));
      expect(cut).to.be.instanceOf(IncompleteStreamError);
      const reordered = await withReplay([[answer[0]!, answer[2]!, answer[1]!, ...answer.slice(3)]], (baseURL) =>
        turnError(fromOpenAIResponses(client(baseURL), { model: 'm' }), ask('Hi')),
      );
      expect(reordered).to.be.instanceOf(MalformedStreamError).with.property('message').that.contains('sequence_number');
    });

    it('the client-run items of params.tools: a declared custom tool becomes a tool call; the request carries params (model, tools, settings)', async () => {
      const custom = recordedResponses('openai-responses-custom-tool.jsonl');
      const events = await withReplay(custom, (baseURL) =>
        turn(fromOpenAIResponses(client(baseURL), { model: 'gpt-5', tools: [{ type: 'custom', name: 'write_sql' }] }), ask('Users over 25?')),
      );
      expect(events[0]).to.deep.include({ type: 'tool-call', id: 'call_custom_sql_001', name: 'write_sql', args: 'SELECT * FROM users WHERE age > 25' });
      const undeclared = await withReplay(custom, (baseURL) => turnError(fromOpenAIResponses(client(baseURL), { model: 'gpt-5' }), ask('Users over 25?')));
      expect(undeclared).to.be.instanceOf(MalformedStreamError).with.property('message').that.contains('custom_tool_call');
      const requests = await withReplay(custom, async (baseURL, recorded) => {
        await turn(fromOpenAIResponses(client(baseURL), { model: 'gpt-5', tools: [{ type: 'custom', name: 'write_sql' }], max_output_tokens: 64 }), ask('Hi'));
        return recorded;
      });
      expect(requests[0]!.body).to.include({ model: 'gpt-5', max_output_tokens: 64, stream: true, store: false });
      expect(requests[0]!.body['tools']).to.deep.equal([{ type: 'custom', name: 'write_sql' }]);
    });

    it("maxOutputTokens → max_output_tokens, over params'; absent without one; not a positive integer: InvalidOptionError, nothing sent", async () => {
      const text = recordedResponses('openai-responses-custom-tool.jsonl');
      const requests = await withReplay(text, async (baseURL, recorded) => {
        const tools = [{ type: 'custom' as const, name: 'write_sql' }];
        await turn(fromOpenAIResponses(client(baseURL), { model: 'gpt-5', tools, max_output_tokens: 4096 }), { ...ask('Hi'), maxOutputTokens: 300 });
        const error = await turnError(fromOpenAIResponses(client(baseURL), { model: 'gpt-5', tools }), { ...ask('Hi'), maxOutputTokens: 1.5 });
        expect(error).to.be.instanceOf(InvalidOptionError).and.to.deep.include({ option: 'request.maxOutputTokens', value: 1.5 });
        return recorded;
      });
      expect(requests).to.have.length(1);
      expect(requests[0]!.body).to.include({ model: 'gpt-5', max_output_tokens: 300 });
      const plain = await withReplay(text, async (baseURL, recorded) => {
        await turn(fromOpenAIResponses(client(baseURL), { model: 'gpt-5', tools: [{ type: 'custom', name: 'write_sql' }] }), ask('Hi'));
        return recorded;
      });
      expect(plain[0]!.body).not.to.have.property('max_output_tokens');
    });

    it("promptCacheKey → prompt_cache_key on the wire, over promptCache.key and params'; absent without any; a bad one: InvalidOptionError, nothing sent", async () => {
      const text = recordedResponses('openai-responses-custom-tool.jsonl');
      const tools = [{ type: 'custom' as const, name: 'write_sql' }];
      const requests = await withReplay([...text, ...text, ...text], async (baseURL, recorded) => {
        const model = fromOpenAIResponses(client(baseURL), { model: 'gpt-5', tools, prompt_cache_key: 'params-key' }, { promptCache: { key: 'option-key' } });
        await turn(model, { ...ask('Hi'), promptCacheKey: 'conversation-42' });
        await turn(model, ask('Hi'));
        await turn(fromOpenAIResponses(client(baseURL), { model: 'gpt-5', tools }), ask('Hi'));
        const error = await turnError(model, { ...ask('Hi'), promptCacheKey: '' });
        expect(error).to.be.instanceOf(InvalidOptionError).and.to.deep.include({ option: 'request.promptCacheKey', value: '' });
        return recorded;
      });
      expect(requests.map((r) => r.body['prompt_cache_key'])).to.deep.equal(['conversation-42', 'option-key', undefined]);
      expect(requests[2]!.body).not.to.have.property('prompt_cache_key');
    });

    it('unsubscribing aborts the request (the SDK gets the signal)', async () => {
      let signal: AbortSignal | undefined;
      const hanging: OpenAIResponsesClient = {
        responses: {
          create: (_body, options) => {
            signal = options?.signal ?? undefined;
            return new Promise(() => undefined);
          },
        },
      };
      const subscription = streamModel(fromOpenAIResponses(hanging, { model: 'm' }), ask('Hi')).subscribe({ error: () => undefined });
      await Promise.resolve();
      subscription.unsubscribe();
      expect(signal?.aborted).to.equal(true);
    });

    it('bad input at once: a client without responses.create, params without a model, an unknown option', () => {
      expect(() => fromOpenAIResponses({} as OpenAIResponsesClient, { model: 'm' })).to.throw(InvalidOptionError, /responses\.create/);
      expect(() => fromOpenAIResponses(new kit.OpenAI({ apiKey: 'x' }), { model: '' })).to.throw(InvalidOptionError, /params\.model/);
      expect(() => fromOpenAIResponses(new kit.OpenAI({ apiKey: 'x' }), { model: 'm' }, { retries: 1 } as never)).to.throw(InvalidOptionError, /retries/);
      expect(fromOpenAIResponses(new kit.OpenAI({ apiKey: 'x' }), { model: 'gpt-5' }).id).to.equal('openai-responses:gpt-5');
    });
  });
}

describe('rxheal/openai: fromOpenAIResponses', () => reportSkippedMajors('fromOpenAIResponses'));
