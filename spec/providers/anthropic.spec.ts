import { expect } from 'chai';
import * as t from 'io-ts';
import { firstValueFrom, lastValueFrom, mergeMap, toArray } from 'rxjs';
import { classifyError } from '../../src/core/errors/classify.js';
import { HttpError, InvalidOptionError } from '../../src/core/errors/errors.js';
import type { Message, TurnEvent } from '../../src/core/events/events.js';
import { streamModel, type ModelRequest } from '../../src/core/model/model.js';
import { ANTHROPIC_VERSION, anthropicErrorStatus, anthropicModel, anthropicRequestBody } from '../../src/providers/anthropic.js';
import { IncompleteStreamError, MalformedStreamError } from '../../src/providers/sse.js';
import { startLocalProvider, type LocalProvider } from '../../src/server/index.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';

import { ask, collect, fixture, fixtureFetch as chunkedFetch, text, tick, weatherTool, specStateTable, type Ends } from '../support/providerFakes.js';

/** The shared fake fetch, with this spec's chunk sizes. */
const fixtureFetch = (body: string, options: Parameters<typeof chunkedFetch>[1] = {}) => chunkedFetch(body, { sizes: [5, 1, 11, 2, 64], ...options });

const fromFixture = (name: string, options: Parameters<typeof fixtureFetch>[1] = {}) => {
  const fake = fixtureFetch(fixture(name), options);
  return { ...fake, model: anthropicModel({ model: 'claude-test', fetch: fake.fetch }) };
};
const fromText = (body: string, options: Parameters<typeof fixtureFetch>[1] = {}) =>
  anthropicModel({ model: 'claude-test', fetch: fixtureFetch(body, options).fetch });
const sseOf = (...events: unknown[]): string => events.map((e) => `event: ${(e as { type: string }).type}\ndata: ${JSON.stringify(e)}\n\n`).join('');

describe('anthropicModel', () => {
  describe('options', () => {
    it('validates at construction: model is required; baseURL absolute; maxTokens a positive integer', () => {
      expect(() => anthropicModel({ model: 'claude' })).not.to.throw();
      expect(() => anthropicModel({} as never)).to.throw(InvalidOptionError, 'anthropicModel: option "model"');
      expect(() => anthropicModel({ model: 'c', baseURL: 'api.anthropic.com' })).to.throw(InvalidOptionError, 'baseURL');
      expect(() => anthropicModel({ model: 'c', maxTokens: 0 })).to.throw(InvalidOptionError, 'maxTokens');
      expect(() => anthropicModel({ model: 'c', fetch: 'no' } as never)).to.throw(InvalidOptionError, 'fetch');
    });

    it('is named anthropic:<model> unless given an id', () => {
      expect(anthropicModel({ model: 'claude' }).id).to.equal('anthropic:claude');
      expect(anthropicModel({ model: 'claude', id: 'secondary' }).id).to.equal('secondary');
    });
  });

  describe('the request', () => {
    it('POSTs to <baseURL>/v1/messages (default api.anthropic.com) with x-api-key and anthropic-version', async () => {
      const { fetch, calls } = fixtureFetch(fixture('anthropic-text.sse'));
      await lastValueFrom(streamModel(anthropicModel({ model: 'claude-test', apiKey: 'sk-ant-test', fetch, headers: { 'anthropic-beta': 'x' } }), ask('Hi')));
      expect(calls[0]?.url).to.equal('https://api.anthropic.com/v1/messages');
      expect(calls[0]?.init.headers).to.deep.include({
        'x-api-key': 'sk-ant-test',
        'anthropic-version': ANTHROPIC_VERSION,
        'anthropic-beta': 'x',
        'content-type': 'application/json',
      });
      expect(ANTHROPIC_VERSION).to.equal('2023-06-01');
      expect(calls[0]?.body).to.deep.equal({
        model: 'claude-test',
        max_tokens: 4096,
        stream: true,
        messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
      });
      const local = fixtureFetch(fixture('anthropic-text.sse'));
      await lastValueFrom(
        streamModel(anthropicModel({ model: 'm', baseURL: 'http://127.0.0.1:9/', maxTokens: 100, body: { temperature: 0 }, fetch: local.fetch }), ask('Hi')),
      );
      expect(local.calls[0]?.url).to.equal('http://127.0.0.1:9/v1/messages');
      expect(local.calls[0]?.init.headers).not.to.have.property('x-api-key');
      expect(local.calls[0]?.body).to.deep.include({ max_tokens: 100, temperature: 0 });
    });

    it("maxOutputTokens → max_tokens over the maxTokens option (and a body's); the option without one; a bad one: InvalidOptionError", async () => {
      const { fetch, calls } = fixtureFetch(fixture('anthropic-text.sse'));
      const model = anthropicModel({ model: 'm', maxTokens: 2048, body: { max_tokens: 9999 }, fetch });
      await lastValueFrom(streamModel(model, { ...ask('Hi'), maxOutputTokens: 256 }));
      await lastValueFrom(streamModel(model, ask('Hi')));
      expect(calls.map((c) => (c.body as { max_tokens?: unknown }).max_tokens)).to.deep.equal([256, 2048]);
      for (const bad of [0, -5, 3.5, '256']) {
        const error: unknown = await lastValueFrom(streamModel(model, { ...ask('Hi'), maxOutputTokens: bad as number })).catch((e: unknown) => e);
        expect(error, String(bad)).to.be.instanceOf(InvalidOptionError).and.to.deep.include({ option: 'request.maxOutputTokens', value: bad });
      }
      expect(calls).to.have.length(2);
      expect(anthropicRequestBody('m', 1024, { ...ask('Hi'), maxOutputTokens: 64 })['max_tokens']).to.equal(64);
    });

    it('system messages → top-level system; tool calls → tool_use blocks; tool results → user tool_result blocks, merged so roles alternate', () => {
      const messages: Message[] = [
        { role: 'system', content: 'You are helpful.' },
        { role: 'user', content: "What's the weather in NYC and in Paris?" },
        {
          role: 'assistant',
          content: 'Let me check.',
          toolCalls: [
            { id: 'toolu_1', name: 'get_weather', args: { city: 'NYC', units: 'kelvin' } },
            { id: 'toolu_2', name: 'get_weather', args: '{"city":"Paris"}' },
            { id: 'toolu_3', name: 'get_weather', args: '{"city": "Par' },
          ],
        },
        { role: 'tool', toolCallId: 'toolu_1', toolName: 'get_weather', content: 'Invalid units', isError: true },
        { role: 'tool', toolCallId: 'toolu_2', toolName: 'get_weather', content: '{"temperature":18}' },
        { role: 'tool', toolCallId: 'toolu_3', toolName: 'get_weather', content: 'bad JSON', isError: true },
        { role: 'system', content: 'knowledge_search is unavailable.' },
        { role: 'user', content: 'Thanks' },
        { role: 'assistant', content: '' },
      ];
      expect(anthropicRequestBody('claude', 1024, { messages, tools: [weatherTool, { name: 'now', description: 'The time' }] })).to.deep.equal({
        model: 'claude',
        max_tokens: 1024,
        stream: true,
        system: 'You are helpful.\n\nknowledge_search is unavailable.',
        messages: [
          { role: 'user', content: [{ type: 'text', text: "What's the weather in NYC and in Paris?" }] },
          {
            role: 'assistant',
            content: [
              { type: 'text', text: 'Let me check.' },
              { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'NYC', units: 'kelvin' } },
              { type: 'tool_use', id: 'toolu_2', name: 'get_weather', input: { city: 'Paris' } },
              { type: 'tool_use', id: 'toolu_3', name: 'get_weather', input: {} },
            ],
          },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'toolu_1', content: 'Invalid units', is_error: true },
              { type: 'tool_result', tool_use_id: 'toolu_2', content: '{"temperature":18}' },
              { type: 'tool_result', tool_use_id: 'toolu_3', content: 'bad JSON', is_error: true },
              { type: 'text', text: 'Thanks' },
            ],
          },
        ],
        tools: [
          { name: 'get_weather', description: 'Current weather for a city', input_schema: weatherTool.parameters },
          { name: 'now', description: 'The time', input_schema: { type: 'object', properties: {} } },
        ],
      });
    });
  });

  describe('cache breakpoints: the same bytes on every attempt and every member', () => {
    const conversation: ModelRequest = {
      messages: [
        { role: 'system', content: 'You are a careful assistant. '.repeat(10) },
        { role: 'user', content: "What's the weather in Paris?" },
        { role: 'assistant', content: '', toolCalls: [{ id: 'toolu_1', name: 'get_weather', args: { city: 'Paris' } }] },
        { role: 'tool', toolCallId: 'toolu_1', toolName: 'get_weather', content: '{"temperature":22}' },
        { role: 'user', content: 'And tomorrow?' },
      ],
      tools: [{ name: 'get_weather', description: 'Current weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } }],
    };
    /** Where each cache_control mark is, as JSON paths of the body sent. */
    const marks = (body: unknown, path = '$'): string[] => {
      if (Array.isArray(body)) return body.flatMap((v, i) => marks(v, `${path}[${i}]`));
      if (typeof body !== 'object' || body === null) return [];
      return Object.entries(body).flatMap(([k, v]) => (k === 'cache_control' ? [`${path} ${JSON.stringify(v)}`] : marks(v, `${path}.${k}`)));
    };
    const texts = (calls: readonly { init: RequestInit }[]) => calls.map((c) => String(c.init.body));

    it('a retry (529 overloaded, then the answer) sends the byte-identical body: the same marks in the same places', async () => {
      const calls: { init: RequestInit }[] = [];
      const overloaded = JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
      const fetch = ((url: string, init: RequestInit) => {
        calls.push({ init });
        if (calls.length === 1) return Promise.resolve(new Response(overloaded, { status: 529, headers: { 'content-type': 'application/json' } }));
        return chunkedFetch(fixture('anthropic-text.sse')).fetch(url, init);
      }) as unknown as typeof globalThis.fetch;
      const model = anthropicModel({ model: 'claude', cache: { ttl: '1h', breakpoints: 4 }, fetch });
      const events = await lastValueFrom(streamModel(model, conversation).pipe(retryWithBackoff({ maxRetries: 1, initialBackoffMs: 0 }), toArray()));
      expect(events.at(-1)).to.deep.include({ type: 'finish' });
      expect(calls).to.have.length(2);
      expect(texts(calls)[1]).to.equal(texts(calls)[0]);
      expect(marks(JSON.parse(texts(calls)[0]!))).to.deep.equal([
        '$.system[0] {"type":"ephemeral","ttl":"1h"}',
        // the turn before (the assistant's call), and the conversation's end (the tool result and the question, one user turn)
        '$.messages[1].content[0] {"type":"ephemeral","ttl":"1h"}',
        '$.messages[2].content[1] {"type":"ephemeral","ttl":"1h"}',
        '$.tools[0] {"type":"ephemeral","ttl":"1h"}',
      ]);
    });

    it("two models with the same options send the same bytes; a body option's system and tools are never marked in place (a model sharing it without cache sends none)", async () => {
      const { fetch, calls } = chunkedFetch(fixture('anthropic-text.sse'));
      // the API's own system blocks and a server tool, in the body option both models share
      const body = { system: [{ type: 'text', text: 'Shared rules. '.repeat(10) }], tools: [{ type: 'web_search_20250305', name: 'web_search' }] };
      const shared = JSON.stringify(body);
      const question: ModelRequest = { messages: [{ role: 'user', content: 'Search the news.' }], tools: [] };
      const options = { model: 'claude', body, cache: { breakpoints: 3 }, fetch } as const;
      const a = anthropicModel({ ...options, id: 'a' });
      const b = anthropicModel({ ...options, id: 'b' });
      const plain = anthropicModel({ model: 'claude', body, fetch, id: 'plain' });
      for (const model of [a, b, a, plain]) await lastValueFrom(streamModel(model, question));
      const sent = texts(calls);
      expect(sent[1]).to.equal(sent[0]);
      expect(sent[2]).to.equal(sent[0]);
      expect(marks(JSON.parse(sent[0]!))).to.deep.equal([
        '$.system[0] {"type":"ephemeral"}',
        '$.tools[0] {"type":"ephemeral"}',
        '$.messages[0].content[0] {"type":"ephemeral"}',
      ]);
      expect(marks(JSON.parse(sent[3]!))).to.deep.equal([]);
      expect(JSON.stringify(body)).to.equal(shared);
    });
  });

  describe('tool choice', () => {
    it("toolChoice → tool_choice: auto, none, any (for 'required'), tool with its name; none without tools or without a choice", () => {
      const sent = (toolChoice?: ModelRequest['toolChoice'], tools = [weatherTool]) =>
        anthropicRequestBody('claude', 1, { messages: [{ role: 'user', content: 'x' }], tools, ...(toolChoice ? { toolChoice } : {}) })['tool_choice'];
      expect(sent('auto')).to.deep.equal({ type: 'auto' });
      expect(sent('none')).to.deep.equal({ type: 'none' });
      expect(sent('required')).to.deep.equal({ type: 'any' });
      expect(sent({ tool: 'get_weather' })).to.deep.equal({ type: 'tool', name: 'get_weather' });
      expect(sent()).to.equal(undefined);
      expect(sent('required', [])).to.equal(undefined);
    });
  });

  describe('extended thinking: reasoning read, and sent back', () => {
    it("an assistant message's signed and redacted reasoning goes first, as thinking and redacted_thinking blocks; unsigned reasoning is not sent", () => {
      const messages: Message[] = [
        { role: 'user', content: 'Weather in Oslo?' },
        {
          role: 'assistant',
          content: 'Checking.',
          toolCalls: [{ id: 'toolu_1', name: 'get_weather', args: { city: 'Oslo' } }],
          reasoning: [{ text: 'Use the tool.', signature: 'sig-1' }, { text: '', redactedData: 'opaque' }, { text: 'from another provider' }],
        },
        { role: 'tool', toolCallId: 'toolu_1', toolName: 'get_weather', content: '{"temperature":3}' },
      ];
      expect((anthropicRequestBody('claude', 1024, { messages, tools: [] })['messages'] as unknown[])[1]).to.deep.equal({
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'Use the tool.', signature: 'sig-1' },
          { type: 'redacted_thinking', data: 'opaque' },
          { type: 'text', text: 'Checking.' },
          { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } },
        ],
      });
      // reasoning alone (no text, no calls) is still a turn the API gets back
      const alone = anthropicRequestBody('claude', 1, {
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: '', reasoning: [{ text: 't', signature: 's' }] },
        ],
        tools: [],
      });
      expect((alone['messages'] as { content: unknown[] }[])[1]!.content).to.deep.equal([{ type: 'thinking', thinking: 't', signature: 's' }]);
    });

    it('a recorded tool-use turn with thinking, through runAgent: the next request carries the thinking block with its signature, exactly as streamed', async () => {
      const bodies = [fixture('anthropic-cache-thinking.sse'), fixture('anthropic-text.sse')];
      const sent: Record<string, unknown>[] = [];
      const fetch = ((_url: string, init: RequestInit) => {
        sent.push(JSON.parse(String(init.body)) as Record<string, unknown>);
        return fixtureFetch(bodies[sent.length - 1]!).fetch(_url, init);
      }) as typeof globalThis.fetch;
      const model = anthropicModel({ model: 'claude-sonnet-4-5', fetch, body: { thinking: { type: 'enabled', budget_tokens: 2048 } } });
      const getWeather = defineTool({
        name: 'get_weather',
        description: 'Weather',
        args: t.type({ city: t.string, units: t.string }),
        execute: () => [{ temperature: 3 }],
      });
      const events = await lastValueFrom(runAgent({ model, tools: [getWeather], messages: [{ role: 'user', content: 'Weather in Oslo?' }] }).pipe(toArray()));
      expect(sent).to.have.length(2);
      const assistant = (sent[1]!['messages'] as { role: string; content: Record<string, unknown>[] }[])[1]!;
      expect(assistant.role).to.equal('assistant');
      expect(assistant.content.map((b) => b['type'])).to.deep.equal(['thinking', 'text', 'tool_use']);
      expect(assistant.content[0]).to.deep.equal({
        type: 'thinking',
        thinking: 'Oslo weather: use the tool.',
        signature: 'ErUBCkYIBxgCIkB3f0K9pQm2Zx8nV4tLc1Yw6Hs7JdRa5UbEo3GiTk0NqPvWy9MxCz2Ah8BfLr4Dj6Es1Kt7Gu',
      });
      expect(sent[1]!['thinking']).to.deep.equal({ type: 'enabled', budget_tokens: 2048 });
      // the consumer saw the reasoning apart from the answer's text
      expect(events.filter((e) => e.type === 'reasoning-delta').map((e) => (e as { text: string }).text)).to.deep.equal(['Oslo weather: use the tool.']);
    });
  });

  describe('recorded streams (fixtures, served in odd-sized chunks)', () => {
    for (const sizes of [[1], [5, 1, 11], [100_000]]) {
      it(`a text answer: deltas, then one finish with input (cache included) and output usage (chunks of ${sizes.join(', ')} bytes)`, async () => {
        const { events, error } = await collect(streamModel(fromFixture('anthropic-text.sse', { sizes }).model, ask('x')));
        expect(error).to.equal(undefined);
        expect(events).to.deep.equal([
          { type: 'text-delta', text: 'It' },
          { type: 'text-delta', text: ' is 22 °C' },
          { type: 'text-delta', text: ' and sunny — in NYC 🌞.' },
          { type: 'finish', reason: 'stop', usage: { inputTokens: 480, outputTokens: 15, cachedInputTokens: 8 } },
        ]);
      });
    }

    it('the same stream with CRLF line endings', async () => {
      const { events } = await collect(streamModel(fromText(fixture('anthropic-text.sse').replace(/\n/g, '\r\n'), { sizes: [3] }), ask('x')));
      expect(text(events)).to.equal('It is 22 °C and sunny — in NYC 🌞.');
    });

    it('tool_use blocks with partial JSON → one tool-call at each content_block_stop; thinking as reasoning, signed; input {} when no deltas', async () => {
      const { events, error } = await collect(streamModel(fromFixture('anthropic-tool-use.sse').model, ask('x')));
      expect(error).to.equal(undefined);
      expect(events).to.deep.equal([
        { type: 'reasoning-delta', text: 'The user wants the weather.' },
        { type: 'reasoning-end', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds' },
        { type: 'text-delta', text: 'Let me check.' },
        { type: 'tool-call', id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'get_weather', args: { city: 'New York', units: 'celsius' } },
        { type: 'tool-call', id: 'toolu_01Ab2CdEfGhIjKlMnOpQrStU', name: 'list_cities', args: {} },
        { type: 'finish', reason: 'tool-calls', usage: { inputTokens: 480, outputTokens: 89, cachedInputTokens: 8 } },
      ]);
    });

    it('tool input that is not valid JSON → the raw text as args', async () => {
      const body = sseOf(
        { type: 'message_start', message: { usage: { input_tokens: 5, output_tokens: 1 } } },
        { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 't1', name: 'get_weather', input: {} } },
        { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"city": "NY' } },
        { type: 'content_block_stop', index: 0 },
        { type: 'message_delta', delta: { stop_reason: 'max_tokens' }, usage: { output_tokens: 4 } },
        { type: 'message_stop' },
      );
      const { events } = await collect(streamModel(fromText(body), ask('x')));
      expect(events).to.deep.equal([
        { type: 'tool-call', id: 't1', name: 'get_weather', args: '{"city": "NY' },
        { type: 'finish', reason: 'length', usage: { inputTokens: 5, outputTokens: 4 } },
      ]);
    });

    it('input usage = input + cache creation + cache read, wherever they appear (message_delta carrying cache tokens alone: 32, not 17)', async () => {
      const body = sseOf(
        {
          type: 'message_start',
          message: { id: 'msg_1', content: [], usage: { input_tokens: 17, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 } },
        },
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi' } },
        { type: 'content_block_stop', index: 0 },
        { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 4, cache_creation_input_tokens: 10, cache_read_input_tokens: 5 } },
        { type: 'message_stop' },
      );
      const { events } = await collect(streamModel(fromText(body), ask('x')));
      expect(events.at(-1)).to.deep.equal({
        type: 'finish',
        reason: 'stop',
        usage: { inputTokens: 32, outputTokens: 4, cachedInputTokens: 5, cacheWriteTokens: 10 },
      });
      const onlyDelta = sseOf(
        { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { input_tokens: 3, cache_read_input_tokens: 7, output_tokens: 2 } },
        { type: 'message_stop' },
      );
      expect((await collect(streamModel(fromText(onlyDelta), ask('x')))).events).to.deep.equal([
        { type: 'finish', reason: 'stop', usage: { inputTokens: 10, outputTokens: 2, cachedInputTokens: 7 } },
      ]);
    });

    it('a spliced stream (a message_start with another id while a message is open) → MalformedStreamError, its tool call never emitted; the same id again is harmless', async () => {
      const start = (id: string) => ({ type: 'message_start', message: { id, content: [], usage: { input_tokens: 5, output_tokens: 1 } } });
      const tool = [
        { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 't2', name: 'get_weather', input: {} } },
        { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"city":"Oslo"}' } },
        { type: 'content_block_stop', index: 0 },
        { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 9 } },
        { type: 'message_stop' },
      ];
      const text0 = [
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Let me' } },
        { type: 'content_block_stop', index: 0 },
      ];
      const spliced = await collect(streamModel(fromText(sseOf(start('msg_A'), ...text0, start('msg_B'), ...tool)), ask('x')));
      expect(spliced.events).to.deep.equal([{ type: 'text-delta', text: 'Let me' }]);
      expect(spliced.error).to.be.instanceOf(MalformedStreamError);
      expect((spliced.error as Error).message).to.contain('a second message_start (id msg_B) while message msg_A is open');
      const repeated = await collect(streamModel(fromText(sseOf(start('msg_A'), ...text0, start('msg_A'), ...tool)), ask('x')));
      expect(repeated.error).to.equal(undefined);
      expect(repeated.events.map((e) => e.type)).to.deep.equal(['text-delta', 'tool-call', 'finish']);
    });

    it('a tool_use block still open at message_stop → MalformedStreamError, never a silent finish without the call', async () => {
      const body = sseOf(
        { type: 'message_start', message: { id: 'msg_1', content: [], usage: { input_tokens: 5, output_tokens: 1 } } },
        { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 't1', name: 'get_weather', input: {} } },
        { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"city":' } },
        { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 9 } },
        { type: 'message_stop' },
      );
      const { events, error } = await collect(streamModel(fromText(body), ask('x')));
      expect(events).to.deep.equal([]);
      expect(error).to.be.instanceOf(MalformedStreamError);
      expect((error as Error).message).to.contain('message_stop with tool_use block 0 (get_weather) still open');
      expect(classifyError(error)).to.include({ retryable: true, fallback: true, category: 'bad_gateway' });
    });

    it('what would be lost is a MalformedStreamError: a block started twice, JSON in a text block, text in a tool_use block, an unknown delta in either, content in message_start', async () => {
      const ms = { type: 'message_start', message: { id: 'm', content: [], usage: {} } };
      const textBlock = { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } };
      const toolBlock = { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 't', name: 'f', input: {} } };
      for (const events of [
        [ms, toolBlock, toolBlock],
        [ms, textBlock, { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{}' } }],
        [ms, toolBlock, { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'x' } }],
        [ms, textBlock, { type: 'content_block_delta', index: 0, delta: { type: 'text_v2_delta', text: 'x' } }],
        [ms, toolBlock, { type: 'content_block_delta', index: 0, delta: { type: 'input_delta', input: {} } }],
        [{ type: 'message_start', message: { id: 'm', content: [{ type: 'text', text: 'Hi' }] } }],
      ]) {
        const { error } = await collect(streamModel(fromText(sseOf(...events, { type: 'message_stop' })), ask('x')));
        expect(error, JSON.stringify(events.slice(1))).to.be.instanceOf(MalformedStreamError);
      }
      // citations carry nothing of the answer: skipped; a redacted thinking block is a reasoning block of its own
      const skipped = await collect(
        streamModel(
          fromText(
            sseOf(
              ms,
              textBlock,
              { type: 'content_block_delta', index: 0, delta: { type: 'citations_delta', citation: { cited_text: 'x' } } },
              { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'ok' } },
              { type: 'content_block_stop', index: 0 },
              { type: 'content_block_start', index: 1, content_block: { type: 'redacted_thinking', data: 'abc' } },
              { type: 'content_block_stop', index: 1 },
              { type: 'message_stop' },
            ),
          ),
          ask('x'),
        ),
      );
      expect(skipped.error).to.equal(undefined);
      expect(text(skipped.events)).to.equal('ok');
      expect(skipped.events.filter((e) => e.type === 'reasoning-end')).to.deep.equal([{ type: 'reasoning-end', redactedData: 'abc' }]);
    });

    it('maps every stop reason', async () => {
      const reasons = { end_turn: 'stop', stop_sequence: 'stop', tool_use: 'tool-calls', max_tokens: 'length', refusal: 'content-filter', pause_turn: 'other' };
      for (const [stop, reason] of Object.entries(reasons)) {
        const { events } = await collect(
          streamModel(fromText(sseOf({ type: 'message_delta', delta: { stop_reason: stop } }, { type: 'message_stop' })), ask('x')),
        );
        expect(events, stop).to.deep.equal([{ type: 'finish', reason }]);
      }
    });

    it('an error event mid-stream (overloaded_error) → HttpError 529: service_unavailable, retryable, fallback-able', async () => {
      const { events, error } = await collect(streamModel(fromFixture('anthropic-error.sse').model, ask('x')));
      expect(text(events)).to.equal('It is');
      expect(error).to.be.instanceOf(HttpError);
      expect((error as HttpError).status).to.equal(529);
      expect((error as HttpError).message).to.equal("'anthropic:claude-test' sent an error mid-stream: overloaded_error: Overloaded");
      expect((error as HttpError).body).to.deep.equal({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
      expect(classifyError(error)).to.deep.equal({ retryable: true, fallback: true, category: 'service_unavailable', strategy: 'exponential_backoff' });
    });

    it('error types get the status the API gives them', () => {
      expect(anthropicErrorStatus('rate_limit_error')).to.equal(429);
      expect(anthropicErrorStatus('invalid_request_error')).to.equal(400);
      expect(anthropicErrorStatus('api_error')).to.equal(500);
      expect(anthropicErrorStatus('something_new')).to.equal(500);
      expect(anthropicErrorStatus(undefined)).to.equal(500);
    });

    it('an invalid_request_error event is not retryable', async () => {
      const { error } = await collect(streamModel(fromText(sseOf({ type: 'error', error: { type: 'invalid_request_error', message: 'bad' } })), ask('x')));
      expect(classifyError(error)).to.include({ retryable: false, category: 'bad_request' });
    });

    it('a stream without message_stop → the deltas so far, then a retryable IncompleteStreamError, never a finish', async () => {
      const { events, error } = await collect(streamModel(fromFixture('anthropic-truncated.sse').model, ask('x')));
      expect(events).to.deep.equal([
        { type: 'text-delta', text: 'It' },
        { type: 'text-delta', text: ' is' },
      ]);
      expect(error).to.be.instanceOf(IncompleteStreamError);
      expect((error as Error).message).to.contain('no message_stop');
      expect(classifyError(error)).to.include({ retryable: true, fallback: true, category: 'connection' });
    });

    it('a malformed event → MalformedStreamError, and the body is cancelled', async () => {
      const { model, state } = fromFixture('anthropic-malformed.sse', { hang: true });
      const { events, error } = await collect(streamModel(model, ask('x')));
      expect(text(events)).to.equal('It');
      expect(error).to.be.instanceOf(MalformedStreamError);
      expect(classifyError(error)).to.include({ retryable: true, fallback: true, category: 'bad_gateway' });
      await tick();
      expect(state.cancelled).to.equal(true);
    });

    it('events of the wrong shape are malformed; unknown event types are skipped', async () => {
      for (const bad of [
        { type: 'message_start' },
        { type: 'content_block_start', index: 0 },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta' } },
        { type: 'content_block_delta', index: 3, delta: { type: 'input_json_delta', partial_json: '{' } },
        { type: 'content_block_stop' },
      ]) {
        const { error } = await collect(streamModel(fromText(sseOf(bad, { type: 'message_stop' })), ask('x')));
        expect(error, JSON.stringify(bad)).to.be.instanceOf(MalformedStreamError);
      }
      const { events, error } = await collect(
        streamModel(fromText(sseOf({ type: 'brand_new_event', x: 1 }, { type: 'ping' }, { type: 'message_stop' })), ask('x')),
      );
      expect(error).to.equal(undefined);
      expect(events).to.deep.equal([{ type: 'finish', reason: 'other' }]);
    });

    it('HTTP errors → HttpError: 429 + retry-after → rate_limit with retryAfterMs; 529 → service_unavailable', async () => {
      const body = '{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}';
      const { error } = await collect(streamModel(fromText(body, { status: 429, headers: { 'retry-after': '7' } }), ask('x')));
      expect((error as HttpError).status).to.equal(429);
      expect((error as HttpError).message).to.contain('per-minute rate limit');
      expect(classifyError(error, { now: 0 })).to.deep.include({ category: 'rate_limit', retryable: true, retryAfterMs: 7000 });
      const overloaded = await collect(
        streamModel(fromText('{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', { status: 529 }), ask('x')),
      );
      expect(classifyError(overloaded.error)).to.include({ category: 'service_unavailable', retryable: true });
    });

    it('unsubscribing aborts the fetch and cancels the body reader at once', async () => {
      const { model, calls, state } = fromFixture('anthropic-truncated.sse', { hang: true, sizes: [100_000] });
      const seen: TurnEvent[] = [];
      const subscription = streamModel(model, ask('x')).subscribe((e) => seen.push(e));
      for (let i = 0; i < 10 && seen.length < 2; i++) await tick();
      expect(seen).to.have.length(2);
      subscription.unsubscribe();
      expect((calls[0]?.init.signal as AbortSignal).aborted).to.equal(true);
      await tick();
      expect(state.cancelled).to.equal(true);
    });
  });

  describe('the decoder as a state machine: every state × event', () => {
    // Each cell: the stream of the state, the event, then the body ends. `emits` is what the event
    // adds; `ends` how the stream ends ('complete', or the error's class).
    const usage0 = { input_tokens: 10, cache_creation_input_tokens: 2, cache_read_input_tokens: 3, output_tokens: 1 };
    const ms = (id: string) => ({ type: 'message_start', message: { id, content: [], usage: usage0 } });
    const states: Record<string, unknown[]> = {
      'before message_start': [],
      'message open': [ms('m1')],
      'text block 0 open': [ms('m1'), { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
      'tool_use block 0 open': [
        ms('m1'),
        { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 't1', name: 'f', input: {} } },
        { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"a":1}' } },
      ],
      'message_delta seen': [ms('m1'), { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 5 } }],
      'thinking block 0 open': [ms('m1'), { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }],
      done: [ms('m1'), { type: 'message_stop' }],
    };
    const events: Record<string, unknown> = {
      'message_start, same id': ms('m1'),
      'message_start, other id': ms('m2'),
      'content_block_start text 1': { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
      'content_block_start tool_use 0': { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 't9', name: 'g', input: {} } },
      'text_delta 0': { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'b' } },
      'input_json_delta 0': { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '' } },
      'thinking_delta 0': { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'hm' } },
      'signature_delta 0': { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'sig' } },
      'content_block_start thinking 1': { type: 'content_block_start', index: 1, content_block: { type: 'thinking', thinking: '', signature: '' } },
      'content_block_start redacted_thinking 1': { type: 'content_block_start', index: 1, content_block: { type: 'redacted_thinking', data: 'opaque' } },
      'content_block_stop 0': { type: 'content_block_stop', index: 0 },
      message_delta: { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 7 } },
      message_stop: { type: 'message_stop' },
      ping: { type: 'ping' },
      error: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
      'malformed JSON': '{"type":',
    };
    const fin = (reason: string, input?: number, output?: number): TurnEvent =>
      (input === undefined
        ? { type: 'finish', reason }
        : { type: 'finish', reason, usage: { inputTokens: input, outputTokens: output, cachedInputTokens: 3, cacheWriteTokens: 2 } }) as TurnEvent;
    const I = 'IncompleteStreamError';
    const M = 'MalformedStreamError';
    const b: TurnEvent = { type: 'text-delta', text: 'b' };
    const call: TurnEvent = { type: 'tool-call', id: 't1', name: 'f', args: { a: 1 } };
    const r: TurnEvent = { type: 'reasoning-delta', text: 'hm' };
    const end: TurnEvent = { type: 'reasoning-end' };
    const red: TurnEvent = { type: 'reasoning-end', redactedData: 'opaque' };
    // reasoning: shown wherever it arrives; a signature signs only a thinking block; a redacted block is whole at its start
    const thinking: Record<string, [TurnEvent[], Ends]> = {
      'thinking_delta 0': [[r], I],
      'signature_delta 0': [[], I],
      'content_block_start thinking 1': [[], I],
      'content_block_start redacted_thinking 1': [[red], I],
    };
    // prettier-ignore
    const table: Record<string, Record<string, [TurnEvent[], Ends]>> = {
      'before message_start': {
        ...thinking,
        'message_start, same id': [[], I], 'message_start, other id': [[], I], 'content_block_start text 1': [[], I], 'content_block_start tool_use 0': [[], I],
        'text_delta 0': [[b], I], 'input_json_delta 0': [[], M], 'content_block_stop 0': [[], I],
        message_delta: [[], I], message_stop: [[fin('other')], 'complete'], ping: [[], I], error: [[], 'HttpError'], 'malformed JSON': [[], M],
      },
      'message open': {
        ...thinking,
        'message_start, same id': [[], I], 'message_start, other id': [[], M], 'content_block_start text 1': [[], I], 'content_block_start tool_use 0': [[], I],
        'text_delta 0': [[b], I], 'input_json_delta 0': [[], M], 'content_block_stop 0': [[], I],
        message_delta: [[], I], message_stop: [[fin('other', 15, 1)], 'complete'], ping: [[], I], error: [[], 'HttpError'], 'malformed JSON': [[], M],
      },
      'text block 0 open': {
        ...thinking,
        'message_start, same id': [[], I], 'message_start, other id': [[], M], 'content_block_start text 1': [[], I], 'content_block_start tool_use 0': [[], M],
        'text_delta 0': [[b], I], 'input_json_delta 0': [[], M], 'content_block_stop 0': [[], I],
        message_delta: [[], I], message_stop: [[fin('other', 15, 1)], 'complete'], ping: [[], I], error: [[], 'HttpError'], 'malformed JSON': [[], M],
      },
      'tool_use block 0 open': {
        ...thinking,
        'message_start, same id': [[], I], 'message_start, other id': [[], M], 'content_block_start text 1': [[], I], 'content_block_start tool_use 0': [[], M],
        'text_delta 0': [[], M], 'input_json_delta 0': [[], I], 'content_block_stop 0': [[call], I],
        message_delta: [[], I], message_stop: [[], M], ping: [[], I], error: [[], 'HttpError'], 'malformed JSON': [[], M],
      },
      'message_delta seen': {
        ...thinking,
        'message_start, same id': [[], I], 'message_start, other id': [[], M], 'content_block_start text 1': [[], I], 'content_block_start tool_use 0': [[], I],
        'text_delta 0': [[b], I], 'input_json_delta 0': [[], M], 'content_block_stop 0': [[], I],
        message_delta: [[], I], message_stop: [[fin('stop', 15, 5)], 'complete'], ping: [[], I], error: [[], 'HttpError'], 'malformed JSON': [[], M],
      },
      'thinking block 0 open': {
        ...thinking,
        'message_start, same id': [[], I], 'message_start, other id': [[], M], 'content_block_start text 1': [[], I], 'content_block_start tool_use 0': [[], M],
        'text_delta 0': [[b], I], 'input_json_delta 0': [[], M], 'content_block_stop 0': [[end], I],
        message_delta: [[], I], message_stop: [[end, fin('other', 15, 1)], 'complete'], ping: [[], I], error: [[], 'HttpError'], 'malformed JSON': [[], M],
      },
      // after message_stop the stream is complete and the rest of the body is never read
      done: Object.fromEntries(Object.keys(events).map((e) => [e, [[], 'complete']])),
    };
    const body = (list: unknown[]): string => list.map((e) => (typeof e === 'string' ? `data: ${e}\n\n` : sseOf(e))).join('');
    specStateTable(states, events, table, (list) => fromText(body(list)));
  });

  describe('against the local provider (real HTTP on 127.0.0.1)', () => {
    let server: LocalProvider;
    let model: ReturnType<typeof anthropicModel>;
    before(async () => {
      server = await startLocalProvider({ name: 'anthropic-spec', tokenDelayMs: 1 });
      model = anthropicModel({ baseURL: server.anthropicBaseURL, model: 'local', apiKey: 'unused', id: 'local-anthropic' });
    });
    afterEach(() => server.faults.clear());
    after(() => server.close());

    it('streams a text answer token by token, with usage', async () => {
      const { events, error } = await collect(streamModel(model, ask('Hello there')));
      expect(error).to.equal(undefined);
      expect(text(events)).to.match(/^I am the local rxheal assistant\./);
      expect(events.at(-1)).to.deep.include({ type: 'finish', reason: 'stop' });
    });

    it('calls knowledge_search for a policy question, then answers from the result', async () => {
      const tool = { name: 'knowledge_search', description: 'Search the docs' };
      const first = await collect(streamModel(model, ask('What is the refund policy?', [tool])));
      const call = first.events[0];
      expect(call).to.deep.include({ type: 'tool-call', name: 'knowledge_search', args: { query: 'What is the refund policy?' } });
      const id = call?.type === 'tool-call' ? call.id : '';
      expect(id).to.match(/^toolu_/);
      const second = await collect(
        streamModel(model, {
          messages: [
            { role: 'user', content: 'What is the refund policy?' },
            { role: 'assistant', content: '', toolCalls: [{ id, name: 'knowledge_search', args: { query: 'refund' } }] },
            { role: 'tool', toolCallId: id, toolName: 'knowledge_search', content: '"Refunds within 30 days."' },
          ],
          tools: [tool],
        }),
      );
      expect(text(second.events)).to.equal('According to the knowledge base: Refunds within 30 days.');
    });

    it('429 + retry-after → rate_limit with retryAfterMs', async () => {
      server.faults.set({ kind: 'status', status: 429, retryAfter: 1, times: 1 });
      const { error } = await collect(streamModel(model, ask('Hi')));
      expect(classifyError(error)).to.deep.include({ category: 'rate_limit', retryAfterMs: 1000 });
      expect((error as HttpError).body).to.deep.equal({
        type: 'error',
        error: { type: 'rate_limit_error', message: "Too Many Requests from 'anthropic-spec' (local fault)" },
      });
    });

    it('reset after 2 chunks → 2 deltas, then a retryable IncompleteStreamError', async () => {
      server.faults.set({ kind: 'reset', afterChunks: 2, times: 1 });
      const { events, error } = await collect(streamModel(model, ask('Hello there')));
      expect(events.map((e) => e.type)).to.deep.equal(['text-delta', 'text-delta']);
      expect(classifyError(error)).to.include({ retryable: true, category: 'connection' });
    });

    it('stall → no events; unsubscribing aborts and the server sees the connection close', async () => {
      server.faults.set({ kind: 'stall', times: 1 });
      const seen: unknown[] = [];
      const started = firstValueFrom(server.activity$.pipe(mergeMap((a) => (a.type === 'request-start' ? [a.request] : []))));
      const subscription = streamModel(model, ask('Hello')).subscribe({ next: (e) => seen.push(e), error: (e: unknown) => seen.push(e) });
      const { id } = await started;
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(seen).to.deep.equal([]);
      subscription.unsubscribe();
      expect(await server.waitForRequest((r) => r.id === id)).to.deep.include({ end: 'client-closed', chunks: 0 });
    });

    it('an overloaded_error event mid-stream → HttpError 529', async () => {
      server.faults.set({ kind: 'stream-error', afterChunks: 2, times: 1 });
      const { events, error } = await collect(streamModel(model, ask('Hello there')));
      expect(events).to.have.length(2);
      expect((error as HttpError).status).to.equal(529);
    });

    it('malformed event → MalformedStreamError; bad tool args → kelvin', async () => {
      server.faults.set([
        { kind: 'malformed', times: 1 },
        { kind: 'bad-tool-args', times: 1 },
      ]);
      const first = await collect(streamModel(model, ask('Hello')));
      expect(first.events).to.deep.equal([]);
      expect(first.error).to.be.instanceOf(MalformedStreamError);
      const second = await collect(streamModel(model, ask('Weather in Oslo?', [weatherTool])));
      expect(second.events[0]).to.deep.include({ type: 'tool-call', name: 'get_weather', args: { city: 'Oslo', units: 'kelvin' } });
    });
  });
});
