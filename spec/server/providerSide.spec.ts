/**
 * What rxheal/server does on the provider's side, round-tripped through rxheal's own models and
 * the official SDKs: Anthropic's server-side fallback (the `blocked` fault, with and without
 * `fallbacks`), compaction on both APIs (a block or an encrypted item, kept opaque by the client
 * and taken back by the server in place of what it summarised), and the prompt cache (reads and
 * writes in usage).
 */
import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import { lastValueFrom, toArray } from 'rxjs';
import { fromAnthropic } from '../../src/anthropic/index.js';
import { BudgetExceededError } from '../../src/core/errors/errors.js';
import type { AgentEvent, Message, TurnEvent } from '../../src/core/events/events.js';
import { streamModel, type Model } from '../../src/core/model/model.js';
import { anthropicModel } from '../../src/providers/anthropic.js';
import { openAICompatibleModel } from '../../src/providers/openai.js';
import { openAIResponsesModel } from '../../src/providers/responses.js';
import { startLocalProvider, type LocalProvider } from '../../src/server/index.js';
import { validateFault } from '../../src/server/faults.js';
import { fallbackModel } from '../../src/sources/fallbackModel.js';
import { runAgent } from '../../src/sources/runAgent.js';

const question: Message[] = [{ role: 'user', content: 'Tell me something nice about rivers' }];
const turn = (model: Model, messages: readonly Message[] = question): Promise<TurnEvent[]> =>
  lastValueFrom(streamModel(model, { messages, tools: [] }).pipe(toArray()));
const textOf = (events: readonly TurnEvent[]) => events.flatMap((e) => (e.type === 'text-delta' ? [e.text] : [])).join('');
/** The assistant message a client keeps of a turn: its text, and its reasoning parts (opaque ones included). */
function assistantOf(events: readonly TurnEvent[]): Message {
  const reasoning = events.flatMap((e) => (e.type === 'reasoning-end' && e.providerMetadata ? [{ text: '', providerMetadata: e.providerMetadata }] : []));
  return { role: 'assistant', content: textOf(events), reasoning };
}

describe('rxheal/server: what providers do on their side', function () {
  this.timeout(20_000);
  let server: LocalProvider;
  beforeEach(async () => {
    server = await startLocalProvider({ tokenDelayMs: 0 });
  });
  afterEach(() => server.close());

  describe("Anthropic's server-side fallback (the blocked fault)", () => {
    it('with fallbacks: a fallback block, the answer of the fallback model, two iterations — one providerSide fallback event in a run, never a client-side hop', async () => {
      server.faults.add({ kind: 'blocked', times: 1 });
      const claude = anthropicModel({ baseURL: server.anthropicBaseURL, model: 'local', id: 'claude', fallbacks: [{ model: 'local-backup' }] });
      let otherCalls = 0;
      const other: Model = { id: 'other', stream: () => (otherCalls++, [{ type: 'finish', reason: 'stop' }] as TurnEvent[]) };
      const events: AgentEvent[] = await lastValueFrom(runAgent({ model: fallbackModel([claude, other]), tools: [], messages: question }).pipe(toArray()));
      expect(events.filter((e) => e.type === 'fallback')).to.deep.equal([
        { type: 'fallback', from: 'model:local', to: 'model:local-backup', reason: 'provider_fallback', midStream: false, providerSide: true },
      ]);
      expect(otherCalls).to.equal(0);
      const finish = events.find((e) => e.type === 'finish');
      expect(finish).to.deep.include({ providerFallbacks: [{ from: 'local', to: 'local-backup', midStream: false }] });
      expect(finish?.type === 'finish' && finish.usage?.iterations).to.equal(2);
      expect(server.requests[0]!.faults).to.deep.equal(['blocked']);
      expect(server.requests[0]!.body)
        .to.have.property('fallbacks')
        .that.deep.equals([{ model: 'local-backup' }]);
      // the budget counts the provider's two samplings as two model calls
      server.faults.add({ kind: 'blocked', times: 1 });
      const error = await lastValueFrom(runAgent({ model: claude, tools: [], messages: question, budget: { maxModelCalls: 1 } })).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(BudgetExceededError);
    });

    it("without fallbacks: a refusal — finish 'content-filter' with the recommended model; the same through @anthropic-ai/sdk", async () => {
      server.faults.add({ kind: 'blocked', times: 2, recommendedModel: 'local-safer' });
      const viaFetch = await turn(anthropicModel({ baseURL: server.anthropicBaseURL, model: 'local' }));
      const viaSdk = await turn(
        fromAnthropic(new Anthropic({ baseURL: server.anthropicBaseURL, apiKey: 'k', logLevel: 'off' }), { model: 'local', max_tokens: 64 }),
      );
      for (const events of [viaFetch, viaSdk]) {
        expect(events.filter((e) => e.type !== 'finish')).to.deep.equal([]);
        expect(events.at(-1)).to.deep.include({ type: 'finish', reason: 'content-filter', recommendedModel: 'local-safer' });
      }
      expect(() => validateFault({ kind: 'blocked', recommendedModel: '' })).to.throw(/recommendedModel/);
    });
  });

  describe('compaction', () => {
    it('Anthropic: past the trigger, a compaction block first (kept opaque); sent back, the server reads its summary in place of what came before; the SDK adapter alike', async () => {
      const body = { context_management: { edits: [{ type: 'compact_20260112', trigger: { type: 'input_tokens', value: 1 } }] } };
      const models = [
        anthropicModel({ baseURL: server.anthropicBaseURL, model: 'local', body }),
        fromAnthropic(new Anthropic({ baseURL: server.anthropicBaseURL, apiKey: 'k', logLevel: 'off' }), { model: 'local', max_tokens: 512, ...body } as never),
      ];
      for (const model of models) {
        const first = await turn(model);
        const [end] = first.filter((e) => e.type === 'reasoning-end');
        expect(end).to.deep.equal({
          type: 'reasoning-end',
          providerMetadata: {
            anthropic: {
              block: { type: 'compaction', content: 'Summary of the conversation so far (1 messages): the user asked "Tell me something nice about rivers".' },
            },
          },
        });
        expect(textOf(first)).to.contain('rivers');
        const second = await turn(model, [...question, assistantOf(first), { role: 'user', content: 'And lakes?' }]);
        expect(second.at(-1)).to.have.property('type', 'finish');
      }
      const bodyOf = (r: { body: unknown }) => r.body as Record<string, unknown>;
      const sent = server.requests.filter((r) => (bodyOf(r)['messages'] as unknown[]).length === 3);
      expect(sent).to.have.length(2);
      for (const request of sent) {
        const assistant = (bodyOf(request)['messages'] as { content: Record<string, unknown>[] }[])[1]!;
        expect(assistant.content[0]).to.have.property('type', 'compaction');
        expect(request.status).to.equal(200);
      }
    });

    it('Responses: past compact_threshold, an encrypted compaction item after the answer; sent back it is accepted, a foreign one refused (400)', async () => {
      const gpt = openAIResponsesModel({
        baseURL: server.openAIBaseURL,
        model: 'local',
        body: { context_management: [{ type: 'compaction', compact_threshold: 1 }] },
      });
      const first = await turn(gpt);
      const ends = first.filter((e) => e.type === 'reasoning-end');
      expect(ends).to.have.length(1);
      const end = ends[0]!;
      const item = end.type === 'reasoning-end' ? (end.providerMetadata?.['openai'] as { item: Record<string, unknown> }).item : {};
      expect(item).to.include({ type: 'compaction' });
      expect(String(item['encrypted_content'])).to.match(/^local-cmp-/);
      const second = await turn(gpt, [...question, assistantOf(first), { role: 'user', content: 'And lakes?' }]);
      expect(second.at(-1)).to.have.property('type', 'finish');
      expect((server.requests.at(-1)!.body as Record<string, unknown>)['input']).to.deep.include({
        type: 'compaction',
        id: item['id'],
        encrypted_content: item['encrypted_content'],
      });
      const foreign = await fetch(`${server.openAIBaseURL}/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'local',
          input: [
            { type: 'compaction', id: 'cmp_x', encrypted_content: 'gAAAA-someone-else' },
            { role: 'user', content: 'Hi' },
          ],
        }),
      });
      expect(foreign.status).to.equal(400);
      expect(await foreign.text()).to.contain('not a compaction this provider made');
    });
  });

  describe('prompt cache', () => {
    it('Anthropic breakpoints: the first request writes the prefix, the next one reads it; usage says both apart', async () => {
      const claude = anthropicModel({ baseURL: server.anthropicBaseURL, model: 'local', cache: { ttl: '1h', breakpoints: 2 } });
      const system: Message = { role: 'system', content: 'You are a helpful assistant. '.repeat(20) };
      const first = await turn(claude, [system, ...question]);
      const usage1 = first.at(-1)?.type === 'finish' ? first.at(-1) : undefined;
      expect(usage1).to.have.nested.property('usage.cacheWriteTokens').that.is.greaterThan(100);
      expect(usage1).not.to.have.nested.property('usage.cachedInputTokens');
      const second = await turn(claude, [system, ...question, assistantOf(first), { role: 'user', content: 'And lakes?' }]);
      const usage2 = second.at(-1);
      expect(usage2).to.have.nested.property('usage.cachedInputTokens').that.is.greaterThan(100);
      expect(JSON.stringify(server.requests[0]!.body)).to.contain('"cache_control":{"type":"ephemeral","ttl":"1h"}');
    });

    it('OpenAI (Responses and Chat) with a prompt_cache_key: the leading messages seen before under the key come back as cached tokens', async () => {
      const models = [
        openAIResponsesModel({ baseURL: server.openAIBaseURL, model: 'local', promptCache: { key: 'conversation-42', retention: '24h' } }),
        openAICompatibleModel({ baseURL: server.openAIBaseURL, model: 'local', body: { prompt_cache_key: 'conversation-42' } }),
      ];
      for (const model of models) {
        const first = await turn(model);
        expect(first.at(-1)).not.to.have.nested.property('usage.cachedInputTokens');
        const second = await turn(model, [...question, assistantOf(first), { role: 'user', content: 'And lakes?' }]);
        expect(second.at(-1)).to.have.nested.property('usage.cachedInputTokens').that.is.greaterThan(0);
      }
    });
  });
});
