/**
 * What rxheal/server does on the provider's side, round-tripped through rxheal's own models and
 * the official SDKs: Anthropic's server-side fallback (the `blocked` fault, with and without
 * `fallbacks`), compaction on both APIs (a block or an encrypted item, kept opaque by the client
 * and taken back by the server in place of what it summarised), and the prompt cache (reads and
 * writes in usage and in the request log; its TTL on an injected clock; the wait for the input it
 * did not hold).
 */
import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import { asyncScheduler, filter, firstValueFrom, lastValueFrom, toArray } from 'rxjs';
import { fromAnthropic } from '../../src/anthropic/index.js';
import { BudgetExceededError, InvalidOptionError } from '../../src/core/errors/errors.js';
import type { AgentEvent, Message, TurnEvent } from '../../src/core/events/events.js';
import { streamModel, type Model } from '../../src/core/model/model.js';
import { anthropicModel } from '../../src/providers/anthropic.js';
import { openAICompatibleModel } from '../../src/providers/openai.js';
import { openAIResponsesModel } from '../../src/providers/responses.js';
import { startLocalProvider, type LocalProvider } from '../../src/server/index.js';
import { validateFault } from '../../src/server/faults.js';
import { PromptCache } from '../../src/server/providerSide.js';
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

    it('Anthropic: what is read and written is part of the input — input_tokens never negative, the three adding up to the input (large cached tools, a short question)', async () => {
      const tools = Array.from({ length: 8 }, (_, i) => ({
        name: `tool_${i}`,
        description: 'A tool with a long description. '.repeat(10),
        input_schema: { type: 'object' },
      }));
      const usageOf = async (content: string) => {
        const response = await fetch(`${server.anthropicBaseURL}/v1/messages`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
          body: JSON.stringify({
            model: 'local',
            max_tokens: 64,
            tools: tools.map((t, i) => (i === tools.length - 1 ? { ...t, cache_control: { type: 'ephemeral' } } : t)),
            messages: [{ role: 'user', content: [{ type: 'text', text: content, cache_control: { type: 'ephemeral' } }] }],
          }),
        });
        return ((await response.json()) as { usage: Record<string, number> }).usage;
      };
      // the second reads the tools (more tokens than its input, as this server counts the input) and writes its new question
      const [first, second] = [await usageOf('Hi'), await usageOf('Hey there')];
      expect(second!['cache_read_input_tokens']).to.be.greaterThan(0);
      for (const [usage, input] of [
        [first!, 1],
        [second!, 3],
      ] as const) {
        expect(usage['input_tokens']).to.be.at.least(0);
        expect(usage['input_tokens']! + usage['cache_read_input_tokens']! + usage['cache_creation_input_tokens']!).to.equal(input);
      }
    });

    it("the request log says each request's cache reads and writes, as its usage does (Anthropic, Responses, Chat)", async () => {
      const system: Message = { role: 'system', content: 'You are a helpful assistant. '.repeat(20) };
      const claude = anthropicModel({ baseURL: server.anthropicBaseURL, model: 'local', cache: { breakpoints: 2 } });
      const gpt = openAIResponsesModel({ baseURL: server.openAIBaseURL, model: 'local', promptCache: { key: 'log-42' } });
      const chat = openAICompatibleModel({ baseURL: server.openAIBaseURL, model: 'local' });
      const later = (first: TurnEvent[]): Message[] => [system, ...question, assistantOf(first), { role: 'user', content: 'And lakes?' }];
      const usages: unknown[] = [];
      for (const model of [claude, gpt]) {
        const first = await turn(model, [system, ...question]);
        usages.push(first.at(-1), (await turn(model, later(first))).at(-1));
      }
      const key = { tools: [], messages: [system, ...question], promptCacheKey: 'log-chat' };
      usages.push((await lastValueFrom(streamModel(chat, key).pipe(toArray()))).at(-1));
      const first = usages.at(-1) as TurnEvent;
      expect(first.type).to.equal('finish');
      usages.push(
        (await lastValueFrom(streamModel(chat, { ...key, messages: [...key.messages, { role: 'user', content: 'And lakes?' }] }).pipe(toArray()))).at(-1),
      );
      const logged = server.requests.map((r) => ({ read: r.cacheRead, write: r.cacheWrite }));
      const reported = usages.map((u) => {
        const usage = (u as { usage?: { cachedInputTokens?: number; cacheWriteTokens?: number } }).usage;
        return { read: usage?.cachedInputTokens, write: usage?.cacheWriteTokens };
      });
      expect(logged).to.deep.equal(reported);
      expect(logged[0]!.write).to.be.greaterThan(100);
      expect(logged.filter((_, i) => i % 2 === 1).every((l) => (l.read ?? 0) > 0)).to.equal(true);
    });
  });

  describe('prompt cache: TTL and speed', () => {
    const parts = (n: number): string[] => Array.from({ length: n }, (_, i) => `part ${i} `.repeat(10));

    it('an entry expires ttlMs after it was last written or read, on the injected clock; each read keeps it another ttlMs', () => {
      let now = 0;
      const cache = new PromptCache({ ttlMs: 1000, now: () => now });
      expect(cache.use('k', parts(2), 2).write).to.be.greaterThan(0);
      now = 999;
      expect(cache.use('k', parts(3), 0).read).to.be.greaterThan(0); // read at 999: refreshed
      now = 1998;
      expect(cache.use('k', parts(3), 0).read, 'kept by the read at 999').to.be.greaterThan(0);
      now = 2998;
      // 1000 ms after the last read: nothing is read, the prefix is written again
      const expired = cache.use('k', parts(3), 3);
      expect(expired.read).to.equal(0);
      expect(expired.write).to.be.greaterThan(0);
      now = 3000;
      expect(cache.use('k', parts(3), 3)).to.deep.equal({ read: expired.write, write: 0 });
    });

    it("defaults: 300 000 ms (Anthropic's 5 minutes), on asyncScheduler.now(); ttlMs 0 caches nothing, Infinity never expires", () => {
      const original = asyncScheduler.now;
      let now = 1_000_000;
      asyncScheduler.now = () => now;
      try {
        const cache = new PromptCache();
        cache.use('k', parts(2), 0);
        now += 299_999;
        expect(cache.use('k', parts(2), 0).read).to.be.greaterThan(0);
        now += 300_000;
        expect(cache.use('k', parts(2), 0).read).to.equal(0);
      } finally {
        asyncScheduler.now = original;
      }
      let now2 = 0;
      const never = new PromptCache({ ttlMs: 0, now: () => now2 });
      const written = never.use('k', parts(2), 2);
      expect(written.write).to.be.greaterThan(0);
      expect(never.use('k', parts(2), 2)).to.deep.equal({ read: 0, write: written.write });
      const forever = new PromptCache({ ttlMs: Infinity, now: () => now2 });
      forever.use('k', parts(2), 0);
      now2 = Number.MAX_SAFE_INTEGER;
      expect(forever.use('k', parts(2), 0).read).to.be.greaterThan(0);
    });

    it('keeps 64 prefixes per key at most: past it the least recently used goes, not the one just read', () => {
      let now = 0;
      const cache = new PromptCache({ ttlMs: Infinity, now: () => now });
      const distinct = (i: number): string[] => [`prefix ${i} `.repeat(8)];
      for (let i = 0; i < 64; i++) {
        now++;
        cache.use('k', distinct(i), 0);
      }
      now++;
      expect(cache.use('k', distinct(0), 0).read, 'the oldest, read: now the most recent').to.be.greaterThan(0);
      now++;
      cache.use('k', distinct(64), 0); // the 65th: prefix 1 (least recently used) goes
      expect(cache.use('k', distinct(0), 0).read).to.be.greaterThan(0);
      expect(cache.use('k', distinct(1), 0).read).to.equal(0);
      expect(cache.use('other', distinct(2), 0).read, 'per key').to.equal(0);
    });

    it('bad options: InvalidOptionError naming the option and the value (the cache, and the server’s promptCache)', () => {
      const refusal = (make: () => unknown): InvalidOptionError => {
        try {
          make();
        } catch (error) {
          if (error instanceof InvalidOptionError) return error;
          throw error;
        }
        throw new Error('expected an InvalidOptionError');
      };
      expect(refusal(() => new PromptCache({ ttlMs: -1 }))).to.deep.include({ option: 'ttlMs', value: -1 });
      expect(refusal(() => new PromptCache({ now: 5 as never }))).to.deep.include({ option: 'now', value: 5 });
      expect(refusal(() => startLocalProvider({ promptCache: { ttlMs: -5 } }))).to.deep.include({ option: 'promptCache.ttlMs', value: -5 });
      expect(refusal(() => startLocalProvider({ promptCache: { ttlMs: Number.NaN } }))).to.have.property('option', 'promptCache.ttlMs');
      expect(refusal(() => startLocalProvider({ promptCache: { uncachedMsPer1kTokens: -1 } }))).to.deep.include({
        option: 'promptCache.uncachedMsPer1kTokens',
        value: -1,
      });
      expect(refusal(() => startLocalProvider({ promptCache: { uncachedMsPer1kTokens: Infinity } }))).to.have.property(
        'option',
        'promptCache.uncachedMsPer1kTokens',
      );
      expect(refusal(() => startLocalProvider({ promptCache: { ttl: 5 } as never }))).to.deep.include({ option: 'promptCache.ttl', value: 5 });
      expect(refusal(() => startLocalProvider({ promptCache: 300 as never }))).to.deep.include({ option: 'promptCache', value: 300 });
    });

    it("the server's cache expires on its scheduler: ttlMs after the last read, a breakpoint's prefix is written again", async () => {
      let now = 0;
      const clocked = await startLocalProvider({
        tokenDelayMs: 0,
        promptCache: { ttlMs: 1000 },
        scheduler: { now: () => now, schedule: () => ({ unsubscribe: () => undefined, closed: false }) } as never,
      });
      try {
        const claude = anthropicModel({ baseURL: clocked.anthropicBaseURL, model: 'local', cache: { breakpoints: 2 } });
        const system: Message = { role: 'system', content: 'You are a helpful assistant. '.repeat(20) };
        for (const at of [0, 999, 1998, 2998]) {
          now = at;
          await turn(claude, [system, ...question]);
        }
        const logged = clocked.requests.map((r) => [r.cacheRead !== undefined, r.cacheWrite !== undefined]);
        // written at 0; read at 999 and at 1998 (kept by the read at 999); gone at 2998: written again
        expect(logged).to.deep.equal([
          [false, true],
          [true, false],
          [true, false],
          [false, true],
        ]);
      } finally {
        await clocked.close();
      }
    });

    it('uncachedMsPer1kTokens: a cold request started with a warm one answers after it (the warm one waits for nothing: all its input read)', async function () {
      // a cold request of ~1 000 input tokens waits 60 s here: it is aborted once the warm one answered
      const slowCold = await startLocalProvider({ tokenDelayMs: 0, promptCache: { uncachedMsPer1kTokens: 60_000 } });
      const post = (key: string, messages: readonly Message[], signal: AbortSignal) =>
        fetch(`${slowCold.openAIBaseURL}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'local', stream: true, prompt_cache_key: key, messages }),
          signal,
        });
      const long: Message[] = [{ role: 'user', content: 'Tell me about rivers. '.repeat(180) }];
      const aborts = [new AbortController(), new AbortController()];
      try {
        // the primer writes the prefix under 'warm' (the cache is used before the wait), then is let go
        const started = firstValueFrom(slowCold.activity$.pipe(filter((a) => a.type === 'request-start')));
        const primer = post('warm', long, aborts[0]!.signal).catch(() => undefined);
        await started;
        await new Promise((resolve) => setImmediate(resolve));
        aborts[0]!.abort();
        await primer;
        let coldAnswered = false;
        const cold = post('cold', [...long, { role: 'user', content: 'ok' }], aborts[1]!.signal).then(
          () => (coldAnswered = true),
          () => undefined,
        );
        const warm = await post('warm', [...long, { role: 'user', content: 'ok' }], new AbortController().signal);
        expect(warm.status).to.equal(200);
        expect(coldAnswered, 'the cold request answered first').to.equal(false);
        await warm.text();
        const [, coldRecord, warmRecord] = slowCold.requests;
        expect(warmRecord).to.deep.include({ end: 'completed' });
        expect(warmRecord!.cacheRead).to.be.greaterThan(900);
        expect(coldRecord).not.to.have.property('end');
        expect(coldRecord).not.to.have.property('cacheRead');
        aborts[1]!.abort();
        await cold;
        expect(coldAnswered).to.equal(false);
        expect((await slowCold.waitForRequest((r) => r.id === coldRecord!.id)).end).to.equal('client-closed');
      } finally {
        for (const a of aborts) a.abort();
        await slowCold.close();
      }
    });
  });
});
