/**
 * rxheal/server speaks OpenAI's Responses API (`POST /v1/responses`), streamed and not: the events
 * a real client reads (numbered, in the API's order), the response object, reasoning when asked
 * for (a summary, and encrypted content that must come back on a stateless tool turn — a 400 in
 * the API's words otherwise), tool_choice, and every fault the other protocols have — driven by
 * openAIResponsesModel, the real `openai` SDK (6, and 7 on Node ≥ 22: `responses.create`,
 * `responses.stream()`) and the AI SDK's `@ai-sdk/openai` Responses model (6 and 7).
 */
import { expect } from 'chai';
import * as t from 'io-ts';
import { lastValueFrom, toArray } from 'rxjs';
import { classifyError } from '../../src/core/errors/classify.js';
import { HttpError, MalformedStreamError } from '../../src/core/errors/errors.js';
import type { Message, TurnEvent } from '../../src/core/events/events.js';
import { streamModel } from '../../src/core/model/model.js';
import { openAIResponsesModel } from '../../src/providers/responses.js';
import { startLocalProvider, type LocalProvider } from '../../src/server/index.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';
import { afterWeather, ask, RIVERS, RIVERS_ANSWER, textOf, turn, turnError, WEATHER_TOOL } from '../support/interop.js';
import { AI_SDK_KITS, OPENAI_KITS } from '../support/kits.js';

const THINKING = { reasoning: { effort: 'low', summary: 'auto' } };

describe("rxheal/server: OpenAI's Responses API (POST /v1/responses)", function () {
  this.timeout(20_000);
  let server: LocalProvider;
  before(async () => {
    server = await startLocalProvider({ name: 'responses', tokenDelayMs: 0 });
  });
  after(() => server.close());
  afterEach(() => server.faults.clear());

  const model = (body: Record<string, unknown> = {}) => openAIResponsesModel({ baseURL: server.openAIBaseURL, model: 'local', body });
  const post = (body: unknown) =>
    fetch(`${server.openAIBaseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  describe('the wire', () => {
    it('streamed: response.created, in_progress, each item added / its deltas / done, response.completed — every event with the next sequence_number, its type also the SSE event name', async () => {
      const text = await (await post({ model: 'local', stream: true, input: RIVERS })).text();
      const frames = text.split('\n\n').filter((f) => f.trim() !== '');
      const events = frames.map((f) => {
        const [eventLine, dataLine] = f.split('\n');
        const event = JSON.parse(dataLine!.slice('data: '.length)) as Record<string, unknown>;
        expect(eventLine).to.equal(`event: ${String(event['type'])}`);
        return event;
      });
      expect(events.map((e) => e['sequence_number'])).to.deep.equal(events.map((_, i) => i));
      const types = events.map((e) => e['type']);
      expect(types.slice(0, 5)).to.deep.equal([
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
        'response.output_text.delta',
      ]);
      expect(types.slice(-4)).to.deep.equal(['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed']);
      const completed = events.at(-1)!['response'] as Record<string, unknown>;
      expect(completed).to.include({ status: 'completed', model: 'local' });
      expect((completed['output'] as { content: { text: string }[] }[])[0]!.content[0]!.text).to.equal(RIVERS_ANSWER);
    });

    it('not streamed: one response object with its output items and usage', async () => {
      const response = (await (
        await post({
          model: 'local',
          input: "What's the weather in Paris?",
          tools: [{ type: 'function', name: 'get_weather', parameters: WEATHER_TOOL.parameters }],
        })
      ).json()) as Record<string, unknown>;
      expect(response).to.include({ object: 'response', status: 'completed' });
      expect(response['output']).to.deep.equal([
        {
          type: 'function_call',
          id: `fc_${String(response['id']).slice(5)}_0`,
          call_id: (response['output'] as { call_id: string }[])[0]!.call_id,
          name: 'get_weather',
          arguments: '{"city":"Paris","units":"celsius"}',
          status: 'completed',
        },
      ]);
      expect(response['usage']).to.have.property('total_tokens').that.is.a('number');
    });

    it('openAIResponsesModel: text with usage, a tool call, an answer from a tool result (instructions as a system message); tool_choice honoured ({ type: "function", name }, "none")', async () => {
      const events = await turn(model(), ask(RIVERS));
      expect(textOf(events)).to.equal(RIVERS_ANSWER);
      expect(events.at(-1)).to.deep.include({ type: 'finish', reason: 'stop' });
      const call = await turn(model(), ask("What's the weather in Paris?", [WEATHER_TOOL]));
      expect(call.map((e) => e.type)).to.deep.equal(['tool-call', 'finish']);
      expect(call[0]).to.deep.include({ name: 'get_weather', args: { city: 'Paris', units: 'celsius' } });
      expect(textOf(await turn(model(), afterWeather('call_1')))).to.equal('It is 22 °C and sunny in Paris.');
      const none = await turn(model(), { ...ask("What's the weather in Paris?", [WEATHER_TOOL]), toolChoice: 'none' });
      expect(none.filter((e) => e.type === 'tool-call')).to.deep.equal([]);
      const health = (await (await fetch(`${server.url}/health`)).json()) as { protocols: string[] };
      expect(health.protocols).to.include('responses');
      expect(server.requests.at(-1)).to.include({ protocol: 'responses', path: '/v1/responses' });
    });

    for (const kit of OPENAI_KITS) {
      it(`the real ${kit.label} SDK: responses.create (streamed and not) and the responses.stream() helper`, async () => {
        const client = new kit.OpenAI({ baseURL: server.openAIBaseURL, apiKey: 'local', maxRetries: 0, logLevel: 'off' });
        const whole = await client.responses.create({ model: 'local', input: RIVERS });
        expect(whole.output_text).to.equal(RIVERS_ANSWER);
        let streamed = '';
        for await (const event of await client.responses.create({ model: 'local', input: RIVERS, stream: true }))
          if (event.type === 'response.output_text.delta') streamed += event.delta;
        expect(streamed).to.equal(RIVERS_ANSWER);
        const helper = client.responses.stream({ model: 'local', input: RIVERS });
        const final = await helper.finalResponse();
        expect(final.output_text).to.equal(RIVERS_ANSWER);
        expect(final.status).to.equal('completed');
      });
    }

    for (const kit of AI_SDK_KITS) {
      it(`${kit.label}: @ai-sdk/openai's default (Responses) model answers, and calls the tool`, async () => {
        const responses = kit.createOpenAI({ baseURL: server.openAIBaseURL, apiKey: 'local' })('local');
        expect((await kit.generateText({ model: responses, prompt: RIVERS, maxRetries: 0 })).text).to.equal(RIVERS_ANSWER);
        const getWeather = kit.tool({
          description: 'Weather',
          inputSchema: kit.jsonSchema<{ city: string; units: string }>({
            type: 'object',
            properties: { city: { type: 'string' }, units: { type: 'string' } },
            required: ['city'],
          }),
          execute: () => Promise.resolve({ temperature: 22, condition: 'sunny' }),
        });
        const result = await kit.generateText({
          model: responses,
          prompt: "What's the weather in Paris?",
          tools: { get_weather: getWeather },
          stopWhen: kit.stepCountIs(2),
          maxRetries: 0,
        });
        expect(result.steps[0]!.toolCalls.map((c) => c.toolName)).to.deep.equal(['get_weather']);
        expect(result.text).to.equal('It is 22 °C and sunny in Paris.');
      });
    }
  });

  describe('reasoning (reasoning: { effort, summary } asked for)', () => {
    const getWeather = defineTool({
      name: 'get_weather',
      description: 'Weather',
      args: t.type({ city: t.string, units: t.string }),
      execute: () => [{ temperature: 22, condition: 'sunny' }],
    });
    const question: Message[] = [{ role: 'user', content: "What's the weather in NYC?" }];

    it('a summary streams as reasoning, the item ends with encrypted content; a stateless tool turn through runAgent sends it back and completes (200, 200)', async () => {
      const before = server.requests.length;
      const events = await lastValueFrom(runAgent({ model: model(THINKING), tools: [getWeather], messages: question }).pipe(toArray()));
      expect(server.requests.slice(before).map((r) => r.status)).to.deep.equal([200, 200]);
      expect(events.filter((e) => e.type === 'reasoning-delta').length).to.be.greaterThan(4);
      const end = events.find((e) => e.type === 'reasoning-end');
      expect(end)
        .to.have.nested.property('providerMetadata.openai.reasoningEncryptedContent')
        .that.matches(/^local-enc-/);
      const last = events.at(-1);
      expect(last?.type === 'message' && last.message.content).to.equal('It is 22 °C and sunny in NYC.');
      const input = (server.requests.at(-1)!.body as { input: Record<string, unknown>[] }).input;
      expect(input.map((i) => i['type'] ?? i['role'])).to.deep.equal(['user', 'reasoning', 'function_call', 'function_call_output']);
    });

    it("a tool turn sent back without its reasoning item, or with its encrypted content altered: a 400 in the API's words (bad request: not retried)", async () => {
      const first = await turn(model(THINKING), ask("What's the weather in NYC?", [WEATHER_TOOL]));
      const call = first.find((e): e is Extract<TurnEvent, { type: 'tool-call' }> => e.type === 'tool-call')!;
      const end = first.find((e): e is Extract<TurnEvent, { type: 'reasoning-end' }> => e.type === 'reasoning-end')!;
      const back = (reasoning: Extract<Message, { role: 'assistant' }>['reasoning']): Message[] => [
        { role: 'user', content: "What's the weather in NYC?" },
        { role: 'assistant', content: '', toolCalls: [{ id: call.id, name: call.name, args: call.args }], ...(reasoning ? { reasoning } : {}) },
        { role: 'tool', toolCallId: call.id, toolName: call.name, content: '{"temperature":22,"condition":"sunny"}' },
      ];
      const without = await turnError(model(THINKING), { messages: back(undefined), tools: [WEATHER_TOOL] });
      expect(without).to.be.instanceOf(HttpError).with.property('status', 400);
      expect(JSON.stringify((without as HttpError).body)).to.contain("without its required 'reasoning' item");
      expect(classifyError(without)).to.deep.include({ category: 'bad_request', retryable: false });
      const meta = (end.providerMetadata as { openai: { itemId: string; reasoningEncryptedContent: string } }).openai;
      const altered = await turnError(model(THINKING), {
        messages: back([{ text: '', providerMetadata: { openai: { ...meta, reasoningEncryptedContent: `${meta.reasoningEncryptedContent}x` } } }]),
        tools: [WEATHER_TOOL],
      });
      expect(JSON.stringify((altered as HttpError).body)).to.contain('could not be verified');
      // sent back as it came: answered
      expect(textOf(await turn(model(THINKING), { messages: back([{ text: '', providerMetadata: end.providerMetadata! }]), tools: [WEATHER_TOOL] }))).to.equal(
        'It is 22 °C and sunny in NYC.',
      );
    });
  });

  describe('faults (as the other protocols have them)', () => {
    it('429 with retry-after, 500, 503, and 503 with x-should-retry: false — each classified as before the stream', async () => {
      server.faults.set({ kind: 'status', status: 429, retryAfter: 2, times: 1 });
      expect(classifyError(await turnError(model(), ask(RIVERS)))).to.deep.include({ category: 'rate_limit', retryable: true, retryAfterMs: 2000 });
      server.faults.set({ kind: 'status', status: 500, times: 1 });
      expect(classifyError(await turnError(model(), ask(RIVERS)))).to.deep.include({ category: 'server_error', retryable: true });
      server.faults.set({ kind: 'status', status: 503, times: 1 });
      expect(classifyError(await turnError(model(), ask(RIVERS)))).to.deep.include({ category: 'service_unavailable', retryable: true });
      server.faults.set({ kind: 'status', status: 503, shouldRetry: false, times: 1 });
      expect(classifyError(await turnError(model(), ask(RIVERS)))).to.deep.include({ retryable: false, fallback: true });
    });

    it('a reset after N events: IncompleteStreamError (connection) after the first words; a malformed event: MalformedStreamError; an error event: HttpError with its code’s status', async () => {
      server.faults.set({ kind: 'reset', afterChunks: 3, times: 1 });
      const seen: TurnEvent[] = [];
      const reset = await new Promise<unknown>((resolve) => streamModel(model(), ask(RIVERS)).subscribe({ next: (e) => seen.push(e), error: resolve }));
      expect(textOf(seen)).to.equal(RIVERS_ANSWER.split(' ').slice(0, 3).join(' '));
      expect(classifyError(reset)).to.deep.include({ category: 'connection', retryable: true });
      server.faults.set({ kind: 'malformed', afterChunks: 2, times: 1 });
      expect(await turnError(model(), ask(RIVERS))).to.be.instanceOf(MalformedStreamError);
      server.faults.set({ kind: 'stream-error', afterChunks: 2, errorType: 'rate_limit_error', times: 1 });
      const limited = await turnError(model(), ask(RIVERS));
      expect(limited).to.be.instanceOf(HttpError).with.property('status', 429);
      server.faults.set({ kind: 'stream-error', afterChunks: 2, times: 1 });
      expect(classifyError(await turnError(model(), ask(RIVERS)))).to.deep.include({ retryable: true, fallback: true });
    });

    it('a stall (events, then silence): no more events until the client leaves; a slow first byte: the whole answer, later; bad tool arguments once: the call asks for kelvin', async () => {
      server.faults.set({ kind: 'stall', afterChunks: 2, times: 1 });
      const seen: TurnEvent[] = [];
      const subscription = streamModel(model(), ask(RIVERS)).subscribe((e) => seen.push(e));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(textOf(seen)).to.equal(RIVERS_ANSWER.split(' ').slice(0, 2).join(' '));
      subscription.unsubscribe();
      const record = await server.waitForRequest((r) => r.end !== undefined && r.faults.includes('stall'));
      expect(record.end).to.equal('client-closed');
      server.faults.set({ kind: 'slow-first-byte', delayMs: 150, times: 1 });
      expect(textOf(await turn(model(), ask(RIVERS)))).to.equal(RIVERS_ANSWER);
      server.faults.set({ kind: 'bad-tool-args', times: 1 });
      const call = (await turn(model(), ask("What's the weather in Paris?", [WEATHER_TOOL]))).find((e) => e.type === 'tool-call');
      expect(call).to.deep.include({ args: { city: 'Paris', units: 'kelvin' } });
    });

    it('a body that is not an object or lacks input: a 400 in the OpenAI error format', async () => {
      const response = await post({ model: 'local' });
      expect(response.status).to.equal(400);
      expect(await response.json()).to.have.nested.property('error.type', 'invalid_request_error');
      const notObject = await post([1, 2]);
      expect(notObject.status).to.equal(400);
      const badItem = await post({ model: 'local', input: [{ type: 'computer_call_output', call_id: 'c' }] });
      expect(badItem.status).to.equal(400);
      expect(await badItem.json())
        .to.have.nested.property('error.message')
        .that.contains('computer_call_output');
    });

    it("an id that is not valid percent-encoding (GET /v1/responses/%E0, …/cancel): a 400 in the API's shape, not a 500", async () => {
      const body = {
        error: { message: "Invalid 'response_id': '%E0' is not a valid percent-encoded id.", type: 'invalid_request_error', param: null, code: null },
      };
      for (const [path, method] of [
        ['/responses/%E0', 'GET'],
        ['/responses/%E0?stream=true', 'GET'],
        ['/responses/%E0/cancel', 'POST'],
      ] as const) {
        const response = await fetch(`${server.openAIBaseURL}${path}`, { method });
        expect([response.status, await response.json()], `${method} ${path}`).to.deep.equal([400, body]);
      }
      // a well-formed id still reads as one: escaped, unknown, 404
      const unknown = await fetch(`${server.openAIBaseURL}/responses/resp%5Fnope`);
      expect([unknown.status, await unknown.json()]).to.deep.equal([
        404,
        { error: { message: "Response with id 'resp_nope' not found.", type: 'invalid_request_error', param: null, code: null } },
      ]);
    });
  });
});
