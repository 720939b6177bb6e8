/**
 * Replays a recorded stream, synchronously, as `decodeSse` reads one: bytes chunk by chunk
 * through an `SseParser`, each event into a fresh protocol decoder, completing at the decoder's
 * final event, erroring with what the parser or decoder throws. Shared by the byte-split spec and
 * the stream soak.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { TurnEvent } from '../../src/core/events/events.js';
import { anthropicStreamDecoder } from '../../src/providers/anthropic.js';
import { openAIStreamDecoder } from '../../src/providers/openai.js';
import { responsesDeclaredTools } from '../../src/providers/responses.js';
import { openAIResponsesStreamDecoder } from '../../src/providers/responsesDecoder.js';
import { SseParser, type SseParserOptions } from '../../src/providers/sseParser.js';
import type { StreamDecoder } from '../../src/providers/sse.js';

/** What a replay gave: every event, then how it ended (`undefined`: completed). */
export interface Outcome {
  readonly events: TurnEvent[];
  readonly error?: { readonly name: string; readonly message: string };
}

export function decodeChunks(chunks: Iterable<Uint8Array | string>, decoder: StreamDecoder<TurnEvent>, options?: SseParserOptions): Outcome {
  const parser = new SseParser(options);
  const events: TurnEvent[] = [];
  try {
    for (const chunk of chunks) {
      for (const e of parser.push(chunk)) {
        events.push(...decoder.push(e));
        if (decoder.done) return { events };
      }
    }
    for (const e of parser.end().events) {
      events.push(...decoder.push(e));
      if (decoder.done) return { events };
    }
    decoder.end();
    return { events };
  } catch (error) {
    return { events, error: { name: (error as Error).name, message: (error as Error).message } };
  }
}

/** The bytes cut at the given offsets (sorted, within the length). */
export function cutAt(bytes: Uint8Array, cuts: readonly number[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  let from = 0;
  for (const cut of cuts) {
    out.push(bytes.subarray(from, cut));
    from = cut;
  }
  out.push(bytes.subarray(from));
  return out;
}

/** Every recorded stream in spec/fixtures, with the decoder of its protocol. */
export function recordedStreams(): { name: string; text: string; decoder: () => StreamDecoder<TurnEvent> }[] {
  const dir = new URL('../fixtures/', import.meta.url);
  return readdirSync(dir)
    .filter((f) => f.endsWith('.sse'))
    .sort()
    .map((name) => ({
      name,
      text: readFileSync(new URL(name, dir), 'utf8'),
      decoder: name.startsWith('anthropic') ? () => anthropicStreamDecoder('recorded') : () => openAIStreamDecoder('recorded'),
    }));
}

/** A recorded Responses API response's events as Server-Sent Events: `event: <type>` + `data:` (the API's framing), or `data:` alone. */
export function responsesSse(events: readonly Record<string, unknown>[], framing: 'event+data' | 'data' = 'event+data'): string {
  return events.map((e) => `${framing === 'event+data' ? `event: ${String(e['type'])}\n` : ''}data: ${JSON.stringify(e)}\n\n`).join('');
}

/** The client tools the request of each recorded Responses stream declared (spec/fixtures/openai-responses-*.jsonl). */
export const RESPONSES_DECLARED: Readonly<Record<string, readonly Record<string, unknown>[]>> = {
  'custom-tool': [{ type: 'custom', name: 'write_sql' }],
  shell: [{ type: 'shell' }],
  'mcp-approval': [{ type: 'mcp', server_label: 'zip1' }],
  'apply-patch': [{ type: 'apply_patch' }],
  'local-shell': [{ type: 'local_shell' }],
};

/**
 * Every recorded Responses API stream in spec/fixtures (`openai-responses-<name>.jsonl`), each
 * response as Server-Sent Events, with a decoder that knows the tools its request declared.
 */
export function recordedResponsesStreams(): { name: string; text: string; decoder: () => StreamDecoder<TurnEvent> }[] {
  const dir = new URL('../fixtures/', import.meta.url);
  return readdirSync(dir)
    .filter((f) => f.startsWith('openai-responses-') && f.endsWith('.jsonl'))
    .sort()
    .flatMap((file) => {
      const name = file.slice('openai-responses-'.length, -'.jsonl'.length);
      const responses: Record<string, unknown>[][] = [];
      for (const line of readFileSync(new URL(file, dir), 'utf8').split('\n')) {
        if (line.trim() === '') continue;
        const event = JSON.parse(line) as Record<string, unknown>;
        if (event['type'] === 'response.created' || responses.length === 0) responses.push([]);
        responses[responses.length - 1]!.push(event);
      }
      const declared = responsesDeclaredTools({ tools: RESPONSES_DECLARED[name] ?? [] });
      return responses.map((events, i) => ({
        name: `${file} #${i}`,
        text: responsesSse(events),
        decoder: () => openAIResponsesStreamDecoder('recorded', declared),
      }));
    });
}

/**
 * The byte offsets where a cut is awkward: around every line break and into the field name after
 * it, inside every multi-byte character — at most `limit`, spread evenly over the stream (each cut
 * replays the whole stream: `npm run soak` sweeps them all).
 */
export function awkwardCuts(bytes: Uint8Array, limit = 160): number[] {
  const cuts = new Set<number>();
  for (let i = 1; i < bytes.length; i++) {
    const b = bytes[i]!;
    if ((b & 0xc0) === 0x80) cuts.add(i); // inside a UTF-8 character
    if (b === 0x0a || b === 0x0d) for (let d = -1; d <= 6; d++) if (i + d > 0 && i + d < bytes.length) cuts.add(i + d); // around a line break, into "data: " / "event: "
  }
  const all = [...cuts].sort((a, b) => a - b);
  if (all.length <= limit) return all;
  return Array.from({ length: limit }, (_, k) => all[Math.floor((k * all.length) / limit)]!);
}

/**
 * Every recorded Anthropic Messages stream kept one event per line (`anthropic-*.jsonl`, as
 * vercel/ai records them), as the Server-Sent Events the API sends (`event: <type>` + `data:`).
 */
export function recordedAnthropicStreams(): { name: string; text: string; decoder: () => StreamDecoder<TurnEvent> }[] {
  const dir = new URL('../fixtures/', import.meta.url);
  return readdirSync(dir)
    .filter((f) => f.startsWith('anthropic-') && f.endsWith('.jsonl'))
    .sort()
    .map((name) => ({ name, text: anthropicSse(readFileSync(new URL(name, dir), 'utf8')), decoder: () => anthropicStreamDecoder('recorded') }));
}

/** Events kept one JSON object per line as the Messages API's Server-Sent Events. */
export function anthropicSse(lines: string): string {
  return lines
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => `event: ${String((JSON.parse(line) as { type?: unknown }).type)}\ndata: ${line}\n\n`)
    .join('');
}

/** The three line endings of `text/event-stream`. */
export const LINE_ENDINGS = { LF: (t: string) => t, CRLF: (t: string) => t.replace(/\n/g, '\r\n'), CR: (t: string) => t.replace(/\n/g, '\r') } as const;
