/**
 * What the Messages API added this year, through the decoder, `anthropicModel` and a run: the
 * server-side fallback (a `fallback` block, `usage.iterations`, `stop_details.recommended_model`),
 * compaction blocks kept opaque and sent back, context editing's streams, prompt-cache usage and
 * breakpoints, fine-grained tool streaming. The recorded streams are vercel/ai's (spec/fixtures/
 * SOURCES.md), replayed whole and cut at awkward bytes in every line ending; the fine-grained one
 * is written from the API reference (its comment lines say so).
 */
import { expect } from 'chai';
import * as t from 'io-ts';
import { lastValueFrom, toArray } from 'rxjs';
import { BudgetExceededError } from '../../src/core/errors/errors.js';
import type { AgentEvent, Message, TurnEvent } from '../../src/core/events/events.js';
import type { Model } from '../../src/core/model/model.js';
import { reflectOnError } from '../../src/operators/reflectOnError.js';
import { anthropicBetas, anthropicModel, anthropicRequestBody } from '../../src/providers/anthropic.js';
import { anthropicStreamDecoder } from '../../src/providers/anthropicDecoder.js';
import { openAIResponsesBody } from '../../src/providers/responses.js';
import { fallbackModel } from '../../src/sources/fallbackModel.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';
import { anthropicSse, awkwardCuts, cutAt, decodeChunks, LINE_ENDINGS, recordedAnthropicStreams } from '../support/decodeChunks.js';
import { fixture, fixtureFetch } from '../support/providerFakes.js';
import { refusal } from '../support/refusal.js';

const encoder = new TextEncoder();
const recorded = (name: string) => decodeChunks([anthropicSse(fixture(name))], anthropicStreamDecoder('recorded'));
const sse = (...events: Record<string, unknown>[]) => events.map((e) => `event: ${String(e['type'])}\ndata: ${JSON.stringify(e)}\n\n`).join('');
const start = { type: 'message_start', message: { id: 'msg_1', content: [], usage: { input_tokens: 10, output_tokens: 1 } } };
const stop = { type: 'message_stop' };

/** A `fetch` answering each request with the next text (the last one again past the end). */
function sequenceFetch(texts: readonly string[]) {
  const bodies: Record<string, unknown>[] = [];
  const headers: Record<string, string>[] = [];
  const fetch = ((url: string, init: RequestInit) => {
    const fake = fixtureFetch(texts[Math.min(bodies.length, texts.length - 1)]!);
    bodies.push(JSON.parse(String(init.body)) as Record<string, unknown>);
    headers.push({ ...(init.headers as Record<string, string>) });
    return fake.fetch(url, init);
  }) as typeof globalThis.fetch;
  return { fetch, bodies, headers };
}

describe('providers: Anthropic, what the Messages API added this year', () => {
  describe('recorded streams (vercel/ai fixtures)', () => {
    it('a server-side fallback: the answer of the model that took over, one finish with the fallback, both samplings counted (iterations) — no reset when the blocked model said nothing', () => {
      const { events, error } = recorded('anthropic-server-fallback.jsonl');
      expect(error).to.equal(undefined);
      expect(events).to.deep.equal([
        { type: 'text-delta', text: 'The printing press was invented ' },
        { type: 'text-delta', text: 'by Johannes Gutenberg around 1440.' },
        {
          type: 'finish',
          reason: 'stop',
          usage: { inputTokens: 408 + 412, outputTokens: 264, iterations: 2 },
          providerFallbacks: [{ from: 'claude-fable-5', to: 'claude-opus-4-8', midStream: false }],
        },
      ]);
    });

    it("a refusal the API could not serve: finish 'content-filter' with stop_details.recommended_model", () => {
      expect(recorded('anthropic-refusal.jsonl')).to.deep.equal({
        events: [{ type: 'finish', reason: 'content-filter', usage: { inputTokens: 18, outputTokens: 5 }, recommendedModel: 'claude-fable-5' }],
      });
    });

    it('a compaction block: one reasoning-end without text carrying the whole block (never shown), then the answer', () => {
      const lines = fixture('anthropic-compaction.jsonl')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as { type: string; index?: number; delta?: { type: string; content?: string; text?: string } });
      const summary = lines.flatMap((l) => (l.delta?.type === 'compaction_delta' ? [l.delta.content ?? ''] : [])).join('');
      const answer = lines.flatMap((l) => (l.delta?.type === 'text_delta' ? [l.delta.text ?? ''] : [])).join('');
      const { events, error } = recorded('anthropic-compaction.jsonl');
      expect(error).to.equal(undefined);
      expect(summary.length).to.be.greaterThan(1000);
      expect(events[0]).to.deep.equal({ type: 'reasoning-end', providerMetadata: { anthropic: { block: { type: 'compaction', content: summary } } } });
      expect(events.filter((e) => e.type === 'reasoning-delta')).to.deep.equal([]);
      expect(events.flatMap((e) => (e.type === 'text-delta' ? [e.text] : [])).join('')).to.equal(answer);
      expect(events.at(-1)).to.have.property('type', 'finish');
    });

    it("context editing's streams (clear_tool_uses, clear_thinking): their applied_edits change nothing of the turn", () => {
      const tools = recorded('anthropic-clear-tool-uses.jsonl');
      expect(tools.error).to.equal(undefined);
      expect(tools.events.at(-1)).to.deep.equal({ type: 'finish', reason: 'stop', usage: { inputTokens: 859, outputTokens: 122 } });
      const thinking = recorded('anthropic-clear-thinking.jsonl');
      expect(thinking.events.filter((e) => e.type === 'reasoning-end')).to.have.length(1);
      expect(thinking.events.at(-1)).to.deep.equal({ type: 'finish', reason: 'stop', usage: { inputTokens: 69, outputTokens: 53 } });
    });

    for (const { name, text, decoder } of recordedAnthropicStreams()) {
      it(`${name}: every line ending, cut at awkward bytes (around line breaks and field names, inside multi-byte characters: 160 spread), the same events and end`, () => {
        const whole = decodeChunks([text], decoder());
        expect(whole.error, 'whole').to.equal(undefined);
        for (const convert of Object.values(LINE_ENDINGS)) {
          const bytes = encoder.encode(convert(text));
          for (const cut of awkwardCuts(bytes)) {
            const outcome = decodeChunks(cutAt(bytes, [cut]), decoder());
            if (JSON.stringify(outcome) !== JSON.stringify(whole)) expect(outcome, `cut at byte ${cut}`).to.deep.equal(whole);
          }
        }
      });
    }
  });

  describe('the decoder, state by event', () => {
    const fallback = (index: number) => ({
      type: 'content_block_start',
      index,
      content_block: { type: 'fallback', from: { model: 'claude-opus-5-5' }, to: { model: 'claude-opus-4-8' } },
    });
    const decode = (text: string) => decodeChunks([text], anthropicStreamDecoder('m'));

    it("a fallback after the blocked model emitted: a reset (reason 'fallback', the model that took over) takes it back — the two models' output is never spliced", () => {
      const { events } = decode(
        sse(
          start,
          { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
          { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Opus 5.5 thinking' } },
          { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'SIG_A' } },
          { type: 'content_block_stop', index: 0 },
          fallback(1),
          { type: 'content_block_stop', index: 1 },
          { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: {} } },
          { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"q":"x"}' } },
          { type: 'content_block_stop', index: 2 },
          {
            type: 'message_delta',
            delta: { stop_reason: 'tool_use' },
            usage: {
              output_tokens: 70,
              iterations: [
                { input_tokens: 10, output_tokens: 40 },
                { input_tokens: 12, output_tokens: 30 },
              ],
            },
          },
          stop,
        ),
      );
      expect(events).to.deep.equal([
        { type: 'reasoning-delta', text: 'Opus 5.5 thinking' },
        { type: 'reasoning-end', signature: 'SIG_A' },
        { type: 'reset', reason: 'fallback', target: 'model:claude-opus-4-8' },
        { type: 'tool-call', id: 'toolu_1', name: 'lookup', args: { q: 'x' } },
        {
          type: 'finish',
          reason: 'tool-calls',
          usage: { inputTokens: 22, outputTokens: 70, iterations: 2 },
          providerFallbacks: [{ from: 'claude-opus-5-5', to: 'claude-opus-4-8', midStream: true }],
        },
      ]);
    });

    it('a fallback block without its models, a compaction block never stopped, a compaction delta that is not text: MalformedStreamError', () => {
      const bad = { type: 'content_block_start', index: 0, content_block: { type: 'fallback', from: {} } };
      expect(decode(sse(start, bad, stop)).error).to.have.property('name', 'MalformedStreamError');
      const compaction = { type: 'content_block_start', index: 0, content_block: { type: 'compaction', content: null } };
      expect(decode(sse(start, compaction, stop)).error?.message).to.contain('compaction block 0 still open');
      const notText = { type: 'content_block_delta', index: 0, delta: { type: 'compaction_delta', content: 42 } };
      expect(decode(sse(start, compaction, notText)).error?.message).to.contain('compaction_delta without its text');
    });
  });

  describe('the request', () => {
    const compaction = { type: 'compaction', content: 'Summary: the user asked about rivers.' };
    const history: Message[] = [
      { role: 'user', content: 'Tell me about rivers' },
      { role: 'assistant', content: 'Rivers flow.', reasoning: [{ text: '', providerMetadata: { anthropic: { block: compaction } } }] },
      { role: 'user', content: 'And lakes?' },
    ];

    it('a compaction block goes back first in its assistant turn, as it came, with the compaction beta; another provider never gets it (a fallback starts from the whole transcript)', () => {
      const body = anthropicRequestBody('claude', 1024, { messages: history, tools: [] });
      expect((body['messages'] as { content: unknown[] }[])[1]!.content).to.deep.equal([compaction, { type: 'text', text: 'Rivers flow.' }]);
      expect(anthropicBetas(body)).to.equal('compact-2026-01-12');
      const responses = openAIResponsesBody('gpt-5-mini', { messages: history, tools: [] });
      expect(responses['input']).to.deep.equal([
        { role: 'user', content: 'Tell me about rivers' },
        { role: 'assistant', content: 'Rivers flow.' },
        { role: 'user', content: 'And lakes?' },
      ]);
    });

    it('betas: server-side fallback (default and chain), context editing and compaction, joined with the given ones, each once', () => {
      expect(anthropicBetas({ fallbacks: 'default' }, 'a, b')).to.equal('a,b,server-side-fallback-2026-07-01');
      expect(anthropicBetas({ fallbacks: [{ model: 'claude-opus-4-8' }] })).to.equal('server-side-fallback-2026-06-01');
      expect(anthropicBetas({ context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] } })).to.equal('context-management-2025-06-27');
      expect(anthropicBetas({ context_management: { edits: [{ type: 'compact_20260112' }] } }, 'compact-2026-01-12')).to.equal(
        'compact-2026-01-12,context-management-2025-06-27',
      );
      expect(anthropicBetas({})).to.equal(undefined);
    });

    it('cache breakpoints (1 h TTL): the tools, the system prompt, the conversation, the turn before it — up to the number asked for', () => {
      const tools = [{ name: 'a', description: 'A' }];
      const messages: Message[] = [{ role: 'system', content: 'Be brief.' }, ...history];
      const four = anthropicRequestBody('claude', 1024, { messages, tools }, {}, { cache: { ttl: '1h', breakpoints: 4 }, eagerInputStreaming: true });
      const hour = { type: 'ephemeral', ttl: '1h' };
      expect(four['tools']).to.deep.equal([
        { name: 'a', description: 'A', input_schema: { type: 'object', properties: {} }, eager_input_streaming: true, cache_control: hour },
      ]);
      expect(four['system']).to.deep.equal([{ type: 'text', text: 'Be brief.', cache_control: hour }]);
      const content = (four['messages'] as { content: Record<string, unknown>[] }[]).map((m) => m.content.at(-1)!['cache_control']);
      expect(content).to.deep.equal([undefined, hour, hour]);
      const two = anthropicRequestBody('claude', 1024, { messages, tools }, {}, { cache: {} });
      expect(JSON.stringify(two).match(/cache_control/g)).to.have.length(2);
      expect(JSON.stringify(two)).to.contain('{"type":"ephemeral"}');
    });

    it('bad options at once, naming the option', () => {
      expect(refusal(() => anthropicModel({ model: 'm', fallbacks: [] })).option).to.equal('fallbacks');
      expect(refusal(() => anthropicModel({ model: 'm', cache: { breakpoints: 5 } })).option).to.equal('cache');
      expect(refusal(() => anthropicModel({ model: 'm', cache: { ttl: '2h' as '1h' } })).option).to.equal('cache');
      expect(refusal(() => anthropicModel({ model: 'm', eagerInputStreaming: 'yes' as unknown as boolean })).option).to.equal('eagerInputStreaming');
    });
  });

  describe('in a run, over HTTP (a fetch on the recorded bytes)', () => {
    const collect = (events$: ReturnType<typeof runAgent>) => lastValueFrom(events$.pipe(toArray()));

    it("a server-side fallback is the provider's: one fallback event marked providerSide, the client-side chain never moves on, and the budget counts both samplings", async () => {
      const replay = sequenceFetch([anthropicSse(fixture('anthropic-server-fallback.jsonl'))]);
      const claude = anthropicModel({ model: 'claude-fable-5', fetch: replay.fetch, fallbacks: 'default', id: 'claude' });
      let otherCalls = 0;
      const other: Model = {
        id: 'other',
        stream: () => {
          otherCalls++;
          return [
            { type: 'text-delta', text: 'never' },
            { type: 'finish', reason: 'stop' },
          ] as TurnEvent[];
        },
      };
      const events: AgentEvent[] = await collect(runAgent({ model: fallbackModel([claude, other]), tools: [], messages: [{ role: 'user', content: 'Who?' }] }));
      expect(events.filter((e) => e.type === 'fallback')).to.deep.equal([
        { type: 'fallback', from: 'model:claude-fable-5', to: 'model:claude-opus-4-8', reason: 'provider_fallback', midStream: false, providerSide: true },
      ]);
      expect(otherCalls).to.equal(0);
      expect(replay.bodies[0]).to.have.property('fallbacks', 'default');
      expect(replay.headers[0]).to.have.property('anthropic-beta', 'server-side-fallback-2026-07-01');
      const ends = events.filter((e) => e.type === 'call-end');
      expect(ends.map((e) => e.type === 'call-end' && e.usage?.iterations)).to.include(2);

      const again = sequenceFetch([anthropicSse(fixture('anthropic-server-fallback.jsonl'))]);
      const tight = anthropicModel({ model: 'claude-fable-5', fetch: again.fetch, fallbacks: 'default' });
      const error = await collect(runAgent({ model: tight, tools: [], messages: [{ role: 'user', content: 'Who?' }], budget: { maxModelCalls: 1 } })).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(BudgetExceededError).with.property('resource', 'modelCalls');
    });

    it("a compaction is never carried over: a 'continue' fallback after it hands the next model the partial text alone (the whole transcript, uncompacted)", async () => {
      // the recording cut after its compaction block and a few text deltas (no message_stop): the stream drops
      const lines = fixture('anthropic-compaction.jsonl')
        .split('\n')
        .filter((l) => l !== '');
      const cut = lines.slice(0, lines.findIndex((l) => l.includes('" history"')) + 1).join('\n');
      const claude = anthropicModel({ model: 'claude-opus-4-6', fetch: sequenceFetch([anthropicSse(cut)]).fetch, id: 'claude' });
      const seen: Message[][] = [];
      const next: Model = {
        id: 'next',
        stream: (request) => {
          seen.push([...request.messages]);
          return [
            { type: 'text-delta', text: ', you asked for a summary.' },
            { type: 'finish', reason: 'stop' },
          ] as TurnEvent[];
        },
      };
      const events = await collect(
        runAgent({ model: fallbackModel([claude, next], { midStream: 'continue' }), tools: [], messages: [{ role: 'user', content: 'Summarise' }] }),
      );
      expect(events.flatMap((e) => (e.type === 'text-delta' ? [e.text] : [])).join('')).to.equal('Based on the conversation history, you asked for a summary.');
      expect(seen).to.have.length(1);
      expect(seen[0]).to.deep.equal([
        { role: 'user', content: 'Summarise' },
        { role: 'assistant', content: 'Based on the conversation history' },
        { role: 'user', content: seen[0]![2]!.content },
      ]);
      expect(JSON.stringify(seen[0])).not.to.contain('compaction');
    });

    it('fine-grained tool streaming: the input that is not JSON stays raw, the tool rejects it (validate), reflectOnError has the model correct it, and the answer follows', async () => {
      const second = sse(
        start,
        { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_2', name: 'get_weather', input: {} } },
        { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"city":"Zürich","units":"celsius"}' } },
        { type: 'content_block_stop', index: 0 },
        { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 9 } },
        stop,
      );
      const third = sse(
        start,
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: '21 °C in Zürich.' } },
        { type: 'content_block_stop', index: 0 },
        { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 6 } },
        stop,
      );
      const replay = sequenceFetch([fixture('anthropic-eager-tool-input.sse'), second, third]);
      const executed: unknown[] = [];
      const weather = defineTool({
        name: 'get_weather',
        description: 'The weather',
        args: t.type({ city: t.string, units: t.keyof({ celsius: null, fahrenheit: null }) }),
        execute: (args) => {
          executed.push(args);
          return [{ temperature: 21 }];
        },
      });
      const claude = anthropicModel({ model: 'claude-sonnet-4-5', fetch: replay.fetch, eagerInputStreaming: true });
      const events = await collect(
        runAgent({
          model: claude,
          tools: [weather],
          messages: [{ role: 'user', content: 'Weather in Zürich?' }],
          toolPipeline: (_c, call$) => call$.pipe(reflectOnError()),
        }),
      );
      const calls = events.filter((e) => e.type === 'tool-call');
      expect(calls[0]).to.deep.include({ args: '{"city": "Zürich", "units": celsius}' });
      expect(events.filter((e) => e.type === 'reflection')).to.have.length(1);
      expect(executed).to.deep.equal([{ city: 'Zürich', units: 'celsius' }]);
      expect(events.flatMap((e) => (e.type === 'text-delta' ? [e.text] : [])).join('')).to.contain('21 °C in Zürich.');
      expect((replay.bodies[0]!['tools'] as Record<string, unknown>[])[0]).to.have.property('eager_input_streaming', true);
      const finish = events.find((e) => e.type === 'finish');
      expect(finish).to.deep.include({ usage: { inputTokens: 412 + 1536, outputTokens: 38, cachedInputTokens: 1536 } });
    });
  });
});
