/**
 * `POST /responses/compact` (src/providers/responsesCompact.ts, and rxheal/server's endpoint):
 * the API reference's example response (spec/fixtures/SOURCES.md) read as messages whose
 * compaction item stays opaque and goes back as it came; over HTTP against rxheal/server, a
 * conversation with a tool round compacted, then continued from the compacted window; errors.
 */
import { expect } from 'chai';
import { firstValueFrom, lastValueFrom, toArray } from 'rxjs';
import { HttpError, InvalidOptionError, MalformedStreamError } from '../../src/core/errors/errors.js';
import type { Message } from '../../src/core/events/events.js';
import { streamModel } from '../../src/core/model/model.js';
import { openAIResponsesBody, openAIResponsesModel } from '../../src/providers/responses.js';
import { compactResponses } from '../../src/providers/responsesCompact.js';
import { startLocalProvider, type LocalProvider } from '../../src/server/index.js';
import { fixture, fixtureFetch } from '../support/providerFakes.js';

const OPTIONS = { baseURL: 'https://api.example.test/v1/', apiKey: 'sk-test', model: 'gpt-5.1-codex-max' };
const CONVERSATION: Message[] = [
  { role: 'user', content: 'What is the weather in Paris?' },
  { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'get_weather', args: { city: 'Paris' } }] },
  { role: 'tool', toolCallId: 'call_1', toolName: 'get_weather', content: 'sunny, 21 °C' },
  { role: 'assistant', content: 'It is sunny in Paris, 21 °C.' },
];

describe('providers: OpenAI Responses compaction (POST /responses/compact)', () => {
  describe('the API reference’s example response', () => {
    const example = fixture('openai-responses-compact.json');
    const item = (JSON.parse(example) as { output: Record<string, unknown>[] }).output[1]!;

    it('POSTs { model, input } (the input items a turn would send) to <baseURL>/responses/compact, with the key', async () => {
      const { fetch, calls } = fixtureFetch(example);
      await firstValueFrom(compactResponses({ ...OPTIONS, fetch, body: { instructions: 'Be brief.' } }, CONVERSATION));
      expect(calls).to.have.length(1);
      expect(calls[0]!.url).to.equal('https://api.example.test/v1/responses/compact');
      expect(calls[0]!.init).to.deep.include({ method: 'POST' });
      expect((calls[0]!.init.headers as Record<string, string>)['authorization']).to.equal('Bearer sk-test');
      const { input } = openAIResponsesBody(OPTIONS.model, { messages: CONVERSATION, tools: [] }, { store: true });
      expect(calls[0]!.body).to.deep.equal({ instructions: 'Be brief.', model: OPTIONS.model, input });
    });

    it('read as messages: the user’s message by its text, the compaction item opaque on an assistant message without text; the usage', async () => {
      const { fetch } = fixtureFetch(example);
      const compacted = await firstValueFrom(compactResponses({ ...OPTIONS, fetch }, CONVERSATION));
      expect(compacted).to.deep.equal({
        id: 'resp_001',
        messages: [
          { role: 'user', content: 'Create a simple landing page for a dog petting cafe.' },
          { role: 'assistant', content: '', reasoning: [{ text: '', providerMetadata: { openai: { itemId: 'cmp_001', itemType: 'compaction', item } } }] },
        ],
        usage: { inputTokens: 139, outputTokens: 438, reasoningTokens: 64 },
      });
      // sent back as it came, stored or not, after the user's message
      for (const store of [true, false]) {
        const { input } = openAIResponsesBody('m', { messages: [...compacted.messages, { role: 'user', content: 'Now add a menu.' }], tools: [] }, { store });
        expect(input).to.deep.equal([
          { role: 'user', content: 'Create a simple landing page for a dog petting cafe.' },
          item,
          { role: 'user', content: 'Now add a menu.' },
        ]);
      }
    });

    it('errors: an HTTP error → HttpError with its status and body; an answer that is not a compaction → MalformedStreamError; bad options at once', async () => {
      const refused = fixtureFetch(JSON.stringify({ error: { message: "Missing required parameter: 'model'.", type: 'invalid_request_error' } }), {
        status: 400,
      });
      const error = await firstValueFrom(compactResponses({ ...OPTIONS, fetch: refused.fetch }, CONVERSATION)).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(HttpError).and.include({ status: 400 });
      expect((error as Error).message).to.include("Missing required parameter: 'model'.");
      for (const body of ['not json', JSON.stringify({ id: 'x' }), JSON.stringify({ output: [{ type: 'function_call', call_id: 'c' }] })]) {
        const { fetch } = fixtureFetch(body);
        const bad = await firstValueFrom(compactResponses({ ...OPTIONS, fetch }, CONVERSATION)).catch((e: unknown) => e);
        expect(bad, body).to.be.instanceOf(MalformedStreamError);
      }
      expect(() => compactResponses({ ...OPTIONS, model: undefined as unknown as string }, CONVERSATION)).to.throw(InvalidOptionError, 'model');
      expect(() => compactResponses({ ...OPTIONS, colour: 'red' } as never, CONVERSATION)).to.throw(InvalidOptionError, 'colour');
    });
  });

  describe('against rxheal/server on loopback', function () {
    this.timeout(20_000);
    let server: LocalProvider;
    before(async () => {
      server = await startLocalProvider({ name: 'compact', tokenDelayMs: 1 });
    });
    after(() => server.close());
    const options = () => ({ baseURL: server.openAIBaseURL, model: 'local' });

    it('compacts a conversation with a tool round to its user messages and one compaction item; the next turn from the compacted window is answered, the item sent back as it came', async () => {
      const compacted = await firstValueFrom(compactResponses(options(), CONVERSATION));
      expect(compacted.messages.map((m) => m.role)).to.deep.equal(['user', 'assistant']);
      expect(compacted.messages[0]).to.deep.equal(CONVERSATION[0]);
      const part = (compacted.messages[1] as Extract<Message, { role: 'assistant' }>).reasoning![0]!;
      const item = (part.providerMetadata!['openai'] as { item: Record<string, unknown> }).item;
      expect(item).to.include({ type: 'compaction' });
      expect(compacted.usage?.outputTokens).to.be.greaterThan(0);
      const next: Message[] = [...compacted.messages, { role: 'user', content: 'Tell me something nice about rivers' }];
      const events = await lastValueFrom(streamModel(openAIResponsesModel(options()), { messages: next, tools: [] }).pipe(toArray()));
      expect(events.at(-1)).to.include({ type: 'finish', reason: 'stop' });
      const sent = server.requests.at(-1)!.body as { input: Record<string, unknown>[] };
      expect(sent.input).to.deep.include(item);
    });

    it('a body without a model or an input array is a 400 in the API’s words; GET is a 405', async () => {
      const post = (body: unknown) =>
        fetch(`${server.openAIBaseURL}/responses/compact`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const noModel = await post({ input: [] });
      expect(noModel.status).to.equal(400);
      expect(await noModel.text()).to.include("Missing required parameter: 'model'.");
      expect((await post({ model: 'local', input: 'text' })).status).to.equal(400);
      expect((await fetch(`${server.openAIBaseURL}/responses/compact`)).status).to.equal(405);
    });
  });
});
