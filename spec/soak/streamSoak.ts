/**
 * The stream soak: recorded streams split at random bytes (several cuts, any line ending), and
 * synthetic streams with long lines (a text delta of up to a few MiB, multi-byte characters,
 * random chunk sizes), replayed through the SSE parser and each protocol's decoder. Every replay
 * must decode to exactly what the whole stream decodes to; a long line must come out whole, and
 * past `maxEventSize` end with a MalformedStreamError after the events before it.
 *
 * `npm run soak` runs it at full size; spec/soak/streamSoak.spec.ts at a small one.
 */
import type { TurnEvent } from '../../src/core/events/events.js';
import { anthropicStreamDecoder } from '../../src/providers/anthropic.js';
import { openAIStreamDecoder } from '../../src/providers/openai.js';
import { cutAt, decodeChunks, LINE_ENDINGS, recordedResponsesStreams, recordedStreams, type Outcome } from '../support/decodeChunks.js';
import { Rng } from './seeded.js';

export interface StreamSoakOptions {
  readonly runs: number;
  readonly seed: number;
  /** Every how many runs a long-line stream is tried. Defaults to 20. */
  readonly longEvery?: number;
  /** Longest synthetic line, in characters. Defaults to 4 MiB. */
  readonly maxLine?: number;
}

export interface StreamSoakReport {
  readonly runs: number;
  readonly cuts: number;
  readonly longLines: number;
  readonly longestLine: number;
  readonly problems: string[];
}

/** A seeded stream of numbers in [0, 1) (the soaks' mulberry32). */
const random = (seed: number): (() => number) => new Rng(seed).next;

const encoder = new TextEncoder();
const same = (a: Outcome, b: Outcome): boolean => JSON.stringify(a) === JSON.stringify(b);
const PIECES = ['a', 'é', '°', '—', '東', '🌞', ' ', '"', '\\', 'x'];

/** A one-delta stream of `text` in either protocol. */
function longStream(protocol: 'openai' | 'anthropic', text: string): string {
  if (protocol === 'openai') {
    return [
      JSON.stringify({ choices: [{ index: 1, delta: { content: 'ok' } }] }),
      JSON.stringify({ choices: [{ index: 1, delta: { content: text }, finish_reason: 'stop' }] }),
      '[DONE]',
    ]
      .map((d) => `data: ${d}\n\n`)
      .join('');
  }
  return [
    { type: 'message_start', message: { id: 'm', content: [], usage: { input_tokens: 1, output_tokens: 1 } } },
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'ok' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } },
    { type: 'content_block_stop', index: 0 },
    { type: 'message_stop' },
  ]
    .map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`)
    .join('');
}

export function runStreamSoak(options: StreamSoakOptions): StreamSoakReport {
  const rand = random(options.seed);
  const int = (n: number): number => Math.floor(rand() * n);
  const longEvery = options.longEvery ?? 20;
  const maxLine = options.maxLine ?? 4 * 1024 * 1024;
  const problems: string[] = [];
  const streams = [...recordedStreams(), ...recordedResponsesStreams()].flatMap(({ name, text, decoder }) =>
    Object.entries(LINE_ENDINGS).map(([ending, convert]) => {
      const bytes = encoder.encode(convert(text));
      return { label: `${name} (${ending})`, bytes, decoder, whole: decodeChunks([bytes], decoder()) };
    }),
  );
  let cuts = 0;
  let longLines = 0;
  let longestLine = 0;
  for (let run = 0; run < options.runs && problems.length < 20; run++) {
    const stream = streams[int(streams.length)]!;
    const positions = [...new Set(Array.from({ length: 1 + int(30) }, () => 1 + int(stream.bytes.length - 1)))].sort((a, b) => a - b);
    cuts += positions.length;
    const outcome = decodeChunks(cutAt(stream.bytes, positions), stream.decoder());
    if (!same(outcome, stream.whole)) problems.push(`run ${run}: ${stream.label} cut at ${positions.join(',')}: ${JSON.stringify(outcome).slice(0, 300)}`);

    if (run % longEvery !== 0) continue;
    longLines++;
    const length = 1 + int(maxLine);
    longestLine = Math.max(longestLine, length);
    const parts: string[] = [];
    for (let n = 0; n < length;) {
      const piece = PIECES[int(PIECES.length)]!.repeat(1 + int(4096));
      parts.push(piece);
      n += piece.length;
    }
    const text = parts
      .join('')
      .slice(0, length)
      .replace(/[\uD800-\uDBFF]$/, 'x');
    const protocol = rand() < 0.5 ? 'openai' : 'anthropic';
    const bytes = encoder.encode(longStream(protocol, text));
    const chunks: Uint8Array[] = [];
    for (let from = 0; from < bytes.length;) {
      const size = 1 + int(64 * 1024);
      chunks.push(bytes.subarray(from, from + size));
      from += size;
    }
    const decoder = (): ReturnType<typeof openAIStreamDecoder> => (protocol === 'openai' ? openAIStreamDecoder('long') : anthropicStreamDecoder('long'));
    const whole = decodeChunks(chunks, decoder());
    const shown = whole.events.map((e: TurnEvent) => (e.type === 'text-delta' ? e.text : '')).join('');
    if (whole.error !== undefined || shown !== `ok${text}`)
      problems.push(`run ${run}: a ${protocol} line of ${length} characters: ${whole.error?.message ?? 'text differs'}`);
    // a cap below the long event but above the ones before it (each under 300 characters)
    if (length <= 300) continue;
    const capped = decodeChunks(chunks, decoder(), { maxEventSize: 300 + int(length - 300) });
    const first = capped.events[0];
    if (capped.error?.name !== 'MalformedStreamError' || capped.events.length !== 1 || first?.type !== 'text-delta' || first.text !== 'ok') {
      problems.push(`run ${run}: a ${protocol} line of ${length} characters past maxEventSize: ${JSON.stringify(capped).slice(0, 300)}`);
    }
  }
  return { runs: options.runs, cuts, longLines, longestLine, problems };
}

export function formatStreamReport(report: StreamSoakReport, seed: number): string {
  const head = `${report.problems.length === 0 ? 'ok  ' : 'FAIL'}  stream soak: ${report.runs} byte-split replays (${report.cuts} cuts), ${report.longLines} long lines (longest ${report.longestLine} characters), seed ${seed}`;
  return [head, ...report.problems.map((p) => `      ${p}`)].join('\n');
}
