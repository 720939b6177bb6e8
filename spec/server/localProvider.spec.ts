import { expect } from 'chai';
import { DEFAULT_CONTINUE_INSTRUCTION, fallbackModel } from '../../src/sources/fallbackModel.js';
import * as t from 'io-ts';
import { filter, firstValueFrom, lastValueFrom, take, toArray } from 'rxjs';
import { classifyError } from '../../src/core/errors/classify.js';
import { CircuitBreakerRegistry } from '../../src/core/breaker/registry.js';
import { snapshotBreaker } from '../../src/core/breaker/persist.js';
import { HttpError, InvalidOptionError } from '../../src/core/errors/errors.js';
import type { AgentEvent, Message } from '../../src/core/events/events.js';
import { HealHub } from '../../src/core/hub/hub.js';
import { reflectOnError } from '../../src/operators/reflectOnError.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { streamModel } from '../../src/core/model/model.js';
import { anthropicModel } from '../../src/providers/anthropic.js';
import { openAICompatibleModel } from '../../src/providers/openai.js';
import { parseSse } from '../../src/providers/sseParser.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';
import {
  DEFAULT_ALLOWED_ORIGINS,
  FaultController,
  RIVER_STORY,
  cityOf,
  scriptedAssistant,
  startLocalProvider,
  thinkingSignature,
  tokenize,
  validateFault,
  type AssistantRequest,
  type LocalProvider,
  type ProviderActivity,
} from '../../src/server/index.js';
import { describeEvent } from '../../src/testing/index.js';
import Anthropic from '@anthropic-ai/sdk';
import { STATUS_CODES, request as httpRequest } from 'node:http';
import { AI_SDK_KITS, OPENAI_KITS } from '../support/kits.js';
import { rawRequest } from '../support/rawHttp.js';

const openAIBody = (content: string, extra: Record<string, unknown> = {}) => ({
  model: 'local',
  stream: true,
  messages: [{ role: 'user', content }],
  ...extra,
});
const anthropicBody = (content: string, extra: Record<string, unknown> = {}) => ({
  model: 'local',
  max_tokens: 100,
  stream: true,
  messages: [{ role: 'user', content }],
  ...extra,
});
const weatherSpec = { type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object' } } };

const post = (url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

const raw = rawRequest;

/** The data of each SSE event of a response (JSON-parsed unless `[DONE]`), with its event name. */
async function events(response: Response): Promise<{ event: string; data: Record<string, unknown> | '[DONE]' }[]> {
  return parseSse(await response.text()).map((e) => ({
    event: e.event,
    data: e.data === '[DONE]' ? '[DONE]' : (JSON.parse(e.data) as Record<string, unknown>),
  }));
}

const weatherTool = () => {
  const executions: unknown[] = [];
  const tool = defineTool({
    name: 'get_weather',
    description: 'Current weather for a city',
    args: t.type({ city: t.string, units: t.keyof({ celsius: null, fahrenheit: null }) }),
    idempotent: true,
    execute: (args) => {
      executions.push(args);
      return [{ city: args.city, temperature: args.units === 'celsius' ? 22 : 72, condition: 'sunny' }];
    },
  });
  return { tool, executions };
};

const ask = (content: string, tools: AssistantRequest['tools'] = []): AssistantRequest => ({
  protocol: 'openai',
  model: 'local',
  messages: [{ role: 'user', content }],
  tools,
});

describe('local provider', () => {
  describe('startLocalProvider options', () => {
    it('throws InvalidOptionError synchronously for a bad option or fault', () => {
      expect(() => startLocalProvider({ port: -1 })).to.throw(InvalidOptionError, 'port');
      expect(() => startLocalProvider({ tokenDelayMs: -5 })).to.throw(InvalidOptionError, 'tokenDelayMs');
      expect(() => startLocalProvider({ colour: 'red' } as never)).to.throw(InvalidOptionError, 'colour');
      expect(() => startLocalProvider({ faults: [{ kind: 'reset' } as never] })).to.throw(InvalidOptionError, 'fault "reset": option "afterChunks"');
    });
  });

  describe('validateFault / FaultController', () => {
    it('validates each kind, naming the bad field', () => {
      expect(() => validateFault({ kind: 'status', status: 429, retryAfter: 1, shouldRetry: true, times: 1, id: 'x' })).not.to.throw();
      expect(() => validateFault({ kind: 'status' })).to.throw(InvalidOptionError, 'status');
      expect(() => validateFault({ kind: 'status', status: 200 })).to.throw(InvalidOptionError, 'an integer from 400 to 599');
      expect(() => validateFault({ kind: 'flood' })).to.throw(InvalidOptionError, 'fault: option "kind"');
      expect(() => validateFault(null)).to.throw(InvalidOptionError);
      expect(() => validateFault({ kind: 'down', mode: 'explode' })).to.throw(InvalidOptionError, 'mode');
      expect(() => validateFault({ kind: 'stall', afterChunk: 1 })).to.throw(InvalidOptionError, 'afterChunk');
      expect(() => validateFault({ kind: 'slow-first-byte', delayMs: 10, times: 0 })).to.throw(InvalidOptionError, 'times');
      // Node fires a timer above 2³¹−1 ms at once: refused, not silently shortened
      expect(() => validateFault({ kind: 'slow-first-byte', delayMs: 3e9 })).to.throw(InvalidOptionError, 'delayMs');
      expect(() => validateFault({ kind: 'slow-first-byte', delayMs: Infinity })).to.throw(InvalidOptionError, 'delayMs');
      expect(() => startLocalProvider({ tokenDelayMs: 2 ** 31 })).to.throw(InvalidOptionError, 'tokenDelayMs');
    });

    it('assigns ids, replaces by id, counts uses and drops a used-up fault, reports changes', () => {
      const faults = new FaultController({ kind: 'down' });
      const changes: number[] = [];
      faults.changes$.subscribe((list) => changes.push(list.length));
      expect(faults.list()).to.deep.equal([{ kind: 'down', id: 'f1', hits: 0 }]);
      faults.add({ kind: 'status', status: 503, times: 2, id: 'busy' });
      faults.add({ kind: 'status', status: 500, times: 2, id: 'busy' });
      expect(faults.list().map((f) => f.id)).to.deep.equal(['f1', 'busy']);
      expect(faults.consume('status')).to.deep.include({ status: 500, remaining: 1, hits: 1 });
      expect(faults.consume('status')).to.deep.include({ remaining: 0, hits: 2 });
      expect(faults.consume('status')).to.equal(undefined);
      expect(faults.consume('down')).to.deep.include({ id: 'f1', hits: 1 });
      expect(faults.list()).to.deep.equal([{ kind: 'down', id: 'f1', hits: 1 }]);
      expect(faults.remove('nope')).to.equal(false);
      expect(faults.remove('f1')).to.equal(true);
      expect(() => faults.set([{ kind: 'down' }, { kind: 'oops' } as never])).to.throw(InvalidOptionError);
      expect(faults.list(), 'a bad set changes nothing').to.deep.equal([]);
      faults.set([{ kind: 'down' }]);
      faults.clear();
      expect(changes).to.deep.equal([2, 2, 2, 1, 1, 0, 1, 0]);
    });
  });

  describe('scriptedAssistant', () => {
    const weather = { name: 'get_weather' };
    const search = { name: 'knowledge_search' };

    it('tokens: words with their leading space, joining back to the text', () => {
      expect(tokenize('It is 22 °C.')).to.deep.equal(['It', ' is', ' 22', ' °C.']);
      expect(tokenize('  a  b ').join('')).to.equal('  a  b ');
      expect(tokenize('')).to.deep.equal([]);
    });

    it('reads the city of a weather question', () => {
      expect(cityOf("What's the weather in Paris?")).to.equal('Paris');
      expect(cityOf('weather for new york today')).to.equal('new york');
      expect(cityOf('Is it raining in São Paulo')).to.equal('São Paulo');
      expect(cityOf("What's the weather?")).to.equal('NYC');
    });

    it("asked to continue a cut-off answer (fallbackModel's instruction) → only the rest of it", () => {
      const full = scriptedAssistant(ask('Tell me about rivers'));
      expect(full.text).to.be.a('string');
      const partial = full.text!.slice(0, 14);
      const request = ask('Tell me about rivers');
      const continued = scriptedAssistant({
        ...request,
        messages: [...request.messages, { role: 'assistant', content: partial }, { role: 'user', content: DEFAULT_CONTINUE_INSTRUCTION }],
      });
      expect(partial + continued.text).to.equal(full.text);
    });

    it('a weather question → get_weather (celsius, or fahrenheit when asked)', () => {
      expect(scriptedAssistant(ask("What's the weather in NYC?", [weather, search]))).to.deep.equal({
        toolCalls: [{ name: 'get_weather', args: { city: 'NYC', units: 'celsius' } }],
      });
      expect(scriptedAssistant(ask('Temperature in Austin in Fahrenheit?', [weather]))).to.deep.equal({
        toolCalls: [{ name: 'get_weather', args: { city: 'Austin', units: 'fahrenheit' } }],
      });
    });

    it('a knowledge question → knowledge_search with the question', () => {
      expect(scriptedAssistant(ask('What is your refund policy?', [weather, search]))).to.deep.equal({
        toolCalls: [{ name: 'knowledge_search', args: { query: 'What is your refund policy?' } }],
      });
    });

    it('without the tool, or with it listed as unavailable in the system prompt, answers without calling it', () => {
      expect(scriptedAssistant(ask("What's the weather in Rome?"))).to.deep.equal({ text: "I can't check the weather in Rome: I have no weather tool." });
      const degraded: AssistantRequest = {
        ...ask('What is the refund policy?', [search]),
        messages: [
          {
            role: 'system',
            content: 'Be helpful.\n\nThese capabilities are unavailable right now:\n- knowledge_search: no result within 3000 ms\nDo not try to use them.',
          },
          { role: 'user', content: 'What is the refund policy?' },
        ],
      };
      expect(scriptedAssistant(degraded).text).to.match(/can't search the knowledge base/);
    });

    it('asked for a story → a long plain answer (90 tokens, no tool), which continues exactly after a cut', () => {
      for (const question of ['Tell me a story about a river', 'Describe a river at length', 'Explain rivers in detail', 'Give me a long answer']) {
        expect(scriptedAssistant(ask(question, [weather, search])), question).to.deep.equal({ text: RIVER_STORY });
      }
      expect(tokenize(RIVER_STORY)).to.have.length(90);
      const request = ask('Tell me a story about a river');
      const partial = tokenize(RIVER_STORY).slice(0, 3).join('');
      const rest = scriptedAssistant({
        ...request,
        messages: [...request.messages, { role: 'assistant', content: partial }, { role: 'user', content: DEFAULT_CONTINUE_INSTRUCTION }],
      });
      expect(partial + rest.text).to.equal(RIVER_STORY);
      expect(scriptedAssistant(ask('Tell me something nice about rivers')).text, 'not a story request').to.match(/^I am the local rxheal assistant/);
    });

    it('anything else → a canned answer quoting the question', () => {
      expect(scriptedAssistant(ask('Hello   there'))).to.deep.equal({
        text: 'I am the local rxheal assistant. You said: "Hello there". Ask me about the weather in a city, or about the refund policy, and I will use a tool to answer.',
      });
    });

    const afterCall = (result: string, isError = false, args: unknown = { city: 'NYC', units: 'kelvin' }): Message[] => [
      { role: 'user', content: "What's the weather in NYC?" },
      { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'get_weather', args }] },
      isError
        ? { role: 'tool', toolCallId: 'c1', toolName: 'get_weather', content: result, isError }
        : { role: 'tool', toolCallId: 'c1', toolName: 'get_weather', content: result },
    ];

    it('answers from a weather result', () => {
      const messages = afterCall('{"temperature":22,"condition":"sunny"}', false, { city: 'NYC', units: 'celsius' });
      expect(scriptedAssistant({ ...ask(''), messages, tools: [weather] })).to.deep.equal({ text: 'It is 22 °C and sunny in NYC.' });
    });

    it('after a failed call (an error, or a reflection prompt) → calls the tool again with corrected arguments', () => {
      const reflection =
        'The tool \'get_weather\' failed with: units: expected "celsius" | "fahrenheit", got "kelvin". Analyze what went wrong and provide corrected arguments.';
      expect(scriptedAssistant({ ...ask(''), messages: afterCall(reflection), tools: [weather] })).to.deep.equal({
        toolCalls: [{ name: 'get_weather', args: { city: 'NYC', units: 'celsius' } }],
      });
      expect(scriptedAssistant({ ...ask(''), messages: afterCall('Error: boom'), tools: [weather] }).toolCalls).to.have.length(1);
    });

    it('gives up on a tool after 3 failures in a row, or when told not to call it again', () => {
      const exhausted =
        "The tool 'get_weather' has failed 3 times in a row (last error: x). Do not call it again. Tell the user it is unavailable right now and continue without it.";
      expect(scriptedAssistant({ ...ask(''), messages: afterCall(exhausted, true), tools: [weather] }).text).to.match(
        /^Sorry, the get_weather tool is not working/,
      );
      const three: Message[] = [
        { role: 'user', content: "What's the weather in NYC?" },
        ...[1, 2, 3].flatMap((i): Message[] => [
          { role: 'assistant', content: '', toolCalls: [{ id: `c${i}`, name: 'get_weather', args: {} }] },
          { role: 'tool', toolCallId: `c${i}`, toolName: 'get_weather', content: 'Error: down', isError: true },
        ]),
      ];
      expect(scriptedAssistant({ ...ask(''), messages: three, tools: [weather] }).text).to.match(/^Sorry/);
    });

    it('answers a knowledge result, or says it could not search when degraded', () => {
      const messages = (content: string): Message[] => [
        { role: 'user', content: 'Refund policy?' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'k1', name: 'knowledge_search', args: { query: 'refund' } }] },
        { role: 'tool', toolCallId: 'k1', toolName: 'knowledge_search', content },
      ];
      expect(scriptedAssistant({ ...ask(''), messages: messages('["Refunds within 30 days","Keep the receipt"]'), tools: [search] }).text).to.equal(
        'According to the knowledge base: Refunds within 30 days; Keep the receipt',
      );
      expect(scriptedAssistant({ ...ask(''), messages: messages('"unavailable"'), tools: [search] }).text).to.match(/couldn't search the knowledge base/);
    });
  });

  describe('the server', () => {
    let server: LocalProvider;
    before(async () => {
      server = await startLocalProvider({ name: 'spec', tokenDelayMs: 1 });
    });
    afterEach(() => server.faults.clear());
    after(() => server.close());

    it('listens on 127.0.0.1 with a free port, and says so', async () => {
      expect(server.url).to.equal(`http://127.0.0.1:${server.port}`);
      expect(server.openAIBaseURL).to.equal(`${server.url}/v1`);
      expect(server.anthropicBaseURL).to.equal(server.url);
      expect(server.port).to.be.greaterThan(0);
      const health = await fetch(`${server.url}/health`);
      expect(await health.json()).to.deep.equal({ ok: true, name: 'spec', protocols: ['openai', 'anthropic', 'responses'] });
      expect(health.headers.get('x-provider-name')).to.equal('spec');
    });

    it('OpenAI protocol: a role chunk, one chunk per token, the finish chunk, a usage chunk (when asked), [DONE]', async () => {
      const response = await post(`${server.url}/v1/chat/completions`, openAIBody('Hi', { stream_options: { include_usage: true } }));
      expect(response.headers.get('content-type')).to.equal('text/event-stream; charset=utf-8');
      const id = response.headers.get('x-request-id');
      const all = await events(response);
      expect(all.at(-1)?.data).to.equal('[DONE]');
      const chunks = all.slice(0, -1).map((e) => e.data as Record<string, unknown>);
      expect(chunks.every((c) => c['object'] === 'chat.completion.chunk' && c['id'] === `chatcmpl-${id}`)).to.equal(true);
      const deltas = chunks.map((c) => (c['choices'] as { delta?: { content?: string; role?: string }; finish_reason?: string }[])[0]);
      expect(deltas[0]?.delta).to.deep.equal({ role: 'assistant', content: '' });
      const text = deltas.map((d) => d?.delta?.content ?? '').join('');
      expect(text).to.equal(scriptedAssistant(ask('Hi')).text);
      expect(deltas.filter((d) => d?.finish_reason === 'stop')).to.have.length(1);
      const usage = chunks.at(-1);
      expect(usage?.['choices']).to.deep.equal([]);
      expect(usage?.['usage']).to.have.keys('prompt_tokens', 'completion_tokens', 'total_tokens', 'prompt_tokens_details');
      const without = (await events(await post(`${server.url}/v1/chat/completions`, openAIBody('Hi')))).filter((e) => e.data !== '[DONE]' && e.data['usage']);
      expect(without, 'no usage chunk unless stream_options.include_usage').to.deep.equal([]);
    });

    it('OpenAI protocol: a tool call with its arguments in pieces', async () => {
      const all = await events(await post(`${server.url}/v1/chat/completions`, openAIBody('Weather in Lima?', { tools: [weatherSpec] })));
      const pieces = all.flatMap((e) =>
        e.data === '[DONE]' ? [] : ((e.data['choices'] as { delta: { tool_calls?: { function: { arguments: string } }[] } }[])[0]?.delta.tool_calls ?? []),
      );
      expect(pieces.length).to.be.greaterThan(3);
      expect(JSON.parse(pieces.map((p) => p.function.arguments).join(''))).to.deep.equal({ city: 'Lima', units: 'celsius' });
    });

    it('Anthropic protocol: the Messages event sequence', async () => {
      const all = await events(
        await post(`${server.url}/v1/messages`, anthropicBody('Weather in Lima?', { tools: [{ name: 'get_weather', input_schema: {} }] })),
      );
      const names = all.map((e) => e.event);
      expect(names.slice(0, 2)).to.deep.equal(['message_start', 'content_block_start']);
      expect(names.slice(-4)).to.deep.equal(['content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
      expect(all.every((e) => e.data !== '[DONE]' && e.data['type'] === e.event)).to.equal(true);
      expect(all[1]?.data).to.deep.include({
        content_block: {
          type: 'tool_use',
          id: 'toolu_' + (all[0]?.data as { message: { id: string } }).message.id.slice(8) + '_0',
          name: 'get_weather',
          input: {},
        },
      });
      expect(all.at(-2)?.data).to.deep.include({ delta: { stop_reason: 'tool_use', stop_sequence: null } });
    });

    it('answers without streaming too (stream absent or false), in both protocols', async () => {
      const openai = (await (
        await post(`${server.url}/v1/chat/completions`, openAIBody('Weather in Oslo?', { stream: false, tools: [weatherSpec] }))
      ).json()) as Record<string, unknown>;
      expect(openai['object']).to.equal('chat.completion');
      expect(openai['choices']).to.deep.equal([
        {
          index: 0,
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [
              {
                id: (openai['choices'] as { message: { tool_calls: { id: string }[] } }[])[0]?.message.tool_calls[0]?.id,
                type: 'function',
                function: { name: 'get_weather', arguments: '{"city":"Oslo","units":"celsius"}' },
              },
            ],
          },
          finish_reason: 'tool_calls',
        },
      ]);
      const anthropic = (await (await post(`${server.url}/v1/messages`, anthropicBody('Hi', { stream: undefined }))).json()) as Record<string, unknown>;
      expect(anthropic).to.deep.include({ type: 'message', role: 'assistant', stop_reason: 'end_turn' });
      expect((anthropic['content'] as { text: string }[])[0]?.text).to.match(/^I am the local rxheal assistant/);
    });

    it('reads the whole conversation in either protocol (tool results answered)', async () => {
      const body = {
        model: 'local',
        max_tokens: 50,
        stream: false,
        system: [{ type: 'text', text: 'Be brief.' }],
        messages: [
          { role: 'user', content: 'Weather in Oslo?' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_x', name: 'get_weather', input: { city: 'Oslo', units: 'fahrenheit' } }] },
          {
            role: 'user',
            content: [{ type: 'tool_result', tool_use_id: 'toolu_x', content: [{ type: 'text', text: '{"temperature":41,"condition":"rainy"}' }] }],
          },
        ],
        tools: [{ name: 'get_weather', input_schema: {} }],
      };
      const answer = (await (await post(`${server.url}/v1/messages`, body)).json()) as { content: { text: string }[] };
      expect(answer.content[0]?.text).to.equal('It is 41 °F and rainy in Oslo.');
    });

    it('bad requests → 400 in the protocol’s error format; unknown routes → 404; wrong methods → 405', async () => {
      const bad = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', body: '{nope' });
      expect(bad.status).to.equal(400);
      expect(await bad.json()).to.deep.equal({ error: { message: 'the body is not valid JSON', type: 'invalid_request_error', param: null, code: null } });
      const noMessages = await post(`${server.url}/v1/messages`, { model: 'x' });
      expect(noMessages.status).to.equal(400);
      expect(await noMessages.json()).to.deep.equal({ type: 'error', error: { type: 'invalid_request_error', message: 'messages: Field required' } });
      expect((await fetch(`${server.url}/v2/nothing`)).status).to.equal(404);
      expect((await fetch(`${server.url}/v1/messages`)).status).to.equal(405);
    });

    it('CORS for an allowed origin (default: the demo page’s): echoed, never *; preflight echoes the asked headers; retry-after and x-should-retry are exposed', async () => {
      for (const origin of DEFAULT_ALLOWED_ORIGINS) {
        const preflight = await fetch(`${server.url}/v1/messages`, {
          method: 'OPTIONS',
          headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-api-key,anthropic-version' },
        });
        expect(preflight.status).to.equal(204);
        expect(preflight.headers.get('access-control-allow-origin')).to.equal(origin);
        expect(preflight.headers.get('vary')).to.contain('origin');
        expect(preflight.headers.get('access-control-allow-methods')).to.contain('POST');
        expect(preflight.headers.get('access-control-allow-headers')).to.equal('content-type,x-api-key,anthropic-version');
      }
      expect(DEFAULT_ALLOWED_ORIGINS).to.deep.equal(['http://127.0.0.1:5173', 'http://localhost:5173']);
      server.faults.set({ kind: 'status', status: 429, retryAfter: 1, times: 1 });
      const limited = await post(`${server.url}/v1/chat/completions`, openAIBody('Hi'), { origin: 'http://127.0.0.1:5173' });
      expect(limited.status).to.equal(429);
      expect(limited.headers.get('access-control-allow-origin')).to.equal('http://127.0.0.1:5173');
      expect(limited.headers.get('access-control-expose-headers')).to.contain('retry-after').and.to.contain('x-should-retry');
      // no Origin (Node, curl, an SDK): served, without CORS headers
      const plain = await post(`${server.url}/v1/chat/completions`, openAIBody('Hi', { stream: false }));
      expect(plain.status).to.equal(200);
      expect(plain.headers.get('access-control-allow-origin')).to.equal(null);
    });

    describe('guarded: Host and Origin on every route (DNS rebinding, foreign pages)', () => {
      const host = () => `127.0.0.1:${server.port}`;
      /** Routes that change state, reveal data or answer as the model, with a body where they take one. */
      const routes = (): { method: string; path: string; body?: unknown }[] => [
        { method: 'GET', path: '/admin/faults' },
        { method: 'POST', path: '/admin/faults', body: { kind: 'down', id: 'intruder' } },
        { method: 'PUT', path: '/admin/faults', body: { faults: [{ kind: 'down', id: 'intruder' }] } },
        { method: 'DELETE', path: '/admin/faults' },
        { method: 'DELETE', path: '/admin/faults/keep' },
        { method: 'GET', path: '/admin/requests' },
        { method: 'GET', path: '/admin/events' },
        { method: 'GET', path: '/health' },
        { method: 'POST', path: '/v1/chat/completions', body: openAIBody('Hi', { stream: false }) },
        { method: 'POST', path: '/chat/completions', body: openAIBody('Hi', { stream: false }) },
        { method: 'POST', path: '/v1/messages', body: anthropicBody('Hi', { stream: false }) },
      ];
      const refusedEverywhere = async (headers: Record<string, string>, contentType = 'application/json'): Promise<void> => {
        server.faults.set({ kind: 'slow-first-byte', delayMs: 0, id: 'keep' });
        const before = server.requests.length;
        for (const route of routes()) {
          const response = await raw(server.port, {
            ...route,
            headers: { host: host(), ...headers, ...(route.body === undefined ? {} : { 'content-type': contentType }) },
          });
          expect(response.status, `${route.method} ${route.path}`).to.equal(403);
          expect(response.headers['access-control-allow-origin'], `${route.method} ${route.path}`).to.equal(undefined);
          expect(response.text, `${route.method} ${route.path}: reveals nothing`).not.to.contain('req_');
        }
        expect(
          server.faults.list().map((f) => f.id),
          'faults unchanged',
        ).to.deep.equal(['keep']);
        expect(server.requests.length, 'nothing recorded').to.equal(before);
      };

      it('a foreign Origin is refused with 403 on every route, before anything changes (a cross-site text/plain POST included)', async () => {
        await refusedEverywhere({ origin: 'https://evil.example' });
        await refusedEverywhere({ origin: 'https://evil.example' }, 'text/plain');
        await refusedEverywhere({ origin: 'null' });
        await refusedEverywhere({ origin: 'http://127.0.0.1:5174' });
        const refused = await raw(server.port, {
          method: 'POST',
          path: '/admin/faults',
          headers: { host: host(), origin: 'https://evil.example', 'content-type': 'text/plain' },
          body: '{"kind":"down"}',
        });
        expect(JSON.parse(refused.text)).to.deep.include({
          error: { message: 'rxheal local provider \'spec\': Origin "https://evil.example" is not allowed (add it to allowedOrigins)', type: 'forbidden' },
        });
      });

      it('a preflight from a foreign origin is refused: no CORS grant, no Private Network Access grant', async () => {
        const preflight = await raw(server.port, {
          method: 'OPTIONS',
          path: '/admin/faults',
          headers: { host: host(), origin: 'https://evil.example', 'access-control-request-method': 'POST', 'access-control-request-private-network': 'true' },
        });
        expect(preflight.status).to.equal(403);
        expect(preflight.headers['access-control-allow-origin']).to.equal(undefined);
        expect(preflight.headers['access-control-allow-private-network']).to.equal(undefined);
      });

      it('a Host that is not this server’s loopback name is refused with 403 on every route, with or without an Origin (DNS rebinding)', async () => {
        await refusedEverywhere({ host: `evil.example:${server.port}` });
        await refusedEverywhere({ host: `evil.example:${server.port}`, origin: `http://evil.example:${server.port}` });
        await refusedEverywhere({ host: `127.0.0.1.nip.io:${server.port}` });
        await refusedEverywhere({ host: `127.0.0.1:${server.port + 1}` });
        await refusedEverywhere({ host: 'localhost' });
        const rebound = await raw(server.port, { method: 'GET', path: '/admin/requests', headers: { host: `evil.example:${server.port}` } });
        expect(JSON.parse(rebound.text).error.message).to.contain(`Host "evil.example:${server.port}" is not allowed`).and.to.contain('allowedHosts');
      });

      it('a request without an Origin that the browser marks cross-site (an <img>, a no-cors fetch) is refused', async () => {
        const response = await raw(server.port, { method: 'GET', path: '/admin/requests', headers: { host: host(), 'sec-fetch-site': 'cross-site' } });
        expect(response.status).to.equal(403);
      });

      it('its own names pass: 127.0.0.1, localhost and [::1] with its port, its own origin, and allowedHosts', async () => {
        for (const name of ['127.0.0.1', 'localhost', '[::1]', 'LOCALHOST']) {
          const response = await raw(server.port, { method: 'GET', path: '/admin/faults', headers: { host: `${name}:${server.port}` } });
          expect(response.status, name).to.equal(200);
        }
        const own = await raw(server.port, { method: 'GET', path: '/admin/faults', headers: { host: host(), origin: server.url } });
        expect(own.status).to.equal(200);
        expect(own.headers['access-control-allow-origin']).to.equal(server.url);
        const named = await startLocalProvider({ tokenDelayMs: 1, allowedHosts: ['devbox.lan:9999'], allowedOrigins: ['http://devbox.lan:5173'] });
        try {
          expect((await raw(named.port, { method: 'GET', path: '/health', headers: { host: 'devbox.lan:9999' } })).status).to.equal(200);
          const page = await raw(named.port, {
            method: 'GET',
            path: '/health',
            headers: { host: `127.0.0.1:${named.port}`, origin: 'http://devbox.lan:5173' },
          });
          expect(page.status).to.equal(200);
          expect(page.headers['access-control-allow-origin']).to.equal('http://devbox.lan:5173');
          expect(
            (await raw(named.port, { method: 'GET', path: '/health', headers: { host: `127.0.0.1:${named.port}`, origin: 'http://127.0.0.1:5173' } })).status,
            'the default is replaced',
          ).to.equal(403);
        } finally {
          await named.close();
        }
      });

      it('Private Network Access: granted only with allowPrivateNetwork, and only to an allowed origin', async () => {
        const ask = (port: number, origin: string) =>
          raw(port, {
            method: 'OPTIONS',
            path: '/v1/chat/completions',
            headers: { host: `127.0.0.1:${port}`, origin, 'access-control-request-method': 'POST', 'access-control-request-private-network': 'true' },
          });
        const denied = await ask(server.port, 'http://127.0.0.1:5173');
        expect(denied.status).to.equal(204);
        expect(denied.headers['access-control-allow-private-network']).to.equal(undefined);
        const pna = await startLocalProvider({ tokenDelayMs: 1, allowPrivateNetwork: true, allowedOrigins: ['https://app.example'] });
        try {
          expect((await ask(pna.port, 'https://app.example')).headers['access-control-allow-private-network']).to.equal('true');
          expect((await ask(pna.port, 'https://evil.example')).status).to.equal(403);
        } finally {
          await pna.close();
        }
      });

      it('validates allowedOrigins (origins only: no path, no wildcard), allowedHosts and allowPrivateNetwork', () => {
        expect(() => startLocalProvider({ allowedOrigins: ['*'] })).to.throw(InvalidOptionError, 'allowedOrigins');
        expect(() => startLocalProvider({ allowedOrigins: ['http://127.0.0.1:5173/page'] })).to.throw(InvalidOptionError, 'allowedOrigins');
        expect(() => startLocalProvider({ allowedOrigins: ['file:///tmp'] })).to.throw(InvalidOptionError, 'allowedOrigins');
        expect(() => startLocalProvider({ allowedOrigins: 'http://127.0.0.1:5173' as never })).to.throw(InvalidOptionError, 'allowedOrigins');
        expect(() => startLocalProvider({ allowedHosts: [''] })).to.throw(InvalidOptionError, 'allowedHosts');
        expect(() => startLocalProvider({ allowPrivateNetwork: 'yes' as never })).to.throw(InvalidOptionError, 'allowPrivateNetwork');
      });
    });

    describe('faults', () => {
      it('status: the code, retry-after(-ms) and x-should-retry headers, the protocol’s error body; one-shot with times', async () => {
        server.faults.set({ kind: 'status', status: 503, retryAfter: 2, retryAfterMs: 1500, shouldRetry: false, message: 'busy', times: 1 });
        const first = await post(`${server.url}/v1/messages`, anthropicBody('Hi'));
        expect(first.status).to.equal(503);
        expect(first.headers.get('retry-after')).to.equal('2');
        expect(first.headers.get('retry-after-ms')).to.equal('1500');
        expect(first.headers.get('x-should-retry')).to.equal('false');
        expect(await first.json()).to.deep.equal({ type: 'error', error: { type: 'overloaded_error', message: 'busy' } });
        const second = await post(`${server.url}/v1/messages`, anthropicBody('Hi'));
        expect(second.status).to.equal(200);
        await second.text();
        expect(server.faults.list()).to.deep.equal([]);
      });

      it('status without times: persistent', async () => {
        server.faults.set({ kind: 'status', status: 500 });
        for (let i = 0; i < 3; i++) expect((await post(`${server.url}/v1/chat/completions`, openAIBody('Hi'))).status).to.equal(500);
        expect(server.faults.list()[0]).to.deep.include({ hits: 3 });
      });

      it('down: destroys the connection (fetch fails), or answers 503 (mode status)', async () => {
        server.faults.set({ kind: 'down' });
        const error = await post(`${server.url}/v1/chat/completions`, openAIBody('Hi')).catch((e: unknown) => e);
        expect(error).to.be.instanceOf(TypeError);
        expect(classifyError(error).category).to.equal('connection');
        expect(server.requests.at(-1)).to.deep.include({ end: 'reset', faults: ['down'] });
        server.faults.set({ kind: 'down', mode: 'status' });
        expect((await post(`${server.url}/v1/chat/completions`, openAIBody('Hi'))).status).to.equal(503);
      });

      it('slow-first-byte: nothing, not even headers, before delayMs', async () => {
        server.faults.set({ kind: 'slow-first-byte', delayMs: 80, times: 1 });
        const started = performance.now();
        const response = await post(`${server.url}/v1/chat/completions`, openAIBody('Hi'));
        expect(performance.now() - started).to.be.at.least(75);
        await response.text();
        await (await post(`${server.url}/v1/chat/completions`, openAIBody('Hi'))).text();
        expect(server.requests.slice(-2).map((r) => r.faults)).to.deep.equal([['slow-first-byte'], []]);
      });

      it('stall: headers, then silence; close() drops the connection (server-closed)', async () => {
        const own = await startLocalProvider({ tokenDelayMs: 1, faults: { kind: 'stall', afterChunks: 2 } });
        const response = await post(`${own.url}/v1/chat/completions`, openAIBody('Hi'));
        expect(response.status).to.equal(200);
        const reader = response.body!.getReader();
        let received = '';
        const decoder = new TextDecoder();
        const reading = (async () => {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) return 'done';
            received += decoder.decode(value);
          }
        })().catch((e: unknown) => e);
        const contentEvents = (): number => parseSse(received).filter((e) => e.data.includes('"content":"')).length;
        for (let waited = 0; contentEvents() < 3 && waited < 2000; waited += 5) await new Promise((resolve) => setTimeout(resolve, 5));
        await new Promise((resolve) => setTimeout(resolve, 20));
        expect(contentEvents()).to.equal(3); // the role chunk and 2 tokens, then nothing
        expect(own.requests[0]).to.deep.include({ chunks: 2 });
        expect(own.requests[0]).not.to.have.property('end');
        await own.close();
        expect(await reading).to.be.instanceOf(TypeError);
        expect(own.requests[0]).to.deep.include({ end: 'server-closed' });
        await own.close(); // idempotent
      });

      // found by a review of the checks: waitForRequest never settled when the server closed first
      it('waitForRequest settles when the server closes first: a wait no request answered rejects at close(), a wait made after close() at once; a running request it matches still resolves it (server-closed)', async () => {
        const own = await startLocalProvider({ tokenDelayMs: 1, faults: { kind: 'stall', afterChunks: 1 } });
        const never = own.waitForRequest((r) => r.path === '/nowhere');
        const stalled = own.waitForRequest((r) => r.path === '/v1/chat/completions');
        const settled = (p: Promise<unknown>) =>
          p.then(
            (value) => ({ value }),
            (error: unknown) => ({ error }),
          );
        const outcomes = [settled(never), settled(stalled)];
        const response = await post(`${own.url}/v1/chat/completions`, openAIBody('Hi'));
        const reading = response
          .body!.getReader()
          .read()
          .then(
            () => undefined,
            () => undefined,
          );
        for (let waited = 0; own.requests.length === 0 && waited < 2000; waited += 5) await new Promise((resolve) => setTimeout(resolve, 5));
        await own.close();
        await reading;
        const [n, st] = await Promise.all(outcomes);
        expect(n)
          .to.have.property('error')
          .that.is.instanceOf(Error)
          .with.property('message')
          .that.matches(/closed before a request it waited for ended/);
        expect(st).to.have.nested.property('value.end', 'server-closed');
        const late = await settled(own.waitForRequest((r) => r.path === '/nowhere'));
        expect(late).to.have.property('error').that.is.instanceOf(Error);
        // what had ended is still found after close()
        expect(await own.waitForRequest((r) => r.path === '/v1/chat/completions')).to.deep.include({ end: 'server-closed' });
      });

      it('waitForRequest: a predicate that throws rejects that wait with what it threw; other waits and the server go on', async () => {
        const boom = new Error('predicate bug');
        const before = server.requests.length;
        const broken = server.waitForRequest(() => {
          throw boom;
        });
        const fine = server.waitForRequest((r) => Number(r.id.slice(4)) > before);
        const settled = broken.then(
          () => 'resolved',
          (error: unknown) => error,
        );
        await (await post(`${server.url}/v1/chat/completions`, openAIBody('Hi'))).text();
        expect(await settled).to.equal(boom);
        expect(await fine).to.deep.include({ end: 'completed' });
        expect(
          await server
            .waitForRequest(() => {
              throw boom;
            })
            .then(
              () => 'resolved',
              (error: unknown) => error,
            ),
          'a request had ended already',
        ).to.equal(boom);
        expect((await post(`${server.url}/v1/chat/completions`, openAIBody('Hi'))).status).to.equal(200);
      });

      it('reset after N chunks: exactly N tokens, then the connection is destroyed', async () => {
        server.faults.set({ kind: 'reset', afterChunks: 4, times: 1 });
        const response = await post(`${server.url}/v1/chat/completions`, openAIBody('Hi'));
        const error = await response.text().catch((e: unknown) => e);
        expect(error).to.be.instanceOf(TypeError);
        expect(server.requests.at(-1)).to.deep.include({ chunks: 4, end: 'reset', faults: ['reset'] });
      });

      it('reset after more chunks than the answer has: still cut before the final events', async () => {
        server.faults.set({ kind: 'reset', afterChunks: 10_000, times: 1 });
        const model = openAICompatibleModel({ baseURL: server.openAIBaseURL, model: 'local' });
        const error = await lastValueFrom(streamModel(model, { messages: [{ role: 'user', content: 'Hi' }], tools: [] }).pipe(toArray())).catch(
          (e: unknown) => e,
        );
        expect(classifyError(error).category).to.equal('connection');
      });

      it('malformed: one unreadable event, then the stream carries on', async () => {
        server.faults.set({ kind: 'malformed', afterChunks: 1, times: 1 });
        const raw = parseSse(await (await post(`${server.url}/v1/messages`, anthropicBody('Hi'))).text());
        const broken = raw.filter((e) => {
          try {
            JSON.parse(e.data);
            return false;
          } catch {
            return true;
          }
        });
        expect(broken).to.have.length(1);
        expect(raw.at(-1)?.event).to.equal('message_stop');
      });

      it('stream-error: the protocol’s error event, then the end', async () => {
        server.faults.set({ kind: 'stream-error', errorType: 'rate_limit_error', afterChunks: 1, times: 2 });
        const anthropic = parseSse(await (await post(`${server.url}/v1/messages`, anthropicBody('Hi'))).text());
        expect(anthropic.at(-1)).to.deep.equal({
          event: 'error',
          data: '{"type":"error","error":{"type":"rate_limit_error","message":"The stream failed (local fault)"}}',
        });
        const openai = parseSse(await (await post(`${server.url}/v1/chat/completions`, openAIBody('Hi'))).text());
        expect(JSON.parse(openai.at(-1)?.data ?? '')).to.deep.equal({
          error: { message: 'The stream failed (local fault)', type: 'rate_limit_exceeded', param: null, code: null },
        });
      });

      it('bad-tool-args: custom arguments; not used up by a turn without tool calls', async () => {
        server.faults.set({ kind: 'bad-tool-args', args: { town: 1 }, times: 1 });
        await (await post(`${server.url}/v1/chat/completions`, openAIBody('Hi'))).text();
        expect(server.faults.list()).to.have.length(1);
        const body = (await (
          await post(`${server.url}/v1/chat/completions`, openAIBody('Weather in Oslo?', { stream: false, tools: [weatherSpec] }))
        ).json()) as {
          choices: { message: { tool_calls: { function: { arguments: string } }[] } }[];
        };
        expect(body.choices[0]?.message.tool_calls[0]?.function.arguments).to.equal('{"town":1}');
        expect(server.faults.list()).to.deep.equal([]);
      });

      it('verbose: the answer said `repeat` times over, with its usage; not used up by a turn that only calls a tool', async () => {
        type Completion = { choices: { message: { content: string | null } }[]; usage: { completion_tokens: number } };
        const plain = (await (await post(`${server.url}/v1/chat/completions`, openAIBody('Hi', { stream: false }))).json()) as Completion;
        server.faults.set({ kind: 'verbose', repeat: 3, times: 1 });
        await (await post(`${server.url}/v1/chat/completions`, openAIBody('Weather in Oslo?', { stream: false, tools: [weatherSpec] }))).text();
        expect(server.faults.list()).to.have.length(1);
        const long = (await (await post(`${server.url}/v1/chat/completions`, openAIBody('Hi', { stream: false }))).json()) as Completion;
        const said = plain.choices[0]!.message.content!;
        expect(long.choices[0]!.message.content).to.equal([said, said, said].join(' '));
        expect(long.usage.completion_tokens).to.be.greaterThan(2 * plain.usage.completion_tokens);
        expect(server.faults.list()).to.deep.equal([]);
        expect(() => server.faults.set({ kind: 'verbose', repeat: 0 })).to.throw(/repeat/);
      });

      it('phases: a slow first byte delays a status fault too; each phase takes its first fault', async () => {
        server.faults.set([
          { kind: 'slow-first-byte', delayMs: 30, times: 1 },
          { kind: 'status', status: 429, times: 1 },
          { kind: 'status', status: 500, times: 1 },
        ]);
        const started = performance.now();
        expect((await post(`${server.url}/v1/chat/completions`, openAIBody('Hi'))).status).to.equal(429);
        expect(performance.now() - started).to.be.at.least(25);
        expect(server.requests.at(-1)?.faults).to.deep.equal(['slow-first-byte', 'status']);
        expect((await post(`${server.url}/v1/chat/completions`, openAIBody('Hi'))).status).to.equal(500);
      });
    });

    describe('admin endpoints', () => {
      const admin = (path: string, init: RequestInit = {}) => fetch(`${server.url}${path}`, init);
      const json = (method: string, body: unknown): RequestInit => ({ method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

      it('GET / POST { faults } (replace) / POST one fault (add) / DELETE one / DELETE all', async () => {
        expect(await (await admin('/admin/faults')).json()).to.deep.equal({ faults: [] });
        const replaced = await admin('/admin/faults', json('POST', { faults: [{ kind: 'status', status: 429, retryAfter: 1, id: 'limit' }] }));
        expect(replaced.status).to.equal(200);
        expect(await replaced.json()).to.deep.equal({ faults: [{ kind: 'status', status: 429, retryAfter: 1, id: 'limit', hits: 0 }] });
        const added = await admin('/admin/faults', json('POST', { kind: 'down', id: 'off' }));
        expect(added.status).to.equal(201);
        expect(await added.json()).to.deep.include({ fault: { kind: 'down', id: 'off', hits: 0 } });
        expect(server.faults.list().map((f) => f.id)).to.deep.equal(['limit', 'off']);
        expect((await admin('/admin/faults/off', { method: 'DELETE' })).status).to.equal(200);
        expect((await admin('/admin/faults/off', { method: 'DELETE' })).status).to.equal(404);
        // an id that is not valid percent-encoding: a 400 naming it, not a 500
        const garbled = await admin('/admin/faults/%E0', { method: 'DELETE' });
        expect([garbled.status, await garbled.json()]).to.deep.equal([
          400,
          { error: { message: "Invalid fault id: '%E0' is not a valid percent-encoded id." } },
        ]);
        expect(await (await admin('/admin/faults', { method: 'DELETE' })).json()).to.deep.equal({ faults: [] });
        expect(server.faults.list()).to.deep.equal([]);
      });

      it('rejects an invalid fault with 400 and the reason, changing nothing', async () => {
        server.faults.set({ kind: 'down', id: 'keep' });
        const bad = await admin('/admin/faults', json('POST', { faults: [{ kind: 'reset' }] }));
        expect(bad.status).to.equal(400);
        expect(((await bad.json()) as { error: { message: string } }).error.message).to.contain('afterChunks');
        expect((await admin('/admin/faults', json('POST', { hello: 1 }))).status).to.equal(400);
        expect((await admin('/admin/faults', { method: 'POST', body: '{' })).status).to.equal(400);
        expect(server.faults.list().map((f) => f.id)).to.deep.equal(['keep']);
        expect((await admin('/admin/faults', { method: 'PATCH' })).status).to.equal(405);
      });

      it('faults are per instance: each server has its own', async () => {
        const other = await startLocalProvider({ tokenDelayMs: 1 });
        try {
          server.faults.set({ kind: 'down', mode: 'status' });
          expect((await post(`${other.url}/v1/chat/completions`, openAIBody('Hi'))).status).to.equal(200);
          expect(other.faults.list()).to.deep.equal([]);
        } finally {
          await other.close();
        }
      });

      it('GET /admin/requests lists requests with what happened; activity$ and /admin/events report them live', async () => {
        const events$ = await fetch(`${server.url}/admin/events`);
        const reader = events$.body!.getReader();
        const live = firstValueFrom(
          server.activity$.pipe(
            filter((a): a is Extract<ProviderActivity, { type: 'request-end' }> => a.type === 'request-end'),
            take(1),
          ),
        );
        server.faults.set({ kind: 'status', status: 418, times: 1 });
        await (await post(`${server.url}/v1/chat/completions`, openAIBody('Hi'))).text();
        const ended = await live;
        expect(ended.request).to.deep.include({
          protocol: 'openai',
          path: '/v1/chat/completions',
          stream: true,
          status: 418,
          faults: ['status'],
          end: 'completed',
        });
        const listed = (await (await fetch(`${server.url}/admin/requests`)).json()) as { requests: { id: string }[] };
        expect(listed.requests.at(-1)?.id).to.equal(ended.request.id);
        let text = '';
        while (!text.includes('event: request-end')) text += new TextDecoder().decode((await reader.read()).value);
        await reader.cancel();
        const names = parseSse(text).map((e) => e.event);
        expect(names[0]).to.equal('faults');
        expect(names).to.include.members(['request-start', 'request-end']);
      });
    });
  });

  describe('bounded memory', () => {
    const padded = (bytes: number) => {
      const body = { model: 'local', messages: [{ role: 'user', content: 'Hi' }], padding: '' };
      body.padding = 'x'.repeat(bytes - JSON.stringify(body).length);
      return body;
    };

    it('requests keeps at most maxRecordedRequests records and maxRecordedBytes of bodies, the oldest dropped first', async () => {
      const server = await startLocalProvider({ tokenDelayMs: 0, maxRecordedRequests: 3, maxRecordedBytes: 3000 });
      try {
        for (let i = 0; i < 5; i++) expect((await post(`${server.url}/v1/chat/completions`, padded(500))).status).to.equal(200);
        expect(server.requests.map((r) => r.id)).to.deep.equal(['req_3', 'req_4', 'req_5']);
        expect(server.requests.map((r) => r.bodyBytes)).to.deep.equal([500, 500, 500]);
        await post(`${server.url}/v1/chat/completions`, padded(2000)); // 500 + 500 + 2000 = 3000: fits
        expect(server.requests.map((r) => r.id)).to.deep.equal(['req_4', 'req_5', 'req_6']);
        await post(`${server.url}/v1/chat/completions`, padded(1000)); // 500 + 2000 + 1000 > 3000: req_5 goes too
        expect(server.requests.map((r) => r.id)).to.deep.equal(['req_6', 'req_7']);
        // a body larger than the whole budget: recorded without it
        await post(`${server.url}/v1/chat/completions`, padded(5000));
        expect(server.requests.map((r) => [r.id, r.bodyBytes, r.body === undefined])).to.deep.equal([
          ['req_6', 2000, false],
          ['req_7', 1000, false],
          ['req_8', 5000, true],
        ]);
        const listed = (await (await fetch(`${server.url}/admin/requests`)).json()) as { requests: { id: string }[] };
        expect(listed.requests.map((r) => r.id)).to.deep.equal(['req_6', 'req_7', 'req_8']);
        expect(() => startLocalProvider({ maxRecordedRequests: -1 })).to.throw(InvalidOptionError, 'maxRecordedRequests');
        expect(() => startLocalProvider({ maxRecordedBytes: 1.5 })).to.throw(InvalidOptionError, 'maxRecordedBytes');
        expect(() => startLocalProvider({ eventsBufferBytes: -1 })).to.throw(InvalidOptionError, 'eventsBufferBytes');
        expect(() => startLocalProvider({ maxBodyBytes: 0 })).to.throw(InvalidOptionError, 'maxBodyBytes');
      } finally {
        await server.close();
      }
    });

    it('by default: bodies up to 4 MiB (413 past it), 16 MiB of them kept', async function () {
      this.timeout(30_000);
      const server = await startLocalProvider({ tokenDelayMs: 0 });
      try {
        const tooLarge = await post(`${server.url}/v1/chat/completions`, padded(4 * 1024 * 1024 + 1));
        expect(tooLarge.status).to.equal(413);
        // 5 bodies of 4 000 000 bytes: 20 MB; the last 4 (16 MB) fit in 16 MiB
        for (let i = 0; i < 5; i++) expect((await post(`${server.url}/v1/chat/completions`, padded(4_000_000))).status).to.equal(200);
        expect(server.requests.map((r) => r.bodyBytes)).to.deep.equal([4_000_000, 4_000_000, 4_000_000, 4_000_000]);
      } finally {
        await server.close();
      }
    });

    it('/admin/events: a reader that does not keep up gets events dropped, not buffered, then `dropped` with the count and the current faults', async function () {
      this.timeout(30_000);
      const server = await startLocalProvider({ tokenDelayMs: 0 }); // eventsBufferBytes: 1 MiB by default
      try {
        // a reader that reads nothing: the response is paused, so the client stops reading the socket
        const response = await new Promise<import('node:http').IncomingMessage>((resolve, reject) =>
          httpRequest({ host: '127.0.0.1', port: server.port, path: '/admin/events', headers: { host: `127.0.0.1:${server.port}` } }, resolve)
            .on('error', reject)
            .end(),
        );
        response.pause();
        // 400 fault changes of ~64 KB each: ~26 MB of events, far more than the socket buffers hold
        const message = 'm'.repeat(64 * 1024);
        const changes = 400;
        for (let i = 0; i < changes; i++) server.faults.set({ kind: 'status', status: 503, message, id: `f${i}` });
        const produced = changes * message.length;
        // now read it all: the marker comes once the buffer drains
        let text = '';
        response.setEncoding('utf8');
        response.resume();
        // until the list with the last change has arrived (delivered, or sent after the marker)
        const lastId = `"id":"f${changes - 1}"`;
        let scanned = 0;
        let found = -1;
        await new Promise<void>((resolve) =>
          response.on('data', (chunk: string) => {
            text += chunk;
            if (found === -1) {
              found = text.indexOf(lastId, Math.max(0, scanned - lastId.length));
              scanned = text.length;
            }
            if (found !== -1 && text.indexOf('\n\n', found) !== -1) resolve();
          }),
        );
        response.destroy();
        expect(text.length, 'bytes received').to.be.below(produced / 2);
        const events = parseSse(text);
        const dropped = events.filter((e) => e.event === 'dropped').map((e) => JSON.parse(e.data) as { type: string; count: number });
        expect(dropped).to.have.length(1);
        expect(dropped[0]!.type).to.equal('dropped');
        const faultEvents = events.filter((e) => e.event === 'faults');
        // the first on connect, those written, the current list after the marker: every change is either delivered or counted
        expect(faultEvents.length - 2 + dropped[0]!.count).to.equal(changes);
        const last = JSON.parse(faultEvents.at(-1)!.data) as { faults: { id: string }[] };
        expect(last.faults.map((f) => f.id)).to.deep.equal([`f${changes - 1}`]);
      } finally {
        await server.close();
      }
    });
  });

  describe('tool_choice, honoured as the APIs do', () => {
    let server: LocalProvider;
    before(async () => {
      server = await startLocalProvider({ name: 'tool-choice', tokenDelayMs: 0 });
    });
    after(() => server.close());
    const toolsCalled = async (response: Response): Promise<string[]> =>
      (await events(response)).flatMap((e) => {
        if (e.data === '[DONE]') return [];
        const block = e.data['content_block'] as { type?: string; name?: string } | undefined;
        if (block?.type === 'tool_use') return [block.name!];
        const calls = (e.data['choices'] as { delta: { tool_calls?: { function?: { name?: string } }[] } }[] | undefined)?.[0]?.delta.tool_calls ?? [];
        return calls.flatMap((c) => (c.function?.name ? [c.function.name] : []));
      });
    const weather = "What's the weather in NYC?";
    const anthropicTool = { name: 'get_weather', description: 'Weather', input_schema: { type: 'object' } };

    it("'none' offers no tool; a named tool only that one; otherwise the assistant decides (OpenAI and Anthropic formats)", async () => {
      const openai = (extra: Record<string, unknown>) =>
        post(`${server.openAIBaseURL}/chat/completions`, openAIBody(weather, { tools: [weatherSpec], ...extra }));
      expect(await toolsCalled(await openai({}))).to.deep.equal(['get_weather']);
      expect(await toolsCalled(await openai({ tool_choice: 'none' }))).to.deep.equal([]);
      expect(await toolsCalled(await openai({ tool_choice: { type: 'function', function: { name: 'knowledge_search' } } }))).to.deep.equal([]);
      const anthropic = (extra: Record<string, unknown>) =>
        post(`${server.anthropicBaseURL}/v1/messages`, anthropicBody(weather, { tools: [anthropicTool], ...extra }));
      expect(await toolsCalled(await anthropic({ tool_choice: { type: 'any' } }))).to.deep.equal(['get_weather']);
      expect(await toolsCalled(await anthropic({ tool_choice: { type: 'none' } }))).to.deep.equal([]);
      expect(await toolsCalled(await anthropic({ tool_choice: { type: 'tool', name: 'get_weather' } }))).to.deep.equal(['get_weather']);
    });
  });

  describe('extended thinking, as the real APIs ask it back', () => {
    let server: LocalProvider;
    before(async () => {
      server = await startLocalProvider({ name: 'thinking', tokenDelayMs: 0 });
    });
    after(() => server.close());
    const think = { thinking: { type: 'enabled', budget_tokens: 1024 } };

    it('Anthropic: a signed thinking block first when thinking is on; none without', async () => {
      const on = await events(
        await post(
          `${server.anthropicBaseURL}/v1/messages`,
          anthropicBody("What's the weather in NYC?", { ...think, tools: [{ name: 'get_weather', description: 'Weather', input_schema: { type: 'object' } }] }),
        ),
      );
      const starts = on.filter((e) => e.event === 'content_block_start').map((e) => (e.data as { content_block: { type: string } }).content_block.type);
      expect(starts).to.deep.equal(['thinking', 'tool_use']);
      const thought = on
        .flatMap((e) =>
          e.event === 'content_block_delta' && (e.data as { delta: { type: string } }).delta.type === 'thinking_delta'
            ? [(e.data as { delta: { thinking: string } }).delta.thinking]
            : [],
        )
        .join('');
      expect(thought).to.equal('The user asks: "What\'s the weather in NYC?". I\'ll call get_weather.');
      const signature = on.find((e) => e.event === 'content_block_delta' && (e.data as { delta: { type: string } }).delta.type === 'signature_delta');
      expect((signature?.data as { delta: { signature: string } }).delta.signature).to.equal(thinkingSignature(thought));
      const off = await events(await post(`${server.anthropicBaseURL}/v1/messages`, anthropicBody('Hi')));
      expect(off.some((e) => e.event === 'content_block_start' && (e.data as { content_block: { type: string } }).content_block.type === 'thinking')).to.equal(
        false,
      );
    });

    it("Anthropic: a tool turn sent back without its thinking block, or with an altered signature, is a 400 in the API's words", async () => {
      const toolTurn = (first: unknown[]) => ({
        ...anthropicBody('x', think),
        messages: [
          { role: 'user', content: "What's the weather in NYC?" },
          { role: 'assistant', content: [...first, { type: 'tool_use', id: 't1', name: 'get_weather', input: { city: 'NYC', units: 'celsius' } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: '{"temperature":22}' }] },
        ],
      });
      const missing = await post(`${server.anthropicBaseURL}/v1/messages`, toolTurn([{ type: 'text', text: 'Let me check.' }]));
      expect(missing.status).to.equal(400);
      expect(((await missing.json()) as { error: { message: string } }).error.message).to.contain(
        'Expected `thinking` or `redacted_thinking`, but found `text`',
      );
      const altered = await post(
        `${server.anthropicBaseURL}/v1/messages`,
        toolTurn([{ type: 'thinking', thinking: 'made up', signature: thinkingSignature('something else') }]),
      );
      expect(altered.status).to.equal(400);
      expect(((await altered.json()) as { error: { message: string } }).error.message).to.contain('Invalid `signature` in `thinking` block');
      const whole = await post(
        `${server.anthropicBaseURL}/v1/messages`,
        toolTurn([{ type: 'thinking', thinking: 'mine', signature: thinkingSignature('mine') }]),
      );
      expect(whole.status).to.equal(200);
      await whole.text();
    });

    it('OpenAI format (DeepSeek): reasoning_content deltas first; a tool-call turn sent back without its reasoning_content is a 400', async () => {
      const on = await events(
        await post(`${server.openAIBaseURL}/chat/completions`, openAIBody("What's the weather in NYC?", { ...think, tools: [weatherSpec] })),
      );
      const reasoning = on.flatMap((e) => {
        const delta = e.data === '[DONE]' ? undefined : (e.data['choices'] as { delta: { reasoning_content?: string } }[] | undefined)?.[0]?.delta;
        return typeof delta?.reasoning_content === 'string' ? [delta.reasoning_content] : [];
      });
      expect(reasoning.join('')).to.equal('The user asks: "What\'s the weather in NYC?". I\'ll call get_weather.');
      const back = (reasoningContent?: string) => ({
        ...openAIBody('x', think),
        messages: [
          { role: 'user', content: "What's the weather in NYC?" },
          {
            role: 'assistant',
            content: null,
            ...(reasoningContent ? { reasoning_content: reasoningContent } : {}),
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"NYC","units":"celsius"}' } }],
          },
          { role: 'tool', tool_call_id: 'c1', content: '{"temperature":22}' },
        ],
      });
      const missing = await post(`${server.openAIBaseURL}/chat/completions`, back());
      expect(missing.status).to.equal(400);
      expect(((await missing.json()) as { error: { message: string } }).error.message).to.contain(
        'Missing `reasoning_content` field in the assistant message at message index 1',
      );
      const whole = await post(`${server.openAIBaseURL}/chat/completions`, back('I will call get_weather.'));
      expect(whole.status).to.equal(200);
      await whole.text();
    });

    for (const protocol of ['anthropic', 'openai'] as const) {
      it(`runAgent with thinking on (${protocol} protocol): the tool turn goes back as the API requires; the reasoning streams apart from the answer`, async () => {
        const { tool, executions } = weatherTool();
        const model =
          protocol === 'anthropic'
            ? anthropicModel({ baseURL: server.anthropicBaseURL, model: 'local', body: think })
            : openAICompatibleModel({ baseURL: server.openAIBaseURL, model: 'local', body: think });
        const events: AgentEvent[] = await lastValueFrom(
          runAgent({ model, tools: [tool], messages: [{ role: 'user', content: "What's the weather in NYC?" }] }).pipe(toArray()),
        );
        const answer = events.at(-1);
        expect(answer?.type === 'message' && answer.message.content).to.equal('It is 22 °C and sunny in NYC.');
        expect(executions).to.have.length(1);
        expect(server.requests.slice(-2).map((r) => r.status)).to.deep.equal([200, 200]);
        const thoughts = events.filter((e) => e.type === 'reasoning-delta').length;
        expect(thoughts, 'reasoning deltas').to.be.greaterThan(4);
        const toolTurn = events.find((e) => e.type === 'message' && e.message.role === 'assistant' && e.message.toolCalls !== undefined);
        const reasoning = toolTurn?.type === 'message' && toolTurn.message.role === 'assistant' ? toolTurn.message.reasoning : undefined;
        expect(reasoning?.[0]?.text).to.equal('The user asks: "What\'s the weather in NYC?". I\'ll call get_weather.');
        if (protocol === 'anthropic') expect(reasoning?.[0]?.signature).to.equal(thinkingSignature(reasoning![0]!.text));
      });
    }
  });

  describe("a fault's error says its status (or its error type) once, whichever client reads it", () => {
    let server: LocalProvider;
    before(async () => (server = await startLocalProvider({ name: 'primary', tokenDelayMs: 1 })));
    after(() => server.close());
    afterEach(() => server.faults.clear());

    const user: Message[] = [{ role: 'user', content: 'Hi' }];
    const failure = async (call: () => Promise<unknown>): Promise<string> => {
      const error = await call().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, 'the call failed').to.be.instanceOf(Error);
      return (error as Error).message;
    };
    const drain = async (stream: AsyncIterable<unknown>): Promise<void> => {
      for await (const chunk of stream) void chunk;
    };
    /** Each client as a user has it: rxheal's own models and the SDKs (whose messages prefix the status), each failing on the server's fault. */
    const clients: Record<string, () => Promise<unknown>> = {
      openAICompatibleModel: () =>
        lastValueFrom(streamModel(openAICompatibleModel({ id: 'gpt', baseURL: server.openAIBaseURL, model: 'local' }), { messages: user, tools: [] })),
      anthropicModel: () =>
        lastValueFrom(streamModel(anthropicModel({ id: 'claude', baseURL: server.anthropicBaseURL, model: 'local' }), { messages: user, tools: [] })),
      // the openai SDK of each major this Node runs (6; 7 on Node >= 22)
      ...Object.fromEntries(
        OPENAI_KITS.map(({ label, OpenAI }) => [
          `${label} SDK`,
          async () =>
            drain(
              await new OpenAI({ baseURL: server.openAIBaseURL, apiKey: 'local', maxRetries: 0 }).chat.completions.create({
                model: 'local',
                stream: true,
                messages: [{ role: 'user', content: 'Hi' }],
              }),
            ),
        ]),
      ),
      '@anthropic-ai/sdk': async () =>
        drain(
          await new Anthropic({ baseURL: server.anthropicBaseURL, apiKey: 'local', maxRetries: 0 }).messages.create({
            model: 'local',
            max_tokens: 100,
            stream: true,
            messages: [{ role: 'user', content: 'Hi' }],
          }),
        ),
    };
    // the AI SDK providers of each major this Node runs (6; 7 on Node >= 22)
    const aiSdk: Record<string, () => Promise<unknown>> = Object.fromEntries(
      AI_SDK_KITS.flatMap(({ major, generateText, createOpenAICompatible, createAnthropic }) => [
        [
          `@ai-sdk/openai-compatible (AI SDK ${major})`,
          () => generateText({ model: createOpenAICompatible({ name: 'local', baseURL: server.openAIBaseURL })('local'), prompt: 'Hi', maxRetries: 0 }),
        ],
        [
          `@ai-sdk/anthropic (AI SDK ${major})`,
          () =>
            generateText({
              model: createAnthropic({ baseURL: `${server.anthropicBaseURL}/v1`, apiKey: 'local' })('local'),
              prompt: 'Hi',
              maxOutputTokens: 100,
              maxRetries: 0,
            }),
        ],
      ]),
    );
    const times = (text: string, word: string): number => text.split(new RegExp(`\\b${word}\\b`)).length - 1;

    for (const status of [429, 500, 503]) {
      it(`a ${status} status fault: "${status}" at most once in each message, and the status named (its number, or "${STATUS_CODES[status]}")`, async () => {
        for (const [name, call] of Object.entries({ ...clients, ...aiSdk })) {
          server.faults.set({ kind: 'status', status, times: 1 });
          const message = await failure(call);
          expect(times(message, String(status)), `${name}: ${message}`).to.be.at.most(1);
          expect(message.includes(String(status)) || message.includes(STATUS_CODES[status]!), `${name}: ${message}`).to.equal(true);
        }
      });
    }

    for (const errorType of ['rate_limit_error', 'api_error']) {
      it(`a mid-stream ${errorType}: the type at most once in each message`, async () => {
        for (const [name, call] of Object.entries(clients)) {
          server.faults.set({ kind: 'stream-error', errorType, afterChunks: 1, times: 1 });
          const message = await failure(call);
          expect(times(message, errorType), `${name}: ${message}`).to.be.at.most(1);
        }
      });
    }
  });

  describe('end to end: runAgent over real HTTP', () => {
    let primary: LocalProvider;
    let secondary: LocalProvider;
    before(async () => {
      [primary, secondary] = await Promise.all([
        startLocalProvider({ name: 'primary', tokenDelayMs: 1, faults: [{ kind: 'status', status: 503, id: 'primary-503' }] }),
        startLocalProvider({ name: 'secondary', tokenDelayMs: 1 }),
      ]);
    });
    after(() => Promise.all([primary.close(), secondary.close()]));

    it('OpenAI-protocol primary answering 503 → fallbackModel to the Anthropic-protocol secondary, which answers a weather question with a real tool', async () => {
      const { tool, executions } = weatherTool();
      const hub = new HealHub();
      const breakers = new CircuitBreakerRegistry({ failureThreshold: 5, resetTimeoutMs: 60_000 });
      const model = fallbackModel(
        [
          openAICompatibleModel({ baseURL: primary.openAIBaseURL, model: 'local', id: 'primary' }),
          anthropicModel({ baseURL: secondary.anthropicBaseURL, model: 'local', id: 'secondary' }),
        ],
        { hub, breakers },
      );
      const events: AgentEvent[] = await lastValueFrom(
        runAgent({
          model,
          hub,
          tools: [tool],
          instruction: 'You are a helpful assistant.',
          messages: [{ role: 'user', content: "What's the weather in NYC?" }],
        }).pipe(toArray()),
      );
      const labels = events.map(describeEvent).filter((l) => !l.startsWith('call-') && !l.startsWith('text:'));
      expect(labels).to.deep.equal([
        'fallback:model:primary>model:secondary',
        'tool-call:get_weather',
        'finish:tool-calls',
        'message:assistant',
        'tool-result:get_weather',
        'message:tool',
        'fallback:model:primary>model:secondary',
        'finish:stop',
        'message:assistant',
      ]);
      const answer = events.at(-1);
      expect(answer?.type === 'message' && answer.message.content).to.equal('It is 22 °C and sunny in NYC.');
      expect(executions).to.deep.equal([{ city: 'NYC', units: 'celsius' }]);
      expect(primary.requests.map((r) => r.status)).to.deep.equal([503, 503]);
      expect(secondary.requests.map((r) => [r.protocol, r.end])).to.deep.equal([
        ['anthropic', 'completed'],
        ['anthropic', 'completed'],
      ]);
      expect(snapshotBreaker(breakers.get('model:primary')).consecutiveFailures).to.equal(2);
    });

    it('the same with the primary down (connections destroyed): the answer comes from the secondary', async () => {
      primary.faults.set({ kind: 'down', id: 'off' });
      secondary.faults.clear();
      const { tool } = weatherTool();
      const model = fallbackModel([
        openAICompatibleModel({ baseURL: primary.openAIBaseURL, model: 'local', id: 'primary' }),
        anthropicModel({ baseURL: secondary.anthropicBaseURL, model: 'local', id: 'secondary' }),
      ]);
      const before = primary.requests.length;
      const events = await lastValueFrom(runAgent({ model, tools: [tool], messages: [{ role: 'user', content: 'Weather in Lisbon?' }] }).pipe(toArray()));
      const answer = events.at(-1);
      expect(answer?.type === 'message' && answer.message.content).to.equal('It is 22 °C and sunny in Lisbon.');
      expect(primary.requests.slice(before).map((r) => r.end)).to.deep.equal(['reset', 'reset']);
      primary.faults.clear();
    });

    it('a 429 is retried after its retry-after; bad tool arguments from the model → the tool rejects them, reflection, the model corrects itself', async () => {
      primary.faults.set([
        { kind: 'bad-tool-args', times: 1 },
        { kind: 'status', status: 429, retryAfterMs: 5, times: 1 },
      ]);
      const { tool, executions } = weatherTool();
      const model = openAICompatibleModel({ baseURL: primary.openAIBaseURL, model: 'local', id: 'primary' });
      const events = await lastValueFrom(
        runAgent({
          model,
          tools: [tool],
          messages: [{ role: 'user', content: "What's the weather in Berlin?" }],
          modelPipeline: (_req, turn$, { hub }) => turn$.pipe(retryWithBackoff({ hub, target: 'model:primary', initialBackoffMs: 1, jitter: 'none' })),
          toolPipeline: (_call, call$) => call$.pipe(reflectOnError()),
        }).pipe(toArray()),
      );
      const labels = events.map(describeEvent).filter((l) => !l.startsWith('call-') && !l.startsWith('text:'));
      // the status fault acts first (it comes before the model's turn), the bad arguments on the retried turn
      expect(labels).to.deep.equal([
        'retry:model:primary#1',
        'retry-succeeded:model:primary#2',
        'tool-call:get_weather',
        'finish:tool-calls',
        'message:assistant',
        'tool-error:get_weather',
        'reflection:get_weather#1/3',
        'message:tool',
        'tool-call:get_weather',
        'finish:tool-calls',
        'message:assistant',
        'tool-result:get_weather',
        'message:tool',
        'finish:stop',
        'message:assistant',
      ]);
      expect(executions).to.deep.equal([{ city: 'Berlin', units: 'celsius' }]);
      const answer = events.at(-1);
      expect(answer?.type === 'message' && answer.message.content).to.equal('It is 22 °C and sunny in Berlin.');
      const retry = events.find((e) => e.type === 'retry');
      expect(retry).to.deep.include({ category: 'rate_limit', delayMs: 5 });
    });

    it('HttpError from the primary carries the provider’s JSON error body', async () => {
      primary.faults.set({ kind: 'status', status: 503 });
      const error = await lastValueFrom(
        streamModel(openAICompatibleModel({ baseURL: primary.openAIBaseURL, model: 'local' }), { messages: [{ role: 'user', content: 'Hi' }], tools: [] }),
      ).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(HttpError);
      expect((error as HttpError).body).to.deep.equal({
        error: { message: "Service Unavailable from 'primary' (local fault)", type: 'server_error', param: null, code: null },
      });
      primary.faults.clear();
    });
  });
});
