import { from, Observable, Subscriber, type ObservableInput, type TeardownLogic } from 'rxjs';
import { IncompleteStreamError } from './errors.js';
import type { Message, TurnEvent } from './events.js';
import { abortable, AbortRun, type AbortContext } from './abortable.js';

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
  /** The model's events for one request; `reset` only from a model that wraps others (fallbacks). */
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
  return new ModelTurn(model, request);
}

/**
 * What {@link streamModel} returns. One subscriber per turn does both jobs, the abort signal's
 * (the work is finished once the stream errors or completes) and the finish contract's, so each
 * event costs one hop: a healing pipeline wraps a model in `streamModel` at several layers.
 */
class ModelTurn extends Observable<TurnEvent> {
  constructor(
    private readonly model: Model,
    private readonly request: ModelRequest,
  ) {
    super();
  }

  /** RxJS calls this for each subscription (a synchronous throw errors the subscriber). */
  protected _subscribe(subscriber: Subscriber<TurnEvent>): TeardownLogic {
    const run = new AbortRun();
    const events = from(this.model.stream(this.request, run));
    events.subscribe(new TurnSubscriber(subscriber, run, this.model.id));
    // after the turn's subscriber (linked to `subscriber`) is unsubscribed: abort if unfinished
    return run;
  }
}

/** Forwards a turn's events; errors a turn that completes without `finish` since its last `reset`. */
class TurnSubscriber extends Subscriber<TurnEvent> {
  private finished = false;
  private received = 0;

  constructor(
    destination: Subscriber<TurnEvent>,
    private readonly run: AbortRun,
    private readonly modelId: string,
  ) {
    super(destination);
  }

  protected override _next(event: TurnEvent): void {
    this.received++;
    if (event.type === 'finish') this.finished = true;
    else if (event.type === 'reset') this.finished = false;
    this.destination.next(event);
  }

  protected override _error(error: unknown): void {
    this.run.finished = true;
    super._error(error);
  }

  protected override _complete(): void {
    this.run.finished = true;
    if (this.finished) super._complete();
    else super._error(new IncompleteStreamError(this.modelId, 'no finish event', this.received));
  }
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
