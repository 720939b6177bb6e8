import { expect } from 'chai';
import { cutAt, decodeChunks, LINE_ENDINGS, recordedStreams } from '../support/decodeChunks.js';

const encoder = new TextEncoder();

describe('recorded streams split at every byte', () => {
  const streams = recordedStreams();

  it('covers the recorded fixtures: index-1 gateways, reasoning models, cache tokens, thinking, tool_use, multi-byte text', () => {
    const names = streams.map((s) => s.name);
    for (const name of ['openai-index1-gateway.sse', 'openai-reasoning-content.sse', 'anthropic-cache-thinking.sse', 'anthropic-tool-use.sse'])
      expect(names).to.include(name);
    for (const { text } of streams) expect(encoder.encode(text).length).to.be.greaterThan(text.length - 1);
  });

  it('the new fixtures decode to their answers', () => {
    const byName = Object.fromEntries(streams.map((s) => [s.name, decodeChunks([encoder.encode(s.text)], s.decoder())]));
    expect(byName['openai-index1-gateway.sse']).to.deep.equal({
      events: [
        { type: 'reasoning-delta', text: 'The user asks about the weather; ' },
        { type: 'reasoning-delta', text: 'answer briefly.' },
        { type: 'text-delta', text: 'Sunny, 22 °C' },
        { type: 'text-delta', text: ' in Zürich ☀️.' },
        { type: 'finish', reason: 'stop', usage: { inputTokens: 14, outputTokens: 61, reasoningTokens: 48 } },
      ],
    });
    expect(byName['openai-reasoning-content.sse']).to.deep.equal({
      events: [
        { type: 'reasoning-delta', text: 'Weather needs a tool.' },
        { type: 'text-delta', text: 'Let me' },
        { type: 'text-delta', text: ' check — 東京.' },
        { type: 'tool-call', id: 'call_0_8f2a7c1e', name: 'get_weather', args: { city: 'Tōkyō', units: 'celsius' } },
        { type: 'finish', reason: 'tool-calls', usage: { inputTokens: 96, outputTokens: 40, cachedInputTokens: 64, reasoningTokens: 12 } },
      ],
    });
    expect(byName['anthropic-cache-thinking.sse']).to.deep.equal({
      events: [
        { type: 'reasoning-delta', text: 'Oslo weather: use the tool.' },
        { type: 'reasoning-end', signature: 'ErUBCkYIBxgCIkB3f0K9pQm2Zx8nV4tLc1Yw6Hs7JdRa5UbEo3GiTk0NqPvWy9MxCz2Ah8BfLr4Dj6Es1Kt7Gu' },
        { type: 'text-delta', text: 'Checking Oslo — ' },
        { type: 'text-delta', text: 'one moment ⏳' },
        { type: 'tool-call', id: 'toolu_01Jx4Vb8Nq2Tz6Wc1Hs9Lp3R', name: 'get_weather', args: { city: 'Oslo', units: 'celsius' } },
        { type: 'finish', reason: 'tool-calls', usage: { inputTokens: 17 + 2048 + 4096, outputTokens: 112, cachedInputTokens: 4096, cacheWriteTokens: 2048 } },
      ],
    });
  });

  for (const { name, text, decoder } of streams) {
    for (const [ending, convert] of Object.entries(LINE_ENDINGS)) {
      it(`${name}, ${ending}: every cut (inside UTF-8 characters too) decodes to exactly the same events and end`, () => {
        const bytes = encoder.encode(convert(text));
        const whole = decodeChunks([bytes], decoder());
        if (ending === 'LF') expect(decodeChunks([text], decoder()), 'bytes or text').to.deep.equal(whole);
        else expect(whole, 'the same as with LF').to.deep.equal(decodeChunks([encoder.encode(text)], decoder()));
        let insideCharacter = 0;
        for (let i = 1; i < bytes.length; i++) {
          if ((bytes[i]! & 0xc0) === 0x80) insideCharacter++;
          const outcome = decodeChunks(cutAt(bytes, [i]), decoder());
          if (outcome.events.length !== whole.events.length || JSON.stringify(outcome) !== JSON.stringify(whole))
            expect(outcome, `cut at byte ${i}`).to.deep.equal(whole);
        }
        expect(decodeChunks(cutAt(bytes, [...bytes.keys()].slice(1)), decoder()), 'byte by byte').to.deep.equal(whole);
        if ([...text].some((c) => c.charCodeAt(0) > 0x7f)) expect(insideCharacter, 'cuts inside a multi-byte character').to.be.greaterThan(0);
      });
    }
  }
});
