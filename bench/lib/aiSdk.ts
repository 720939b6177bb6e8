/**
 * The AI SDK 6 side of the streaming figures: a `MockLanguageModelV3` whose stream is
 * `simulateReadableStream` with `null` delays (its default `0` costs a `setTimeout` per chunk),
 * the same stream read raw, and an rxheal {@link Model} over the same mock (what an adapter does:
 * `doStream`, then each stream part read and mapped to a model event).
 */
import type { LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { simulateReadableStream } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { Observable } from 'rxjs';
import type { Model, TurnEvent } from '../../src/index.js';

const USAGE = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 0, text: 0, reasoning: undefined },
};

/** The stream parts of an answer of `deltas` text deltas (`' w0'`, `' w1'`…), then `finish`. */
export function answerParts(deltas: number): LanguageModelV3StreamPart[] {
  const parts: LanguageModelV3StreamPart[] = [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 't' },
  ];
  for (let i = 0; i < deltas; i++) parts.push({ type: 'text-delta', id: 't', delta: ` w${i % 10}` });
  parts.push(
    { type: 'text-end', id: 't' },
    {
      type: 'finish',
      finishReason: { unified: 'stop', raw: 'stop' },
      usage: { ...USAGE, outputTokens: { ...USAGE.outputTokens, total: deltas, text: deltas } },
    },
  );
  return parts;
}

/** A mock model answering with `parts` (each call a fresh stream), or never answering (`'never'`). */
export function mockModel(parts: LanguageModelV3StreamPart[] | 'never'): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    doStream: async () => ({
      stream:
        parts === 'never'
          ? new ReadableStream<LanguageModelV3StreamPart>({ start: () => undefined })
          : simulateReadableStream({ chunks: parts, initialDelayInMs: null, chunkDelayInMs: null }),
    }),
  });
}

const CALL = { prompt: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'hi' }] }] };

/**
 * The raw source: `doStream`, then every part read off the stream (a `.then` loop, the cheapest
 * way to read it); resolves with the number of text deltas seen.
 */
export function readRaw(mock: MockLanguageModelV3, onFirst?: () => void): Promise<number> {
  return Promise.resolve(mock.doStream(CALL)).then(
    ({ stream }) =>
      new Promise<number>((resolve, reject) => {
        const reader = stream.getReader();
        let deltas = 0;
        const pump = (): void => {
          reader.read().then(({ done, value }) => {
            if (done) return resolve(deltas);
            if (value.type === 'text-delta' && deltas++ === 0) onFirst?.();
            pump();
          }, reject);
        };
        pump();
      }),
  );
}

/** An rxheal model over the mock: each part read and mapped to a model event; unsubscribing cancels the read. */
export function rxhealModel(mock: MockLanguageModelV3, id = 'mock'): Model {
  return {
    id,
    stream: () =>
      new Observable<TurnEvent>((subscriber) => {
        let reader: ReadableStreamDefaultReader<LanguageModelV3StreamPart> | undefined;
        let closed = false;
        const pump = (): void => {
          reader!.read().then(
            ({ done, value }) => {
              if (closed) return;
              if (done) return subscriber.complete();
              if (value.type === 'text-delta') subscriber.next({ type: 'text-delta', text: value.delta });
              else if (value.type === 'finish')
                subscriber.next({
                  type: 'finish',
                  reason: 'stop',
                  usage: { inputTokens: value.usage.inputTokens.total ?? 0, outputTokens: value.usage.outputTokens.total ?? 0 },
                });
              pump();
            },
            (error: unknown) => subscriber.error(error),
          );
        };
        mock.doStream(CALL).then(
          ({ stream }) => {
            if (closed) return void stream.cancel();
            reader = stream.getReader();
            pump();
          },
          (error: unknown) => subscriber.error(error),
        );
        return () => {
          closed = true;
          reader?.cancel().catch(() => undefined);
        };
      }),
  };
}
