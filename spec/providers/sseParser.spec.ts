/** The Server-Sent Events parser (src/providers/sseParser.ts): the WHATWG reading, chunk boundaries anywhere, long lines in linear time, the event size cap. */
import { expect } from 'chai';
import { classifyError } from '../../src/core/errors/classify.js';
import { InvalidOptionError, MalformedStreamError } from '../../src/core/errors/errors.js';
import { DEFAULT_MAX_EVENT_SIZE, SseParser, parseSse, type SseEvent } from '../../src/providers/sseParser.js';

const encoder = new TextEncoder();

/** Feeds `text` to a parser cut at the given offsets (in bytes); returns every event. */
function parseCut(text: string | Uint8Array, cuts: readonly number[]): SseEvent[] {
  const bytes = typeof text === 'string' ? encoder.encode(text) : text;
  const parser = new SseParser();
  const events: SseEvent[] = [];
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    events.push(...parser.push(bytes.subarray(from, cut)));
    from = cut;
  }
  events.push(...parser.end().events);
  return events;
}

function parseSseCapped(text: string, maxEventSize: number): SseEvent[] {
  const parser = new SseParser({ maxEventSize });
  return [...parser.push(text), ...parser.end().events];
}

function parseCutCapped(text: string, cut: number, maxEventSize: number): SseEvent[] {
  const parser = new SseParser({ maxEventSize });
  return [...parser.push(text.slice(0, cut)), ...parser.push(text.slice(cut)), ...parser.end().events];
}

describe('SSE', () => {
  describe('SseParser', () => {
    it('dispatches an event at a blank line: event type, data, default type "message"', () => {
      expect(parseSse('event: ping\ndata: {"type":"ping"}\n\ndata: [DONE]\n\n')).to.deep.equal([
        { event: 'ping', data: '{"type":"ping"}' },
        { event: 'message', data: '[DONE]' },
      ]);
    });

    it('joins several data lines with \\n and ignores comments', () => {
      expect(parseSse(': hello\ndata: a\n: between\ndata:b\ndata:  c\n\n')).to.deep.equal([{ event: 'message', data: 'a\nb\n c' }]);
    });

    it('accepts LF, CR and CRLF line endings, mixed', () => {
      expect(parseSse('data: a\r\n\r\ndata: b\r\rdata: c\n\nevent: x\r\ndata: d\n\r\n')).to.deep.equal([
        { event: 'message', data: 'a' },
        { event: 'message', data: 'b' },
        { event: 'message', data: 'c' },
        { event: 'x', data: 'd' },
      ]);
    });

    it('treats a CR at the end of a chunk and a LF at the start of the next as one line break', () => {
      const parser = new SseParser();
      expect(parser.push('data: a\r')).to.deep.equal([]);
      expect(parser.push('\ndata: b\r')).to.deep.equal([]);
      expect(parser.push('\n\r')).to.deep.equal([{ event: 'message', data: 'a\nb' }]);
      expect(parser.push('\n')).to.deep.equal([]);
    });

    it('gives the same events wherever the chunks are cut (every single and double cut, CRLF and UTF-8)', () => {
      const text = 'event: delta\r\ndata: {"text":"22 °C 🌞"}\r\n\r\n: c\r\ndata: x\r\ndata: y\r\n\r\ndata: [DONE]\r\n\r\n';
      const bytes = encoder.encode(text);
      const whole = parseSse(text);
      expect(whole).to.have.length(3);
      expect(whole[0]).to.deep.equal({ event: 'delta', data: '{"text":"22 °C 🌞"}' });
      for (let i = 0; i <= bytes.length; i++) {
        expect(parseCut(bytes, [i]), `cut at ${i}`).to.deep.equal(whole);
        for (let j = i; j <= bytes.length; j += 3) expect(parseCut(bytes, [i, j]), `cuts at ${i}, ${j}`).to.deep.equal(whole);
      }
      expect(parseCut(bytes, [...bytes.keys()].slice(1)), 'byte by byte').to.deep.equal(whole);
    });

    it('decodes multi-byte UTF-8 split across chunks', () => {
      const bytes = encoder.encode('data: 🌞é\n\n');
      expect(parseCut(bytes, [7, 8, 9, 11])).to.deep.equal([{ event: 'message', data: '🌞é' }]);
    });

    it('skips a leading BOM (bytes or text), only at the start', () => {
      expect(parseCut(new Uint8Array([0xef, 0xbb, 0xbf, ...encoder.encode('data: a\n\n')]), [1, 2])).to.deep.equal([{ event: 'message', data: 'a' }]);
      expect(parseSse('\ufeffdata: a\n\n')).to.deep.equal([{ event: 'message', data: 'a' }]);
    });

    it('strips one space after the colon; a field without a colon has an empty value', () => {
      expect(parseSse('data:  two\n\ndata\n\n')).to.deep.equal([
        { event: 'message', data: ' two' },
        { event: 'message', data: '' },
      ]);
    });

    it('drops an event without data, and resets the event type after each blank line', () => {
      expect(parseSse('event: lonely\n\ndata: x\n\n')).to.deep.equal([{ event: 'message', data: 'x' }]);
    });

    it('keeps the last event id and reads retry; ignores unknown fields', () => {
      expect(parseSse('id: 7\nretry: 1500\nfoo: bar\ndata: a\n\ndata: b\n\nretry: soon\nid\ndata: c\n\n')).to.deep.equal([
        { event: 'message', data: 'a', id: '7', retry: 1500 },
        { event: 'message', data: 'b', id: '7' },
        { event: 'message', data: 'c', id: '' },
      ]);
    });

    it('discards an unterminated last event at the end, and says so (pending)', () => {
      const parser = new SseParser();
      expect(parser.push('data: a\n\ndata: {"cut')).to.deep.equal([{ event: 'message', data: 'a' }]);
      expect(parser.end()).to.deep.equal({ events: [], pending: true });
      const clean = new SseParser();
      clean.push('data: a\n\n');
      expect(clean.end()).to.deep.equal({ events: [], pending: false });
      const fieldsOnly = new SseParser();
      fieldsOnly.push('data: a\n');
      expect(fieldsOnly.end().pending, 'a complete line but no blank line').to.equal(true);
    });
  });

  describe('SseParser on long lines and large events', () => {
    it('is linear on long lines: an 8 MiB line in 16 KiB chunks is scanned once (it took 144 s)', () => {
      const parser = new SseParser();
      const chunk = encoder.encode('x'.repeat(16 * 1024));
      expect(parser.push('data: ')).to.deep.equal([]);
      for (let i = 0; i < 512; i++) expect(parser.push(chunk)).to.deep.equal([]);
      const [event] = parser.push('\n\n');
      expect(event?.data.length).to.equal(8 * 1024 * 1024);
    });

    it('caps an event at 16 MiB by default (DEFAULT_MAX_EVENT_SIZE): past it, a MalformedStreamError naming maxEventSize (a provider fault: bad_gateway)', () => {
      expect(DEFAULT_MAX_EVENT_SIZE).to.equal(16 * 1024 * 1024);
      const parser = new SseParser({ model: 'openai:gpt' });
      const mib = 'y'.repeat(1024 * 1024);
      parser.push('data: ');
      for (let i = 0; i < 15; i++) parser.push(mib);
      let error: unknown;
      try {
        parser.push(mib);
      } catch (e) {
        error = e;
      }
      expect(error).to.be.instanceOf(MalformedStreamError);
      expect((error as MalformedStreamError).model).to.equal('openai:gpt');
      expect((error as Error).message).to.contain(`larger than maxEventSize (${16 * 1024 * 1024} characters)`);
      expect((error as MalformedStreamError).data).to.have.length.at.most(501);
      expect(classifyError(error)).to.deep.equal({ retryable: true, fallback: true, category: 'bad_gateway', strategy: 'exponential_backoff' });
    });

    it('counts the whole event: data lines, the event type and the line being read, whether chunks cut it or not', () => {
      expect(parseSseCapped('data: 12345\n\n', 6)).to.deep.equal([{ event: 'message', data: '12345' }]);
      expect(() => parseSseCapped('data: 123456\n\n', 6)).to.throw(MalformedStreamError, 'maxEventSize (6 characters)');
      expect(() => parseSseCapped('data: 12\ndata: 34\ndata: 5\n\n', 6)).to.throw(MalformedStreamError);
      expect(() => parseSseCapped('event: 1234567\ndata: x\n\n', 6)).to.throw(MalformedStreamError);
      for (let cut = 0; cut < 14; cut++) expect(() => parseCutCapped('data: 1234567\n\n', cut, 6), `cut at ${cut}`).to.throw(MalformedStreamError);
      // each event is counted on its own
      expect(parseSseCapped('data: 123\n\ndata: 456\n\n', 6)).to.have.length(2);
      // the events completed before an oversized one are returned; the next call throws
      const parser = new SseParser({ maxEventSize: 6 });
      expect(parser.push('data: a\n\ndata: 1234567')).to.deep.equal([{ event: 'message', data: 'a' }]);
      expect(() => parser.push('')).to.throw(MalformedStreamError);
      expect(() => parser.end()).to.throw(MalformedStreamError);
      // comments are not kept: they do not count
      expect(parseSseCapped(': a long comment\ndata: 1\n\n', 6)).to.deep.equal([{ event: 'message', data: '1' }]);
    });

    it('validates its options', () => {
      expect(() => new SseParser({ maxEventSize: 0 })).to.throw(InvalidOptionError, 'maxEventSize');
      expect(() => new SseParser({ maxEventSize: 1.5 })).to.throw(InvalidOptionError, 'maxEventSize');
      expect(() => new SseParser({ maxSize: 1 } as never)).to.throw(InvalidOptionError, 'maxSize');
    });
  });
});
