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

/** The three line endings of `text/event-stream`. */
export const LINE_ENDINGS = { LF: (t: string) => t, CRLF: (t: string) => t.replace(/\n/g, '\r\n'), CR: (t: string) => t.replace(/\n/g, '\r') } as const;
