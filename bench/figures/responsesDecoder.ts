/**
 * (m) OpenAI's Responses stream read from its bytes: rxheal's `SseParser` + `ResponsesDecoder`
 * (what `openAIResponsesModel` runs per chunk: SSE framing, `JSON.parse`, the state machine that
 * makes text, reasoning and tool-call events) against the `openai` SDK's own stream parsing of
 * the same bytes (`Stream.fromSSEResponse` on a `Response`, iterated: SSE framing and
 * `JSON.parse`, no state machine). The bytes: spec/fixtures/openai-responses-codex-calculator.jsonl,
 * a recorded gpt-5.1-codex-max run with reasoning (summaries and encrypted content) and function
 * calls — four responses, each as its own SSE body (`event:` + `data:` per event, as the API
 * frames them) cut into 1 KiB chunks, a fresh decoder / stream per response. Both sides read
 * the body through its `ReadableStream` reader. ns per event, interleaved, paired ratio.
 *
 * Run alone: `npx tsx bench/figures/responsesDecoder.ts`.
 */
import { readFileSync } from 'node:fs';
import { Stream } from 'openai/streaming';
import { interleave, pairedRatio, rowsOf, type Row, type Samples, type Stats } from '../lib/harness.js';
import { loadLib, ROOT } from '../lib/rxheal.js';

export const FIGURE = 'm. Responses stream, bytes to events';
const SDK = 'openai Stream.fromSSEResponse (SSE + JSON.parse)';
const RXHEAL = 'SseParser + ResponsesDecoder (SSE + JSON.parse + the state machine)';
const FIXTURE = 'spec/fixtures/openai-responses-codex-calculator.jsonl';
const CHUNK = 1024;

type Lib = typeof import('../../src/providers/index.js');

const loadProviders = (): Promise<Lib> => loadLib<Lib>(process.env['BENCH_LIB_ROOT'] ?? ROOT, 'providers', "export * from './src/providers/index.ts';");

/** The fixture's responses, each its SSE body in chunks, and how many events in all. */
function bodies(): { chunks: Uint8Array[][]; events: number } {
  const responses: string[][] = [];
  for (const line of readFileSync(new URL(`../../${FIXTURE}`, import.meta.url), 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    const event = JSON.parse(line) as { type: string };
    if (event.type === 'response.created' || responses.length === 0) responses.push([]);
    responses.at(-1)!.push(`event: ${event.type}\ndata: ${line}\n\n`);
  }
  const encoder = new TextEncoder();
  const chunks = responses.map((frames) => {
    const bytes = encoder.encode(frames.join(''));
    const out: Uint8Array[] = [];
    for (let i = 0; i < bytes.length; i += CHUNK) out.push(bytes.subarray(i, i + CHUNK));
    return out;
  });
  return { chunks, events: responses.reduce((n, r) => n + r.length, 0) };
}

const body = (chunks: readonly Uint8Array[]): ReadableStream<Uint8Array> =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });

export async function responsesDecoding(options: {
  n: number;
  reps: number;
  warmup: number;
}): Promise<{ rows: Row[]; ratio: Stats; events: number; outputs: number }> {
  const lib = await loadProviders();
  const { chunks, events } = bodies();
  let outputs = 0;
  const rxheal = async (): Promise<void> => {
    for (const response of chunks) {
      const reader = body(response).getReader();
      const parser = new lib.SseParser({ model: 'bench' });
      const decoder = new lib.ResponsesDecoder('bench');
      for (;;) {
        const { done, value } = await reader.read();
        for (const event of done ? parser.end().events : parser.push(value)) outputs += decoder.push(event).length;
        if (done) break;
      }
      decoder.end();
    }
  };
  const sdk = async (): Promise<void> => {
    for (const response of chunks) {
      const stream = Stream.fromSSEResponse<{ type: string }>(new Response(body(response)), new AbortController());
      for await (const event of stream) if (event.type === '') outputs++;
    }
  };
  // run(n): n passes over the four responses; ns per event below
  const samples = await interleave(
    [
      {
        name: SDK,
        run: async (n) => {
          for (let i = 0; i < n; i++) await sdk();
        },
      },
      {
        name: RXHEAL,
        run: async (n) => {
          for (let i = 0; i < n; i++) await rxheal();
        },
      },
    ],
    options,
  );
  const perEvent: Samples = new Map([...samples].map(([name, xs]) => [name, xs.map((x) => x / events)]));
  return {
    rows: rowsOf(FIGURE, 'ns/event', perEvent, SDK, {
      [RXHEAL]: `${events} events (4 responses: reasoning with encrypted content, function calls), ${CHUNK} B chunks`,
    }),
    ratio: pairedRatio(perEvent, RXHEAL, SDK),
    events,
    outputs,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const quick = process.env['BENCH_QUICK'] === '1';
  const { rows, ratio } = await responsesDecoding(quick ? { n: 50, reps: 5, warmup: 2 } : { n: 300, reps: 21, warmup: 5 });
  for (const row of rows) console.log(`${row.name}: ${Math.round(row.value)} ns/event (${Math.round(row.min ?? 0)}–${Math.round(row.max ?? 0)})`);
  console.log(`rxheal / openai SDK: ${ratio.median.toFixed(2)}× (${ratio.min.toFixed(2)}–${ratio.max.toFixed(2)})`);
}
