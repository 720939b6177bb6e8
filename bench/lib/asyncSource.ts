/**
 * The source rxheal's per-delta cost was first measured on: an answer from an async generator (what a model over
 * an SDK's `for await` stream is), through `fromAsyncIterable` — the same text-delta events as
 * the AI SDK mock's stream (`aiSdk.ts`, `answerParts`: `' w0'`, `' w1'`…, then `finish`), so
 * rxheal and `streamText` carry the same answer. Compiled like the library (see `rxheal.ts`).
 */
import type { Observable } from 'rxjs';
import type { Model, TurnEvent } from '../../src/index.js';

/** rxheal's `fromAsyncIterable` (from the library under test). */
type FromAsyncIterable = (source: () => AsyncIterable<TurnEvent>) => Observable<TurnEvent>;

/** The answer of `deltas` text deltas, then `finish`, as an async generator yields it. */
async function* answer(deltas: number): AsyncGenerator<TurnEvent> {
  for (let i = 0; i < deltas; i++) yield { type: 'text-delta', text: ` w${i % 10}` };
  yield { type: 'finish', reason: 'stop', usage: { inputTokens: 10, outputTokens: deltas } };
}

/** A model answering with `deltas` deltas from an async generator (each call a fresh one). */
export function generatorModel(fromAsyncIterable: FromAsyncIterable, deltas: number, id = 'generator'): Model {
  return { id, stream: () => fromAsyncIterable(() => answer(deltas)) };
}
