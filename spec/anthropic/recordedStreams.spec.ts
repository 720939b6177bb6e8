/**
 * `fromAnthropic` (the real `@anthropic-ai/sdk`) on vercel/ai's recorded Messages streams
 * (spec/fixtures/SOURCES.md), replayed on loopback as the API sends them: the same events as
 * rxheal's own decoder gives for the same bytes — a server-side fallback, a compaction block
 * (kept opaque, sent back on the next request with its beta), a refusal with its recommended
 * model — and the `anthropic-beta` the request needs.
 */
import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { lastValueFrom, toArray } from 'rxjs';
import { fromAnthropic } from '../../src/anthropic/index.js';
import type { Message } from '../../src/core/events/events.js';
import { streamModel } from '../../src/core/model/model.js';
import { anthropicSse, decodeChunks } from '../support/decodeChunks.js';
import { anthropicStreamDecoder } from '../../src/providers/anthropicDecoder.js';
import { fixture } from '../support/providerFakes.js';

/** Serves `bodies[i]` (Server-Sent Events) to the i-th `POST /v1/messages`, recording each request's headers and body. */
async function replayMessages(bodies: readonly string[]) {
  const requests: { headers: IncomingMessage['headers']; body: Record<string, unknown> }[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({ headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown> });
      const body = bodies[requests.length - 1];
      if (body === undefined)
        return res.writeHead(500, { 'content-type': 'application/json' }).end('{"type":"error","error":{"type":"api_error","message":"no more"}}');
      res.writeHead(200, { 'content-type': 'text/event-stream' }).end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { baseURL: `http://127.0.0.1:${port}`, requests, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('rxheal/anthropic: fromAnthropic on recorded streams (server-side fallback, compaction, refusal)', () => {
  for (const name of ['anthropic-server-fallback.jsonl', 'anthropic-compaction.jsonl', 'anthropic-refusal.jsonl']) {
    it(`${name}: the SDK's events decode exactly as rxheal's own decoder reads the bytes`, async () => {
      const text = anthropicSse(fixture(name));
      const replay = await replayMessages([text]);
      try {
        const claude = fromAnthropic(new Anthropic({ baseURL: replay.baseURL, apiKey: 'test', logLevel: 'off' }), {
          model: 'claude-fable-5',
          max_tokens: 1024,
          ...(name === 'anthropic-server-fallback.jsonl' ? { fallbacks: 'default' } : {}),
        } as never);
        const events = await lastValueFrom(streamModel(claude, { messages: [{ role: 'user', content: 'Hi' }], tools: [] }).pipe(toArray()));
        expect(events).to.deep.equal(decodeChunks([text], anthropicStreamDecoder('recorded')).events);
        if (name === 'anthropic-server-fallback.jsonl') {
          expect(replay.requests[0]!.headers['anthropic-beta']).to.equal('server-side-fallback-2026-07-01');
          expect(replay.requests[0]!.body).to.have.property('fallbacks', 'default');
        }
      } finally {
        await replay.close();
      }
    });
  }

  it('fine-grained tool streaming (the fixture written from the API reference): eager_input_streaming on every tool, the input that is not JSON kept raw, cache reads in usage — as rxheal decodes the bytes', async () => {
    const text = fixture('anthropic-eager-tool-input.sse');
    const replay = await replayMessages([text]);
    try {
      const claude = fromAnthropic(
        new Anthropic({ baseURL: replay.baseURL, apiKey: 'test', logLevel: 'off' }),
        { model: 'claude-sonnet-4-5', max_tokens: 1024 },
        { eagerInputStreaming: true },
      );
      const tools = [{ name: 'get_weather', description: 'The weather' }];
      const events = await lastValueFrom(streamModel(claude, { messages: [{ role: 'user', content: 'Weather in Zürich?' }], tools }).pipe(toArray()));
      expect(events).to.deep.equal(decodeChunks([text], anthropicStreamDecoder('recorded')).events);
      expect(events.find((e) => e.type === 'tool-call')).to.deep.include({ args: '{"city": "Zürich", "units": celsius}' });
      expect(events.at(-1)).to.deep.include({ usage: { inputTokens: 412 + 1536, outputTokens: 38, cachedInputTokens: 1536 } });
      expect((replay.requests[0]!.body['tools'] as Record<string, unknown>[])[0]).to.have.property('eager_input_streaming', true);
    } finally {
      await replay.close();
    }
  });

  it('a compaction turn, then the next: the block goes back first in the assistant turn, with the context-management and compaction betas', async () => {
    const text = anthropicSse(fixture('anthropic-compaction.jsonl'));
    const replay = await replayMessages([text, text]);
    try {
      const params = {
        model: 'claude-opus-4-6',
        max_tokens: 1024,
        context_management: { edits: [{ type: 'compact_20260112', trigger: { type: 'input_tokens', value: 50_000 } }] },
      };
      const claude = fromAnthropic(new Anthropic({ baseURL: replay.baseURL, apiKey: 'test', logLevel: 'off' }), params as never, { cache: { ttl: '1h' } });
      const first = await lastValueFrom(streamModel(claude, { messages: [{ role: 'user', content: 'Summarise' }], tools: [] }).pipe(toArray()));
      const end = first.find((e) => e.type === 'reasoning-end');
      const answer = first.flatMap((e) => (e.type === 'text-delta' ? [e.text] : [])).join('');
      const history: Message[] = [
        { role: 'user', content: 'Summarise' },
        {
          role: 'assistant',
          content: answer,
          reasoning: [{ text: '', ...(end?.type === 'reasoning-end' && end.providerMetadata ? { providerMetadata: end.providerMetadata } : {}) }],
        },
        { role: 'user', content: 'And the algorithms?' },
      ];
      await lastValueFrom(streamModel(claude, { messages: history, tools: [] }).pipe(toArray()));
      const [one, two] = replay.requests;
      expect(one!.headers['anthropic-beta']).to.equal('context-management-2025-06-27,compact-2026-01-12');
      const assistant = (two!.body['messages'] as { role: string; content: Record<string, unknown>[] }[])[1]!;
      expect(assistant.role).to.equal('assistant');
      expect(assistant.content[0]).to.have.property('type', 'compaction');
      expect(String(assistant.content[0]!['content'])).to.contain('## Summary of Conversation');
      expect(assistant.content[1]).to.have.property('type', 'text');
      const last = (two!.body['messages'] as { content: Record<string, unknown>[] }[]).at(-1)!.content.at(-1)!;
      expect(last['cache_control']).to.deep.equal({ type: 'ephemeral', ttl: '1h' });
    } finally {
      await replay.close();
    }
  });
});
