/**
 * (g) Streaming: what rxheal adds to a model's token stream, against the AI SDK's `streamText` on
 * the same source. The source is a `MockLanguageModelV3` streaming `simulateReadableStream` with
 * `null` delays (no timers): an async source that costs what reading a stream costs. Rows:
 * ns per text delta over a 10 000-delta answer, time to the first delta (its overhead over the
 * raw source), and retained heap per stream waiting for its first delta.
 *
 * - raw source: `doStream()`, then every part read off the ReadableStream.
 * - rxheal source: the same stream as an rxheal `Model` (each part read and mapped to an event):
 *   what the healing pipeline is built on, its "own source".
 * - `streamModel(model)`: the turn contract (finish) and the abort signal.
 * - healing pipeline: `fallbackModel([healed(a), healed(b)], { breakers, midStream: 'continue' })`
 *   where `healed(m)` is `streamModel(m).pipe(retryWithBackoff())`, each model behind its
 *   breaker, then `degradeAfter({ firstMs: 30 000 })`.
 * - `runAgent` on that model, with the same `degradeAfter` as its model pipeline: one turn.
 * - AI SDK 6 `streamText({ model, prompt })`, its `textStream` read to the end.
 *
 * Two ways to compare per delta, both in the same interleaved run: the rows above put rxheal on
 * the very stream `streamText` reads (reading that stream alone costs ~0.02–0.03× `streamText`,
 * so no pipeline on it can be under 0.02×); the first measure took rxheal on an async source instead
 * — the `generator` rows: the same answer (same deltas, same text) from an async generator
 * through `fromAsyncIterable`, then the same healing pipeline and `runAgent` — against
 * `streamText` on its mock.
 */
import { streamText } from 'ai';
import type { Observable } from 'rxjs';
import { interleave, retainedPerItem, stats, type Case, type Row, type Samples } from '../lib/harness.js';
import { aiSdk, lib } from '../lib/rxheal.js';
import type { Model, ModelRequest, TurnEvent } from '../../src/index.js';

const { CircuitBreakerRegistry, degradeAfter, fallbackModel, retryWithBackoff, runAgent, streamModel } = lib;
const { answerParts, generatorModel, mockModel, readRaw, rxhealModel } = aiSdk;

export const FIGURE = 'g. streaming';
export const NAMES = {
  raw: 'raw source (doStream + ReadableStream reads)',
  source: 'rxheal source (the same stream as a Model)',
  streamModel: 'rxheal streamModel(model)',
  pipeline: 'rxheal healing pipeline (fallbackModel + retry + breaker + degradeAfter)',
  runAgent: 'rxheal runAgent (one turn, the healing pipeline)',
  streamText: 'AI SDK 6 streamText, textStream',
  generator: 'async generator source: the same answer through fromAsyncIterable, no AI SDK stream',
  generatorPipeline: 'rxheal healing pipeline on the async generator source (each on its own source)',
  generatorRunAgent: 'rxheal runAgent on the async generator source (each on its own source)',
} as const;

/** The cases on the AI SDK mock's stream (time to first delta and idle heap are measured for these). */
const SAME_STREAM = ['raw', 'source', 'streamModel', 'pipeline', 'runAgent', 'streamText'] as const;
type SameStream = (typeof SAME_STREAM)[number];
/** The cases on the async generator, and what each is paired with as its own source. */
const GENERATOR = ['generator', 'generatorPipeline', 'generatorRunAgent'] as const;

const REQUEST: ModelRequest = { messages: [{ role: 'user', content: 'hi' }], tools: [] };
const FIRST_MS = 30_000;

/** The healing pipeline over two models (the second never called while the first answers); operators made once. */
export function healing(primary: Model, secondary: Model): { model: Model; pipeline: () => Observable<unknown> } {
  const breakers = new CircuitBreakerRegistry({ failureThreshold: 5 });
  const retry = retryWithBackoff<TurnEvent>();
  const healed = (m: Model): Model => ({ id: m.id, stream: (request) => streamModel(m, request).pipe(retry) });
  const model = fallbackModel([healed(primary), healed(secondary)], { breakers, midStream: 'continue' });
  const deadline = degradeAfter<TurnEvent, TurnEvent>({ firstMs: FIRST_MS }, DEGRADED);
  return { model, pipeline: () => streamModel(model, REQUEST).pipe(deadline) };
}

const DEGRADED: TurnEvent = { type: 'finish', reason: 'other' };
const TURN_DEADLINE = degradeAfter<TurnEvent, TurnEvent>({ firstMs: FIRST_MS }, DEGRADED);

/** The same deadline around the turn (made once, as an application would). */
const MODEL_PIPELINE = (_req: ModelRequest, turn$: Observable<TurnEvent>): Observable<TurnEvent> => turn$.pipe(TURN_DEADLINE);

/** A run of one turn on `model`, the same deadline around the turn. */
export function agentRun(model: Model): Observable<unknown> {
  return runAgent({ model, messages: REQUEST.messages, modelPipeline: MODEL_PIPELINE });
}

/** {@link agentRun}, journaled: `runId` in `journal` (figure q: the journal's cost per delta). */
export function journaledAgentRun(model: Model, journal: NonNullable<Parameters<typeof runAgent>[0]['journal']>, runId: string): Observable<unknown> {
  return runAgent({ model, messages: REQUEST.messages, modelPipeline: MODEL_PIPELINE, journal, runId, holder: 'bench' });
}

/** An observer for streams left waiting (one for all: no closure per stream in the heap figures). */
export const QUIET = { error: (): void => undefined };

/** Subscribes and resolves at completion; `onFirst` at the first text delta. */
function drain(o: Observable<unknown>, onFirst?: () => void): Promise<void> {
  return new Promise((resolve, reject) => {
    let first = true;
    o.subscribe({
      next: (e) => {
        if (first && (e as TurnEvent).type === 'text-delta') {
          first = false;
          onFirst?.();
        }
      },
      error: reject,
      complete: resolve,
    });
  });
}

async function drainText(model: ReturnType<typeof mockModel>, onFirst?: () => void): Promise<void> {
  const result = streamText({ model, prompt: 'hi' });
  let first = true;
  for await (const text of result.textStream) {
    if (first && text !== '') {
      first = false;
      onFirst?.();
    }
  }
}

/** One answer of each kind on `mock` (and a second, unused model for the fallback); the generator's answers have `deltas` deltas too. */
function answerers(mock: ReturnType<typeof mockModel>, deltas: number): Record<keyof typeof NAMES, (onFirst?: () => void) => Promise<unknown>> {
  const source = rxhealModel(mock, 'primary');
  const { model, pipeline } = healing(source, rxhealModel(mock, 'secondary'));
  const generator = generatorModel(lib.fromAsyncIterable, deltas, 'primary');
  const onGenerator = healing(generator, generatorModel(lib.fromAsyncIterable, deltas, 'secondary'));
  return {
    generator: (onFirst) => drain(generator.stream(REQUEST, { signal: new AbortController().signal }) as Observable<TurnEvent>, onFirst),
    generatorPipeline: (onFirst) => drain(onGenerator.pipeline(), onFirst),
    generatorRunAgent: (onFirst) => drain(agentRun(onGenerator.model), onFirst),
    raw: (onFirst) => readRaw(mock, onFirst),
    source: (onFirst) => drain(source.stream(REQUEST, { signal: new AbortController().signal }) as Observable<TurnEvent>, onFirst),
    streamModel: (onFirst) => drain(streamModel(source, REQUEST), onFirst),
    pipeline: (onFirst) => drain(pipeline(), onFirst),
    runAgent: (onFirst) => drain(agentRun(model), onFirst),
    streamText: (onFirst) => drainText(mock, onFirst),
  };
}

export interface StreamingResult {
  readonly rows: Row[];
  /** ns per delta of each case (medians). */
  readonly perDelta: Record<keyof typeof NAMES, number>;
  /** Paired ratios to streamText, per delta. */
  readonly toStreamText: Record<keyof typeof NAMES, number>;
  /** Paired differences to the rxheal source, ns per delta. */
  readonly overSource: Record<keyof typeof NAMES, number>;
  /** Time to first delta, µs, medians (the cases on the mock's stream). */
  readonly firstDelta: Record<SameStream, number>;
  /** Retained heap per idle stream, bytes (the cases on the mock's stream). */
  readonly idleHeap: Record<SameStream, number>;
}

export async function streaming(options: {
  deltas: number;
  answers: number;
  reps: number;
  warmup: number;
  firsts: number;
  idle: number;
}): Promise<StreamingResult> {
  const keys = Object.keys(NAMES) as (keyof typeof NAMES)[];
  const rows: Row[] = [];

  // ns per delta: `answers` answers of `deltas` deltas per sample
  const mock = mockModel(answerParts(options.deltas));
  const run = answerers(mock, options.deltas);
  const cases: Case[] = keys.map((k) => ({
    name: NAMES[k],
    run: async (n: number) => {
      for (let i = 0; i < n / options.deltas; i++) await run[k]();
      mock.doStreamCalls.length = 0;
    },
  }));
  const samples: Samples = await interleave(cases, { n: options.deltas * options.answers, reps: options.reps, warmup: options.warmup });
  const perDelta = {} as Record<keyof typeof NAMES, number>;
  const toStreamText = {} as Record<keyof typeof NAMES, number>;
  const overSourceOf = {} as Record<keyof typeof NAMES, number>;
  const rawSamples = samples.get(NAMES.raw)!;
  const textSamples = samples.get(NAMES.streamText)!;
  for (const k of keys) {
    const xs = samples.get(NAMES[k])!;
    const onGenerator = (GENERATOR as readonly string[]).includes(k);
    // each case's own source: the mock's stream as a Model, or the async generator
    const sourceSamples = samples.get(onGenerator ? NAMES.generator : NAMES.source)!;
    const s = stats(xs);
    const ratio = stats(xs.map((x, i) => x / textSamples[i]!));
    const overRaw = stats(xs.map((x, i) => x - rawSamples[i]!));
    const overSource = stats(xs.map((x, i) => x - sourceSamples[i]!));
    perDelta[k] = s.median;
    toStreamText[k] = ratio.median;
    overSourceOf[k] = overSource.median;
    const over = onGenerator
      ? k === 'generator'
        ? "; the same answer as the AI SDK mock's, from an async generator"
        : `; over its own source (the async generator) +${overSource.median.toFixed(0)} ns`
      : k === 'raw'
        ? ''
        : `; over the raw source +${overRaw.median.toFixed(0)} ns${k === 'source' || k === 'streamText' ? '' : `, over the rxheal source +${overSource.median.toFixed(0)} ns`}`;
    rows.push({
      figure: FIGURE,
      name: `ns per delta: ${NAMES[k]}`,
      unit: 'ns/delta',
      value: s.median,
      min: s.min,
      max: s.max,
      ...(k === 'streamText' ? {} : { ratio: { to: 'streamText', median: ratio.median, min: ratio.min, max: ratio.max } }),
      note: `${options.deltas}-delta answers${over}`,
    });
  }

  // time to first delta: short answers, interleaved, one sample per answer
  const short = answerers(mockModel(answerParts(10)), 10);
  const firsts = new Map<SameStream, number[]>(SAME_STREAM.map((k) => [k, []]));
  for (let rep = -options.warmup; rep < options.reps; rep++) {
    for (let j = 0; j < SAME_STREAM.length; j++) {
      const k = SAME_STREAM[(j + Math.max(rep, 0)) % SAME_STREAM.length]!;
      for (let i = 0; i < options.firsts; i++) {
        const t0 = process.hrtime.bigint();
        let t1 = t0;
        await short[k](() => (t1 = process.hrtime.bigint()));
        if (rep >= 0) firsts.get(k)!.push(Number(t1 - t0) / 1e3);
      }
    }
  }
  const firstDelta = {} as Record<SameStream, number>;
  const rawFirst = stats(firsts.get('raw')!).median;
  for (const k of SAME_STREAM) {
    const s = stats(firsts.get(k)!);
    firstDelta[k] = s.median;
    rows.push({
      figure: FIGURE,
      name: `time to first delta: ${NAMES[k]}`,
      unit: 'µs',
      value: s.median,
      min: s.min,
      max: s.max,
      ...(k === 'raw' ? {} : { note: `overhead over the raw source: ${(s.median - rawFirst).toFixed(1)} µs` }),
    });
  }

  // heap per stream waiting for its first delta
  const idleHeap = {} as Record<SameStream, number>;
  for (const k of SAME_STREAM) {
    const r = await idleStreams(k, options.idle);
    idleHeap[k] = r;
  }
  for (const k of SAME_STREAM) {
    rows.push({
      figure: FIGURE,
      name: `heap per idle stream: ${NAMES[k]}`,
      unit: 'B',
      value: idleHeap[k],
      ...(k === 'streamText'
        ? {}
        : {
            ratio: {
              to: 'streamText',
              median: idleHeap[k] / idleHeap.streamText,
              min: idleHeap[k] / idleHeap.streamText,
              max: idleHeap[k] / idleHeap.streamText,
            },
          }),
      note: `${options.idle} streams waiting for a first delta${k === 'raw' ? '' : `; over the raw source ${(idleHeap[k] - idleHeap.raw).toFixed(0)} B`}`,
    });
  }
  return { rows, perDelta, toStreamText, overSource: overSourceOf, firstDelta, idleHeap };
}

/** Retained heap per stream of kind `k`, `n` of them waiting on a model that never answers. */
export async function idleStreams(k: SameStream, n: number): Promise<number> {
  const mock = mockModel('never');
  const source = rxhealModel(mock, 'primary');
  const { model, pipeline } = healing(source, rxhealModel(mock, 'secondary'));
  const start = (): (() => void) => {
    switch (k) {
      case 'raw': {
        let cancel = (): void => undefined;
        void mock.doStream({ prompt: [] }).then(({ stream }) => {
          const reader = stream.getReader();
          void reader.read();
          cancel = () => void reader.cancel();
        });
        return () => cancel();
      }
      case 'streamText': {
        const reader = streamText({ model: mock, prompt: 'hi' }).textStream.getReader();
        void reader.read().catch(() => undefined);
        return () => void reader.cancel().catch(() => undefined);
      }
      default: {
        const o =
          k === 'source'
            ? (source.stream(REQUEST, { signal: new AbortController().signal }) as Observable<unknown>)
            : k === 'streamModel'
              ? streamModel(source, REQUEST)
              : k === 'pipeline'
                ? pipeline()
                : agentRun(model);
        const sub = o.subscribe(QUIET);
        return () => sub.unsubscribe();
      }
    }
  };
  // the mock records every call's options: not part of a stream
  return retainedPerItem(n, start, () => (mock.doStreamCalls.length = 0));
}
