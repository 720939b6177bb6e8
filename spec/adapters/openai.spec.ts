/**
 * rxheal/openai: fromOpenAI over the official `openai` SDK (6.x), pointed at the local provider.
 */
import { expect } from 'chai';
import OpenAI from 'openai';
import { fromOpenAI, type OpenAIChatClient } from '../../src/adapters/openai.js';
import { openAICompatibleModel } from '../../src/sources/providers/openai.js';
import type { LocalProvider } from '../../src/server/index.js';
import { sdkAdapterSuite } from '../support/sdkAdapterSuite.js';
import { ask, RIVERS, turn } from '../support/interop.js';

const client = (server: LocalProvider): OpenAI => new OpenAI({ baseURL: server.openAIBaseURL, apiKey: 'test', logLevel: 'off' });

describe('rxheal/openai: fromOpenAI (openai SDK 6 against rxheal/server)', function () {
  this.timeout(20_000);

  sdkAdapterSuite({
    make: (server, options) => fromOpenAI(client(server), { model: 'local' }, options),
    reference: (server) => openAICompatibleModel({ baseURL: server.openAIBaseURL, model: 'local' }),
    apiError: OpenAI.APIError,
    rateLimitError: OpenAI.RateLimitError,
    midStream: { errorType: 'server_error', status: 500 },
    badInput: [
      ['a client without chat.completions.create', () => fromOpenAI({} as OpenAIChatClient, { model: 'gpt-4o' })],
      ['params without a model', () => fromOpenAI(new OpenAI({ apiKey: 'x' }), { model: '' })],
      ['maxRetries: -1', () => fromOpenAI(new OpenAI({ apiKey: 'x' }), { model: 'gpt-4o' }, { maxRetries: -1 })],
      ['an unknown option', () => fromOpenAI(new OpenAI({ apiKey: 'x' }), { model: 'gpt-4o' }, { retries: 2 } as never)],
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
                yield { id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta: { content: 'Hi' }, finish_reason: null }] };
                yield { id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] };
              }
              return Promise.resolve(chunks());
            },
          },
        },
      };
      const events = await turn(fromOpenAI(fake, { model: 'gpt-4o', temperature: 0 }), ask(RIVERS));
      expect(events).to.deep.equal([{ type: 'text-delta', text: 'Hi' }, { type: 'finish', reason: 'stop' }]);
      expect(calls[0]?.body).to.deep.include({ model: 'gpt-4o', temperature: 0, stream: true, stream_options: { include_usage: true } });
      expect(calls[0]?.options?.maxRetries).to.equal(0);
      expect(calls[0]?.options?.signal).to.be.instanceOf(AbortSignal);
    });

    it("the model's id: openai:<model>, or options.id", () => {
      expect(fromOpenAI(new OpenAI({ apiKey: 'x' }), { model: 'gpt-4o' }).id).to.equal('openai:gpt-4o');
      expect(fromOpenAI(new OpenAI({ apiKey: 'x' }), { model: 'gpt-4o' }, { id: 'primary' }).id).to.equal('primary');
    });

    it('a stream the SDK ends without any finish_reason errors (IncompleteStreamError), never a short answer', async () => {
      const fake: OpenAIChatClient = {
        chat: {
          completions: {
            create: () =>
              Promise.resolve(
                (async function* (): AsyncGenerator<OpenAI.ChatCompletionChunk> {
                  yield { id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta: { content: 'Hal' }, finish_reason: null }] };
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
});
