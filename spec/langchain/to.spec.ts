/**
 * toLangChain (src/langchain/to.ts): rxheal models under LangChain's own `.stream()`, `.invoke()`,
 * `bindTools`, `withStructuredOutput` and a prompt → model → parser chain.
 */
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, AIMessageChunk, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { StringOutputParser } from '@langchain/core/output_parsers';
import { ChatGenerationChunk } from '@langchain/core/outputs';
import { ChatPromptTemplate } from '@langchain/core/prompts';
import { tool } from '@langchain/core/tools';
import { FakeListChatModel } from '@langchain/core/utils/testing';
import { expect } from 'chai';
import { concat, from, throwError } from 'rxjs';
import { z } from 'zod';
import { fromLangChain, RxhealChatModel, StreamRestartError, toLangChain } from '../../src/langchain/index.js';
import { classifyError } from '../../src/core/errors/classify.js';
import { HttpError, InvalidOptionError } from '../../src/core/errors/errors.js';
import type { TurnEvent } from '../../src/core/events/events.js';
import type { Model, ModelRequest } from '../../src/core/model/model.js';
import { fallbackModel } from '../../src/sources/fallbackModel.js';
import { openAICompatibleModel } from '../../src/providers/openai.js';
import type { LocalProvider } from '../../src/server/index.js';
import { ask, localProviders, RIVERS, RIVERS_ANSWER, turn, WEATHER_TOOL } from '../support/interop.js';
import { ScriptedChatModel, chatOpenAI, chunk, collect, scripted } from './fakes.js';

describe('rxheal/langchain', function () {
  this.timeout(20_000);
  const providers = localProviders();
  let server: LocalProvider;
  let backup: LocalProvider;
  let slow: LocalProvider;
  before(() => ({ server, backup, slow } = providers));

  describe('toLangChain: rxheal Model → LangChain chat model', () => {
    it('is a BaseChatModel of type rxheal', () => {
      const chat = toLangChain(scripted('s', () => []));
      expect(chat).to.be.instanceOf(BaseChatModel).and.instanceOf(RxhealChatModel);
      expect(chat._llmType()).to.equal('rxheal');
      expect(() => toLangChain({} as Model)).to.throw(InvalidOptionError);
    });

    it('.stream(): text chunks, then usage_metadata and finish_reason on the last', async () => {
      const chat = toLangChain(
        scripted('s', () => [
          { type: 'text-delta', text: 'Hello' },
          { type: 'text-delta', text: ' world' },
          { type: 'finish', reason: 'length', usage: { inputTokens: 4, outputTokens: 2 } },
        ]),
      );
      const all = await collect(await chat.stream('Hi'));
      expect(all.content).to.equal('Hello world');
      expect(all.usage_metadata).to.deep.include({ input_tokens: 4, output_tokens: 2, total_tokens: 6 });
      expect(all.response_metadata).to.deep.include({ finish_reason: 'length' });
    });

    it("the prompt cache's reads and writes and the reasoning share: usage_metadata's input_token_details and output_token_details, and back through fromLangChain", async () => {
      const cached = { inputTokens: 100, outputTokens: 12, cachedInputTokens: 80, cacheWriteTokens: 15, reasoningTokens: 5 };
      const model = scripted('s', () => [
        { type: 'text-delta', text: 'Hi' },
        { type: 'finish', reason: 'stop', usage: cached },
      ]);
      const all = await collect(await toLangChain(model).stream('Hi'));
      expect(all.usage_metadata).to.deep.include({
        input_tokens: 100,
        output_tokens: 12,
        input_token_details: { cache_read: 80, cache_creation: 15 },
        output_token_details: { reasoning: 5 },
      });
      expect((await turn(fromLangChain(toLangChain(model)), ask('Hi'))).at(-1)).to.deep.equal({ type: 'finish', reason: 'stop', usage: cached });
    });

    it('.invoke(): one AIMessage with text, tool calls and usage; the request has the messages and bound tools', async () => {
      const requests: ModelRequest[] = [];
      const model: Model = {
        id: 's',
        stream: (request) => {
          requests.push(request);
          return [
            { type: 'text-delta', text: 'Checking.' },
            { type: 'tool-call', id: 'c1', name: 'get_weather', args: { city: 'Oslo' } },
            { type: 'finish', reason: 'tool-calls', usage: { inputTokens: 5, outputTokens: 3 } },
          ];
        },
      };
      const getWeather = tool(async ({ city }) => `sunny in ${city}`, {
        name: 'get_weather',
        description: 'Current weather for a city',
        schema: z.object({ city: z.string() }),
      });
      const answer = await toLangChain(model)
        .bindTools([getWeather])
        .invoke([new SystemMessage('Be brief.'), new HumanMessage('Weather in Oslo?')]);
      expect(answer.content).to.equal('Checking.');
      expect(answer.tool_calls).to.deep.equal([{ id: 'c1', name: 'get_weather', args: { city: 'Oslo' }, type: 'tool_call' }]);
      expect(answer.usage_metadata).to.deep.include({ input_tokens: 5, output_tokens: 3 });
      expect(requests[0]!.messages).to.deep.equal([
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Weather in Oslo?' },
      ]);
      expect(requests[0]!.tools).to.have.length(1);
      expect(requests[0]!.tools[0]).to.deep.include({ name: 'get_weather', description: 'Current weather for a city' });
      expect(requests[0]!.tools[0]!.parameters).to.have.nested.property('properties.city.type', 'string');
    });

    it("tool_choice (bound, or per call) becomes the request's toolChoice in every LangChain spelling; a real model sends it as tool_choice", async () => {
      const requests: ModelRequest[] = [];
      const real = openAICompatibleModel({ baseURL: server.openAIBaseURL, model: 'local' });
      const spy: Model = { id: 'spy', stream: (request, context) => (requests.push(request), real.stream(request, context)) };
      const weather = {
        type: 'function' as const,
        function: { name: 'get_weather', description: 'Current weather for a city', parameters: WEATHER_TOOL.parameters as Record<string, unknown> },
      };
      const before = server.requests.length;
      for (const tool_choice of [
        'any',
        'required',
        'none',
        'auto',
        'get_weather',
        { type: 'function', function: { name: 'get_weather' } },
        { type: 'tool', name: 'get_weather' },
      ]) {
        await toLangChain(spy).bindTools([weather], { tool_choice }).invoke("What's the weather in Paris?");
      }
      await toLangChain(spy)
        .bindTools([weather])
        .invoke("What's the weather in Paris?", { tool_choice: 'none' } as never);
      expect(requests.map((r) => r.toolChoice)).to.deep.equal([
        'required',
        'required',
        'none',
        'auto',
        { tool: 'get_weather' },
        { tool: 'get_weather' },
        { tool: 'get_weather' },
        'none',
      ]);
      expect(server.requests.slice(before).map((r) => (r.body as { tool_choice?: unknown }).tool_choice)).to.deep.equal([
        'required',
        'required',
        'none',
        'auto',
        { type: 'function', function: { name: 'get_weather' } },
        { type: 'function', function: { name: 'get_weather' } },
        { type: 'function', function: { name: 'get_weather' } },
        'none',
      ]);
    });

    it("the call option promptCacheKey (per call or withConfig) → the request's promptCacheKey, sent as prompt_cache_key", async () => {
      const requests: ModelRequest[] = [];
      const real = openAICompatibleModel({ baseURL: server.openAIBaseURL, model: 'local' });
      const spy: Model = { id: 'spy', stream: (request, context) => (requests.push(request), real.stream(request, context)) };
      const before = server.requests.length;
      await toLangChain(spy).invoke(RIVERS, { promptCacheKey: 'conv-9' });
      await collect(await toLangChain(spy).withConfig({ promptCacheKey: 'conv-10' }).stream(RIVERS));
      await toLangChain(spy).invoke(RIVERS);
      expect(requests.map((r) => r.promptCacheKey)).to.deep.equal(['conv-9', 'conv-10', undefined]);
      const sent = server.requests.slice(before).map((r) => r.body as Record<string, unknown>);
      expect(sent.map((b) => b['prompt_cache_key'])).to.deep.equal(['conv-9', 'conv-10', undefined]);
    });

    it("the call option maxTokens (per call or withConfig) → the request's maxOutputTokens, sent as max_completion_tokens; a bad one fails", async () => {
      const requests: ModelRequest[] = [];
      const real = openAICompatibleModel({ baseURL: server.openAIBaseURL, model: 'local' });
      const spy: Model = { id: 'spy', stream: (request, context) => (requests.push(request), real.stream(request, context)) };
      const before = server.requests.length;
      await toLangChain(spy).invoke(RIVERS, { maxTokens: 64 });
      await collect(await toLangChain(spy).withConfig({ maxTokens: 32 }).stream(RIVERS));
      await toLangChain(spy).invoke(RIVERS);
      expect(requests.map((r) => r.maxOutputTokens)).to.deep.equal([64, 32, undefined]);
      const sent = server.requests.slice(before).map((r) => r.body as Record<string, unknown>);
      expect(sent.map((b) => b['max_completion_tokens'])).to.deep.equal([64, 32, undefined]);
      expect(sent[2]).not.to.have.property('max_completion_tokens');
      const error = await toLangChain(spy)
        .invoke(RIVERS, { maxTokens: -1 })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(error).to.be.instanceOf(InvalidOptionError).and.to.deep.include({ option: 'request.maxOutputTokens', value: -1 });
      expect(requests).to.have.length(3);
    });

    it("withStructuredOutput (BaseChatModel's own: its parser takes only an AIMessageChunk) forces its tool, as ChatOpenAI does, and gives the call's arguments", async () => {
      const structured = toLangChain(openAICompatibleModel({ baseURL: server.openAIBaseURL, model: 'local' })).withStructuredOutput(
        z.object({ city: z.string(), units: z.string() }),
        { name: 'get_weather' },
      );
      expect(await structured.invoke("What's the weather in Paris?")).to.deep.equal({ city: 'Paris', units: 'celsius' });
      expect((server.requests.at(-1)!.body as { tool_choice?: unknown }).tool_choice).to.deep.equal({ type: 'function', function: { name: 'get_weather' } });
      const raw = toLangChain(openAICompatibleModel({ baseURL: server.openAIBaseURL, model: 'local' })).withStructuredOutput(
        z.object({ city: z.string(), units: z.string() }),
        { name: 'get_weather', includeRaw: true },
      );
      const both = await raw.invoke("What's the weather in Oslo?");
      expect(both.parsed).to.deep.equal({ city: 'Oslo', units: 'celsius' });
      expect(both.raw.getType()).to.equal('ai');
    });

    it("fromLangChain binds the request's toolChoice: ChatOpenAI sends it as tool_choice ('required' as is)", async () => {
      const before = server.requests.length;
      await turn(fromLangChain(chatOpenAI(server)), { ...ask("What's the weather in Paris?", [WEATHER_TOOL]), toolChoice: 'required' });
      await turn(fromLangChain(chatOpenAI(server)), { ...ask("What's the weather in Paris?", [WEATHER_TOOL]), toolChoice: { tool: 'get_weather' } });
      const sent = server.requests.slice(before).map((r) => (r.body as { tool_choice?: unknown }).tool_choice);
      expect(sent[0]).to.equal('required');
      expect(sent[1]).to.deep.equal({ type: 'function', function: { name: 'get_weather' } });
    });

    it('a tool loop over a real rxheal model (openAICompatibleModel against rxheal/server): tool call, ToolMessage, answer', async () => {
      const chat = toLangChain(openAICompatibleModel({ baseURL: server.openAIBaseURL, model: 'local' })).bindTools([
        {
          type: 'function',
          function: { name: 'get_weather', description: 'Current weather for a city', parameters: WEATHER_TOOL.parameters as Record<string, unknown> },
        },
      ]);
      const history: BaseMessage[] = [new HumanMessage("What's the weather in Paris?")];
      const first = await chat.invoke(history);
      expect(first.tool_calls?.map((c) => [c.name, c.args])).to.deep.equal([['get_weather', { city: 'Paris', units: 'celsius' }]]);
      history.push(first, new ToolMessage({ tool_call_id: first.tool_calls![0]!.id!, content: '{"temperature":22,"condition":"sunny","city":"Paris"}' }));
      const second = await chat.invoke(history);
      expect(second.content).to.equal('It is 22 °C and sunny in Paris.');
    });

    it("a chain (prompt → model → parser) streams healed: a model dying mid-answer is continued ('continue'), nothing lost or doubled", async () => {
      server.faults.set({ kind: 'reset', afterChunks: 6, times: 1 });
      const chat = toLangChain(fallbackModel([fromLangChain(chatOpenAI(server, 'a')), fromLangChain(chatOpenAI(backup, 'b'))], { midStream: 'continue' }));
      const chain = ChatPromptTemplate.fromMessages([['human', '{question}']])
        .pipe(chat)
        .pipe(new StringOutputParser());
      let text = '';
      for await (const piece of await chain.stream({ question: RIVERS })) text += piece;
      expect(text).to.equal(RIVERS_ANSWER);
    });

    it('an error mid-stream: the stream throws it after the chunks it had given', async () => {
      const boom = new HttpError(500);
      const chat = toLangChain(
        scripted('s', () =>
          concat(
            from<TurnEvent[]>([{ type: 'text-delta', text: 'Hel' }]),
            throwError(() => boom),
          ),
        ),
      );
      const got: string[] = [];
      const error = await (async () => {
        for await (const c of await chat.stream('Hi')) got.push(String(c.content));
      })().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(got).to.deep.equal(['Hel']);
      expect(error).to.equal(boom);
    });

    it('a reset after a chunk was yielded: StreamRestartError (a chain can’t take back what it got); before any, invisible', async () => {
      const after = toLangChain(
        scripted('s', () => [
          { type: 'text-delta', text: 'First' },
          { type: 'reset', reason: 'fallback', target: 'model:b' },
          { type: 'text-delta', text: 'Second' },
          { type: 'finish', reason: 'stop' },
        ]),
      );
      const error = await collect(await after.stream('Hi')).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(StreamRestartError);
      const before = toLangChain(
        scripted('s', () => [
          { type: 'reset', reason: 'retry', target: 'model:s' },
          { type: 'text-delta', text: 'Whole' },
          { type: 'finish', reason: 'stop' },
        ]),
      );
      expect((await collect(await before.stream('Hi'))).content).to.equal('Whole');
      // .invoke() collects: a reset just discards what was collected
      expect((await after.invoke('Hi')).content).to.equal('Second');
    });

    it("aborting the call's signal aborts the model's request (the server sees the client close it)", async () => {
      const controller = new AbortController();
      const before = slow.requests.length;
      const chat = toLangChain(openAICompatibleModel({ baseURL: slow.openAIBaseURL, model: 'local' }));
      const error = await (async () => {
        for await (const c of await chat.stream(RIVERS, { signal: controller.signal })) if (c.content !== '') controller.abort();
      })().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(classifyError(error).category).to.equal('cancelled');
      const record = await slow.waitForRequest((r) => Number(r.id.slice(4)) > before);
      expect(record.end).to.equal('client-closed');
    });

    it('a consumer that stops reading unsubscribes: the request is aborted', async () => {
      const before = slow.requests.length;
      const chat = toLangChain(openAICompatibleModel({ baseURL: slow.openAIBaseURL, model: 'local' }));
      for await (const c of await chat.stream(RIVERS)) if (c.content !== '') break;
      const record = await slow.waitForRequest((r) => Number(r.id.slice(4)) > before);
      expect(record.end).to.equal('client-closed');
    });

    it('messages with image content are refused clearly (rxheal models take text)', async () => {
      const chat = toLangChain(scripted('s', () => []));
      const error = await chat.invoke([new HumanMessage({ content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AA==' } }] })]).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(InvalidOptionError);
    });

    it('round trip: toLangChain(fromLangChain(chat)) streams what chat streams', async () => {
      const direct = await collect(await new FakeListChatModel({ responses: ['Round trip'] }).stream('Hi'));
      const healed = await collect(await toLangChain(fromLangChain(new FakeListChatModel({ responses: ['Round trip'] }))).stream('Hi'));
      expect(healed.content).to.equal(direct.content);
    });

    describe('reasoning', () => {
      const thinkingTurn = (): TurnEvent[] => [
        { type: 'reasoning-delta', text: 'The user wants' },
        { type: 'reasoning-delta', text: ' Paris.' },
        { type: 'reasoning-end', signature: 'sig-1' },
        { type: 'reasoning-end', redactedData: 'EmwK' },
        { type: 'text-delta', text: 'Sun' },
        { type: 'text-delta', text: 'ny.' },
        { type: 'finish', reason: 'stop' },
      ];

      it(".stream(): reasoning as standard reasoning blocks (the signature on the block, a redacted block as redacted_thinking), each concatenating into one block; contentBlocks shows them, .text and a chain's StringOutputParser leave them out; streaming callbacks see them", async () => {
        const tokens: unknown[] = [];
        const callbacks = [
          {
            handleLLMNewToken: (_token: string, _idx: unknown, _run: string, _parent?: string, _tags?: string[], fields?: { chunk?: ChatGenerationChunk }) =>
              void tokens.push(fields?.chunk?.message.content),
          },
        ];
        const all = await collect(await toLangChain(scripted('s', thinkingTurn)).stream('Hi', { callbacks }));
        expect(all.content).to.deep.equal([
          { type: 'reasoning', reasoning: 'The user wants Paris.', signature: 'sig-1', index: 0 },
          { type: 'redacted_thinking', data: 'EmwK', index: 1 },
          { type: 'text', text: 'Sunny.', index: 2 },
        ]);
        expect(all.contentBlocks.filter((b) => b.type === 'reasoning')).to.deep.equal([
          { type: 'reasoning', reasoning: 'The user wants Paris.', signature: 'sig-1', index: 0 },
        ]);
        expect(all.text).to.equal('Sunny.');
        expect(tokens).to.deep.include([{ type: 'reasoning', reasoning: 'The user wants', index: 0 }]);
        expect(tokens).to.deep.include([{ type: 'redacted_thinking', data: 'EmwK', index: 1 }]);
        const chain = ChatPromptTemplate.fromMessages([['human', '{question}']])
          .pipe(toLangChain(scripted('s', thinkingTurn)))
          .pipe(new StringOutputParser());
        let text = '';
        for await (const piece of await chain.stream({ question: 'Weather?' })) text += piece;
        expect(text).to.equal('Sunny.');
      });

      it('unsigned reasoning: reasoning blocks without a signature; text before any reasoning stays string content', async () => {
        const all = await collect(
          await toLangChain(
            scripted('s', () => [
              { type: 'text-delta', text: 'Hm. ' },
              { type: 'reasoning-delta', text: 'musing' },
              { type: 'reasoning-end' },
              { type: 'text-delta', text: 'Answer' },
              { type: 'finish', reason: 'stop' },
            ]),
          ).stream('Hi'),
        );
        expect(all.content).to.deep.equal([
          { type: 'text', text: 'Hm. ' },
          { type: 'reasoning', reasoning: 'musing', index: 1 },
          { type: 'text', text: 'Answer', index: 2 },
        ]);
        expect(all.text).to.equal('Hm. Answer');
      });

      it('a reset after reasoning was yielded: StreamRestartError (reasoning counts as yielded); a reset before anything: invisible; .invoke() discards the reasoning collected before a reset', async () => {
        const afterReasoning = toLangChain(
          scripted('s', () => [
            { type: 'reasoning-delta', text: 'First thoughts' },
            { type: 'reset', reason: 'fallback', target: 'model:b' },
            { type: 'reasoning-delta', text: 'Second thoughts' },
            { type: 'text-delta', text: 'Second' },
            { type: 'finish', reason: 'stop' },
          ]),
        );
        const error = await collect(await afterReasoning.stream('Hi')).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).to.be.instanceOf(StreamRestartError).and.include({ reason: 'fallback', target: 'model:b' });
        const before = toLangChain(scripted('s', () => [{ type: 'reset', reason: 'retry', target: 'model:s' }, ...thinkingTurn()]));
        expect((await collect(await before.stream('Hi'))).contentBlocks.filter((b) => b.type === 'reasoning')).to.have.length(1);
        const invoked = await afterReasoning.invoke('Hi');
        expect(invoked.content).to.deep.equal([
          { type: 'reasoning', reasoning: 'Second thoughts' },
          { type: 'text', text: 'Second' },
        ]);
      });

      it('.invoke(): the AIMessage’s content has the reasoning blocks (signature, redacted) and the text in their order, tool calls kept; .text leaves the reasoning out', async () => {
        const answer = await toLangChain(
          scripted('s', () => [
            ...thinkingTurn().slice(0, 4),
            { type: 'text-delta', text: 'Checking.' },
            { type: 'tool-call', id: 'c1', name: 'get_weather', args: { city: 'Paris' } },
            { type: 'finish', reason: 'tool-calls' },
          ]),
        ).invoke('Weather?');
        expect(answer.content).to.deep.equal([
          { type: 'reasoning', reasoning: 'The user wants Paris.', signature: 'sig-1' },
          { type: 'redacted_thinking', data: 'EmwK' },
          { type: 'text', text: 'Checking.' },
        ]);
        expect(answer.text).to.equal('Checking.');
        expect(answer.tool_calls).to.deep.equal([{ id: 'c1', name: 'get_weather', args: { city: 'Paris' }, type: 'tool_call' }]);
      });

      it("an AI message's reasoning → the assistant message's reasoning: ChatAnthropic's thinking / redacted_thinking blocks, our own reasoning blocks (an answer fed back), reasoning_content", async () => {
        const requests: ModelRequest[] = [];
        const model: Model = {
          id: 's',
          stream: (request) => (
            requests.push(request),
            [
              { type: 'text-delta', text: 'ok' },
              { type: 'finish', reason: 'stop' },
            ]
          ),
        };
        const chat = toLangChain(model);
        const ours = await toLangChain(scripted('t', thinkingTurn)).invoke('Weather?');
        await chat.invoke([
          new HumanMessage('Weather?'),
          new AIMessage({
            content: [
              { type: 'thinking', thinking: 'Need the tool.', signature: 'sig-a' },
              { type: 'redacted_thinking', data: 'EmwK' },
              { type: 'text', text: 'Checking.' },
            ],
            tool_calls: [{ id: 'toolu_1', name: 'get_weather', args: { city: 'Paris' }, type: 'tool_call' }],
          }),
          new ToolMessage({ tool_call_id: 'toolu_1', content: 'sunny' }),
          ours,
          new HumanMessage('And tomorrow?'),
          new AIMessage({ content: 'Rain.', additional_kwargs: { reasoning_content: 'Forecast says rain.' } }),
          new HumanMessage('Thanks'),
        ]);
        const assistants = requests[0]!.messages.filter((m) => m.role === 'assistant');
        expect(assistants.map((m) => (m.role === 'assistant' ? [m.content, m.reasoning] : []))).to.deep.equal([
          [
            'Checking.',
            [
              { text: 'Need the tool.', signature: 'sig-a' },
              { text: '', redactedData: 'EmwK' },
            ],
          ],
          [
            'Sunny.',
            [
              { text: 'The user wants Paris.', signature: 'sig-1' },
              { text: '', redactedData: 'EmwK' },
            ],
          ],
          ['Rain.', [{ text: 'Forecast says rain.' }]],
        ]);
      });

      it("round trip: toLangChain(fromLangChain(chat)) streams ChatAnthropic's reasoning as chat does — the same text, the same reasoning with its signature, the redacted block", async () => {
        const anthropicChunks = () => [
          chunk({ content: [{ index: 0, type: 'thinking', thinking: 'Greet ' }] as never, response_metadata: { model_provider: 'anthropic' } }),
          chunk({ content: [{ index: 0, type: 'thinking', thinking: 'them.' }] as never, response_metadata: { model_provider: 'anthropic' } }),
          chunk({ content: [{ index: 0, type: 'thinking', signature: 'sig-rt' }] as never, response_metadata: { model_provider: 'anthropic' } }),
          chunk({ content: [{ index: 1, type: 'redacted_thinking', data: 'EmwK' }] as never, response_metadata: { model_provider: 'anthropic' } }),
          chunk({ content: [{ index: 2, type: 'text', text: 'Hello' }] as never, response_metadata: { model_provider: 'anthropic' } }),
          chunk({
            content: [{ index: 2, type: 'text', text: ' there' }] as never,
            response_metadata: { model_provider: 'anthropic', stop_reason: 'end_turn' },
          }),
        ];
        /** Reasoning, redacted and text blocks, whichever shape (ChatAnthropic's translated, or ours). */
        const shape = (message: AIMessageChunk) =>
          (message.contentBlocks as { type: string; [field: string]: unknown }[]).map((b) =>
            b.type === 'reasoning'
              ? ['reasoning', b['reasoning'], b['signature']]
              : b.type === 'non_standard'
                ? ['redacted', (b['value'] as { data: string }).data]
                : b.type === 'redacted_thinking'
                  ? ['redacted', b['data']]
                  : [b.type, b['text']],
          );
        const direct = await collect(await new ScriptedChatModel(anthropicChunks()).stream('Hi'));
        const healed = await collect(await toLangChain(fromLangChain(new ScriptedChatModel(anthropicChunks()))).stream('Hi'));
        expect(shape(direct)).to.deep.equal([
          ['reasoning', 'Greet them.', 'sig-rt'],
          ['redacted', 'EmwK'],
          ['text', 'Hello there'],
        ]);
        expect(shape(healed)).to.deep.equal(shape(direct));
        expect(healed.text).to.equal(direct.text);
      });
    });
  });
});
