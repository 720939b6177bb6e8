/**
 * What the Responses API added this year, through the decoder, `openAIResponsesModel` and
 * `fromOpenAIResponses`'s body: server-side compaction (`context_management` with
 * `compact_threshold`, an encrypted `compaction` item kept opaque and sent back, never to another
 * provider), prompt-cache options (`prompt_cache_key`, `prompt_cache_retention`,
 * `prompt_cache_options` and explicit breakpoints) and cached tokens in usage — on vercel/ai's
 * recorded compaction stream (spec/fixtures/SOURCES.md; its byte-split replay is in
 * responses.spec.ts with the other recordings).
 */
import { expect } from 'chai';
import { lastValueFrom, toArray } from 'rxjs';
import type { Message, TurnEvent } from '../../src/core/events/events.js';
import { streamModel } from '../../src/core/model/model.js';
import { anthropicRequestBody } from '../../src/providers/anthropic.js';
import { openAIResponsesBody, openAIResponsesModel, withPromptCache } from '../../src/providers/responses.js';
import { openAIResponsesStreamDecoder } from '../../src/providers/responsesDecoder.js';
import { refusal } from '../support/refusal.js';
import { recordedResponses, replayResponses } from '../support/responsesReplay.js';

const decode = (events: readonly Record<string, unknown>[]): TurnEvent[] => {
  const decoder = openAIResponsesStreamDecoder('m');
  return events.flatMap((e) => decoder.pushEvent(e));
};

describe('providers: OpenAI Responses, compaction and prompt caching', () => {
  const [events] = recordedResponses('openai-responses-compaction.jsonl');
  const item = (events!.find((e) => e['type'] === 'response.output_item.done' && (e['item'] as { type: string }).type === 'compaction')!['item'] as Record<
    string,
    unknown
  >)!;

  it('the recorded compaction: the answer, then one reasoning-end without text carrying the whole encrypted item, then the finish with cached tokens', () => {
    const out = decode(events!);
    const ends = out.filter((e) => e.type === 'reasoning-end');
    expect(ends).to.deep.equal([{ type: 'reasoning-end', providerMetadata: { openai: { itemId: item['id'], itemType: 'compaction', item } } }]);
    expect(out.filter((e) => e.type === 'reasoning-delta')).to.deep.equal([]);
    expect(String(item['encrypted_content']).length).to.be.greaterThan(1000);
    expect(out.at(-1)).to.deep.equal({ type: 'finish', reason: 'stop', usage: { inputTokens: 51097, outputTokens: 2505, cachedInputTokens: 49792 } });
  });

  it('a compaction item without its encrypted content: MalformedStreamError (it could not go back)', () => {
    const decoder = openAIResponsesStreamDecoder('m');
    decoder.pushEvent({ type: 'response.output_item.added', output_index: 0, item: { type: 'compaction', id: 'cmp_1' } });
    expect(() => decoder.pushEvent({ type: 'response.output_item.done', output_index: 0, item: { type: 'compaction', id: 'cmp_1' } })).to.throw(
      /compaction item without its "encrypted_content"/,
    );
  });

  describe('the request', () => {
    const compaction = { id: 'cmp_1', type: 'compaction', encrypted_content: 'gAAAA-opaque', status: 'completed' };
    const history: Message[] = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Compare the frameworks.' },
      {
        role: 'assistant',
        content: 'React and Vue…',
        reasoning: [{ text: '', providerMetadata: { openai: { itemId: 'cmp_1', itemType: 'compaction', item: compaction } } }],
      },
      { role: 'user', content: 'And testing?' },
    ];

    it('the compaction item goes back as it came (without its status), stored or not; Anthropic never gets it: a fallback there starts from the uncompacted transcript', () => {
      for (const store of [false, true]) {
        const input = openAIResponsesBody('gpt-5.2', { messages: history, tools: [] }, { store })['input'] as unknown[];
        expect(input, `store ${store}`).to.deep.include({ id: 'cmp_1', type: 'compaction', encrypted_content: 'gAAAA-opaque' });
      }
      const anthropic = anthropicRequestBody('claude', 1024, { messages: history, tools: [] });
      expect(JSON.stringify(anthropic)).not.to.contain('gAAAA-opaque');
      expect(anthropic['messages']).to.deep.equal([
        { role: 'user', content: [{ type: 'text', text: 'Compare the frameworks.' }] },
        { role: 'assistant', content: [{ type: 'text', text: 'React and Vue…' }] },
        { role: 'user', content: [{ type: 'text', text: 'And testing?' }] },
      ]);
    });

    it("prompt caching: key, retention '24h', ttl, and explicit breakpoints on the system message, the conversation's end and the turn before it", () => {
      const body = openAIResponsesBody('gpt-5.2', { messages: history, tools: [] });
      const cached = withPromptCache(body, { key: 'conversation-42', retention: '24h', ttl: '30m', breakpoints: 3 });
      expect(cached).to.deep.include({
        prompt_cache_key: 'conversation-42',
        prompt_cache_retention: '24h',
        prompt_cache_options: { ttl: '30m', mode: 'explicit' },
      });
      const marked = (cached['input'] as Record<string, unknown>[]).map((i) => JSON.stringify(i).includes('prompt_cache_breakpoint'));
      const roles = (cached['input'] as Record<string, unknown>[]).map((i) => i['role'] ?? i['type']);
      expect(roles).to.deep.equal(['system', 'user', 'compaction', 'assistant', 'user']);
      expect(marked).to.deep.equal([true, false, false, true, true]);
      expect((cached['input'] as Record<string, unknown>[])[0]).to.deep.equal({
        role: 'system',
        content: [{ type: 'input_text', text: 'Be brief.', prompt_cache_breakpoint: { mode: 'explicit' } }],
      });
      expect(body, 'the body itself is not changed').not.to.have.property('prompt_cache_key');
      expect(withPromptCache(body, { breakpoints: 1 })['prompt_cache_options']).to.deep.equal({ mode: 'explicit' });
      expect(refusal(() => openAIResponsesModel({ baseURL: 'http://x/v1', model: 'm', promptCache: { retention: '7d' as '24h' } })).option).to.equal(
        'promptCache',
      );
      expect(refusal(() => openAIResponsesModel({ baseURL: 'http://x/v1', model: 'm', promptCache: { breakpoints: 0 } })).option).to.equal('promptCache');
    });

    it('openAIResponsesModel over loopback: the recorded compaction turn, then the next request carries the item back with the cache fields', async () => {
      const replay = await replayResponses([events!, events!]);
      try {
        const gpt = openAIResponsesModel({
          baseURL: replay.baseURL,
          model: 'gpt-5.2',
          body: { context_management: [{ type: 'compaction', compact_threshold: 50_000 }] },
          promptCache: { key: 'conversation-42', retention: '24h' },
        });
        const first = await lastValueFrom(streamModel(gpt, { messages: [{ role: 'user', content: 'Compare the frameworks.' }], tools: [] }).pipe(toArray()));
        const end = first.find((e) => e.type === 'reasoning-end');
        const answer = first.flatMap((e) => (e.type === 'text-delta' ? [e.text] : [])).join('');
        const next: Message[] = [
          { role: 'user', content: 'Compare the frameworks.' },
          {
            role: 'assistant',
            content: answer,
            reasoning: [{ text: '', ...(end?.type === 'reasoning-end' && end.providerMetadata ? { providerMetadata: end.providerMetadata } : {}) }],
          },
          { role: 'user', content: 'And testing?' },
        ];
        await lastValueFrom(streamModel(gpt, { messages: next, tools: [] }).pipe(toArray()));
        const [one, two] = replay.requests.map((r) => r.body);
        expect(one).to.deep.include({
          prompt_cache_key: 'conversation-42',
          prompt_cache_retention: '24h',
          context_management: [{ type: 'compaction', compact_threshold: 50_000 }],
        });
        expect(two!['input']).to.deep.include({ id: item['id'], type: 'compaction', encrypted_content: item['encrypted_content'] });
      } finally {
        await replay.close();
      }
    });
  });
});
