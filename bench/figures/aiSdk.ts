/**
 * (i) The cost of healing an AI SDK stream, per text delta: `streamText` over
 * `toAiSdk(fallbackModel([fromAiSdk(m) with retries, fromAiSdk(m2)], { breakers, midStream:
 * 'continue' }))` against plain `streamText` over `m`, the same `MockLanguageModelV3` stream
 * (`simulateReadableStream` with null delays: no timers), read to the end. The overhead is the
 * paired difference over plain `streamText`'s own cost per delta.
 *
 * Beside it, the floor of any AI SDK adapter: `m`'s parts re-enqueued, part by part, into a second
 * `ReadableStream` and read to the end — the interface's own price for a stream between two
 * streams, which no adapter can go below. What rxheal adds beyond that hop is its own code: the
 * two adapters' mapping and the healing pipeline.
 *
 * The adapter and the operators are bundled from `src/` with esbuild by `lib/rxheal.ts`, as for
 * the other figures (no `tsx` per-closure `__name` calls).
 */
import type { LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { streamText } from 'ai';
import { MockLanguageModelV3, simulateReadableStream } from 'ai/test';
import { interleave, rowsOf, stats, type Row, type Stats } from '../lib/harness.js';
import { loadLib, ROOT } from '../lib/rxheal.js';

export const FIGURE = 'i. AI SDK adapters, per text delta';
const PLAIN = 'streamText(m)';
const HEALED = 'streamText(toAiSdk(fallbackModel([fromAiSdk(m) + retry, fromAiSdk(m2)], breakers, continue)))';
const FLOOR = 'm.doStream read directly';
const HOP = 'm.doStream re-enqueued into a second ReadableStream, read directly (the floor of any adapter)';
const HEALED_BARE = 'the healed model’s doStream read directly (no streamText)';

type Adapter = typeof import('../../src/ai-sdk/index.js') &
  Pick<typeof import('../../src/index.js'), 'fallbackModel' | 'retryWithBackoff' | 'streamModel' | 'CircuitBreakerRegistry'>;

/**
 * The adapter and the operators it is healed with, bundled from `src/` like the other figures'
 * library (`BENCH_LIB_ROOT` points at another checkout's, for a before/after).
 */
const loadAdapter = (): Promise<Adapter> =>
  loadLib<Adapter>(
    process.env['BENCH_LIB_ROOT'] ?? ROOT,
    'ai-sdk',
    [
      "export * from './src/ai-sdk/index.ts';",
      "export { fallbackModel } from './src/sources/fallbackModel.ts';",
      "export { retryWithBackoff } from './src/operators/retryWithBackoff.ts';",
      "export { streamModel } from './src/core/model/model.ts';",
      "export { CircuitBreakerRegistry } from './src/core/breaker/registry.ts';",
    ].join('\n'),
  );

/** A model streaming `deltas` text deltas then a finish, from a fresh stream per call. */
function mockModel(deltas: number): MockLanguageModelV3 {
  const chunks: LanguageModelV3StreamPart[] = [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 't' },
  ];
  for (let i = 0; i < deltas; i++) chunks.push({ type: 'text-delta', id: 't', delta: 'token ' });
  chunks.push(
    { type: 'text-end', id: 't' },
    {
      type: 'finish',
      finishReason: { unified: 'stop', raw: 'stop' },
      usage: { inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: deltas, text: deltas, reasoning: 0 } },
    },
  );
  return new MockLanguageModelV3({
    doStream: () => Promise.resolve({ stream: simulateReadableStream({ chunks, initialDelayInMs: null, chunkDelayInMs: null }) }),
  });
}

/**
 * `model` behind the cheapest hop a stream adapter can make: a second `ReadableStream` whose
 * `start` reads the first and enqueues each part as it comes (a high-water mark of 0: no pull to
 * call after each part, as in `toAiSdk`).
 */
function reEnqueued(model: MockLanguageModelV3): { doStream: MockLanguageModelV3['doStream'] } {
  return {
    doStream: async (options) => {
      const { stream: inner, ...rest } = await model.doStream(options);
      const reader = inner.getReader();
      const stream = new ReadableStream<LanguageModelV3StreamPart>(
        {
          start(controller) {
            const fail = (error: unknown): void => controller.error(error);
            const onRead = (result: ReadableStreamReadResult<LanguageModelV3StreamPart>): void => {
              if (result.done) return controller.close();
              controller.enqueue(result.value);
              reader.read().then(onRead, fail);
            };
            reader.read().then(onRead, fail);
          },
          cancel: (reason) => reader.cancel(reason),
        },
        { highWaterMark: 0 },
      );
      return { ...rest, stream };
    },
  };
}

export async function aiSdkOverhead(options: {
  n: number;
  reps: number;
  warmup: number;
}): Promise<{ rows: Row[]; overhead: Stats; endToEnd: Stats; hop: Stats; beyondHop: Stats }> {
  const { CircuitBreakerRegistry, fallbackModel, fromAiSdk, retryWithBackoff, streamModel, toAiSdk } = await loadAdapter();
  const breakers = new CircuitBreakerRegistry({ failureThreshold: 3, resetTimeoutMs: 60_000 });
  const n = options.n;
  const plain = mockModel(n);
  const hopped = reEnqueued(plain);
  const primary = fromAiSdk(mockModel(n), { id: 'primary' });
  const retried = {
    id: primary.id,
    stream: (request: Parameters<typeof primary.stream>[0]) => streamModel(primary, request).pipe(retryWithBackoff({ maxRetries: 2 })),
  };
  const healed = toAiSdk(fallbackModel([retried, fromAiSdk(mockModel(n), { id: 'backup' })], { breakers, midStream: 'continue' }));

  const consume = async (model: Parameters<typeof streamText>[0]['model']): Promise<void> => {
    const result = streamText({ model, prompt: 'Hi', maxRetries: 0 });
    let length = 0;
    for await (const delta of result.textStream) length += delta.length;
    if (length !== 6 * n) throw new Error(`expected ${6 * n} characters, got ${length}`);
  };
  /** Reads a model's doStream to the end, counting its text deltas. */
  const read = async (model: { doStream: typeof plain.doStream }): Promise<void> => {
    const { stream } = await model.doStream({ prompt: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }] });
    const reader = stream.getReader();
    let deltas = 0;
    for (let r = await reader.read(); !r.done; r = await reader.read()) if (r.value.type === 'text-delta') deltas++;
    if (deltas !== n) throw new Error(`expected ${n} deltas, got ${deltas}`);
  };

  // every case streams n deltas per run: run(k) is called with k = n (ns per delta)
  const samples = await interleave(
    [
      { name: PLAIN, run: () => consume(plain) },
      { name: HEALED, run: () => consume(healed) },
      { name: FLOOR, run: () => read(plain) },
      { name: HOP, run: () => read(hopped) },
      { name: HEALED_BARE, run: () => read(healed) },
    ],
    options,
  );
  const at = (name: string): number[] => samples.get(name)!;
  // end to end: what streamText over the healed model costs more, per delta, than over m (paired)
  const endToEnd = stats(at(HEALED).map((x, i) => (x - at(PLAIN)[i]!) / at(PLAIN)[i]!));
  // what rxheal adds per delta (the healed model's stream over m's own, both without streamText),
  // as a share of what streamText costs per delta: far less noisy than the difference of two
  // streamText runs
  const own = stats(at(HEALED_BARE).map((x, i) => x - at(FLOOR)[i]!));
  const overhead = stats(at(HEALED_BARE).map((x, i) => (x - at(FLOOR)[i]!) / at(PLAIN)[i]!));
  // of that, the interface's own price (the hop), and what rxheal's code adds beyond it
  const hopNs = stats(at(HOP).map((x, i) => x - at(FLOOR)[i]!));
  const hop = stats(at(HOP).map((x, i) => (x - at(FLOOR)[i]!) / at(PLAIN)[i]!));
  const beyondNs = stats(at(HEALED_BARE).map((x, i) => x - at(HOP)[i]!));
  const beyondHop = stats(at(HEALED_BARE).map((x, i) => (x - at(HOP)[i]!) / at(PLAIN)[i]!));
  const pct = (s: Stats): string => `${(s.median * 100).toFixed(1)} % (${(s.min * 100).toFixed(1)}–${(s.max * 100).toFixed(1)} %)`;
  const rows = rowsOf(FIGURE, 'ns/delta', samples, PLAIN, {
    [HEALED]: `end to end, paired: +${pct(endToEnd)} over plain streamText`,
    [HOP]: `the interface's own price: ${hopNs.median.toFixed(0)} ns/delta over m's stream = ${pct(hop)} of streamText's cost per delta`,
    [HEALED_BARE]: `rxheal's own cost: ${own.median.toFixed(0)} ns/delta over m's stream = ${pct(overhead)} of streamText's cost per delta; beyond the hop: ${beyondNs.median.toFixed(0)} ns/delta = ${pct(beyondHop)}`,
  });
  return { rows, overhead, endToEnd, hop, beyondHop };
}
