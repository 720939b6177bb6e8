/**
 * {@link fromAsyncIterable}: a model's stream over an async iterable (an SDK's `for await`
 * stream), cancelled promptly and handed the abort signal.
 *
 * @module
 */
import { Observable } from 'rxjs';
import { AbortRun, type AbortContext } from './abortable.js';

/**
 * An observable over an async iterable that cancels promptly: unsubscribing calls the iterator's
 * `return()` at once (RxJS's `from()` only notices at the next chunk). Pass a factory to get a
 * fresh iterator per subscription, with the abort signal.
 *
 * @example
 * ```ts
 * const model: Model = {
 *   id: 'sdk',
 *   stream: (req, { signal }) => fromAsyncIterable(() => sdk.stream(toSdk(req), { signal })).pipe(map(fromSdkChunk)),
 * };
 * ```
 */
export function fromAsyncIterable<T>(source: AsyncIterable<T> | ((context: AbortContext) => AsyncIterable<T>)): Observable<T> {
  // what abortable does, in the stream's own subscriber (no observer of its own between the
  // iterator and the consumer): the run is finished once the iterator is done or failed
  return new Observable<T>((subscriber) => {
    const run = new AbortRun();
    const iterable = typeof source === 'function' ? source(run) : source;
    const iterator = iterable[Symbol.asyncIterator]();
    let done = false;
    const pump = (): void => {
      iterator.next().then(
        (result) => {
          if (subscriber.closed) return;
          if (result.done) {
            done = run.finished = true;
            subscriber.complete();
            return;
          }
          subscriber.next(result.value);
          pump();
        },
        (error: unknown) => {
          done = run.finished = true;
          if (!subscriber.closed) subscriber.error(error);
        },
      );
    };
    pump();
    return () => {
      if (!done) {
        done = true;
        // return() may reject (a generator already running); nothing to do about it here
        iterator.return?.().catch(() => undefined);
      }
      // after the iterator: aborts the signal only if the consumer left before it finished
      run.unsubscribe();
    };
  });
}
