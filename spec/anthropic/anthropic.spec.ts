/**
 * rxheal/anthropic: fromAnthropic over the official `@anthropic-ai/sdk` (1.x), pointed at the
 * local provider.
 */
import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import * as t from 'io-ts';
import { lastValueFrom, toArray } from 'rxjs';
import { runAgent } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';
import { fromAnthropic, type AnthropicMessagesClient } from '../../src/anthropic/index.js';
import { anthropicModel } from '../../src/providers/anthropic.js';
import { startLocalProvider, type LocalProvider } from '../../src/server/index.js';
import { sdkAdapterSuite } from '../support/sdkAdapterSuite.js';
import { ask, RIVERS, turn, turnError } from '../support/interop.js';
import { InvalidOptionError } from '../../src/core/errors/errors.js';

const client = (server: LocalProvider): Anthropic => new Anthropic({ baseURL: server.anthropicBaseURL, apiKey: 'test', logLevel: 'off' });

describe('rxheal/anthropic: fromAnthropic (@anthropic-ai/sdk 1 against rxheal/server)', function () {
  this.timeout(20_000);

  sdkAdapterSuite({
    make: (server, options) => fromAnthropic(client(server), { model: 'local', max_tokens: 1024 }, options),
    cached: (server) => fromAnthropic(client(server), { model: 'local', max_tokens: 1024 }, { cache: { breakpoints: 2 } }),
    reference: (server) => anthropicModel({ baseURL: server.anthropicBaseURL, model: 'local', maxTokens: 1024 }),
    apiError: Anthropic.APIError,
    rateLimitError: Anthropic.RateLimitError,
    midStream: { errorType: 'overloaded_error', status: 529 },
    badInput: [
      ['a client without messages.create', () => fromAnthropic({} as AnthropicMessagesClient, { model: 'claude-sonnet-4-5', max_tokens: 1 })],
      ['params without a model', () => fromAnthropic(new Anthropic({ apiKey: 'x' }), { model: '', max_tokens: 1 })],
      ['params without max_tokens', () => fromAnthropic(new Anthropic({ apiKey: 'x' }), { model: 'claude-sonnet-4-5' } as never)],
      ['maxRetries: 1.5', () => fromAnthropic(new Anthropic({ apiKey: 'x' }), { model: 'claude-sonnet-4-5', max_tokens: 1 }, { maxRetries: 1.5 })],
    ],
  });

  describe('requests', () => {
    it('sends params (max_tokens, settings) with system, messages and stream, the signal and maxRetries 0', async () => {
      const calls: { body: Record<string, unknown>; options: Anthropic.RequestOptions | undefined }[] = [];
      const fake: AnthropicMessagesClient = {
        messages: {
          create: (body, options) => {
            calls.push({ body: body as unknown as Record<string, unknown>, options });
            async function* events(): AsyncGenerator<Anthropic.RawMessageStreamEvent> {
              yield { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '', citations: null } };
              yield { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi' } };
              yield { type: 'content_block_stop', index: 0 };
              yield {
                type: 'message_delta',
                delta: { stop_reason: 'end_turn', stop_sequence: null, container: null, stop_details: null },
                usage: { output_tokens: 1 },
              } as unknown as Anthropic.RawMessageStreamEvent;
              yield { type: 'message_stop' };
            }
            return Promise.resolve(events());
          },
        },
      };
      const request = { messages: [{ role: 'system' as const, content: 'Be brief.' }, ...ask(RIVERS).messages], tools: [] };
      const events = await turn(fromAnthropic(fake, { model: 'claude-sonnet-4-5', max_tokens: 512, stop_sequences: ['END'] }), request);
      expect(events).to.deep.equal([
        { type: 'text-delta', text: 'Hi' },
        { type: 'finish', reason: 'stop' },
      ]);
      expect(calls[0]?.body).to.deep.include({ model: 'claude-sonnet-4-5', max_tokens: 512, stop_sequences: ['END'], stream: true, system: 'Be brief.' });
      expect(calls[0]?.options?.maxRetries).to.equal(0);
      expect(calls[0]?.options?.signal).to.be.instanceOf(AbortSignal);
    });

    it("maxOutputTokens → max_tokens in place of params'; params' without one; not a positive integer: InvalidOptionError, nothing sent", async () => {
      const bodies: Record<string, unknown>[] = [];
      const fake: AnthropicMessagesClient = {
        messages: {
          create: (body) => {
            bodies.push(body as unknown as Record<string, unknown>);
            async function* events(): AsyncGenerator<Anthropic.RawMessageStreamEvent> {
              yield {
                type: 'message_delta',
                delta: { stop_reason: 'max_tokens', stop_sequence: null, container: null, stop_details: null },
                usage: { output_tokens: 1 },
              } as unknown as Anthropic.RawMessageStreamEvent;
              yield { type: 'message_stop' };
            }
            return Promise.resolve(events());
          },
        },
      };
      const model = fromAnthropic(fake, { model: 'claude-sonnet-4-5', max_tokens: 2048 });
      await turn(model, { ...ask(RIVERS), maxOutputTokens: 128 });
      await turn(model, ask(RIVERS));
      expect(bodies.map((b) => b['max_tokens'])).to.deep.equal([128, 2048]);
      const error = await turnError(model, { ...ask(RIVERS), maxOutputTokens: -1 });
      expect(error).to.be.instanceOf(InvalidOptionError).and.to.deep.include({ option: 'request.maxOutputTokens', value: -1 });
      expect(bodies).to.have.length(2);
    });

    it("the model's id: anthropic:<model>, or options.id", () => {
      expect(fromAnthropic(new Anthropic({ apiKey: 'x' }), { model: 'claude-sonnet-4-5', max_tokens: 1 }).id).to.equal('anthropic:claude-sonnet-4-5');
      expect(fromAnthropic(new Anthropic({ apiKey: 'x' }), { model: 'claude-sonnet-4-5', max_tokens: 1 }, { id: 'claude' }).id).to.equal('claude');
    });
  });
  describe('extended thinking (the real SDK against rxheal/server with thinking on)', () => {
    let server: LocalProvider;
    before(async () => {
      server = await startLocalProvider({ name: 'anthropic-thinking', tokenDelayMs: 0 });
    });
    after(() => server.close());

    it('a tool turn with thinking goes back as the API requires (the server refuses it otherwise); the reasoning streams apart from the answer', async () => {
      const getWeather = defineTool({
        name: 'get_weather',
        description: 'Weather',
        args: t.type({ city: t.string, units: t.string }),
        execute: () => [{ temperature: 22, condition: 'sunny' }],
      });
      const model = fromAnthropic(new Anthropic({ baseURL: server.anthropicBaseURL, apiKey: 'test', logLevel: 'off' }), {
        model: 'local',
        max_tokens: 2048,
        thinking: { type: 'enabled', budget_tokens: 1024 },
      });
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
