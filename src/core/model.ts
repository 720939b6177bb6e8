import { Observable, type ObservableInput } from 'rxjs';
import { IncompleteStreamError } from './errors.js';
import type { Message, TurnEvent } from './events.js';
import { abortable, type AbortContext } from './abortable.js';

/** What a tool looks like to a model: its name and what it is for. */
export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  /** A JSON-schema-like description of the arguments, when the tool provides one. */
  readonly parameters?: unknown;
}

/** One request to a model: the whole conversation so far and the tools it may call. */
export interface ModelRequest {
  /** The conversation, system instruction first when there is one. */
  readonly messages: readonly Message[];
  readonly tools: readonly ToolSpec[];
}

/**
 * A language model: a cold stream of {@link TurnEvent}s (model events) per request. Anything that returns an
 * observable, a promise of an array, an async iterable… (`ObservableInput`) will do; `signal` is
 * aborted when the consumer unsubscribes.
 *
 * @example
 * ```ts
 * const echo: Model = {
 *   id: 'echo',
 *   stream: (req) => [
 *     { type: 'text-delta', text: String(req.messages.at(-1)?.content) },
 *     { type: 'finish', reason: 'stop' },
 *   ],
 * };
 * ```
 */
export interface Model {
  /** A stable name, used for breakers (`model:<id>`) and events. */
  readonly id: string;
  /**
   * The model's events for one request; `reset` only from a model that wraps others (fallbacks).
   * If it throws, the call errors with what it threw. `context.signal` may be read at any time,
   * also after an `await`: a signal read after the consumer left is already aborted.
   */
  stream(request: ModelRequest, context: AbortContext): ObservableInput<TurnEvent>;
}

/**
 * A cold observable of one model call: subscribing calls `model.stream`, unsubscribing aborts it.
 *
 * A turn ends with a `finish` event. A stream that completes without one (since its last
 * `reset`) was cut short, whatever the model says: it errors with {@link IncompleteStreamError}
 * (classified `connection`: retryable, fallback-able, counted by breakers), so the retries,
 * fallbacks and breakers around the call heal it like a dropped connection — it is never taken
 * for a short answer.
 *
 * @example
 * ```ts
 * streamModel(model, { messages, tools: [] }).subscribe((e) => e.type === 'text-delta' && process.stdout.write(e.text));
 * ```
 */
export function streamModel(model: Model, request: ModelRequest): Observable<TurnEvent> {
  const events = abortable<TurnEvent>((context) => model.stream(request, context));
  return new Observable<TurnEvent>((subscriber) => {
    let finished = false;
    let received = 0;
    return events.subscribe({
      next: (event) => {
        received++;
        if (event.type === 'finish') finished = true;
        else if (event.type === 'reset') finished = false;
        subscriber.next(event);
      },
      error: (error: unknown) => subscriber.error(error),
      complete: () => (finished ? subscriber.complete() : subscriber.error(new IncompleteStreamError(model.id, 'no finish event', received))),
    });
  });
}

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
  return abortable(
    (context) =>
      new Observable<T>((subscriber) => {
        const iterable = typeof source === 'function' ? source(context) : source;
        const iterator = iterable[Symbol.asyncIterator]();
        let done = false;
        const pump = (): void => {
          iterator.next().then(
            (result) => {
              if (subscriber.closed) return;
              if (result.done) {
                done = true;
                subscriber.complete();
                return;
              }
              subscriber.next(result.value);
              pump();
            },
            (error: unknown) => {
              done = true;
              if (!subscriber.closed) subscriber.error(error);
            },
          );
        };
        pump();
        return () => {
          if (done) return;
          done = true;
          // return() may reject (a generator already running); nothing to do about it here
          iterator.return?.().catch(() => undefined);
        };
      }),
  );
}

export { eachValueFrom } from 'rxjs-for-await';
