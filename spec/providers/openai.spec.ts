import { expect } from 'chai';
import * as t from 'io-ts';
import { firstValueFrom, from, lastValueFrom, mergeMap, toArray } from 'rxjs';
import { classifyError } from '../../src/core/errors/classify.js';
import { HttpError, InvalidOptionError } from '../../src/core/errors/errors.js';
import type { Message, TurnEvent } from '../../src/core/events/events.js';
import { streamModel, type ModelRequest } from '../../src/core/model/model.js';
import { openAICompatibleModel, openAIRequestBody } from '../../src/providers/openai.js';
import { IncompleteStreamError, MalformedStreamError } from '../../src/providers/sse.js';
import { startLocalProvider, type LocalProvider } from '../../src/server/index.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';

import { ask, collect, fixture, fixtureFetch, text, tick, weatherTool, specStateTable, type Ends } from '../support/providerFakes.js';

describe('openAICompatibleModel', () => {
  describe('options', () => {
    it('validates at construction: baseURL and model are required, URLs absolute, no unknown keys', () => {
      expect(() => openAICompatibleModel({ baseURL: 'http://x.test/v1', model: 'm' })).not.to.throw();
      expect(() => openAICompatibleModel({ model: 'm' } as never)).to.throw(InvalidOptionError, 'openAICompatibleModel: option "baseURL"');
      expect(() => openAICompatibleModel({ baseURL: 'http://x.test/v1' } as never)).to.throw(InvalidOptionError, 'option "model"');
      expect(() => openAICompatibleModel({ baseURL: '/v1', model: 'm' })).to.throw(InvalidOptionError, 'an absolute http(s) URL');
      expect(() => openAICompatibleModel({ baseURL: 'http://x.test', model: 'm', headers: { a: 1 } } as never)).to.throw(InvalidOptionError, 'headers');
      expect(() => openAICompatibleModel({ baseURL: 'http://x.test', model: 'm', apikey: 'k' } as never)).to.throw(InvalidOptionError, 'apikey');
    });

    it('refuses a body asking for more than one answer (n > 1) at construction: every choice of the stream is read as the one answer', () => {
      for (const n of [2, 0, '1']) {
        expect(() => openAICompatibleModel({ baseURL: 'http://x.test/v1', model: 'm', body: { n } }), String(n)).to.throw(
          InvalidOptionError,
          'openAICompatibleModel: option "body.n"',
        );
      }
      for (const n of [1, null, undefined])
        expect(() => openAICompatibleModel({ baseURL: 'http://x.test/v1', model: 'm', body: { n } }), String(n)).not.to.throw();
    });

    it('is named openai:<model> unless given an id', () => {
      expect(openAICompatibleModel({ baseURL: 'http://x.test/v1', model: 'gpt-4o' }).id).to.equal('openai:gpt-4o');
      expect(openAICompatibleModel({ baseURL: 'http://x.test/v1', model: 'gpt-4o', id: 'primary' }).id).to.equal('primary');
    });
  });

  describe('the request', () => {
    it('POSTs to <baseURL>/chat/completions with bearer auth, custom headers and extra body fields', async () => {
      const { fetch, calls } = fixtureFetch(fixture('openai-text.sse'));
      const model = openAICompatibleModel({
        baseURL: 'https://api.example.test/v1/',
        apiKey: 'sk-test',
        model: 'gpt-4o-mini',
        headers: { 'OpenAI-Organization': 'org-1' },
        body: { temperature: 0, model: 'ignored' },
        fetch,
      });
      await lastValueFrom(streamModel(model, ask('Hi')));
      expect(calls[0]?.url).to.equal('https://api.example.test/v1/chat/completions');
      expect(calls[0]?.init.headers).to.deep.include({
        authorization: 'Bearer sk-test',
        'OpenAI-Organization': 'org-1',
        'content-type': 'application/json',
        accept: 'text/event-stream',
      });
      expect(calls[0]?.body).to.deep.equal({
        temperature: 0,
        model: 'gpt-4o-mini',
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'Hi' }],
      });
    });

    it('sends no authorization header without an API key', async () => {
      const { fetch, calls } = fixtureFetch(fixture('openai-text.sse'));
      await lastValueFrom(streamModel(openAICompatibleModel({ baseURL: 'http://x.test/v1', model: 'm', fetch }), ask('Hi')));
      expect(calls[0]?.init.headers).not.to.have.property('authorization');
    });

    it('maps every message role, tool calls (args as JSON text; raw text as is) and tool results', () => {
      const messages: Message[] = [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: "What's the weather in NYC?" },
        {
          role: 'assistant',
          content: '',
          toolCalls: [
            { id: 'c1', name: 'get_weather', args: { city: 'NYC', units: 'kelvin' } },
            { id: 'c2', name: 'get_weather', args: '{"city": "NY' },
          ],
        },
        { role: 'tool', toolCallId: 'c1', toolName: 'get_weather', content: 'Invalid units', isError: true },
        { role: 'tool', toolCallId: 'c2', toolName: 'get_weather', content: 'bad JSON' },
        { role: 'assistant', content: 'It is sunny.' },
      ];
      expect(openAIRequestBody('gpt', { messages, tools: [weatherTool, { name: 'now', description: 'The time' }] })).to.deep.equal({
        model: 'gpt',
        stream: true,
        stream_options: { include_usage: true },
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: "What's the weather in NYC?" },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"NYC","units":"kelvin"}' } },
              { id: 'c2', type: 'function', function: { name: 'get_weather', arguments: '{"city": "NY' } },
            ],
          },
          { role: 'tool', tool_call_id: 'c1', content: 'Invalid units' },
          { role: 'tool', tool_call_id: 'c2', content: 'bad JSON' },
          { role: 'assistant', content: 'It is sunny.' },
        ],
        tools: [
          { type: 'function', function: { name: 'get_weather', description: 'Current weather for a city', parameters: weatherTool.parameters } },
          { type: 'function', function: { name: 'now', description: 'The time', parameters: { type: 'object', properties: {} } } },
        ],
      });
    });
  });

  describe('tool choice', () => {
    it("toolChoice → tool_choice: 'auto', 'none', 'required' as they are, { tool } as a function; none without tools or without a choice", () => {
      const tools = [weatherTool];
      const sent = (toolChoice?: ModelRequest['toolChoice'], withTools = tools) =>
        openAIRequestBody('m', { messages: [{ role: 'user', content: 'x' }], tools: withTools, ...(toolChoice ? { toolChoice } : {}) })['tool_choice'];
      expect(sent('auto')).to.equal('auto');
      expect(sent('none')).to.equal('none');
      expect(sent('required')).to.equal('required');
      expect(sent({ tool: 'get_weather' })).to.deep.equal({ type: 'function', function: { name: 'get_weather' } });
      expect(sent()).to.equal(undefined);
      expect(sent('required', [])).to.equal(undefined);
    });
  });

  describe('max output tokens', () => {
    it("maxOutputTokens → max_completion_tokens, over the body option's (its legacy max_tokens left out); absent without one", async () => {
      const { fetch, calls } = fixtureFetch(fixture('openai-text.sse'));
      const model = openAICompatibleModel({
        baseURL: 'http://x.test/v1',
        model: 'm',
        body: { max_tokens: 4096, max_completion_tokens: 4096, temperature: 0 },
        fetch,
      });
      await lastValueFrom(streamModel(model, { ...ask('Hi'), maxOutputTokens: 256 }));
      expect(calls[0]?.body).to.deep.include({ max_completion_tokens: 256, temperature: 0 });
      expect(calls[0]?.body).not.to.have.property('max_tokens');
      const plain = openAICompatibleModel({ baseURL: 'http://x.test/v1', model: 'm', fetch });
      await lastValueFrom(streamModel(plain, ask('Hi')));
      expect(calls[1]?.body).not.to.have.property('max_completion_tokens');
      expect(calls[1]?.body).not.to.have.property('max_tokens');
      // the model's default stays when the request sets none
      expect(openAIRequestBody('m', ask('Hi'), { max_completion_tokens: 4096 })['max_completion_tokens']).to.equal(4096);
    });

    it('a maxOutputTokens that is not a positive integer errors the call (InvalidOptionError naming request.maxOutputTokens), nothing sent', async () => {
      const { fetch, calls } = fixtureFetch(fixture('openai-text.sse'));
      const model = openAICompatibleModel({ baseURL: 'http://x.test/v1', model: 'm', fetch });
      for (const bad of [0, -1, 1.5, Number.NaN, '256']) {
        const error: unknown = await lastValueFrom(streamModel(model, { ...ask('Hi'), maxOutputTokens: bad as number })).catch((e: unknown) => e);
        expect(error, String(bad)).to.be.instanceOf(InvalidOptionError);
        expect((error as InvalidOptionError).option).to.equal('request.maxOutputTokens');
        expect((error as InvalidOptionError).value).to.deep.equal(bad);
        expect(() => model.stream({ ...ask('Hi'), maxOutputTokens: bad as number }, { signal: new AbortController().signal })).not.to.throw();
      }
      expect(calls).to.have.length(0);
    });
  });

  describe('prompt cache key', () => {
    it("promptCacheKey → prompt_cache_key on the wire, over the body option's (which stays for a request without one); absent without either", async () => {
      const { fetch, calls } = fixtureFetch(fixture('openai-text.sse'));
      const model = openAICompatibleModel({ baseURL: 'http://x.test/v1', model: 'm', body: { prompt_cache_key: 'from-body', temperature: 0 }, fetch });
      await lastValueFrom(streamModel(model, { ...ask('Hi'), promptCacheKey: 'conversation-42' }));
      await lastValueFrom(streamModel(model, ask('Hi')));
      await lastValueFrom(streamModel(openAICompatibleModel({ baseURL: 'http://x.test/v1', model: 'm', fetch }), ask('Hi')));
      expect(calls.map((c) => (c.body as Record<string, unknown>)['prompt_cache_key'])).to.deep.equal(['conversation-42', 'from-body', undefined]);
      expect(calls[2]?.body).not.to.have.property('prompt_cache_key');
      expect(calls[0]?.body).to.deep.include({ temperature: 0 });
    });

    it('a promptCacheKey that is not a non-empty string errors the call (InvalidOptionError naming request.promptCacheKey), nothing sent', async () => {
      const { fetch, calls } = fixtureFetch(fixture('openai-text.sse'));
      const model = openAICompatibleModel({ baseURL: 'http://x.test/v1', model: 'm', fetch });
      for (const bad of ['', 42, null]) {
        const error: unknown = await lastValueFrom(streamModel(model, { ...ask('Hi'), promptCacheKey: bad as string })).catch((e: unknown) => e);
        expect(error, String(bad)).to.be.instanceOf(InvalidOptionError).and.to.deep.include({ option: 'request.promptCacheKey', value: bad });
      }
      expect(calls).to.have.length(0);
    });
  });

  describe('reasoning sent back (DeepSeek thinking mode)', () => {
    it("an assistant message's unsigned reasoning goes back as reasoning_content; Anthropic's signed and redacted blocks do not", () => {
      const messages: Message[] = [
        { role: 'user', content: 'x' },
        {
          role: 'assistant',
          content: '',
          toolCalls: [{ id: 'c1', name: 'f', args: {} }],
          reasoning: [{ text: 'Think ' }, { text: 'signed', signature: 's' }, { text: '', redactedData: 'r' }, { text: 'twice.' }],
        },
        { role: 'tool', toolCallId: 'c1', toolName: 'f', content: '1' },
        { role: 'assistant', content: 'Done.', reasoning: [{ text: 'only signed', signature: 's' }] },
      ];
      const sent = openAIRequestBody('m', { messages, tools: [] })['messages'] as unknown[];
      expect(sent[1]).to.deep.equal({
        role: 'assistant',
        content: null,
        reasoning_content: 'Think twice.',
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
      });
      expect(sent[3]).to.deep.equal({ role: 'assistant', content: 'Done.' });
    });

    it('a recorded DeepSeek tool-call turn through runAgent: the next request carries its reasoning_content', async () => {
      const bodies = [fixture('openai-reasoning-content.sse'), fixture('openai-text.sse')];
      const sent: Record<string, unknown>[] = [];
      const fetch = ((url: string, init: RequestInit) => {
        sent.push(JSON.parse(String(init.body)) as Record<string, unknown>);
        return fixtureFetch(bodies[sent.length - 1]!).fetch(url, init);
      }) as typeof globalThis.fetch;
      const model = openAICompatibleModel({ baseURL: 'https://api.deepseek.com/v1', model: 'deepseek-reasoner', fetch });
      const getWeather = defineTool({
        name: 'get_weather',
        description: 'Weather',
        args: t.type({ city: t.string, units: t.string }),
        execute: () => [{ temperature: 9 }],
      });
      await lastValueFrom(runAgent({ model, tools: [getWeather], messages: [{ role: 'user', content: 'Weather in Tokyo?' }] }).pipe(toArray()));
      expect(sent).to.have.length(2);
      expect((sent[1]!['messages'] as Record<string, unknown>[])[1]).to.deep.include({
        role: 'assistant',
        content: 'Let me check — 東京.',
        reasoning_content: 'Weather needs a tool.',
      });
    });
  });

  describe('recorded streams (fixtures, served in odd-sized chunks)', () => {
    const model = (name: string, options: Parameters<typeof fixtureFetch>[1] = {}) => {
      const fake = fixtureFetch(fixture(name), options);
      return { ...fake, model: openAICompatibleModel({ baseURL: 'http://x.test/v1', model: 'gpt-4o-mini', fetch: fake.fetch }) };
    };

    for (const sizes of [[1], [3, 7], [13, 64, 5], [100_000]]) {
      it(`a text answer: deltas, then one finish with the usage of the last chunk (chunks of ${sizes.join(', ')} bytes)`, async () => {
        const { events, error } = await collect(streamModel(model('openai-text.sse', { sizes }).model, ask('Weather?')));
        expect(error).to.equal(undefined);
        expect(events).to.deep.equal([
          { type: 'text-delta', text: 'It' },
          { type: 'text-delta', text: ' is' },
          { type: 'text-delta', text: ' 22 °C' },
          { type: 'text-delta', text: ' and sunny — in NYC 🌞.' },
          { type: 'finish', reason: 'stop', usage: { inputTokens: 31, outputTokens: 9 } },
        ]);
      });
    }

    it('the same stream with CRLF line endings', async () => {
      const fake = fixtureFetch(fixture('openai-text.sse').replace(/\n/g, '\r\n'), { sizes: [2, 5] });
      const { events } = await collect(streamModel(openAICompatibleModel({ baseURL: 'http://x.test/v1', model: 'm', fetch: fake.fetch }), ask('x')));
      expect(text(events)).to.equal('It is 22 °C and sunny — in NYC 🌞.');
      expect(events.at(-1)).to.deep.equal({ type: 'finish', reason: 'stop', usage: { inputTokens: 31, outputTokens: 9 } });
    });

    it('tool calls whose arguments arrive in pieces, interleaved by index → one tool-call each when the choice finishes', async () => {
      const { events, error } = await collect(streamModel(model('openai-tool-calls.sse').model, ask('x')));
      expect(error).to.equal(undefined);
      expect(events).to.deep.equal([
        { type: 'tool-call', id: 'call_7xQyJ2dRz9', name: 'get_weather', args: { city: 'New York', units: 'celsius' } },
        { type: 'tool-call', id: 'call_P4kL0sVb1e', name: 'knowledge_search', args: { query: 'umbrella "policy"' } },
        { type: 'finish', reason: 'tool-calls', usage: { inputTokens: 112, outputTokens: 41 } },
      ]);
    });

    it('arguments that are not valid JSON: the tool-call carries the raw text (the codec rejects it later); finish length, no usage', async () => {
      const { events } = await collect(streamModel(model('openai-bad-args.sse').model, ask('x')));
      expect(events).to.deep.equal([
        { type: 'tool-call', id: 'call_bad1', name: 'get_weather', args: '{"city": "NY' },
        { type: 'finish', reason: 'length' },
      ]);
    });

    it('a stream cut short (no finish_reason, no [DONE]) → the deltas so far, then a retryable IncompleteStreamError', async () => {
      const { events, error } = await collect(streamModel(model('openai-truncated.sse').model, ask('x')));
      expect(text(events)).to.equal('It is');
      expect(events.some((e) => e.type === 'finish')).to.equal(false);
      expect(error).to.be.instanceOf(IncompleteStreamError);
      expect((error as Error).message).to.contain('no finish_reason and no [DONE]');
      expect(classifyError(error)).to.include({ retryable: true, fallback: true, category: 'connection' });
    });

    it('a finish_reason but no usage and no [DONE] is still incomplete (the usage may be missing)', async () => {
      const chunks = fixture('openai-text.sse')
        .split('\n\n')
        .filter((c) => c.trim() !== '');
      const cut = chunks.filter((c) => !c.includes('"usage":{') && !c.includes('[DONE]')).join('\n\n') + '\n\n';
      const fake = fixtureFetch(cut);
      const { events, error } = await collect(streamModel(openAICompatibleModel({ baseURL: 'http://x.test/v1', model: 'm', fetch: fake.fetch }), ask('x')));
      expect(events.some((e) => e.type === 'finish')).to.equal(false);
      expect((error as Error).message).to.contain('no [DONE] after the finish_reason');
    });

    it('a finish_reason and then its usage, the body ending without [DONE] (llama.cpp-style servers): the answer is whole', async () => {
      const whole = await collect(
        streamModel(openAICompatibleModel({ baseURL: 'http://x.test/v1', model: 'm', fetch: fixtureFetch(fixture('openai-text.sse')).fetch }), ask('x')),
      );
      const cut = fixture('openai-text.sse').split('data: [DONE]')[0] ?? '';
      const { events, error } = await collect(
        streamModel(openAICompatibleModel({ baseURL: 'http://x.test/v1', model: 'm', fetch: fixtureFetch(cut).fetch }), ask('x')),
      );
      expect(error).to.equal(undefined);
      expect(events).to.deep.equal(whole.events);
      expect(events.at(-1)).to.have.property('usage');
    });

    it('[DONE] without a finish_reason is incomplete too', async () => {
      const fake = fixtureFetch('data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\ndata: [DONE]\n\n');
      const { events, error } = await collect(streamModel(openAICompatibleModel({ baseURL: 'http://x.test/v1', model: 'm', fetch: fake.fetch }), ask('x')));
      expect(events).to.deep.equal([{ type: 'text-delta', text: 'Hi' }]);
      expect(error).to.be.instanceOf(IncompleteStreamError);
    });

    it('a malformed chunk → MalformedStreamError (bad_gateway: retryable, fallback-able), and the rest of the body is cancelled', async () => {
      const { model: m, state } = model('openai-malformed.sse', { hang: true });
      const { events, error } = await collect(streamModel(m, ask('x')));
      expect(events).to.deep.equal([{ type: 'text-delta', text: 'It' }]);
      expect(error).to.be.instanceOf(MalformedStreamError);
      expect(classifyError(error)).to.include({ retryable: true, fallback: true, category: 'bad_gateway' });
      await tick();
      expect(state.cancelled).to.equal(true);
    });

    it('chunks of the wrong shape are malformed too', async () => {
      for (const data of [
        '{"choices":{}}',
        '{"choices":[1]}',
        '{"choices":[{"index":0,"delta":{"tool_calls":[7]}}]}',
        '{"usage":{"prompt_tokens":"many"}}',
        '"text"',
      ]) {
        const fake = fixtureFetch(`data: ${data}\n\n`);
        const { error } = await collect(streamModel(openAICompatibleModel({ baseURL: 'http://x.test/v1', model: 'm', fetch: fake.fetch }), ask('x')));
        expect(error, data).to.be.instanceOf(MalformedStreamError);
      }
    });

    it('an error chunk mid-stream → HttpError 500 (server_error: retryable); a rate-limit error chunk → 429', async () => {
      const { events, error } = await collect(streamModel(model('openai-error.sse').model, ask('x')));
      expect(text(events)).to.equal('It');
      expect(error).to.be.instanceOf(HttpError);
      expect((error as HttpError).status).to.equal(500);
      expect((error as HttpError).message).to.contain('The server had an error');
      expect(classifyError(error)).to.include({ retryable: true, category: 'server_error' });
      const limited = fixtureFetch('data: {"error":{"message":"slow down","type":"rate_limit_exceeded"}}\n\n');
      const second = await collect(streamModel(openAICompatibleModel({ baseURL: 'http://x.test/v1', model: 'm', fetch: limited.fetch }), ask('x')));
      expect((second.error as HttpError).status).to.equal(429);
    });

    it('tool-call pieces without an index: a new id starts a call, the rest continue it', async () => {
      const fake = fixtureFetch(
        [
          '{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"x","arguments":"{\\"n\\":"}}]}}]}',
          '{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"1}"}}]}}]}',
          '{"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"y","arguments":""}}]},"finish_reason":"tool_calls"}]}',
          '[DONE]',
        ]
          .map((d) => `data: ${d}\n\n`)
          .join(''),
      );
      const { events } = await collect(streamModel(openAICompatibleModel({ baseURL: 'http://x.test/v1', model: 'm', fetch: fake.fetch }), ask('x')));
      expect(events).to.deep.equal([
        { type: 'tool-call', id: 'a', name: 'x', args: { n: 1 } },
        { type: 'tool-call', id: 'b', name: 'y', args: {} },
        { type: 'finish', reason: 'tool-calls' },
      ]);
    });

    const run = async (...data: string[]) => {
      const fake = fixtureFetch(data.map((d) => `data: ${d}\n\n`).join(''));
      return collect(streamModel(openAICompatibleModel({ baseURL: 'http://x.test/v1', model: 'm', fetch: fake.fetch }), ask('x')));
    };

    it("vLLM's mid-stream error object ({object: 'error', code}) → HttpError with its code (400: not retryable), not a skipped chunk", async () => {
      // vLLM sends the error as the chunk itself, then [DONE]
      const { events, error } = await run(
        '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"It"},"logprobs":null,"finish_reason":null}]}',
        '{"object":"error","message":"This model\'s maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","param":null,"code":400}',
        '[DONE]',
      );
      expect(text(events)).to.equal('It');
      expect(error).to.be.instanceOf(HttpError);
      expect((error as HttpError).status).to.equal(400);
      expect((error as HttpError).message).to.contain('maximum context length');
      expect(classifyError(error)).to.include({ retryable: false, fallback: true, category: 'bad_request' });
    });

    it("OpenRouter's finish_reason 'error' (the provider gave up mid-answer) → IncompleteStreamError, never a finish", async () => {
      const { events, error } = await run(
        '{"id":"gen-1","provider":"Together","model":"m","object":"chat.completion.chunk","created":1,"choices":[{"index":0,"delta":{"role":"assistant","content":"The answ"},"finish_reason":null,"native_finish_reason":null}]}',
        '{"id":"gen-1","provider":"Together","model":"m","object":"chat.completion.chunk","created":1,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"error","native_finish_reason":"error"}]}',
        '{"id":"gen-1","provider":"Together","model":"m","object":"chat.completion.chunk","created":1,"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}',
        '[DONE]',
      );
      expect(text(events)).to.equal('The answ');
      expect(events.some((e) => e.type === 'finish')).to.equal(false);
      expect(error).to.be.instanceOf(IncompleteStreamError);
      expect(classifyError(error)).to.include({ retryable: true, fallback: true });
    });

    it("OpenRouter's mid-stream error with a numeric code (502) → HttpError 502", async () => {
      const { error } = await run(
        '{"choices":[{"index":0,"delta":{"content":"It"}}]}',
        '{"id":"gen-1","object":"chat.completion.chunk","created":1,"model":"m","provider":"Together","error":{"code":502,"message":"Provider returned error"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}',
        '[DONE]',
      );
      expect((error as HttpError).status).to.equal(502);
      expect(classifyError(error)).to.include({ retryable: true, category: 'bad_gateway' });
    });

    it("Groq's usage in x_groq.usage is read (it has no top-level usage)", async () => {
      const { events, error } = await run(
        '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"llama-3.3-70b-versatile","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"x_groq":{"id":"req_01"}}',
        '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"llama-3.3-70b-versatile","choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}]}',
        '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"llama-3.3-70b-versatile","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"x_groq":{"id":"req_01","usage":{"queue_time":0.02,"prompt_tokens":41,"prompt_time":0.003,"completion_tokens":1,"completion_time":0.002,"total_tokens":42,"total_time":0.005}}}',
        '[DONE]',
      );
      expect(error).to.equal(undefined);
      expect(events.at(-1)).to.deep.equal({ type: 'finish', reason: 'stop', usage: { inputTokens: 41, outputTokens: 1 } });
    });

    it('parallel tool calls that all say index 0 (Ollama, some gateways): each new id with a name is its own call, never one call with both arguments', async () => {
      const { events, error } = await run(
        '{"choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"index":0,"id":"call_p","type":"function","function":{"name":"get_weather","arguments":"{\\"city\\":"}}]},"finish_reason":null}]}',
        '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\\"Paris\\"}"}}]},"finish_reason":null}]}',
        '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_o","type":"function","function":{"name":"get_time","arguments":"{\\"city\\":\\"Oslo\\"}"}}]},"finish_reason":null}]}',
        '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_o","function":{"arguments":""}}]},"finish_reason":"tool_calls"}]}',
        '[DONE]',
      );
      expect(error).to.equal(undefined);
      expect(events).to.deep.equal([
        { type: 'tool-call', id: 'call_p', name: 'get_weather', args: { city: 'Paris' } },
        { type: 'tool-call', id: 'call_o', name: 'get_time', args: { city: 'Oslo' } },
        { type: 'finish', reason: 'tool-calls' },
      ]);
    });

    it('a one-choice stream is read whatever its index (index 1, as gateways and reasoning models send it)', async () => {
      const { events, error } = await run(
        '{"choices":[{"index":1,"delta":{"role":"assistant","content":""}}]}',
        '{"choices":[{"index":1,"delta":{"content":"Hello"}}]}',
        '{"choices":[{"index":1,"delta":{"content":" there"},"finish_reason":"stop"}]}',
        '{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}',
        '[DONE]',
      );
      expect(error).to.equal(undefined);
      expect(events).to.deep.equal([
        { type: 'text-delta', text: 'Hello' },
        { type: 'text-delta', text: ' there' },
        { type: 'finish', reason: 'stop', usage: { inputTokens: 5, outputTokens: 2 } },
      ]);
    });

    it('a role-only chunk of index 0, then the answer at index 1: one answer', async () => {
      const { events, error } = await run(
        '{"choices":[{"index":0,"delta":{"role":"assistant"}}]}',
        '{"choices":[{"index":1,"delta":{"content":"Hi"},"finish_reason":"stop"}]}',
        '[DONE]',
      );
      expect(error).to.equal(undefined);
      expect(text(events)).to.equal('Hi');
    });

    // a gateway that numbers its one choice 1: rxheal asks for one answer (n = 1), so every choice of the stream is that
    // answer, whatever its index; only two choices carrying content in one chunk are ambiguous
    it("vercel/ai's own n=1 streams (its doStream fixtures: content at index 1, the finish at index 0) are one answer, not 'a second choice'", async () => {
      const deltas = await collect(streamModel(model('openai-vercel-stream-text-deltas.sse').model, ask('Hello')));
      expect(deltas.error).to.equal(undefined);
      expect(deltas.events).to.deep.equal([
        { type: 'text-delta', text: 'Hello' },
        { type: 'text-delta', text: ', ' },
        { type: 'text-delta', text: 'World!' },
        { type: 'finish', reason: 'stop', usage: { inputTokens: 17, outputTokens: 227 } },
      ]);
      const reasoning = await collect(streamModel(model('openai-vercel-reasoning-tokens.sse').model, ask('Hello')));
      expect(reasoning.error).to.equal(undefined);
      expect(reasoning.events).to.deep.equal([
        { type: 'text-delta', text: 'Hello, World!' },
        { type: 'finish', reason: 'stop', usage: { inputTokens: 15, outputTokens: 20, reasoningTokens: 10 } },
      ]);
    });

    it('every choice is the one answer: text, tool-call pieces and the finish reason at another index continue it', async () => {
      const { events, error } = await run(
        '{"choices":[{"index":0,"delta":{"content":"Let me"}}]}',
        '{"choices":[{"index":1,"delta":{"content":" check."}}]}',
        '{"choices":[{"index":2,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{\\"a\\":"}}]}}]}',
        '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}',
        '{"choices":[{"index":1,"delta":{},"finish_reason":"tool_calls"}]}',
        '[DONE]',
      );
      expect(error).to.equal(undefined);
      expect(events).to.deep.equal([
        { type: 'text-delta', text: 'Let me' },
        { type: 'text-delta', text: ' check.' },
        { type: 'tool-call', id: 'c', name: 'f', args: { a: 1 } },
        { type: 'finish', reason: 'tool-calls' },
      ]);
    });

    it('two choices carrying content in one chunk → MalformedStreamError (ambiguous: never one dropped, never both joined); a choice with only a role or a finish reason beside one is harmless', async () => {
      for (const two of [
        '{"choices":[{"index":0,"delta":{"content":"mine"}},{"index":1,"delta":{"content":"other"}}]}',
        '{"choices":[{"index":0,"delta":{"content":"mine"}},{"index":1,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{}"}}]}}]}',
        '{"choices":[{"index":0,"delta":{"reasoning_content":"hm"}},{"index":1,"delta":{"refusal":"no"}}]}',
      ]) {
        const { events, error } = await run(
          '{"choices":[{"index":0,"delta":{"content":"Hi. "}}]}',
          two,
          '{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}',
          '[DONE]',
        );
        expect(text(events), two).to.equal('Hi. ');
        expect(error, two).to.be.instanceOf(MalformedStreamError);
        expect((error as Error).message, two).to.contain('two choices (index 0 and 1) carry content in one chunk');
      }
      const harmless = await run(
        '{"choices":[{"index":0,"delta":{"content":"mine"}},{"index":1,"delta":{"role":"assistant","content":""}}]}',
        '{"choices":[{"index":1,"delta":{"content":", all"}},{"index":0,"delta":{},"finish_reason":"stop"}]}',
        '[DONE]',
      );
      expect(harmless.error).to.equal(undefined);
      expect(harmless.events).to.deep.equal([
        { type: 'text-delta', text: 'mine' },
        { type: 'text-delta', text: ', all' },
        { type: 'finish', reason: 'stop' },
      ]);
    });

    it('ignores empty content and events after [DONE]; a refusal is text', async () => {
      const { events } = await run(
        '{"choices":[{"index":0,"delta":{"content":""}}]}',
        '{"choices":[{"index":0,"delta":{"refusal":"I cannot."},"finish_reason":"content_filter"}]}',
        '[DONE]',
        '{"choices":[{"index":0,"delta":{"content":"late"}}]}',
      );
      expect(events).to.deep.equal([
        { type: 'text-delta', text: 'I cannot.' },
        { type: 'finish', reason: 'content-filter' },
      ]);
    });

    it('reads every shape an answer arrives in: content parts, the legacy function_call, parsed arguments, a one-chunk message; reasoning apart from the answer', async () => {
      const parts = await run(
        '{"choices":[{"index":0,"delta":{"content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"A"},{"type":"text","text":"B"}]},"finish_reason":"stop"}]}',
        '[DONE]',
      );
      expect(text(parts.events)).to.equal('AB');
      expect(parts.events[0]).to.deep.equal({ type: 'reasoning-delta', text: 'hm' });
      const legacy = await run(
        '{"choices":[{"index":0,"delta":{"function_call":{"name":"get_weather","arguments":"{\\"city\\":"}}}]}',
        '{"choices":[{"index":0,"delta":{"function_call":{"arguments":"\\"NYC\\"}"}},"finish_reason":"function_call"}]}',
        '[DONE]',
      );
      expect(legacy.events).to.deep.equal([
        { type: 'tool-call', id: 'call_0', name: 'get_weather', args: { city: 'NYC' } },
        { type: 'finish', reason: 'tool-calls' },
      ]);
      const parsed = await run(
        '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":{"n":1}}}]},"finish_reason":"tool_calls"}]}',
        '[DONE]',
      );
      expect(parsed.events[0]).to.deep.equal({ type: 'tool-call', id: 'c1', name: 'f', args: { n: 1 } });
      const message = await run('{"choices":[{"index":0,"message":{"role":"assistant","content":"All at once."},"finish_reason":"stop"}]}', '[DONE]');
      expect(text(message.events)).to.equal('All at once.');
      const reasoning = await run(
        '{"choices":[{"index":0,"delta":{"reasoning_content":"Let me think."}}]}',
        '{"choices":[{"index":0,"delta":{"content":"42"},"finish_reason":"stop"}]}',
        '[DONE]',
      );
      expect(reasoning.events).to.deep.equal([
        { type: 'reasoning-delta', text: 'Let me think.' },
        { type: 'text-delta', text: '42' },
        { type: 'finish', reason: 'stop' },
      ]);
    });

    it('reasoning as gateways send it: reasoning_content (DeepSeek, vLLM), reasoning (OpenRouter, Ollama), both (one read), Mistral thinking parts; not text is an error', async () => {
      const deltas = async (...data: string[]) =>
        (await run(...data.map((d) => `{"choices":[{"index":0,"delta":${d}}]}`), '{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}', '[DONE]'))
          .events;
      expect(await deltas('{"reasoning":"Via OpenRouter."}', '{"content":"A"}')).to.deep.equal([
        { type: 'reasoning-delta', text: 'Via OpenRouter.' },
        { type: 'text-delta', text: 'A' },
        { type: 'finish', reason: 'stop' },
      ]);
      expect(await deltas('{"reasoning_content":"Once.","reasoning":"Once."}')).to.deep.equal([
        { type: 'reasoning-delta', text: 'Once.' },
        { type: 'finish', reason: 'stop' },
      ]);
      expect(await deltas('{"content":[{"type":"thinking","thinking":[{"type":"text","text":"Mistral "},{"type":"text","text":"thinks."}]}]}')).to.deep.equal([
        { type: 'reasoning-delta', text: 'Mistral ' },
        { type: 'reasoning-delta', text: 'thinks.' },
        { type: 'finish', reason: 'stop' },
      ]);
      expect(await deltas('{"reasoning_content":null,"reasoning":""}', '{"content":"B"}')).to.deep.equal([
        { type: 'text-delta', text: 'B' },
        { type: 'finish', reason: 'stop' },
      ]);
      const bad = await run('{"choices":[{"index":0,"delta":{"reasoning":{"text":"x"}}}]}', '[DONE]');
      expect(bad.error).to.be.instanceOf(MalformedStreamError);
    });

    it('what it cannot read is a MalformedStreamError, never dropped: odd content, refusal, tool_calls, function or arguments; tool call pieces after the finish_reason', async () => {
      for (const data of [
        '{"choices":[{"index":0,"delta":{"content":7}}]}',
        '{"choices":[{"index":0,"delta":{"content":[{"type":"image_url"}]}}]}',
        '{"choices":[{"index":0,"delta":{"refusal":{"text":"no"}}}]}',
        '{"choices":[{"index":0,"delta":{"tool_calls":{"index":0}}}]}',
        '{"choices":[{"index":0,"delta":{"function_call":"f"}}]}',
        '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":"f"}]}}]}',
        '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":7}}]}}]}',
        '{"choices":[{"index":0,"delta":"text"}]}',
        '{"choices":[{"index":"0","delta":{"content":"x"}}]}',
      ]) {
        const { error } = await run(data, '{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}', '[DONE]');
        expect(error, data).to.be.instanceOf(MalformedStreamError);
      }
      const late = await run(
        '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}',
        '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"g","arguments":"{}"}}]}}]}',
        '[DONE]',
      );
      expect(late.events).to.deep.equal([{ type: 'tool-call', id: 'a', name: 'f', args: {} }]);
      expect(late.error).to.be.instanceOf(MalformedStreamError);
    });

    it('HTTP errors → HttpError with status, headers and the parsed body: 429 + retry-after → rate_limit with retryAfterMs', async () => {
      const body = '{"error":{"message":"Rate limit reached for gpt-4o-mini","type":"requests","param":null,"code":"rate_limit_exceeded"}}';
      const fake = fixtureFetch(body, { status: 429, headers: { 'retry-after': '3', 'content-type': 'application/json' } });
      const { error } = await collect(streamModel(openAICompatibleModel({ baseURL: 'http://x.test/v1', model: 'm', fetch: fake.fetch }), ask('x')));
      expect(error).to.be.instanceOf(HttpError);
      expect((error as HttpError).status).to.equal(429);
      expect((error as HttpError).body).to.deep.equal(JSON.parse(body));
      expect(classifyError(error, { now: 0 })).to.deep.equal({
        retryable: true,
        fallback: true,
        category: 'rate_limit',
        strategy: 'exponential_backoff',
        retryAfterMs: 3000,
      });
    });

    it('x-should-retry: false makes a 500 not retryable', async () => {
      const fake = fixtureFetch('{"error":{"message":"no"}}', { status: 500, headers: { 'x-should-retry': 'false' } });
      const { error } = await collect(streamModel(openAICompatibleModel({ baseURL: 'http://x.test/v1', model: 'm', fetch: fake.fetch }), ask('x')));
      expect(classifyError(error)).to.include({ retryable: false, category: 'server_error' });
    });

    it('unsubscribing aborts the fetch and cancels the body reader at once', async () => {
      const { model: m, calls, state } = model('openai-truncated.sse', { hang: true, sizes: [100_000] });
      const seen: TurnEvent[] = [];
      const subscription = streamModel(m, ask('x')).subscribe((e) => seen.push(e));
      for (let i = 0; i < 10 && seen.length < 2; i++) await tick();
      expect(text(seen)).to.equal('It is');
      subscription.unsubscribe();
      expect((calls[0]?.init.signal as AbortSignal).aborted).to.equal(true);
      await tick();
      expect(state.cancelled).to.equal(true);
    });

    it('aborting the context signal given to stream() aborts the request', async () => {
      const { model: m, calls } = model('openai-truncated.sse', { hang: true });
      const controller = new AbortController();
      const result = collect(from(m.stream(ask('x'), { signal: controller.signal })));
      await tick();
      controller.abort(new DOMException('stop', 'AbortError'));
      const { error } = await result;
      expect((calls[0]?.init.signal as AbortSignal).aborted).to.equal(true);
      expect(classifyError(error).category).to.equal('cancelled');
    });
  });

  describe('the decoder as a state machine: every state × event', () => {
    // Each cell: the stream of the state, the event, then the body ends. `emits` is what the event
    // adds; `ends` how the stream ends ('complete', or the error's class). rxheal asks for one
    // answer, so every choice is that answer whatever its index: the index-0 and index-1 states
    // read the same; only two choices carrying content in one chunk are an error.
    const choice = (index: number, delta: unknown, finish: string | null = null) => JSON.stringify({ choices: [{ index, delta, finish_reason: finish }] });
    const states: Record<string, string[]> = {
      'nothing read': [],
      'reading index 0': [choice(0, { content: 'a' })],
      'reading index 1': [choice(1, { content: 'a' })],
      'finish_reason seen': [choice(0, { content: 'a' }), choice(0, {}, 'stop')],
      done: [choice(0, { content: 'a' }), choice(0, {}, 'stop'), '[DONE]'],
    };
    const events: Record<string, string> = {
      'role only, index 0': choice(0, { role: 'assistant', content: '' }),
      'text, index 0': choice(0, { content: 'b' }),
      'text, index 1': choice(1, { content: 'b' }),
      'reasoning, index 0': choice(0, { reasoning_content: 'hm' }),
      'tool call piece, index 0': choice(0, { tool_calls: [{ index: 0, id: 'c', function: { name: 'f', arguments: '{}' } }] }),
      'finish_reason, index 0': choice(0, {}, 'stop'),
      'usage, no choices': JSON.stringify({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 2 } }),
      'error chunk': JSON.stringify({ error: { message: 'boom', type: 'server_error' } }),
      'error object (vLLM)': JSON.stringify({ object: 'error', message: 'boom', type: 'BadRequestError', param: null, code: 400 }),
      "finish_reason 'error', index 0": choice(0, {}, 'error'),
      'text, index 1, and the finish_reason, index 0, in one chunk': JSON.stringify({
        choices: [
          { index: 1, delta: { content: 'b' }, finish_reason: null },
          { index: 0, delta: {}, finish_reason: 'stop' },
        ],
      }),
      'text in two choices of one chunk': JSON.stringify({
        choices: [
          { index: 0, delta: { content: 'b' } },
          { index: 1, delta: { content: 'c' } },
        ],
      }),
      '[DONE]': '[DONE]',
      'malformed JSON': '{"choices":',
    };
    const I = 'IncompleteStreamError';
    const M = 'MalformedStreamError';
    const b: TurnEvent = { type: 'text-delta', text: 'b' };
    const r: TurnEvent = { type: 'reasoning-delta', text: 'hm' };
    // prettier-ignore
    const table: Record<string, Record<string, [TurnEvent[], Ends]>> = {
      'nothing read': {
        'role only, index 0': [[], I], 'text, index 0': [[b], I], 'text, index 1': [[b], I], 'reasoning, index 0': [[r], I], 'tool call piece, index 0': [[], I],
        'finish_reason, index 0': [[], I], 'usage, no choices': [[], I], 'error chunk': [[], 'HttpError'], '[DONE]': [[], I], 'malformed JSON': [[], M],
        'error object (vLLM)': [[], 'HttpError'], "finish_reason 'error', index 0": [[], I],
        'text, index 1, and the finish_reason, index 0, in one chunk': [[b], I], 'text in two choices of one chunk': [[], M],
      },
      'reading index 0': {
        'role only, index 0': [[], I], 'text, index 0': [[b], I], 'text, index 1': [[b], I], 'reasoning, index 0': [[r], I], 'tool call piece, index 0': [[], I],
        'finish_reason, index 0': [[], I], 'usage, no choices': [[], I], 'error chunk': [[], 'HttpError'], '[DONE]': [[], I], 'malformed JSON': [[], M],
        'error object (vLLM)': [[], 'HttpError'], "finish_reason 'error', index 0": [[], I],
        'text, index 1, and the finish_reason, index 0, in one chunk': [[b], I], 'text in two choices of one chunk': [[], M],
      },
      'reading index 1': {
        'role only, index 0': [[], I], 'text, index 0': [[b], I], 'text, index 1': [[b], I], 'reasoning, index 0': [[r], I], 'tool call piece, index 0': [[], I],
        'finish_reason, index 0': [[], I], 'usage, no choices': [[], I], 'error chunk': [[], 'HttpError'], '[DONE]': [[], I], 'malformed JSON': [[], M],
        'error object (vLLM)': [[], 'HttpError'], "finish_reason 'error', index 0": [[], I],
        'text, index 1, and the finish_reason, index 0, in one chunk': [[b], I], 'text in two choices of one chunk': [[], M],
      },
      'finish_reason seen': {
        'role only, index 0': [[], I], 'text, index 0': [[b], I], 'text, index 1': [[b], I], 'reasoning, index 0': [[r], I], 'tool call piece, index 0': [[], M],
        'text, index 1, and the finish_reason, index 0, in one chunk': [[b], I], 'text in two choices of one chunk': [[], M],
        // the usage after the finish reason is the answer's last piece: whole, with or without [DONE]
        'finish_reason, index 0': [[], I], 'usage, no choices': [[{ type: 'finish', reason: 'stop', usage: { inputTokens: 1, outputTokens: 2 } }], 'complete'], 'error chunk': [[], 'HttpError'],
        '[DONE]': [[{ type: 'finish', reason: 'stop' }], 'complete'], 'malformed JSON': [[], M],
        'error object (vLLM)': [[], 'HttpError'], "finish_reason 'error', index 0": [[], I],
      },
      // after [DONE] the stream is complete and the rest of the body is never read
      done: Object.fromEntries(Object.keys(events).map((e) => [e, [[], 'complete']])),
    };
    specStateTable(states, events, table, (list) =>
      openAICompatibleModel({ baseURL: 'http://x.test/v1', model: 'm', fetch: fixtureFetch(list.map((d) => `data: ${d}\n\n`).join('')).fetch }),
    );
  });

  describe('against the local provider (real HTTP on 127.0.0.1)', () => {
    let server: LocalProvider;
    let model: ReturnType<typeof openAICompatibleModel>;
    before(async () => {
      server = await startLocalProvider({ name: 'openai-spec', tokenDelayMs: 1 });
      model = openAICompatibleModel({ baseURL: server.openAIBaseURL, model: 'local', id: 'local-openai' });
    });
    afterEach(() => server.faults.clear());
    after(() => server.close());

    it('streams a text answer token by token, with usage', async () => {
      const { events, error } = await collect(streamModel(model, ask('Hello there')));
      expect(error).to.equal(undefined);
      expect(text(events)).to.match(/^I am the local rxheal assistant\. You said: "Hello there"\./);
      expect(events.filter((e) => e.type === 'text-delta').length).to.be.greaterThan(10);
      const finish = events.at(-1);
      expect(finish).to.deep.include({ type: 'finish', reason: 'stop' });
      expect(finish?.type === 'finish' && finish.usage?.outputTokens).to.be.greaterThan(10);
    });

    it('calls get_weather, then answers from the tool result', async () => {
      const first = await collect(streamModel(model, ask("What's the weather in Paris?", [weatherTool])));
      const call = first.events[0];
      expect(call).to.deep.include({ type: 'tool-call', name: 'get_weather', args: { city: 'Paris', units: 'celsius' } });
      expect(first.events[1]).to.deep.include({ type: 'finish', reason: 'tool-calls' });
      const id = call?.type === 'tool-call' ? call.id : '';
      const second = await collect(
        streamModel(model, {
          messages: [
            { role: 'user', content: "What's the weather in Paris?" },
            { role: 'assistant', content: '', toolCalls: [{ id, name: 'get_weather', args: { city: 'Paris', units: 'celsius' } }] },
            { role: 'tool', toolCallId: id, toolName: 'get_weather', content: '{"temperature":18,"condition":"cloudy"}' },
          ],
          tools: [weatherTool],
        }),
      );
      expect(text(second.events)).to.equal('It is 18 °C and cloudy in Paris.');
    });

    it('429 + retry-after → HttpError that classifies as rate_limit with retryAfterMs', async () => {
      server.faults.set({ kind: 'status', status: 429, retryAfter: 2, times: 1 });
      const { error } = await collect(streamModel(model, ask('Hi')));
      expect(error).to.be.instanceOf(HttpError);
      expect(classifyError(error)).to.deep.include({ category: 'rate_limit', retryable: true, retryAfterMs: 2000 });
      expect((error as HttpError).body).to.deep.include({
        error: { message: "Too Many Requests from 'openai-spec' (local fault)", type: 'rate_limit_exceeded', param: null, code: 'rate_limit_exceeded' },
      });
    });

    it('reset after 3 chunks → exactly 3 deltas, then a retryable IncompleteStreamError', async () => {
      server.faults.set({ kind: 'reset', afterChunks: 3, times: 1 });
      const { events, error } = await collect(streamModel(model, ask('Hello there')));
      expect(events.map((e) => e.type)).to.deep.equal(['text-delta', 'text-delta', 'text-delta']);
      expect(error).to.be.instanceOf(IncompleteStreamError);
      expect(classifyError(error)).to.include({ retryable: true, fallback: true, category: 'connection' });
    });

    it('stall → no events; unsubscribing aborts and the server sees the connection close', async () => {
      server.faults.set({ kind: 'stall', times: 1 });
      const seen: TurnEvent[] = [];
      const started = firstValueFrom(server.activity$.pipe(mergeMap((a) => (a.type === 'request-start' ? [a.request] : []))));
      const subscription = streamModel(model, ask('Hello there')).subscribe({ next: (e) => seen.push(e), error: (e: unknown) => seen.push(e as TurnEvent) });
      const { id } = await started;
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(seen).to.deep.equal([]);
      subscription.unsubscribe();
      const ended = await server.waitForRequest((r) => r.id === id);
      expect(ended).to.deep.include({ end: 'client-closed', status: 200, chunks: 0, faults: ['stall'] });
    });

    it('malformed chunk → MalformedStreamError', async () => {
      server.faults.set({ kind: 'malformed', afterChunks: 2, times: 1 });
      const { events, error } = await collect(streamModel(model, ask('Hello there')));
      expect(events).to.have.length(2);
      expect(error).to.be.instanceOf(MalformedStreamError);
    });

    it('bad tool arguments from the model → a tool-call with units kelvin', async () => {
      server.faults.set({ kind: 'bad-tool-args', times: 1 });
      const { events } = await collect(streamModel(model, ask("What's the weather in NYC?", [weatherTool])));
      expect(events[0]).to.deep.include({ type: 'tool-call', name: 'get_weather', args: { city: 'NYC', units: 'kelvin' } });
    });

    it('an error event mid-stream → HttpError', async () => {
      server.faults.set({ kind: 'stream-error', afterChunks: 1, times: 1 });
      const { events, error } = await collect(streamModel(model, ask('Hello there')));
      expect(events).to.have.length(1);
      expect(error).to.be.instanceOf(HttpError);
      expect(classifyError(error)).to.include({ retryable: true, fallback: true });
    });

    it('down → fetch fails: a connection error, retryable and fallback-able', async () => {
      server.faults.set({ kind: 'down', times: 1 });
      const { error } = await collect(streamModel(model, ask('Hello there')));
      expect(classifyError(error)).to.include({ retryable: true, fallback: true, category: 'connection' });
    });
  });
});
